"""Tables for people: rich renderables laid out to fit the terminal, and the text they become.

rich is imported only here and in the table functions, so `--format json` and `--format csv`
never load it. A table never splits a number: numeric columns do not wrap; when the full form
(exact and rounded) does not fit the width, the table is laid out again with the rounded form
only, and the caption says so (JSON and CSV keep every count exact); a figure of 16 digits or
more is shown rounded in any layout, with a note under the first table that has one (the rule
is in `text`). Output to a terminal is
fitted to its width; piped output to $COLUMNS when set, else to the table's natural width. A
table with too many columns for the width becomes one record per row. Colour and bold only on
a terminal without NO_COLOR; a stream that cannot encode `²` or `·` gets ASCII. Every string
a table or a line shows passes `escape` on its way in (cells and titles one line
each), so a title or file name cannot drive the terminal.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable, Optional, Sequence, TextIO

from .escape import one_line, visible
from .text import ROUNDED_NOTE, Numbers

_TITLE_WIDTH = 60  # a table is at least as wide as its title, up to this
COMPACT_NOTE = ("Numbers rounded to fit the width; --format json or csv (or a wider terminal) "
                "gives them exactly.")
_ASCII = {"²": "^2", "³": "^3", "·": "*", "×": "x", "≈": "~", "→": "->", "≥": ">=", "≤": "<=",
          "−": "-", "Σ": "sum", "√": "sqrt", "µ": "u", "…": "...", "ᵀ": "^T", "─": "-",
          "━": "-", "│": "|", "┃": "|", "╸": "-", "█": "#", "▏": "|", "▎": "|", "▍": "|",
          "▌": "|", "▋": "|", "▊": "|", "▉": "|", "≠": "!=", "′": "'", "—": "-", "–": "-"}


def new_table(title: str, columns: Sequence[str], caption: Optional[str] = None,
              numeric_from: int = 1, numeric_to: Optional[int] = None) -> Any:
    """A table whose columns from `numeric_from` on (up to `numeric_to`, when text follows the
    numbers) are numbers: right-aligned (as rich-cli does) and never wrapped."""
    from rich import box

    title = one_line(title)
    table = _table_class()(
        title=title, caption=None if caption is None else visible(caption), box=box.SIMPLE_HEAD,
        title_justify="left", caption_justify="left", pad_edge=False, show_edge=False,
        expand=False, collapse_padding=True, min_width=min(len(title), _TITLE_WIDTH))
    for i, name in enumerate(columns):
        numeric = numeric_from <= i < (len(columns) if numeric_to is None else numeric_to)
        # `render` never lays a table out narrower than its numbers, so they are never cut.
        # a column name may span lines (a unit under it): newlines kept, every other control
        # character escaped
        table.add_column(visible(name, "\n"), justify="right" if numeric else "left",
                         no_wrap=numeric,
                         overflow="ellipsis" if numeric else "fold")
    return table


_TABLE: list[Any] = []


def _table_class() -> Any:
    """rich's Table, whose rows' strings are escaped (`escape.one_line`) as they are added
    (defined on first use: rich is imported only for tables)."""
    if not _TABLE:
        from rich.table import Table

        class SafeTable(Table):
            def add_row(self, *renderables: Any, **kw: Any) -> None:
                super().add_row(*(one_line(r) if isinstance(r, str) else r
                                  for r in renderables), **kw)

        _TABLE.append(SafeTable)
    return _TABLE[0]


def heading(title: str, rest: str) -> Any:
    """A bold title followed by plain text."""
    from rich.text import Text

    return Text.assemble((one_line(title), "bold"), visible(rest))


def block(label: str, lines: Iterable[str]) -> Any:
    """A dim label, then one line per item."""
    from rich.text import Text

    return Text.assemble((label, "dim"), "".join(f"\n{visible(line)}" for line in lines))


def conventions_text(lines: Sequence[str]) -> Any:
    """The counting conventions, printed under every table output."""
    return block("How this was counted:", (f"- {line}" for line in lines))


def plain(text: str) -> Any:
    from rich.text import Text

    return Text(visible(text))


def _target_width(stream: TextIO) -> Optional[int]:
    """The width to fit: the terminal's, or $COLUMNS for piped output (None: no limit)."""
    if stream.isatty():
        import shutil

        return shutil.get_terminal_size().columns
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def _cell_widths(table: Any) -> list[tuple[int, int]]:
    """(minimum, natural) width of each column: a numeric column its widest cell (a number is
    never cut), a text column its longest word (a word is never split) and its longest cell."""
    out = []
    for column in table.columns:
        cells = [str(cell) for cell in column.cells] + [str(column.header)]
        natural = max(len(line) for cell in cells for line in cell.splitlines() or [""])
        if column.no_wrap:
            out.append((natural, natural))
        else:
            out.append((max(len(word) for cell in cells for word in cell.split() or [""]),
                        natural))
    return out


