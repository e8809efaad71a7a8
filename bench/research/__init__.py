"""Research probes: one-off measurements behind a default or a lab note, run as `python -m bench.research.NAME`
(../README.md lists them). They may import the benchmarks and their shared modules; nothing imports them."""
