"""GitHub Actions workflow commands: a summary, then one annotation per result worth a mention.

GitHub shows the first 10 annotations of each level a step prints (and 50 a job), in the
order printed: what concerns the whole run (files not read, a target not indexed, the
summary) comes first, so it is shown however many refs are stale.

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

MAX_CLAIM_TEXT = 200
"""Characters of claim text quoted in an annotation's message."""

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
    """Each annotation file not read, the target not indexed, a summary notice, then one
    annotation per failing, stale, waived or unindexed result."""
    lines = [_input_error(error) for error in report.input_errors]
    if report.unindexed_targets:
        lines.append(command("warning", unindexed_target_note(report),
                             {"title": "annotate: target not indexed"}))
    lines.append(command("notice", summary_line(report)))
    lines += [_annotation(result, name) for result in report.results if (name := level(result))]
    return "\n".join(lines)


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