def _overhead(table: Any) -> int:
    """Columns' padding and separators: the table's natural width minus its columns'. Every
    table is `new_table`'s: no edges, one space between columns and, the padding collapsed,
    one more, so 2·(n − 1) for n columns; a title wider than that sets the table's min_width.
    Worked out here rather than measured by rich (a Console per table, ~10 ms a run);
    tests/cli/test_render_overhead.py holds it to rich's measure."""
    natural = sum(n for _, n in _cell_widths(table))
    gaps = 2 * (len(table.columns) - 1) if table.columns else 0
    return max(natural + gaps, table.min_width or 0) - natural


def _fits(items: list[Any], limit: int) -> bool:
    from rich.table import Table

    return all(_overhead(t) + sum(m for m, _ in _cell_widths(t)) <= limit
               for t in items if isinstance(t, Table))


def _lay_out(items: list[Any], limit: int) -> None:
    """Fix each table's column widths for `limit` columns: numbers at full width, labels
    sharing what is left (never below their longest word)."""
    from rich.table import Table

    for table in items:
        if not isinstance(table, Table):
            continue
        widths = _cell_widths(table)
        room = limit - _overhead(table)
        if sum(n for _, n in widths) <= room:
            continue
        spare = room - sum(m for m, _ in widths)
        wants = [n - m for m, n in widths]
        total = sum(wants) or 1
        for column, (low, high), want in zip(table.columns, widths, wants):
            column.width = min(high, low + spare * want // total)


def _as_records(table: Any, width: int) -> Any:
    """A table too wide for any column layout, laid out as one record per row instead:
    'name: header value, header value, ...', wrapped between fields, never inside one."""
    import textwrap

    from rich.text import Text

    headers = [" ".join(str(c.header).split()) for c in table.columns]  # a header on one line
    columns = [[" ".join(str(cell).split()) for cell in c.cells] for c in table.columns]
    lines = [str(table.title)] if table.title else []
    keep = "\u00a0"  # a field's words stay on one line: wrap only between fields
    for row in zip(*columns):
        fields = [(f"{h} {v}" if h else v).replace(" ", keep)
                  for h, v in zip(headers[1:], row[1:]) if v]
        text = f"{row[0]}: " + ", ".join(fields) if row[0] else ", ".join(fields)
        lines += [line.replace(keep, " ") for line in textwrap.wrap(
            text, width, subsequent_indent="  ", break_long_words=False,
            break_on_hyphens=False)]
    if table.caption:
        lines += textwrap.wrap(str(table.caption), width, break_long_words=False)
    return Text("\n".join(lines))


def _note_rounded(items: list[Any], rounded: set[str]) -> None:
    """The note that figures of 16 digits or more are rounded, under the first table that
    shows one."""
    from rich.table import Table

    for table in items:
        if isinstance(table, Table) and any(str(cell) in rounded for column in table.columns
                                            for cell in column.cells):
            table.caption = f"{table.caption} {ROUNDED_NOTE}" if table.caption else ROUNDED_NOTE
            return


def _minimum(table: Any) -> int:
    return _overhead(table) + sum(m for m, _ in _cell_widths(table))


def render(build: Callable[[Numbers], list[Any]], stream: TextIO) -> str:
    """The text of the renderables `build` makes, fitted to `stream` (see the module docstring).
    Exact numbers are kept as long as the tables fit, wrapping their labels if need be; then
    the rounded forms; a table with too many columns for the width becomes one record per row;
    a number is never cut."""
    from rich.console import Console
    from rich.table import Table

    limit = _target_width(stream)
    nums = Numbers(compact=False)
    items = build(nums)
    if limit is not None and not _fits(items, limit):
        items = build(Numbers(compact=True))
        tables = [item for item in items if isinstance(item, Table)]
        # Under the first table without a caption, else after the first table's own caption.
        first = next((t for t in tables if t.caption is None), tables[0] if tables else None)
        if first is not None:
            first.caption = f"{first.caption} {COMPACT_NOTE}" if first.caption else COMPACT_NOTE
        items = [_as_records(i, limit) if isinstance(i, Table) and _minimum(i) > limit else i
                 for i in items]
    elif nums.rounded:
        _note_rounded(items, nums.rounded)
    tables = [t for t in items if isinstance(t, Table)]
    widest = max((_overhead(t) + sum(n for _, n in _cell_widths(t)) for t in tables), default=0)
    if limit is None:
        width = max(100, widest)
    else:
        width = limit
        _lay_out(items, width)
    import io

    buffer = io.StringIO()
    console = Console(file=buffer, width=width, highlight=False, soft_wrap=False, markup=False,
                      force_terminal=styled(stream), emoji=False)
    plain = not styled(stream)
    for i, item in enumerate(items):
        if i:
            console.print()
        grid = _grid(item) if plain and isinstance(item, Table) else None
        if grid is None:
            console.print(item)
            continue
        # the title and caption through rich (they wrap), the grid of cells written here
        from rich.text import Text

        width = len(grid[0])
        if item.title:
            console.print(Text(str(item.title)), justify=item.title_justify, width=width)
        console.file.write("".join(f"{line}\n" for line in grid))
        if item.caption:
            console.print(Text(str(item.caption)), justify=item.caption_justify, width=width)
    return encodable(buffer.getvalue(), stream)


# Characters that take one cell on a terminal: ASCII and the symbols flopcalc prints (a wide
# character, CJK or emoji in a file name, sends the table to rich, which measures cells).
_NARROW = frozenset(_ASCII)


def _grid(table: Any) -> Optional[list[str]]:
    """The header, its rule and the rows of one of `new_table`'s tables, as rich writes them
    without colour, when every column is at its natural width (no cell wraps): each cell
    justified in its column, two spaces between columns, a rule of `─` under the header.
    Written here because rich's layout of a table of a few hundred cells cost about a fifth of
    a run (docs/startup.md); tests/cli/test_render_grid.py holds it to rich's output for every
    table the commands print. None: anything else (a fixed or minimum width, a wide
    character, a cell that is not text, sections), which rich lays out."""
    columns = table.columns
    if not columns or not table.show_header or table.show_lines or table.show_footer \
            or any(row.end_section for row in table.rows):
        return None
    texts = []
    for column in columns:
        if column.width is not None or column.min_width is not None \
                or column.max_width is not None or not isinstance(column.header, str):
            return None
        cells = column._cells
        if not all(isinstance(cell, str) for cell in cells):
            return None
        texts.append((column.header.split("\n"), cells))
    for header, cells in texts:
        for text in (*header, *cells):
            if not text.isascii() and not all(ch.isascii() or ch in _NARROW for ch in text):
                return None
            if "\n" in text:
                return None
    widths = [max(len(line) for line in (*header, *cells)) for header, cells in texts]
    if not all(widths):
        return None
    gaps = len(widths) - 1  # a divider and a column's right padding between two columns
    if table.min_width is not None and sum(widths) + 2 * gaps < table.min_width:
        # a table narrower than its title widens each column by its share of the room, with
        # rich's own division of it (its widths count the right padding: one, none for the last)
        from rich._ratio import ratio_distribute

        padded = [w + 1 for w in widths[:-1]] + [widths[-1]]
        extra = ratio_distribute(table.min_width - gaps - sum(padded), padded)
        widths = [w + e for w, e in zip(widths, extra)]
    total = sum(widths) + 2 * gaps
    # right-justified text loses its trailing spaces first, as rich's `Lines.justify` does
    pads = [(lambda s, w: s.rstrip().rjust(w)) if column.justify == "right" else str.ljust
            for column in columns]
    if any(column.justify not in ("left", "right") for column in columns):
        return None
    lines = []
    height = max(len(header) for header, _ in texts)
    for k in range(height):  # a header is aligned to the bottom of its row, as rich does
        lines.append("  ".join(pad(header[k - height + len(header)]
                                   if k >= height - len(header) else "", w)
                               for pad, w, (header, _) in zip(pads, widths, texts)))
    lines.append("\u2500" * total)
    for row in zip(*(cells for _, cells in texts)):
        lines.append("  ".join(pad(cell, w) for pad, w, cell in zip(pads, widths, row)))
    return lines


def styled(stream: TextIO) -> bool:
    """Colour and bold only on a terminal, and not with NO_COLOR set or TERM=dumb."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and \
        os.environ.get("TERM") != "dumb"


# "label   value": where the value starts; a number and its unit stay on one line ('305.7 GB',
# '1.2 ms', '4,096 tokens'). Compiled on first use: only plain-line output needs them.
_VALUE_COLUMN = r"^(\s*\S.*?\s{2,})\S"
_UNIT_SPACE = (r"(?<=\d) (?=(?:[kKMGTPE]i?)?B\b|FLOP|tokens?\b|steps?\b|[mµn]?s\b|min\b|h\b|"
               r"days?\b|years?\b)")


def lines(text: str, stream: TextIO) -> str:
    """Plain lines (--brief, check) as written: control characters escaped, wrapped to the
    width (`wrapped`), encodable by `stream`."""
    return encodable(wrapped(visible(text), stream), stream)


def wrapped(text: str, stream: TextIO) -> str:
    """Plain lines (--brief, check) fitted to the width tables use (the terminal's, or $COLUMNS
    for piped output; no limit otherwise): a long line breaks between words, never inside a
    number, and goes on under its value column ("label   value ...") or two spaces in."""
    limit = _target_width(stream)
    if limit is None:
        return text
    import re
    import textwrap

    out = []
    for line in text.splitlines():
        if len(line) <= limit:
            out.append(line)
            continue
        column = re.match(_VALUE_COLUMN, line)
        indent = " " * (len(column.group(1)) if column and len(column.group(1)) < limit // 2
                        else 2)
        glued = re.sub(_UNIT_SPACE, "\0", line)
        out += [part.replace("\0", " ") for part in textwrap.wrap(
            glued, limit, subsequent_indent=indent, break_long_words=False,
            break_on_hyphens=False)] or [line]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def encodable(text: str, stream: TextIO) -> str:
    """`text` as `stream` can encode it: unchanged, or with ASCII stand-ins for the symbols
    flopcalc prints (`²` → `^2`, `·` → `*`), anything else replaced."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    text = "".join(_ASCII.get(ch, ch) for ch in text)
    try:
        return text.encode(encoding, errors="replace").decode(encoding)
    except LookupError:
        return text.encode("ascii", errors="replace").decode("ascii")

