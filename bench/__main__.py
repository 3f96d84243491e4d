"""`python -m bench <name>|all [--quick] [benchmark options]`."""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable, Sequence

# name -> module; imported only when run, so one benchmark's heavy imports never slow another.
BENCHMARKS: dict[str, str] = {
    "clustering": "bench.clustering",
    "pruning": "bench.pruning",
    "cleaning": "bench.cleaning",
    "daemon": "bench.daemon",
    "hudi-clustering": "bench.hudi_clustering",
    "hudi-cleaning": "bench.hudi_cleaning",
    "hudi-archival": "bench.hudi_archival",
    "hudi-compaction": "bench.hudi_compaction",
    "hudi-s3": "bench.hudi_s3",
    "scale": "bench.scale",
}


def _entry(name: str) -> Callable[[Sequence[str]], int]:
    module = importlib.import_module(BENCHMARKS[name])
    main: Callable[[Sequence[str]], int] = module.main
    return main


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in (*BENCHMARKS, "all"):
        print(f"usage: python -m bench {{{','.join([*BENCHMARKS, 'all'])}}} [--quick] [options]")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    name, rest = argv[0], list(argv[1:])
    if name != "all":
        return _entry(name)(rest)
    # `all` passes only the shared flag on; per-benchmark options need the benchmark by name.
    shared = ["--quick"] if "--quick" in rest else []
    status = 0
    started = time.perf_counter()
    seconds: dict[str, float] = {}
    for each in BENCHMARKS:
        print(f"== {each}", flush=True)
        begun = time.perf_counter()
        status = max(status, _entry(each)(shared))
        seconds[each] = time.perf_counter() - begun
    spent = ", ".join(f"{name} {s:.0f}s" for name, s in seconds.items())
    print(f"\n== all: {time.perf_counter() - started:.0f}s ({spent})", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
