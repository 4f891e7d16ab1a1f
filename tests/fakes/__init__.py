"""Local fake servers that speak the real wire formats, for tests and benchmarks."""
