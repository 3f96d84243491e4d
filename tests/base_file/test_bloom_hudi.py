"""Byte-for-byte equality of our bloom filters with Hudi 0.15's `BloomFilterFactory` (one JVM run)."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from service.config.parquet import BloomFilterType
from service.table.bloom import BloomFilterConfig, HoodieBloomFilter
from tests.base_file.helpers import EDGE_KEYS, write_keys_file
from tests.support.jvm import run_java

pytestmark = pytest.mark.hudi


@dataclass(frozen=True)
class Case:
    name: str
    keys: list[str]
    config: BloomFilterConfig


def _mixed_keys(rng: random.Random, n: int) -> list[str]:
    # Multi-byte UTF-8 and tails with bytes >= 0x80 (Java sign-extends them).
    alphabet = "aZ09_-:,/é\xff\u0100中\ue000\uffee😀\U00010000\U0010ffff"
    return [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) + f"#{i}" * (i % 2) for i in range(n)
    ]


def _cases() -> list[Case]:
    rng = random.Random(20240707)
    uuids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(130_000)]
    mixed = EDGE_KEYS + _mixed_keys(rng, 3000)
    default_dynamic = BloomFilterConfig()
    default_simple = BloomFilterConfig(filter_type=BloomFilterType.SIMPLE)
    return [
        Case("dynamic_small_mixed", mixed, default_dynamic),
        Case("simple_small_mixed", mixed, default_simple),
        Case("dynamic_one_key", ["4"], default_dynamic),
        # 130k keys > 2 x 60000: a second row, then round-robin past the 100000 maximum.
        Case("dynamic_large", uuids, default_dynamic),
        Case("simple_large", uuids, default_simple),
        # Small rows, many of them, then round-robin: 2000 keys over rows of 150 up to 1000.
        Case(
            "dynamic_many_rows",
            mixed[:2000],
            BloomFilterConfig(num_entries=150, fpp=1e-5, dynamic_max_entries=1000),
        ),
        Case(
            "simple_other_fpp",
            mixed,
            BloomFilterConfig(num_entries=5000, fpp=0.003, filter_type=BloomFilterType.SIMPLE),
        ),
    ]


def test_bloom_serialisation_equals_hudis_and_hudi_reads_ours(tmp_path: Path) -> None:
    cases = _cases()
    jobs: list[str] = []
    ours: dict[str, str] = {}
    for case in cases:
        keys_file = write_keys_file(tmp_path / f"{case.name}.keys", case.keys)
        bloom = HoodieBloomFilter(case.config)
        # Added in uneven batches: the dynamic row assignment must not depend on batching.
        step = max(1, len(case.keys) // 3 + 7)
        for start in range(0, len(case.keys), step):
            bloom.add_keys(case.keys[start : start + step])
        ours[case.name] = bloom.serialize_to_string()
        (tmp_path / f"{case.name}.ours").write_text(ours[case.name])
        c = case.config
        jobs.append(
            f"build {c.num_entries} {c.fpp!r} {c.dynamic_max_entries} {c.filter_type} "
            f"{keys_file} {tmp_path / (case.name + '.java')}"
        )
        jobs.append(f"check {c.filter_type} {tmp_path / (case.name + '.ours')} {keys_file}")
    (tmp_path / "jobs").write_text("\n".join(jobs) + "\n")

    out = run_java("HudiBloom", str(tmp_path / "jobs"), timeout_s=300).stdout.splitlines()

    checks = [line.split() for line in out if line.startswith("check ")]
    assert len(checks) == len(cases)
    for case, check in zip(cases, checks, strict=True):
        assert check == ["check", str(len(case.keys)), "0"], (
            f"{case.name}: Java's mightContain rejects our keys"
        )
        java = (tmp_path / f"{case.name}.java").read_text()
        assert ours[case.name] == java, f"{case.name}: serialised filter differs from Hudi's"
