"""GitHub Actions workflow commands: a summary, then one annotation per result worth a mention.

GitHub shows the first 10 annotations of each level a step prints (and 50 a job), in the
order printed: what concerns the whole run (files not read, a target not indexed, the
summary) comes first, so it is shown however many refs are stale; then, when a level has
more, a notice of how many are in the log only and where to see them all.

Each command is exactly one line: values are escaped per GitHub's rules (``%``, CR, LF in
the message; additionally ``:`` and ``,`` in properties) and any other character that some
reader could take for a line break is replaced by a space, so no hostile claim text or ref
can start a second workflow command.
"""

from __future__ import annotations

import re

from annotations.reports._common import (
    display_ref,
    level,
    message_beside_ref,
    summary_line,
    unindexed_target_note,
    waiver_note,
)
from annotations.results import CheckReport, InputError, RefResult
from annotations.wording import counted, of_count

MAX_CLAIM_TEXT = 200
"""Characters of claim text quoted in an annotation's message."""
SHOWN_PER_LEVEL = 10
"""Annotations of each level GitHub shows of a step (actions/toolkit docs/problem-matchers.md,
"Limitations": 10 warning and 10 error annotations per step, 50 per job)."""

# Line breaks other than CR/LF (VT, FF, FS, GS, RS, NEL, LS, PS) and the other C0/C1 controls.
_OTHER_BREAKS = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
_DATA_ESCAPES = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY_ESCAPES = {**_DATA_ESCAPES, ":": "%3A", ",": "%2C"}


def escape_data(value: str) -> str:
    """Escape a workflow command's message."""
    return _escape(value, _DATA_ESCAPES)


def escape_property(value: str) -> str:
    """Escape a workflow command's property value (``file``, ``title``)."""
    return _escape(value, _PROPERTY_ESCAPES)


def _escape(value: str, table: dict[str, str]) -> str:
    value = _OTHER_BREAKS.sub(" ", value)
    return "".join(table.get(ch, ch) for ch in value)


def command(name: str, message: str, properties: dict[str, str] | None = None) -> str:
    """One workflow command line: ``::name key=value,...::message``."""
    props = ",".join(f"{key}={escape_property(value)}" for key, value in (properties or {}).items())
    head = f"{name} {props}" if props else name
    return f"::{head}::{escape_data(message)}"


def render(report: CheckReport) -> str:
    """Each annotation file not read, the target not indexed, a summary notice, the notice
    of those GitHub does not show (when there are), then one annotation per failing,
    stale, waived or unindexed result."""
    lines = [_input_error(error) for error in report.input_errors]
    if report.unindexed_targets:
        lines.append(command("error", unindexed_target_note(report),
                             {"title": "annotate: target not indexed"}))
    lines.append(command("notice", summary_line(report)))
    results = [_annotation(result, name) for result in report.results if (name := level(result))]
    beyond = _not_shown([*lines, *results])
    if beyond is not None:
        lines.append(command("notice", beyond,
                             {"title": "annotate: annotations GitHub does not show"}))
    return "\n".join([*lines, *results])


def _not_shown(lines: list[str]) -> str | None:
    """What says how many of the annotations ``lines`` (and itself, a notice) GitHub does
    not show, and where to see them all; None when it shows every one."""
    printed = {name: sum(line.startswith(f"::{name}") for line in lines)
               for name in ("error", "warning", "notice")}
    if max(printed.values()) <= SHOWN_PER_LEVEL:
        return None
    printed["notice"] += 1
    over = {name: count for name, count in printed.items() if count > SHOWN_PER_LEVEL}
    hidden = sum(count - SHOWN_PER_LEVEL for count in over.values())
    levels = " and ".join(counted(count, name) for name, count in over.items())
    return (f"GitHub shows the first {SHOWN_PER_LEVEL} annotations of each level a step "
            f"prints: of {levels}, {hidden} {of_count(hidden, 'is', 'are')} in this log only; "
            "'annotate check --format markdown' (the job summary) or '--format sarif' lists "
            "every one")


def _annotation(result: RefResult, name: str) -> str:
    properties = {"file": result.file} if result.file else {}
    if result.line > 0:
        properties["line"] = str(result.line)
    properties["title"] = f"annotate: {result.status.value} claim {result.claim}"
    return command(name, message(result), properties)


def _input_error(error: InputError) -> str:
    properties = {"file": error.file}
    if error.line:
        properties["line"] = str(error.line)
    properties["title"] = "annotate: annotation file not read"
    return command("error", f"{error.message}; its claims are not checked", properties)


def message(result: RefResult) -> str:
    """The annotation text: what happened to which ref, then the claim and any details."""
    head = f"{display_ref(result)} is {result.status.value}"
    if result.changes:
        head += f" ({', '.join(result.changes)})"
    message = message_beside_ref(result)
    if message:
        head += f": {message}"
    lines = [head, f"claim {result.claim} of {result.article}: {_shorten(result.claim_text)}"]
    if result.candidates:
        lines.append(f"candidates: {', '.join(result.candidates)}")
    note = waiver_note(result)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CLAIM_TEXT else text[: MAX_CLAIM_TEXT - 3] + "..."
