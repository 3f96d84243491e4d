"""What every benchmark shares: the machine it ran on, a plain-text table, the JSON result file."""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from service.table.avro_schema import record_name_and_namespace

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _memory_bytes() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def own_peak_rss_kb() -> int:
    """This program's peak resident memory (`VmHWM`: the high-water mark of the memory `execve` gave
    it). Not `getrusage`'s `ru_maxrss`, which also counts the process before its exec: a child of a
    benchmark that holds gigabytes would report the benchmark's size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("/proc/self/status has no VmHWM line")


def _java_version() -> str | None:
    try:
        done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stderr or done.stdout).strip().splitlines()
    return lines[0] if lines else None


def _module_version(name: str) -> str | None:
    try:
        module = __import__(name)
    except ImportError:
        return None
    version: str | None = getattr(module, "__version__", None)
    return version


def machine_info() -> dict[str, Any]:
    """Cores, memory and the versions of everything on the measured path."""
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_bytes": _memory_bytes(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "java": _java_version(),
        "spark": _module_version("pyspark"),
        "pyarrow": _module_version("pyarrow"),
        "numpy": _module_version("numpy"),
        # Load from other processes skews timings on a small machine; recorded so readers can tell.
        "load_average_1_5_15m": [round(x, 2) for x in os.getloadavg()],
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


@dataclass
class Stopwatch:
    seconds: float = 0.0


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    """`with stopwatch() as sw: ...` then `sw.seconds` (monotonic wall time)."""
    sw = Stopwatch()
    started = time.perf_counter()
    try:
        yield sw
    finally:
        sw.seconds = time.perf_counter() - started


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A Markdown-compatible table: text columns left-aligned, numbers right-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) or row[i] is None for row in rows) for i in range(len(headers))
    ]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if num else ("-" * (w + 2)) for w, num in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(r) for r in cells)])


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print(f"\n{title}\n{format_table(headers, rows)}", flush=True)


def rerun_without_jvm(name: str, argv: Sequence[str]) -> int | None:
    """Run `python -m bench <name> <argv>` in a child process when this process already started a JVM
    (`python -m bench all` runs the benchmarks in turn): a JVM's classpath is fixed at launch, so a later
    SparkSession here could not load the Hudi bundle. None when there is no JVM yet (run here)."""
    if "pyspark" not in sys.modules:
        return None
    from pyspark import SparkContext

    if SparkContext._gateway is None:
        return None
    print(f"(running {name} in a fresh process: this one's JVM has no Hudi bundle)", flush=True)
    return subprocess.call([sys.executable, "-m", "bench", name, *argv])


CODE_PATHS = ("bench", "service", "strategies", "pyproject.toml", "constraints.txt")


def code_version() -> dict[str, Any]:
    """The commit the benchmark's code is at, and whether its code in the work tree differed from it:
    a published figure names the code that produced it."""
    repo = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=repo, capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    # The code a run loads; documents and tests may change beside a run without changing its figures.
    status = git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    return {"commit": git("rev-parse", "HEAD"), "modified": None if status is None else bool(status)}


# Taken when the benchmark's process starts: the code it loaded, whatever the tree holds by its end.
CODE_AT_START = code_version()


def write_results(name: str, payload: Mapping[str, Any], results_dir: Path | None = None) -> Path:
    """`<results_dir>/<name>.json` with the machine, the code, when it ran, and `payload`."""
    directory = results_dir or RESULTS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    document = {
        "benchmark": name,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "code": CODE_AT_START,
        **payload,
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------- command lines
def bench_parser(name: str, doc: str | None, quick_help: str) -> argparse.ArgumentParser:
    """`python -m bench <name>`'s parser with what every benchmark takes: `--quick` and `--work-dir`."""
    description = (doc or name).splitlines()[0]
    parser = argparse.ArgumentParser(prog=f"python -m bench {name}", description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--work-dir", type=Path, help="parent of the scratch directory")
    return parser


def add_input_size_options(parser: argparse.ArgumentParser) -> None:
    """The clustering benchmarks' input: base files, rows, and the clustering's target file size."""
    parser.add_argument("--files", type=int, help="input base files")
    parser.add_argument("--rows", type=int, help="input rows")
    parser.add_argument(
        "--target-file-mb", type=int, help="hoodie.clustering.plan.strategy.target.file.max.bytes"
    )


def input_sizes(args: argparse.Namespace, base: Any) -> dict[str, Any]:
    """`add_input_size_options`' values, `base`'s (the quick or full options) where not given."""
    return {
        "files": args.files or base.files,
        "rows": args.rows or base.rows,
        "target_file_mb": args.target_file_mb or base.target_file_mb,
    }


def command_line(name: str, argv: Sequence[str]) -> str:
    """The command that ran a benchmark, for its results."""
    return " ".join(["python -m bench", name, *argv])


def hudi_record_schema(
    table_name: str, fields: Sequence[tuple[str, Any]], nullable: bool = False
) -> dict[str, Any]:
    """A table's Avro record schema, named as Hudi's Spark writer names it (`<table>_record` in
    `hoodie.<table>`); `nullable` makes every field a `["null", type]` union defaulting to null."""
    name, namespace = record_name_and_namespace(table_name)
    columns = [
        {"name": column, "type": ["null", avro_type], "default": None}
        if nullable
        else {"name": column, "type": avro_type}
        for column, avro_type in fields
    ]
    return {"type": "record", "name": name, "namespace": namespace, "fields": columns}
