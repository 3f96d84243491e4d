"""One JSON document read from a stream of byte chunks, a member or element at a time.

A completed commit that wrote a million files is a JSON file of hundreds of megabytes; `json.loads`
of it builds every write stat at once, several times the file's size. Reading it here, a caller walks
the objects and arrays it wants to descend into and takes every other value whole (`value`, the
standard library's scanner at C speed), so what is held is the largest single value, not the
document. Accepts exactly what `json.loads` accepts (the same scanner decodes every value and key;
only the structure walked here is scanned in Python), and fails with `json.JSONDecodeError`'s words
and its line, column and offset in the document.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any

_WHITESPACE = " \t\n\r"
_NUMBER_TAIL = re.compile(r"[0-9.eE+\-]*\Z")  # what may follow a number's prefix, up to the buffer's end
CHUNK_BYTES = 8 << 20  # an object store's reads are ranged GETs: few and large


class JsonStreamError(ValueError):
    """Not a JSON document: what was expected, and where."""


class JsonStream:
    """A cursor over one JSON document. Walk it with `peek`, `members`, `elements` and `value`, then
    call `end`: a caller that breaks off a walk must not go on reading."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._text = codecs.getincrementaldecoder("utf-8")()
        self._decoder = json.JSONDecoder()
        self._buf = ""
        self._pos = 0  # in _buf
        self._dropped = 0  # characters of the document before _buf
        self._dropped_lines = 0  # newlines among them
        self._dropped_line_start = 0  # the document offset after the last of them
        self._eof = False
        self._bytes_read = 0

    def peek(self) -> str:
        """The next character that is not whitespace, not consumed; "" at the end of the document."""
        while True:
            buf, pos = self._buf, self._pos
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            self._pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self._read():
                return ""

    def value(self) -> Any:
        """The next value, whole (as `json.loads` would build it)."""
        self.peek()
        while True:
            try:
                value, end = self._decoder.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as e:
                if self._eof:
                    raise self._error(e.msg, e.pos) from None
                self._read_more()
                continue
            if not self._eof and (end == len(self._buf) or _cut_number(value, self._buf, end)):
                self._read_more()  # the next chunk may go on with it: `1` of `12`, `0` of `0.5`
                continue
            self._pos = end
            return value

    def members(self) -> Iterator[str]:
        """The keys of the object that starts here; after each, the caller reads its value."""
        self._expect("{", "Expecting value")
        if self.peek() == "}":
            self._pos += 1
            return
        while True:
            if self.peek() != '"':
                raise self._error("Expecting property name enclosed in double quotes", self._pos)
            key: str = self.value()
            self._expect(":", "Expecting ':' delimiter")
            yield key
            if self._closes("}"):
                return

    def elements(self) -> Iterator[None]:
        """Once per element of the array that starts here; the caller reads each element."""
        self._expect("[", "Expecting value")
        if self.peek() == "]":
            self._pos += 1
            return
        while True:
            yield None
            if self._closes("]"):
                return

    def end(self) -> None:
        """Nothing but whitespace may follow the document."""
        if self.peek():
            raise self._error("Extra data", self._pos)

    def _closes(self, close: str) -> bool:
        """Past the comma after an item (False) or the bracket that closes its container (True)."""
        next_char = self.peek()
        if next_char not in (",", close):
            raise self._error("Expecting ',' delimiter", self._pos)
        self._pos += 1
        return next_char == close

    def _expect(self, char: str, message: str) -> None:
        if self.peek() != char:
            raise self._error(message, self._pos)
        self._pos += 1

    def _error(self, message: str, pos: int) -> JsonStreamError:
        """Worded as `json.JSONDecodeError` words it, positions counted over the whole document."""
        newlines = self._buf.count("\n", 0, pos)
        line_start = (
            self._dropped + self._buf.rindex("\n", 0, pos) + 1 if newlines else self._dropped_line_start
        )
        where = self._dropped + pos
        line, column = self._dropped_lines + newlines + 1, where - line_start + 1
        return JsonStreamError(f"{message}: line {line} column {column} (char {where})")

    def _read(self) -> bool:
        """Append the next chunk (dropping what was consumed); False at the end of the document."""
        if self._eof:
            return False
        chunk = next(self._chunks, None)
        pending = len(self._text.getstate()[0])  # bytes of a character the last chunk cut
        try:
            text = self._text.decode(chunk or b"", final=chunk is None)
        except UnicodeDecodeError as e:
            raise self._not_utf8(e, self._bytes_read - pending) from None
        self._eof = chunk is None
        self._bytes_read += len(chunk or b"")
        consumed = self._buf[: self._pos]
        if (newlines := consumed.count("\n")) > 0:
            self._dropped_lines += newlines
            self._dropped_line_start = self._dropped + consumed.rindex("\n") + 1
        self._dropped += self._pos
        self._buf = self._buf[self._pos :] + text
        self._pos = 0
        return True

    @staticmethod
    def _not_utf8(e: UnicodeDecodeError, start: int) -> JsonStreamError:
        """`e` worded as decoding the whole file words it: positions in the file, not in a chunk."""
        first, last = start + e.start, start + e.end - 1
        bad = (
            f"byte 0x{e.object[e.start]:02x} in position {first}"
            if first == last
            else (f"bytes in position {first}-{last}")
        )
        return JsonStreamError(f"'{e.encoding}' codec can't decode {bad}: {e.reason}")

    def _read_more(self) -> None:
        """At least double what is buffered ahead of the cursor: a value longer than a chunk costs
        a logarithmic number of attempts, not one per chunk."""
        wanted = 2 * max(len(self._buf) - self._pos, CHUNK_BYTES)
        while len(self._buf) - self._pos < wanted and self._read():
            pass


def _cut_number(value: Any, buf: str, end: int) -> bool:
    """Whether a number decoded up to `end` may be the prefix of a longer one the buffer cuts."""
    return type(value) in (int, float) and _NUMBER_TAIL.match(buf, end) is not None
