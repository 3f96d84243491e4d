"""Shared builders for the base-file tests: configs, tables with meta columns, key files for Java."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa

from service.config.parquet import ParquetWriteConfig
from service.config.reader import KeyReader

INSTANT = "20240102030405678"
META_NAMES = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)

# Keys that exercise every hashing and ordering edge: 1-3 byte tails with bytes >= 0x80 (sign
# extension), 2/3/4-byte UTF-8, U+E000-U+FFFF against supplementary characters (Java order).
EDGE_KEYS = [
    "a",
    "ab",
    "abc",
    "abcd",
    "abcde",
    "é",
    "aé",
    "中",
    "a中",
    "ÿÿ",
    "\x7f\x7f\x7f",
    "😀",
    "a😀",
    "k\U00010000",
    "k\U0010ffff",
    "k\ue000",
    "k\uffee",
    "k\uffff",
    "id:1,name:Bob",
    "2024/01/01",
    "key with spaces",
    "Ω≈ç√∫",
]


def parquet_config(**hoodie: str) -> ParquetWriteConfig:
    """Hudi's defaults, overridden by `hoodie.*` keys."""
    return ParquetWriteConfig.from_reader(KeyReader("t", hoodie))


def small_bloom_config(**hoodie: str) -> ParquetWriteConfig:
    """A tiny SIMPLE bloom filter, so small size targets measure data rather than the footer."""
    base = {
        "hoodie.bloom.index.filter.type": "SIMPLE",
        "hoodie.index.bloom.num_entries": "1000",
        "hoodie.index.bloom.fpp": "0.01",
    }
    return parquet_config(**{**base, **hoodie})


def with_meta(user: Mapping[str, pa.Array], keys: Iterable[str], partition: str = "p1") -> pa.Table:
    """A table with Hudi's meta columns (input-file values) followed by the user columns."""
    key_list = list(keys)
    n = len(key_list)
    columns: dict[str, pa.Array] = {
        "_hoodie_commit_time": pa.array(["20240101000000000"] * n),
        "_hoodie_commit_seqno": pa.array([f"20240101000000000_0_{i}" for i in range(n)]),
        "_hoodie_record_key": pa.array(key_list),
        "_hoodie_partition_path": pa.array([partition] * n),
        "_hoodie_file_name": pa.array(["old-0_0-0-0_20240101000000000.parquet"] * n),
    }
    columns.update(user)
    return pa.table(columns)


def random_table(n: int, kind: str, rng: np.random.Generator, start: int = 0) -> pa.Table:
    """Rows whose compressibility depends on `kind`: random, lowcard, or drift (compressible, then random)."""
    keys = [f"key-{i:09d}" for i in range(start, start + n)]
    if kind == "random":
        user = {
            "a": pa.array(rng.integers(0, 1 << 62, n)),
            "s": pa.array([rng.bytes(int(rng.integers(5, 60))).hex() for _ in range(n)]),
            "d": pa.array(rng.random(n)),
        }
    elif kind == "lowcard":
        user = {
            "a": pa.array(rng.integers(0, 10, n)),
            "s": pa.array(rng.choice(["alpha", "beta", "gamma"], n)),
            "d": pa.array(np.round(rng.random(n), 2)),
        }
    elif kind == "drift":
        noisy = rng.random() < 0.5
        user = {
            "a": pa.array(rng.integers(0, 1 << 62, n) if noisy else np.zeros(n, dtype=np.int64)),
            "s": pa.array([rng.bytes(30).hex() if noisy else "x" * 60 for _ in range(n)]),
            "d": pa.array(rng.random(n) if noisy else np.zeros(n)),
        }
    else:
        raise ValueError(kind)
    return with_meta(user, keys)


def write_keys_file(path: Path, keys: Iterable[str]) -> Path:
    """One key per line, Base64 of its UTF-8 bytes (the Java programs' input format)."""
    path.write_text("".join(base64.b64encode(k.encode()).decode() + "\n" for k in keys))
    return path


def b64_text(value: str) -> str:
    return base64.b64decode(value).decode("utf-8")
