"""Tests of the benchmark scripts that other code relies on (benchmarks/ is not a package: loaded by path)."""
