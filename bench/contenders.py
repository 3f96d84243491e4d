"""Contender pairs measured alike: each contender in its own process, rounds alternating who goes
first, the spread beside the median, each contender's peak resident memory, and the outputs compared
row for row.

Why a process per contender: the memory a contender needs is only its own when nothing else shares its
JVM, and a JVM keeps what its heap once grew to, so two contenders in one driver would each be charged
the other's peak. Each `ContenderProcess` is one `python -m bench.contender_child` with its own
SparkSession (the same configuration for both), warmed up once, then called once per round; the
parent samples the resident memory of the child's whole process tree (the Python driver, its JVM, and
the Python workers Spark forks) while a timed call runs.

Linux only: memory is read from `/proc`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

REPO_ROOT = Path(__file__).resolve().parent.parent
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
SAMPLE_EVERY_S = 0.05
MB = 1024 * 1024
T = TypeVar("T")


# ---------------------------------------------------------------- order and spread


def round_order(names: Sequence[T], round_index: int) -> tuple[T, ...]:
    """Who goes first in round `round_index` (from 0): the given order in even rounds, reversed in odd
    ones, so whoever runs second (a page cache the first one filled) is each contender in turn."""
    return tuple(names) if round_index % 2 == 0 else tuple(reversed(names))


@dataclass(frozen=True)
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            raise ValueError("a spread of no rounds")
        return cls(statistics.median(values), min(values), max(values))

    def as_json(self, digits: int = 3) -> dict[str, float]:
        return {
            "median": round(self.median, digits),
            "min": round(self.min, digits),
            "max": round(self.max, digits),
        }


def settle() -> None:
    """Write the fresh copies' dirty pages back before a round's clock starts: left to the kernel, the
    write-back of a few hundred MB just copied lands on whoever runs first (measured: Hudi's
    compaction took 27.8 s median going first, 23.3 s going second; ours, 12.0 s either way)."""
    os.sync()


def load_average() -> float:
    """The 1-minute load average: recorded before and after every round, so a reader sees what else ran."""
    return round(os.getloadavg()[0], 2)


# ---------------------------------------------------------------- resident memory


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now visible in /proc."""
    out: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue  # gone since the listing
        # The command name is in parentheses and may hold spaces: the fields after its last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        out[int(entry.name)] = int(fields[1])
    return out


def process_tree(*roots: int) -> list[int]:
    """`roots` and every process descended from them."""
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    tree, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, ()))
    return tree


def executor_processes(application_id: str | None) -> list[int]:
    """The executor JVMs of a Spark application on a cluster: processes whose command line carries
    `--app-id <application_id>` (a standalone worker starts each `CoarseGrainedExecutorBackend` so,
    as a child of its own, not of the application's driver). None for an application in local mode,
    whose executor is the driver's JVM."""
    if application_id is None or application_id.startswith("local-"):
        return []
    wanted = ["--app-id", application_id]
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                argv = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue  # gone since the listing
        if any(argv[i : i + 2] == wanted for i in range(len(argv) - 1)):
            found.append(int(entry.name))
    return found


def tree_memory_bytes(*roots: int) -> tuple[int, int]:
    """The resident memory of the process trees of `roots` and its file-backed part: the sums of each
    process's `statm` resident and shared pages (pages a forked Python worker shares with its parent
    count once per process, as `ps` counts them). Shared pages are mapped files and shared memory
    (the kernel's RssFile + RssShmem): a memory-mapped spill file's pages count in the resident set,
    but the kernel may write them back and drop them when memory runs short."""
    resident = shared = 0
    for pid in process_tree(*roots):
        try:
            with open(f"/proc/{pid}/statm", encoding="ascii") as f:
                fields = f.read().split()
            resident += int(fields[1]) * PAGE_BYTES
            shared += int(fields[2]) * PAGE_BYTES
        except (OSError, IndexError, ValueError):
            continue
    return resident, shared


class PeakRss:
    """Samples `tree_memory_bytes` of `root` (and of the executors of `application_id` on a cluster,
    found once on entry) every `SAMPLE_EVERY_S` seconds in a thread while in `with`: the highest
    resident memory, and the file-backed part of that sample."""

    def __init__(self, root: int, every_s: float = SAMPLE_EVERY_S, application_id: str | None = None) -> None:
        self.root, self.every_s, self.application_id = root, every_s, application_id
        self.roots: tuple[int, ...] = (root,)  # with the executors, once entered
        self.peak_bytes = self.peak_file_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name=f"peak-rss-{root}", daemon=True)

    def _take(self) -> None:
        resident, shared = tree_memory_bytes(*self.roots)
        if resident > self.peak_bytes:
            self.peak_bytes, self.peak_file_bytes = resident, shared

    def _sample(self) -> None:
        while True:
            self._take()
            if self._stop.wait(self.every_s):
                return

    def __enter__(self) -> PeakRss:
        self.roots = (self.root, *executor_processes(self.application_id))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._take()  # the last moment too


