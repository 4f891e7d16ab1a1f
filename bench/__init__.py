"""Benchmarks of the research engine: `python -m bench.<name>` from the repo root."""
