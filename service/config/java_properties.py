"""Java `java.util.Properties` text format: `load` and `store` semantics, both ways.

Hudi writes `hoodie.properties` and `.hoodie_partition_metadata` with `Properties.store`, so values
carry Java escapes (`\\:`, `\\=`, `\\uXXXX`) and may use line continuations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Join continuation lines (an odd number of trailing backslashes) as `Properties.load` does."""
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def _unescape(s: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 == len(s):
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u" and i + 6 <= len(s):
            out.append(chr(int(s[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    # `\uXXXX` escapes are UTF-16 code units: join surrogate pairs into one character.
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le")


def _split_key_value(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def loads(text: str) -> dict[str, str]:
    """Parse Java properties text; later keys win, as in `Properties.load`."""
    result: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        result[key] = value
    return result


def _escape(s: str, is_key: bool) -> str:
    out: list[str] = []
    for idx, c in enumerate(s):
        if c == " " and (is_key or idx == 0):
            out.append("\\ ")
        elif c == "\\":
            out.append("\\\\")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "=:#!":
            out.append("\\" + c)
        elif ord(c) > 0xFFFF:  # Java escapes UTF-16 code units: a surrogate pair
            units = c.encode("utf-16-be")
            out.append(f"\\u{units[0]:02X}{units[1]:02X}\\u{units[2]:02X}{units[3]:02X}")
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def dumps(props: Mapping[str, str], comment: str | None = None, now: datetime | None = None) -> str:
    """Serialise like `Properties.store(writer, comment)`: comment line, date line, then entries."""
    now = now or datetime.now(UTC)
    lines: list[str] = []
    if comment is not None:
        lines.append("#" + comment)
    # Java prints Date.toString(); readers ignore comment lines, so the exact zone name is cosmetic.
    lines.append("#" + now.strftime("%a %b %d %H:%M:%S UTC %Y"))
    for key, value in props.items():
        lines.append(f"{_escape(key, True)}={_escape(value, False)}")
    return "\n".join(lines) + "\n"