# ---------------------------------------------------------------- the contender's process


class ContenderError(RuntimeError):
    """A call in a contender's process failed; the message carries the child's traceback."""


@dataclass(frozen=True)
class Call:
    """What one call in a contender's process returned, and the tree's peak memory while it ran."""

    result: Any
    peak_rss_bytes: int
    peak_file_rss_bytes: int = 0  # the file-backed part of the peak (`tree_memory_bytes`)


class ContenderProcess:
    """One contender's own Python driver and SparkSession (`bench.contender_child`).

    `call("bench.x:fn", **kwargs)` runs `fn(spark, **kwargs)` there and returns its JSON result;
    `session` goes to `bench.hudi_clustering.start_session` in the child (the same for each contender
    that uses Spark); None starts no Spark (`spark` is then None).
    """

    def __init__(self, name: str, session: Mapping[str, Any] | None, log: Path) -> None:
        self.name = name
        self._log_file: IO[bytes] = open(log, "ab")  # noqa: SIM115 - closed in close()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]))
        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.contender_child"],
            cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log_file,
        )  # fmt: skip
        self.log = log
        self._send({"session": None if session is None else dict(session)})
        # Once the session is up: its Spark application, whose executors on a cluster run outside
        # this process's tree (`executor_processes`); None without Spark.
        self.application_id: str | None = self._receive()

    @property
    def pid(self) -> int:
        return self._process.pid

    def _send(self, message: Mapping[str, Any]) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write((json.dumps(message, default=str) + "\n").encode())
        self._process.stdin.flush()

    def _receive(self) -> Any:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            code = self._process.wait()
            raise ContenderError(f"{self.name}'s process ended (exit {code}); its output is in {self.log}")
        reply = json.loads(line)
        if "error" in reply:
            raise ContenderError(f"{self.name}: {reply['error']} (its output is in {self.log})")
        return reply["result"]

    def call(self, function: str, **kwargs: Any) -> Call:
        with PeakRss(self.pid, application_id=self.application_id) as peak:
            self._send({"function": function, "kwargs": kwargs})
            result = self._receive()
        return Call(result, peak.peak_bytes, peak.peak_file_bytes)

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()  # the child stops its session and exits on end of input
            try:
                self._process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log_file.close()

    def __enter__(self) -> ContenderProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def start_contenders(
    stack: ExitStack, work: Path, sessions: Mapping[str, Mapping[str, Any] | None]
) -> dict[str, ContenderProcess]:
    """One `ContenderProcess` per name, each with `sessions[name]` (None: no Spark), its driver's
    directory `<work>/<name>-driver` and its output in `<work>/<name>-driver.log`; closed with `stack`."""
    return {
        name: stack.enter_context(
            ContenderProcess(
                name,
                None if session is None else {**session, "work_dir": work / f"{name}-driver"},
                work / f"{name}-driver.log",
            )
        )
        for name, session in sessions.items()
    }


# ---------------------------------------------------------------- rows


@dataclass(frozen=True)
class RowDigest:
    """An order-free fingerprint of every row Hudi's snapshot reader returns: the row count and the
    sums of two 64-bit hashes (xxHash64 under two seeds) of each row's JSON (every column but
    `_hoodie_file_name`, nulls written out). Equal multisets of rows give equal digests; a changed, lost
    or duplicated row changes them but for a chance of about 2^-128."""

    rows: int
    hash_sum: str
    seeded_hash_sum: str

    @property
    def text(self) -> str:
        return f"{self.rows}:{self.hash_sum}:{self.seeded_hash_sum}"


def row_digest(spark: SparkSession, base: Path | str) -> RowDigest:
    """Every row Hudi's snapshot reader returns from the table at `base` (`frame_digest`)."""
    return frame_digest(spark.read.format("hudi").load(str(base)).drop("_hoodie_file_name"))


def frame_digest(frame: DataFrame) -> RowDigest:
    """The row count and two seeded sums of a 64-bit hash of each row's JSON (its columns by name):
    equal for the same rows in any order and any file layout."""
    from pyspark.sql import functions as F

    row = F.to_json(
        F.struct(*[F.col(f"`{c}`") for c in sorted(frame.columns)]), {"ignoreNullFields": "false"}
    )
    wide = "decimal(38,0)"  # 3 M rows of 64-bit hashes sum far below 10^38
    [got] = frame.select(
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.xxhash64(row).cast(wide)).alias("x"),
        # xxhash64 of several columns seeds each with the hash of the ones before: another seed.
        F.sum(F.xxhash64(F.lit("hts-row-digest"), row).cast(wide)).alias("m"),
    ).collect()
    return RowDigest(int(got["rows"]), str(got["x"] or 0), str(got["m"] or 0))


def peak_mb(values: Sequence[int]) -> float:
    return round(max(values) / MB, 1) if values else 0.0
