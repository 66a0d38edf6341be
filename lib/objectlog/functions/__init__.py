"""Entry points of the Lambda functions that are not HTTP routes (the compact function)."""
