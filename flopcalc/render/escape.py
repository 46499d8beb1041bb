"""What a user-controlled string may carry into the output, and what it may not.

A model's title, a file name, an accelerator's title or a note is written by whoever wrote the
file, and it reaches a terminal or a spreadsheet through every format. Two rules, applied by the
renderers (tables and plain lines in `output`, CSV in `data`, JSON and YAML in `data`, stderr
through the command line's `say`), never by the code that builds reports:

- **Control characters are shown, not obeyed.** C0 (ESC, BEL, CR, ...), DEL, C1 (`\\x9b`, a
  one-byte CSI) and the invisible bidirectional overrides (U+202A–U+202E, U+2066–U+2069, U+200E,
  U+200F, U+061C) and line separators (U+2028, U+2029) are written as their Python escape
  (`\\x1b`, `\\u202e`), so no escape sequence, OSC title or reordered text reaches a terminal.
  A newline or tab stays where the layout puts one; inside a table cell or a one-line message
  it is escaped too. JSON and YAML keep the exact string, escaped in their own syntax.
- **No spreadsheet formula in a CSV cell.** A text cell starting with `=`, `+`, `-`, `@`, a tab
  or a carriage return gets a leading `'` (OWASP's advice on CSV injection); a number, negative
  ones included, is written as it is.
"""

from __future__ import annotations

import re

# DEL and C1; the bidirectional controls and the Unicode line and paragraph separators: what
# json.dumps and PyYAML (allow_unicode) let through raw. With C0, every hidden character.
_RAW = "\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_HIDDEN = "\x00-\x1f" + _RAW
_PATTERNS: dict[str, re.Pattern[str]] = {}
_FORMULA = tuple("=+-@\t\r")
_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"


def _pattern(keep: str) -> re.Pattern[str]:
    """Compiled on first use (start-up matters): the hidden characters but those in `keep`
    (layout characters, \\n and \\t: nothing a character class must escape); `raw`: DEL, C1
    and the rest that JSON and YAML let through; `number`: a number as a spreadsheet reads it."""
    pattern = _PATTERNS.get(keep)
    if pattern is None:
        source = {"raw": f"[{_RAW}]", "number": _NUMBER}.get(keep) or (
            f"(?![{keep}])[{_HIDDEN}]" if keep else f"[{_HIDDEN}]")
        pattern = _PATTERNS[keep] = re.compile(source)
    return pattern


def _escape(match: re.Match[str]) -> str:
    return ascii(match.group())[1:-1]  # '\x1b', '\x9b', '\u202e': as Python writes them


def visible(text: str, keep: str = "\n\t") -> str:
    """`text` with every control character (see the module docstring) except those in `keep`
    written as its escape: `'\\x1b[31m'` → `'\\\\x1b[31m'`."""
    pattern = _pattern(keep)
    return pattern.sub(_escape, text) if pattern.search(text) else text


def one_line(text: str) -> str:
    """`text` for a table cell, a title or a message: every control character escaped,
    newlines and tabs included."""
    return visible(text, "")


def json_safe(text: str) -> str:
    """A JSON document with the characters JSON lets through raw (DEL, C1, the bidirectional
    controls; json.dumps escapes C0 itself) written as `\\uXXXX`: they occur only inside
    strings, so the document still decodes to the same values."""
    raw = _pattern("raw")
    return raw.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if raw.search(text) else text


def has_raw(text: str) -> bool:
    """Whether a JSON or YAML document holds a character its dumper let through raw (every
    one but C0, which both escape: a C0 character there is a newline of the layout)."""
    return _pattern("raw").search(text) is not None


def csv_text(text: str) -> str:
    """A text cell of a CSV: control characters escaped (a newline and tab kept: the csv
    module quotes the cell), and a leading `'` where a spreadsheet would read a formula."""
    text = visible(text)
    if text.startswith(_FORMULA) and not _pattern("number").fullmatch(text):
        return "'" + text
    return text
