"""The services: the write path, the read path, the segment index and leases."""
