"""A two-column HTML diff of one symbol: line numbers and code of each version, changed
lines marked, runs of unchanged lines folded away, a long one closed behind one click.
Every piece of code is escaped."""

from __future__ import annotations

import difflib
import html
import re

from annotations.wording import counted

CONTEXT_LINES = 3
MAX_ROWS = 400
"""Rows shown per diff; a note says how many more there were."""
OPEN_UP_TO_ROWS = 60
"""A diff of more rows (a screen's worth) starts closed, its summary saying how many."""
_INTRALINE_MAX = 400  # longer line pairs are marked whole, not character by character
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def side_by_side(old: str, new: str, old_start: int, new_start: int) -> str:
    """``old`` (starting at line ``old_start``) beside ``new`` as an HTML table, inside a
    closed ``<details>`` when it has more than `OPEN_UP_TO_ROWS` rows."""
    before, after = _lines(old), _lines(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    rows: list[str] = []
    total, shown_to = 0, 0  # rows produced; the line of ``old`` shown up to
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        rows.append(_fold(group[0][1] - shown_to))
        for tag, i1, i2, j1, j2 in group:
            for row in _rows(tag, before[i1:i2], after[j1:j2], old_start + i1, new_start + j1):
                total += 1
                if total <= MAX_ROWS:
                    rows.append(row)
        shown_to = group[-1][2]
    rows.append(_fold(len(before) - shown_to))
    if total > MAX_ROWS:
        rows.append(_note(f"… {total - MAX_ROWS} more rows not shown"))
    if total == 0:
        rows.append(_note("No line differs."))
    table = ('<table class="sbs"><colgroup><col class="ln"><col><col class="ln"><col>'
             "</colgroup><tbody>" + "".join(rows) + "</tbody></table>")
    if total <= OPEN_UP_TO_ROWS:
        return table
    summary = html.escape(f"show the diff: {counted(total, 'line')}")
    return f'<details class="diff"><summary>{summary}</summary>{table}</details>'


def _fold(unchanged: int) -> str:
    if unchanged <= 0:
        return ""
    return _note(f"⋯ {counted(unchanged, 'unchanged line')}")


def _note(text: str) -> str:
    return f'<tr class="fold"><td colspan="4">{html.escape(text)}</td></tr>'


def _lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").expandtabs(4)
    return [_CONTROL.sub("\ufffd", line) for line in text.split("\n")]


def _rows(tag: str, old: list[str], new: list[str], old_line: int, new_line: int) -> list[str]:
    if tag == "equal":
        return [_row("eq", old_line + k, _code(line), new_line + k, _code(line))
                for k, line in enumerate(old)]
    rows = []
    for k in range(max(len(old), len(new))):
        left = old[k] if k < len(old) else None
        right = new[k] if k < len(new) else None
        if left is not None and right is not None:
            left_html, right_html = _intraline(left, right)
        else:
            left_html = _code(left) if left is not None else ""
            right_html = _code(right) if right is not None else ""
        rows.append(_row(
            "ch", old_line + k if left is not None else None, left_html,
            new_line + k if right is not None else None, right_html,
            left is None, right is None,
        ))
    return rows


def _row(
    kind: str, old_number: int | None, old_html: str, new_number: int | None, new_html: str,
    old_empty: bool = False, new_empty: bool = False,
) -> str:
    old_class = "empty" if old_empty else ("del" if kind == "ch" else "")
    new_class = "empty" if new_empty else ("add" if kind == "ch" else "")
    return (
        f'<tr><td class="ln">{old_number or ""}</td><td class="c {old_class}">{old_html}</td>'
        f'<td class="ln">{new_number or ""}</td><td class="c {new_class}">{new_html}</td></tr>'
    )


def _code(line: str) -> str:
    return html.escape(line, quote=True)


def _intraline(old: str, new: str) -> tuple[str, str]:
    """Both lines escaped, the words that differ marked (``<del>``/``<ins>``); lines that
    have little in common are left to their row's colour."""
    if len(old) + len(new) > _INTRALINE_MAX:
        return _code(old), _code(new)
    before, after = _TOKEN.findall(old), _TOKEN.findall(new)
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    if matcher.ratio() < 0.5:
        return _code(old), _code(new)
    left, right = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        removed, added = _code("".join(before[i1:i2])), _code("".join(after[j1:j2]))
        if tag == "equal":
            left.append(removed)
            right.append(added)
            continue
        if removed:
            left.append(f"<del>{removed}</del>")
        if added:
            right.append(f"<ins>{added}</ins>")
    return "".join(left), "".join(right)
