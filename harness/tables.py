"""Reading the tables Steward prints, whatever their form: a Markdown table (status.md), Rich's
columns aligned with spaces (`steward status`) or a fenced block of aligned columns (the web
UI's details). Tests compare words, not box-drawing."""

from __future__ import annotations

import re


def cells(line: str) -> list[str]:
    """A table line's cells: a Markdown table's, or columns aligned with two spaces or more."""
    if "|" in line:
        return [c.strip() for c in line.strip().strip("|").split("|")]
    return re.split(r"\s{2,}", line.strip())


def table_of(text: str, first: str) -> list[list[str]]:
    """The rows (header first) of the table in `text` whose header's first cell is `first`,
    up to the first blank line or fence; rule lines are left out."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if cells(line)[0] == first)
    rows = []
    for line in lines[start:]:
        if not line.strip() or line.strip() == "```":
            break
        if not set(line.strip()) <= set("|-─ "):
            rows.append(cells(line))
    return rows
