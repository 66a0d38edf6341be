"""The format layer: records, segments, L1 files, the index's refs and manifests, the
partitioner, topic rules and where objects live. Imports nothing else of objectlog's but
errors and clock."""
