"""The stores: item stores and the object store behind Protocols, each with a DynamoDB (or S3)
implementation and an in-memory one. Nothing above them sees a DynamoDB item."""
