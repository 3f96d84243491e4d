"""Benchmarks: each prints a table and writes `bench/results/<name>.json`; none is a timed test.

A benchmark is a module of this package with `main(argv: Sequence[str]) -> int` that accepts
`--quick` (a small size that finishes in minutes). Register it in `bench.__main__.BENCHMARKS`;
`python -m bench <name> [--quick]` runs one, `python -m bench all [--quick]` runs every one.
"""
