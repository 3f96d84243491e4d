"""JSON text exactly as Hudi's Jackson `writerWithDefaultPrettyPrinter()` lays it out.

Objects put each field on its own line, indented two spaces per enclosing object, as `"k" : v`;
arrays stay inline (`[ a, b ]`) and do not add indentation; empty containers are `{ }` and `[ ]`.
Strings escape like Jackson: `"`, `\\`, short escapes for \\b \\t \\n \\f \\r, other control
characters as uppercase `\\u00XX`, everything else (non-ASCII included) written as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPES = {chr(c): _SHORT_ESCAPES.get(chr(c), f"\\u{c:04X}") for c in range(32)} | _SHORT_ESCAPES
_INDENT = "  "


def quote(text: str) -> str:
    if not any(ch in _ESCAPES for ch in text):
        return f'"{text}"'
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in text) + '"'


def dumps_pretty(value: Any) -> str:
    """`value` (dicts keep their order) as Jackson's default pretty printer writes it, no final newline."""
    out: list[str] = []
    _write(value, 0, out)
    return "".join(out)


def _write(value: Any, level: int, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int | float):
        out.append(repr(value))
    elif isinstance(value, str):
        out.append(quote(value))
    elif isinstance(value, Mapping):
        if not value:
            out.append("{ }")
            return
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            out.append(("," if i else "") + "\n" + _INDENT * (level + 1) + quote(key) + " : ")
            _write(item, level + 1, out)
        out.append("\n" + _INDENT * level + "}")
    elif isinstance(value, Sequence):
        if not value:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(value):
            if i:
                out.append(", ")
            _write(item, level, out)
        out.append(" ]")
    else:
        raise TypeError(f"cannot write {type(value).__name__} as JSON")
