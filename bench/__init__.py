"""Benchmarks of objectlog against floors measured side by side: `python -m bench.run`."""
