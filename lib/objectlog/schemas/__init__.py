"""Schemas: a Schema Registry with Confluent's REST API over objectlog's table (DESIGN.md
section 15), the schema types it keeps (AVRO, JSON, PROTOBUF) and their compatibility rules."""
