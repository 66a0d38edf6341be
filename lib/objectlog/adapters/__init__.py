"""The adapters: the only code that imports botocore or boto3. AWS clients, error
translation, one retry policy, conditional writes, S3 reads and writes."""
