"""Record-key min/max in Java `String.compareTo` order (UTF-16 code units), vectorised."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest

from service.errors import HudiTableServiceError
from service.table.java_string_order import java_compare, java_min_max, java_sort_key, merge_min_max
from tests.base_file.helpers import EDGE_KEYS, b64_text, write_keys_file
from tests.support.jvm import run_java

ALPHABET = "a~\x7fé\u07ff中\ud7ff\ue000\uffee\uffff😀\U00010000\U0010ffff"


def _random_key_sets(seed: int, count: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [
        ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(rng.randint(1, 60))]
        for _ in range(count)
    ]


def test_java_order_differs_from_python_for_supplementary_characters() -> None:
    # Python: U+FFEE < U+1F600. Java: the surrogate pair (0xD83D...) sorts before 0xFFEE.
    assert "k\uffee" < "k😀"
    assert java_compare("k😀", "k\uffee") < 0
    assert java_min_max(pa.array(["k\uffee", "k😀"])) == ("k😀", "k\uffee")


def test_java_min_max_equals_sorting_by_utf16_code_units() -> None:
    for keys in _random_key_sets(11, 400):
        expected = (min(keys, key=java_sort_key), max(keys, key=java_sort_key))
        assert java_min_max(pa.array(keys)) == expected
        padded = pa.array(["\x00", *keys, "\U0010ffff" * 3]).slice(1, len(keys))
        assert java_min_max(padded) == expected
        mid = len(keys) // 2 + 1
        halves = pa.chunked_array([pa.array(keys[:mid], pa.string()), pa.array(keys[mid:], pa.string())])
        assert java_min_max(halves) == expected


def test_java_min_max_merges_batches() -> None:
    keys = EDGE_KEYS
    merged = None
    for start in range(0, len(keys), 5):
        merged = merge_min_max(merged, java_min_max(pa.array(keys[start : start + 5])))
    assert merged == java_min_max(pa.array(keys))
    assert java_min_max(pa.array([], pa.string())) is None
    with pytest.raises(HudiTableServiceError, match="null"):
        java_min_max(pa.array(["a", None]))


@pytest.mark.hudi
def test_java_min_max_agrees_with_java_string_compare_to(tmp_path: Path) -> None:
    key_sets = [EDGE_KEYS, *_random_key_sets(12, 15)]
    for i, keys in enumerate(key_sets):
        keys_file = write_keys_file(tmp_path / f"keys{i}", keys)
        out = dict(
            line.split("=", 1) for line in run_java("HudiFooter", "minmax", str(keys_file)).stdout.split()
        )
        assert (b64_text(out["min_key"]), b64_text(out["max_key"])) == java_min_max(pa.array(keys)), keys
