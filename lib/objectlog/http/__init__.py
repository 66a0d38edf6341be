"""The HTTP API: Powertools resolvers for the produce and fetch Lambda functions."""
