"""Results as the JSON objects the commands print with `--json`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def fields_json(obj: object, names: Sequence[str]) -> dict[str, Any]:
    """`obj`'s attributes `names` in that order; `*_seconds` floats rounded to milliseconds."""
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name)
        out[name] = round(value, 3) if name.endswith("_seconds") and isinstance(value, float) else value
    return out
