"""kerasrnn's benchmark suite: `python -m bench list` names the benchmarks, `python -m
bench NAME --help` tells how to run one (bench/README.md)."""
