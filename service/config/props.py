"""Hudi `--props` files and `--hoodie-conf KEY=VALUE` pairs, read the way Hudi's utilities read them.

Hudi's utilities (HoodieStreamer, HoodieClusteringJob, HoodieCleaner) load `--props` with
`DFSPropertiesConfiguration`, which is *not* `java.util.Properties`: a line is split at its first `=` (or
first whitespace when it has no `=`), key and value are trimmed, runs of whitespace collapse to one space,
backslashes are kept literally (a partition regex such as `\\d{8}` survives), lines starting with `#` are
comments, and `include=<file>` pulls in another file (relative to the including file's directory). Overrides
given with `--hoodie-conf` are parsed the same way and win. `syntax="java"` reads a file with
`java.util.Properties` rules instead (escapes, continuation lines), for files written by `Properties.store`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Literal

from service.config import java_properties
from service.errors import ConfigError

PropsSyntax = Literal["hudi", "java"]

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # BufferedReader.lines()
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")  # Java regex \s
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))  # String.trim() strips every char <= U+0020
_HAS_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]")


def _split_line(line: str) -> tuple[str, str]:
    collapsed = _JAVA_SPACE.sub(" ", line)
    delimiter = "=" if "=" in collapsed else " "
    index = collapsed.index(delimiter)
    return collapsed[:index].strip(_JAVA_TRIM), collapsed[index + 1 :].strip(_JAVA_TRIM)


def _is_property_line(line: str) -> bool:
    if line.startswith("#") or line == "":
        return False
    return "=" in line or _HAS_JAVA_SPACE.search(line) is not None


def parse_props_text(text: str) -> dict[str, str]:
    """Parse `DFSPropertiesConfiguration` text without include support; later keys win."""
    props: dict[str, str] = {}
    for line in _LINE_BREAK.split(text):
        if _is_property_line(line):
            key, value = _split_line(line)
            if key:
                props[key] = value
    return props


def read_props_file(path: str | os.PathLike[str], syntax: PropsSyntax = "hudi") -> dict[str, str]:
    """Read one `--props` file (and, for Hudi syntax, the files it includes)."""
    if syntax == "java":
        return java_properties.loads(_read_text(Path(path), including=None))
    props: dict[str, str] = {}
    _read_hudi_file(Path(path), props, visited=set(), including=None)
    return props


def _read_hudi_file(path: Path, props: dict[str, str], visited: set[str], including: Path | None) -> None:
    key = str(path)
    if key in visited:
        # Hudi remembers every file read, so a second include of the same file is refused as a loop too.
        raise ConfigError(f"props file {path}: include loop detected (already read)")
    text = _read_text(path, including)
    visited.add(key)
    for line in _LINE_BREAK.split(text):
        if not _is_property_line(line):
            continue
        name, value = _split_line(line)
        if line.startswith(("include=", "include =")):
            target = Path(value)
            _read_hudi_file(target if target.is_absolute() else path.parent / target, props, visited, path)
        elif name:
            props[name] = value


def _read_text(path: Path, including: Path | None) -> str:
    origin = f" (included from {including})" if including is not None else ""
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"props file {path}{origin} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"props file {path}{origin} is not UTF-8: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"props file {path}{origin} cannot be read: {exc}") from None


def parse_hoodie_conf(pairs: Iterable[str]) -> dict[str, str]:
    """`--hoodie-conf KEY=VALUE` arguments, in order (a later pair wins)."""
    props: dict[str, str] = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--hoodie-conf {pair!r} is not KEY=VALUE")
        key, value = _split_line(pair)
        if not key:
            raise ConfigError(f"--hoodie-conf {pair!r} has an empty key")
        props[key] = value
    return props


def load_hoodie_props(
    props_files: Sequence[str | os.PathLike[str]] = (),
    hoodie_conf: Sequence[str] = (),
    syntax: PropsSyntax = "hudi",
) -> dict[str, str]:
    """Props files in order, then `--hoodie-conf` pairs; a later value wins.

    Hudi's defaults are not filled in here: `HoodieConfig.from_mapping` applies them, so it can tell which
    keys were set (cleaning-policy inference depends on that).
    """
    merged: dict[str, str] = {}
    for path in props_files:
        merged.update(read_props_file(path, syntax))
    merged.update(parse_hoodie_conf(hoodie_conf))
    return merged
