"""``{"results": [...], "claims": [...], "summary": {...}, "input_errors": [...]}``: every
RefResult field, keys in field order; each claim's ``article``, ``claim`` and ``status`` (its
worst ref's); each annotation file that could not be read as ``file``, ``line`` and
``message``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, fields
from typing import Any

from annotations.results import CheckReport, RefResult

RESULT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(RefResult))
"""The keys of each result object, in output order (RefResult's field order)."""


def result_to_dict(result: RefResult) -> dict[str, Any]:
    """One result as JSON-ready data: the status as its value, tuples as lists."""
    data: dict[str, Any] = {}
    for key in RESULT_KEYS:
        value = getattr(result, key)
        if isinstance(value, tuple):
            value = list(value)
        data[key] = value
    data["status"] = result.status.value
    return data


def report_to_dict(report: CheckReport) -> dict[str, Any]:
    return {
        "results": [result_to_dict(result) for result in report.results],
        "claims": [{"article": article, "claim": claim, "status": status.value}
                   for (article, claim), status in report.claim_statuses().items()],
        "summary": report.summary(),
        "input_errors": [asdict(error) for error in report.input_errors],
    }


CHUNK_CHARS = 1 << 16
"""About how many characters `chunks` gathers before it gives them."""


def render(report: CheckReport) -> str:
    """The report as indented JSON, non-ASCII text kept as is."""
    return "".join(chunks(report))


def chunks(report: CheckReport) -> Iterator[str]:
    """`render`'s text in pieces of about `CHUNK_CHARS` characters, as it is encoded:
    whole, the JSON of 35,000 refs (40 MB) and the millions of strings ``json.dumps``
    joins into it were most of ``check --format json``'s memory."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False)
    pending: list[str] = []
    size = 0
    for piece in encoder.iterencode(report_to_dict(report)):
        pending.append(piece)
        size += len(piece)
        if size >= CHUNK_CHARS:
            yield "".join(pending)
            pending, size = [], 0
    yield "".join(pending)
