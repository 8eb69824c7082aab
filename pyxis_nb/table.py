"""A table of results, shown as a table: HTML where a notebook or the website
draws it (the website stacks a wide one on a phone, one row a block), and
aligned text where only text is shown (a terminal, nbval's comparison).

``px.Table(["model", "H"], [["Qwen3-1.7B", 16], ...])`` as a cell's last
line displays it; ``print(table)`` prints the text. Numbers are right-aligned
and written with ``format`` (``"{:,}"`` by default: 131,072); text is
left-aligned.
"""

from __future__ import annotations

import html
from numbers import Number
from typing import Sequence

from ._checks import check_needs

__all__ = ["Table"]


class Table:
    """Rows of values under a header.

    Parameters
    ----------
    header : sequence of str, one a column
    rows : sequence of sequences, each as long as ``header``
    formats : mapping of column name to a format string, optional
        (``{"GiB": "{:.2f}"}``); a number's default is ``"{:,}"``
    """

    def __init__(self, header: Sequence[str], rows: Sequence[Sequence],
                 formats: dict[str, str] | None = None):
        self.header = [str(h) for h in header]
        formats = dict(formats or {})
        unknown = sorted(set(formats) - set(self.header))
        check_needs(not unknown, "formats", f"columns of the header "
                    f"{self.header}", f"got {unknown}")
        self.rows = []
        for i, row in enumerate(rows):
            row = list(row)
            check_needs(len(row) == len(self.header), f"rows[{i}]",
                        f"{len(self.header)} values, one a column",
                        f"got {len(row)}")
            self.rows.append(row)
        self._formats = [formats.get(h) for h in self.header]

    def _cell(self, value, k: int) -> str:
        if isinstance(value, Number) and not isinstance(value, bool):
            return (self._formats[k] or "{:,}").format(value)
        return "-" if value is None else str(value)

    def _numeric(self, k: int) -> bool:
        return any(isinstance(r[k], Number) and not isinstance(r[k], bool)
                   for r in self.rows)

    def __repr__(self) -> str:
        cells = [[self._cell(v, k) for k, v in enumerate(r)]
                 for r in self.rows]
        widths = [max(len(h), *(len(c[k]) for c in cells))
                  for k, h in enumerate(self.header)]
        right = [self._numeric(k) for k in range(len(self.header))]

        def line(values):
            return "  ".join(v.rjust(w) if r else v.ljust(w) for v, w, r
                             in zip(values, widths, right)).rstrip()
        return "\n".join([line(self.header)] + [line(c) for c in cells])

    def _repr_html_(self) -> str:
        """A ``<table>``: the classes Sphinx gives a table (``table``,
        ``head``), so the website styles it, and stacks it on a phone, as it
        does the book's own tables."""
        right = [self._numeric(k) for k in range(len(self.header))]

        def td(value, k):
            style = ' style="text-align: right"' if right[k] else ""
            return f"<td{style}>{html.escape(self._cell(value, k))}</td>"
        head = "".join(f'<th class="head">{html.escape(h)}</th>'
                       for h in self.header)
        body = "".join("<tr>" + "".join(td(v, k) for k, v in enumerate(r))
                       + "</tr>" for r in self.rows)
        return (f'<table class="table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")
