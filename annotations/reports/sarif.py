"""SARIF 2.1.0 log for code-scanning tools: one rule per status, one result per non-fresh ref."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any
from urllib.parse import quote

from annotations.reports._common import (
    STATUS_HELP,
    display_ref,
    is_waived,
    level,
    unindexed_target_note,
    waiver_note,
)
from annotations.reports.json_report import result_to_dict
from annotations.results import CheckReport, RefResult, Status

SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
SARIF_VERSION = "2.1.0"
TOOL_NAME = "annotate"
FINGERPRINT_KEY = "annotateRef/v1"
SOURCE_ROOT = "%SRCROOT%"
"""The ``uriBaseId`` of a relative file: the repository's root, as code scanning reads it."""

_LEVELS = {"error": "error", "warning": "warning", "notice": "note", None: "note"}
_RULE_LEVELS = {Status.FRESH: "none", Status.COSMETIC: "note", Status.UNINDEXED: "note"}


def render(report: CheckReport) -> str:
    """The SARIF log as indented JSON, non-ASCII text kept as is."""
    return json.dumps(build_log(report), indent=2, ensure_ascii=False)


def build_log(report: CheckReport) -> dict[str, Any]:
    """The SARIF log object: one run of the `annotate` driver."""
    run = {
        "tool": {"driver": _driver()},
        "invocations": [_invocation(report)],
        "results": [_result(result, key) for result, key in _fingerprinted(report.results)
                    if _reported(result)],
        "properties": {"summary": report.summary(), "failOn": list(report.fail_on)},
    }
    return {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}


def _invocation(report: CheckReport) -> dict[str, Any]:
    """Whether the check read every annotation file and had every target to compare with;
    each file it could not read, and the targets not indexed, as errors."""
    notifications = []
    for error in report.input_errors:
        physical: dict[str, Any] = {"artifactLocation": artifact_location(error.file)}
        if error.line:
            physical["region"] = {"startLine": error.line}
        notifications.append({
            "level": "error",
            "message": {"text": f"{error.message}; its claims are not checked"},
            "locations": [{"physicalLocation": physical}],
        })
    note = unindexed_target_note(report)
    if note:
        notifications.append({"level": "error", "message": {"text": note}})
    return {"executionSuccessful": not report.input_errors and not report.unindexed_targets,
            "toolExecutionNotifications": notifications}


def rule_id(status: Status) -> str:
    return f"{TOOL_NAME}/{status.value}"


def _reported(result: RefResult) -> bool:
    return result.status is not Status.FRESH or result.failing


def _driver() -> dict[str, Any]:
    driver: dict[str, Any] = {"name": TOOL_NAME}  # no informationUri: no page to link
    version = _tool_version()
    if version:
        driver["version"] = version
    driver["rules"] = [_rule(status) for status in Status]
    return driver


def _tool_version() -> str | None:
    try:
        return metadata.version("vllm-annotate")
    except metadata.PackageNotFoundError:
        return None


def _rule(status: Status) -> dict[str, Any]:
    short, advice = STATUS_HELP[status]
    return {
        "id": rule_id(status),
        "name": "".join(word.capitalize() for word in status.value.split("-")),
        "shortDescription": {"text": short},
        "fullDescription": {"text": f"{short} {advice}"},
        "help": {"text": advice, "markdown": advice},
        "defaultConfiguration": {"level": _RULE_LEVELS.get(status, "warning")},
        "properties": {"stale": status.stale},
    }


def _fingerprinted(results: tuple[RefResult, ...]) -> list[tuple[RefResult, str]]:
    """Each result with its fingerprint; the same ref written twice in one claim (with two
    quotes, say) is told apart by its place among them, or code scanning would merge the
    two alerts into one."""
    seen: dict[tuple[str, str, str], int] = {}
    fingerprinted = []
    for result in results:
        key = (result.article, result.claim, result.ref)
        seen[key] = seen.get(key, -1) + 1
        fingerprinted.append((result, fingerprint(result, seen[key])))
    return fingerprinted


def _result(result: RefResult, fingerprinted_as: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "ruleId": rule_id(result.status),
        "ruleIndex": list(Status).index(result.status),
        "level": _LEVELS[level(result)],
        "message": {"text": _message(result)},
        "locations": [_location(result)],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprinted_as},
        "properties": _properties(result),
    }
    if is_waived(result):
        data["suppressions"] = [_suppression(result)]
    return data


def fingerprint(result: RefResult, occurrence: int = 0) -> str:
    """Stable per (article, claim, ref) and, for a ref the claim writes more than once,
    its ``occurrence``: unaffected by line moves, status or message."""
    key = "\0".join((result.article, result.claim, result.ref))
    if occurrence:
        key += f"\0{occurrence}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def artifact_uri(path: str) -> str:
    """The annotation file as a URI reference: relative stays relative, percent-encoded."""
    posix = path.replace("\\", "/")
    while posix.startswith("./"):
        posix = posix[2:]
    encoded = quote(posix, safe="/")
    return f"file://{encoded}" if posix.startswith("/") else encoded


def artifact_location(path: str) -> dict[str, str]:
    """The annotation file's ``artifactLocation``: a relative URI names its base."""
    uri = artifact_uri(path)
    return {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": SOURCE_ROOT}


def _location(result: RefResult) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": artifact_location(result.file)}
    if result.line > 0:
        physical["region"] = {"startLine": result.line}
    return {"physicalLocation": physical}


def _message(result: RefResult) -> str:
    text = f"Claim {result.claim} of {result.article}: {display_ref(result)} is "
    text += result.status.value
    if result.changes:
        text += f" ({', '.join(result.changes)})"
    if result.message:
        text += f": {result.message}"
    if result.candidates:
        text += f". Candidates: {', '.join(result.candidates)}"
    if note := waiver_note(result):  # an expired one is no suppression: say why it fails
        text += f"; {note}"
    return text


def _properties(result: RefResult) -> dict[str, Any]:
    """Every RefResult field under its own name, except the (long) diff."""
    data = result_to_dict(result)
    del data["diff"]
    return data


def _suppression(result: RefResult) -> dict[str, Any]:
    reason = f": {result.waiver_reason}" if result.waiver_reason else ""
    return {
        "kind": "external",
        "status": "accepted",
        "justification": f"waived until {result.waived_until}{reason}",
    }
