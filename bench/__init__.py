"""sentkit's benchmarks against peers, run from the repository root as `python -m bench.NAME` (README.md lists them)."""
