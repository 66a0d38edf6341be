"""Compaction, retention and garbage collection, and the compact function's entry point."""
