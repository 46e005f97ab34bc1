"""The report formats of ``annotate check``, rendered from hand-built CheckReports."""

from __future__ import annotations

import ast
import fcntl
import html
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.report_file import replace_whole
from annotations.reports import (
    FORMATS,
    UnknownFormatError,
    github,
    json_report,
    markdown,
    render,
    render_chunks,
    sarif,
    text,
)
from annotations.results import CheckReport, InputError, RefResult, Status

SCHEMA_PATH = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"

ARTICLE = "articles/paged-attention.md"
OTHER_ARTICLE = "articles/调度器.md"
CHINESE = "PagedAttention 把 KV cache 切成固定大小的块（block），按需分配。"
DIFF_30 = "--- a\n+++ b\n@@ -1,28 +1,28 @@\n" + "".join(f"-old {i}\n+new {i}\n" for i in range(14))
ANSI = re.compile("\x1b\\[[0-9;]*m")
OTHER_BREAKS = re.compile("[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")
"""What the github format turns into spaces: controls and line breaks other than CR and LF."""


def make(status: Status = Status.FRESH, **changes: object) -> RefResult:
    """A result with plausible defaults; `changes` overrides any field."""
    base = RefResult(
        article=ARTICLE,
        claim="kv-blocks",
        claim_text="The KV cache is split into fixed-size blocks.",
        file="annotations/paged-attention.yaml",
        line=12,
        ref="vllm@v0.1.0:vllm/attention.py::PagedAttention.forward",
        resolved="vllm@v0.1.0:vllm/attention.py::PagedAttention.forward",
        target="vllm@v0.3.0",
        status=status,
        message=f"{status.value} at vllm@v0.3.0",
    )
    return replace(base, **changes)


def one_of_each() -> tuple[RefResult, ...]:
    """One result per status, distinct claims, spread over two articles."""
    results = []
    for number, status in enumerate(Status):
        article = ARTICLE if number % 2 == 0 else OTHER_ARTICLE
        results.append(make(status, claim=f"c{number}", line=10 + number, article=article))
    return tuple(results)


def rich_report() -> CheckReport:
    """Every status, plus active and expired waivers, candidates, a diff and Chinese text."""
    extra = (
        make(
            Status.MOVED,
            claim="waived",
            line=40,
            new_ref="vllm/paged.py::PagedAttention",
            waived_until="2030-06-30",
            waiver_reason="rewrite pending",
        ),
        make(
            Status.REMOVED,
            claim="expired",
            line=41,
            candidates=("a.py::f", "b.py::f"),
            waived_until="2024-01-31",
            waiver_reason="old",
            waiver_expired=True,
            failing=True,
        ),
        make(
            Status.CHANGED,
            claim="diffed",
            line=42,
            changes=("signature", "body"),
            diff=DIFF_30,
            claim_text=CHINESE,
            article=OTHER_ARTICLE,
        ),
    )
    return CheckReport(one_of_each() + extra, ("vllm@v0.3.0",), ("removed",))


def report_of(*results: RefResult) -> CheckReport:
    return CheckReport(tuple(results), ("vllm@v0.3.0",))


# --- dispatch ----------------------------------------------------------------------------------

MODULES = {
    "text": text.render,
    "json": json_report.render,
    "github": github.render,
    "sarif": sarif.render,
    "markdown": markdown.render,
}


def test_formats_lists_text_first_and_every_module() -> None:
    assert FORMATS[0] == "text"
    assert set(FORMATS) == set(MODULES)


def test_the_command_line_starts_without_the_report_model() -> None:
    """Every command, `annotate --help` too, reads FORMATS for check's --format choices:
    that imports annotations.reports, and the model a report is rendered from (the
    results, 3.8 ms of a 70 ms start) only when a report is rendered."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys, annotate_cli; print(sorted(name for name in "
         "sys.modules if name.startswith('annotations.')))"],
        capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    imported = ast.literal_eval(done.stdout)
    assert "annotations.reports" in imported
    assert "annotations.results" not in imported


@pytest.mark.parametrize("fmt", FORMATS)
def test_render_dispatches_to_the_format_module(fmt: str) -> None:
    report = rich_report()
    assert render(report, fmt) == MODULES[fmt](report)


def test_unknown_format_is_a_value_error() -> None:
    with pytest.raises(UnknownFormatError, match="unknown report format 'xml'"):
        render(rich_report(), "xml")
    assert issubclass(UnknownFormatError, ValueError)


@pytest.mark.parametrize("fmt", FORMATS)
def test_render_is_deterministic_and_has_no_trailing_newline(fmt: str) -> None:
    first, second = render(rich_report(), fmt), render(rich_report(), fmt)
    assert first == second
    assert not first.endswith("\n")


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_colour_unless_asked(fmt: str) -> None:
    assert "\x1b" not in render(rich_report(), fmt)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "text"])
def test_colour_only_affects_text(fmt: str) -> None:
    report = rich_report()
    assert render(report, fmt, color=True) == render(report, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_report_renders(fmt: str) -> None:
    assert render(CheckReport(()), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_chinese_text_is_kept_as_is(fmt: str) -> None:
    report = report_of(
        make(
            Status.CHANGED,
            claim="分页",
            article=OTHER_ARTICLE,
            claim_text=CHINESE,
            message="块大小变了",
            ref="vllm@v1:文档/模型.py::类.方法",
            diff="-旧\n+新\n",
        )
    )
    output = render(report, fmt)
    assert "块大小变了" in output
    assert "\\u" not in output


# --- text --------------------------------------------------------------------------------------


def test_text_summary_line() -> None:
    last = render(rich_report(), "text").splitlines()[-1]
    assert last == (
        "12 claims, 12 refs: 1 fresh, 1 cosmetic, 2 changed, 2 moved, 2 removed, "
        "1 quote-missing, 1 relation-missing, 1 broken, 1 unindexed (1 waived); stale"
    )


@pytest.mark.parametrize(
    "results",
    [
        pytest.param((make(Status.FRESH), make(Status.COSMETIC, claim="b")), id="fresh-cosmetic"),
        pytest.param((make(Status.UNINDEXED),), id="unindexed-only"),
        pytest.param(
            (make(Status.REMOVED, waived_until="2030-01-01", waiver_reason="r"),),
            id="stale-but-waived",
        ),
        pytest.param((), id="empty"),
    ],
)
def test_text_nothing_stale(results: tuple[RefResult, ...]) -> None:
    assert render(CheckReport(results), "text").endswith("; nothing stale")


def test_text_expired_waiver_is_stale() -> None:
    result = make(Status.REMOVED, waived_until="2020-01-01", waiver_expired=True)
    assert render(report_of(result), "text").endswith("; stale")


def test_text_groups_results_under_article_headings() -> None:
    lines = render(rich_report(), "text").splitlines()
    assert lines[0] == "target: vllm@v0.3.0"
    first, second = lines.index(ARTICLE), lines.index(OTHER_ARTICLE)
    assert first < second
    between = [line for line in lines[first:second] if line.startswith("  ") and line[2] != " "]
    assert [line.split()[1] for line in between] == [
        "c0",
        "c2",
        "c4",
        "c6",
        "c8",
        "waived",
        "expired",
    ]


def test_text_result_line_fields() -> None:
    result = make(
        Status.MOVED,
        new_ref="vllm/paged.py::PagedAttention.forward",
        changes=("path",),
        message="moved to vllm/paged.py",
    )
    line = render(report_of(result), "text").splitlines()[3]
    assert line == (
        "  moved             kv-blocks  annotations/paged-attention.yaml:12  "
        "vllm@v0.1.0:vllm/attention.py::PagedAttention.forward -> "
        "vllm/paged.py::PagedAttention.forward  [path]  moved to vllm/paged.py"
    )


NEW_PLACE = "vllm@v0.3.0:vllm/paged.py::PagedAttention.forward"


@pytest.mark.parametrize(
    ("message", "rest"),
    [
        (f"moved to {NEW_PLACE}", ""),
        (f"moved to {NEW_PLACE}; body changed", "  body changed"),
        (f"moved to {NEW_PLACE} (several candidates: see candidates); body changed",
         "  (several candidates: see candidates); body changed"),
        ("moved to somewhere/else.py::f", "  moved to somewhere/else.py::f"),
    ],
    ids=["bare-move", "move-and-change", "ambiguous-move", "other-place-kept"],
)
def test_text_names_the_new_place_of_a_moved_ref_once(message: str, rest: str) -> None:
    result = make(Status.MOVED, new_ref=NEW_PLACE, message=message)
    line = render(report_of(result), "text").splitlines()[3]
    assert line.endswith(f"forward -> {NEW_PLACE}{rest}")
    assert line.count(NEW_PLACE) == 1


def test_github_names_the_new_place_of_a_moved_ref_once() -> None:
    result = make(Status.MOVED, new_ref=NEW_PLACE, message=f"moved to {NEW_PLACE}; body changed")
    head = unescape(render(report_of(result), "github").splitlines()[1].split("::", 2)[2])
    assert head.startswith(f"{result.ref} -> {NEW_PLACE} is moved: body changed")
    assert head.count(NEW_PLACE) == 1


@pytest.mark.parametrize(
    ("waiver", "expected"),
    [
        pytest.param(
            {"waived_until": "2030-06-30", "waiver_reason": "rewrite pending"},
            "[waived until 2030-06-30 (rewrite pending)]",
            id="active",
        ),
        pytest.param({"waived_until": "2030-06-30"}, "[waived until 2030-06-30]", id="no-reason"),
        pytest.param(
            {"waived_until": "2024-01-31", "waiver_reason": "old", "waiver_expired": True},
            "[waiver expired 2024-01-31]",
            id="expired",
        ),
    ],
)
def test_text_waiver_notes(waiver: dict[str, object], expected: str) -> None:
    output = render(report_of(make(Status.CHANGED, **waiver)), "text")
    assert output.splitlines()[3].endswith(expected)


def test_text_marks_failing_results() -> None:
    output = render(report_of(make(Status.BROKEN, failing=True)), "text")
    assert output.splitlines()[3].endswith("[failing]")


def test_text_long_diff_is_truncated() -> None:
    lines = render(report_of(make(Status.CHANGED, diff=DIFF_30)), "text").splitlines()
    diff = [line for line in lines if line.startswith("      ")]
    assert len(diff) == 21
    assert diff[0] == "      --- a"
    assert diff[-1] == "      ... 11 more lines"


def test_text_short_diff_is_whole() -> None:
    lines = render(report_of(make(Status.CHANGED, diff="-a\n+b\n")), "text").splitlines()
    assert lines[4:6] == ["      -a", "      +b"]
    assert "more line" not in "\n".join(lines)


def test_text_shows_diff_of_changed_results_only() -> None:
    output = render(report_of(make(Status.COSMETIC, diff="-a\n+b\n")), "text")
    assert "+b" not in output


def test_text_candidates() -> None:
    output = render(report_of(make(Status.REMOVED, candidates=("a.py::f", "b.py::f"))), "text")
    assert "      candidates: a.py::f, b.py::f" in output.splitlines()


@pytest.mark.parametrize(
    ("status", "code"),
    [
        pytest.param(Status.FRESH, "\x1b[32m", id="fresh-green"),
        pytest.param(Status.COSMETIC, "\x1b[2m", id="cosmetic-dim"),
        pytest.param(Status.CHANGED, "\x1b[33m", id="changed-yellow"),
        pytest.param(Status.MOVED, "\x1b[33m", id="moved-yellow"),
        pytest.param(Status.REMOVED, "\x1b[31m", id="removed-red"),
        pytest.param(Status.BROKEN, "\x1b[31m", id="broken-red"),
        pytest.param(Status.QUOTE_MISSING, "\x1b[31m", id="quote-missing-red"),
        pytest.param(Status.RELATION_MISSING, "\x1b[31m", id="relation-missing-red"),
        pytest.param(Status.UNINDEXED, "\x1b[34m", id="unindexed-blue"),
    ],
)
def test_text_status_colours(status: Status, code: str) -> None:
    report = report_of(make(status))
    coloured = render(report, "text", color=True)
    assert f"{code}{status.value}\x1b[0m" in coloured
    assert ANSI.sub("", coloured) == render(report, "text")


def test_text_hostile_content_cannot_break_lines_or_emit_escapes() -> None:
    hostile = "evil\n\x1b[2J\rcleared\u2028more"
    result = make(
        Status.CHANGED,
        claim=hostile,
        message=hostile,
        ref=hostile,
        article=hostile,
        diff="-\x1b[2Jx\n+ok\n",
    )
    output = render(report_of(result), "text")
    assert "\x1b" not in output
    assert "\r" not in output and "\u2028" not in output
    assert len(output.splitlines()) == 8  # target, blank, heading, line, 2 diff lines, blank, sum


# --- json --------------------------------------------------------------------------------------

RESULT_KEYS = [
    "article",
    "claim",
    "claim_text",
    "file",
    "line",
    "ref",
    "resolved",
    "target",
    "status",
    "message",
    "changes",
    "new_ref",
    "candidates",
    "diff",
    "old_url",
    "new_url",
    "candidate_urls",
    "code_went_to",
    "code_went_to_urls",
    "users_now_use",
    "alias",
    "alias_url",
    "waived_until",
    "waiver_reason",
    "waiver_expired",
    "failing",
]


def test_json_shape() -> None:
    data = json.loads(render(rich_report(), "json"))
    assert list(data) == ["results", "claims", "summary", "input_errors"]
    assert all(list(item) == RESULT_KEYS for item in data["results"])
    assert all(list(item) == ["article", "claim", "status"] for item in data["claims"])
    assert [f.name for f in fields(RefResult)] == RESULT_KEYS


def test_json_summary_is_the_report_summary() -> None:
    report = rich_report()
    assert json.loads(render(report, "json"))["summary"] == report.summary()


@pytest.mark.parametrize("status", list(Status), ids=[s.value for s in Status])
def test_json_result_values(status: Status) -> None:
    result = make(
        status,
        changes=("body",),
        candidates=("x.py::f",),
        new_ref="y.py::f",
        old_url="https://example.org/a#L1",
        waived_until="2030-01-01",
    )
    (item,) = json.loads(render(report_of(result), "json"))["results"]
    assert item["status"] == status.value
    assert item["changes"] == ["body"]
    assert item["candidates"] == ["x.py::f"]
    assert item["new_ref"] == "y.py::f"
    assert item["line"] == 12
    assert item["diff"] is None
    assert item["waiver_expired"] is False


def test_json_round_trips_chinese_text() -> None:
    result = make(Status.CHANGED, claim_text=CHINESE, article=OTHER_ARTICLE)
    output = render(report_of(result), "json")
    assert CHINESE in output
    (item,) = json.loads(output)["results"]
    assert item["claim_text"] == CHINESE
    assert item["article"] == OTHER_ARTICLE


# --- github ------------------------------------------------------------------------------------

COMMAND = re.compile(r"::(error|warning|notice)(?: ([^:]*))?::(.*)")


def unescape(value: str) -> str:
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        value = value.replace(escaped, raw)
    return value


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    match = COMMAND.fullmatch(line)
    assert match, line
    name, props, message = match.groups()
    pairs = [item.split("=", 1) for item in props.split(",")] if props else []
    return name, {key: unescape(value) for key, value in pairs}, unescape(message)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(make(Status.FRESH), None, id="fresh-silent"),
        pytest.param(make(Status.COSMETIC), None, id="cosmetic-silent"),
        pytest.param(make(Status.UNINDEXED), "notice", id="unindexed-notice"),
        pytest.param(make(Status.CHANGED), "warning", id="stale-warning"),
        pytest.param(make(Status.BROKEN), "warning", id="broken-not-failing-warning"),
        pytest.param(make(Status.REMOVED, failing=True), "error", id="failing-error"),
        pytest.param(make(Status.UNINDEXED, failing=True), "error", id="failing-unindexed"),
        pytest.param(make(Status.MOVED, waived_until="2030-01-01"), "notice", id="waived-notice"),
        pytest.param(
            make(Status.MOVED, waived_until="2020-01-01", waiver_expired=True),
            "warning",
            id="expired-waiver-warning",
        ),
        pytest.param(
            make(Status.MOVED, waived_until="2020-01-01", waiver_expired=True, failing=True),
            "error",
            id="expired-waiver-failing",
        ),
    ],
)
def test_github_level(result: RefResult, expected: str | None) -> None:
    lines = render(report_of(result), "github").splitlines()
    assert len(lines) == (2 if expected else 1)
    if expected:
        assert parse_command(lines[1])[0] == expected


def test_github_points_at_the_annotation() -> None:
    result = make(
        Status.MOVED,
        new_ref="vllm/paged.py::f",
        candidates=("a.py::f",),
        waived_until="2030-01-01",
        waiver_reason="later",
    )
    line = render(report_of(result), "github").splitlines()[1]
    assert line.startswith(
        "::notice file=annotations/paged-attention.yaml,line=12,"
        "title=annotate%3A moved claim kv-blocks::"
    )
    _, _, message = parse_command(line)
    assert message.splitlines() == [
        "vllm@v0.1.0:vllm/attention.py::PagedAttention.forward -> vllm/paged.py::f is moved: "
        "moved at vllm@v0.3.0",
        f"claim kv-blocks of {ARTICLE}: The KV cache is split into fixed-size blocks.",
        "candidates: a.py::f",
        "waived until 2030-01-01 (later)",
    ]


def test_github_cuts_a_long_claim_text() -> None:
    result = make(Status.CHANGED, claim_text="word " * 60)
    _, _, message = parse_command(render(report_of(result), "github").splitlines()[1])
    quoted = message.splitlines()[1].removeprefix(f"claim kv-blocks of {ARTICLE}: ")
    assert quoted == ("word " * 40)[: github.MAX_CLAIM_TEXT - 3] + "..."
    assert len(quoted) == github.MAX_CLAIM_TEXT


def test_github_omits_unknown_line() -> None:
    line = render(report_of(make(Status.CHANGED, line=0)), "github").splitlines()[1]
    assert "line=" not in line


def test_github_starts_with_summary_notice() -> None:
    """GitHub shows 10 annotations of a level per step, in the order printed: the summary
    must not be the one it drops."""
    report = rich_report()
    lines = render(report, "github").splitlines()
    assert lines[0].startswith("::notice::12 claims, 12 refs: ")
    assert lines[0].endswith("; stale")
    assert len(lines) == 1 + sum(
        1
        for r in report.results
        if r.status is not Status.FRESH and r.status is not Status.COSMETIC
    )


BEYOND = ("GitHub shows the first 10 annotations of each level a step prints: of {levels}, "
          "{hidden} in this log only; 'annotate check --format markdown' (the job summary) "
          "or '--format sarif' lists every one")


@pytest.mark.parametrize(("results", "levels", "hidden"), [
    pytest.param([make(Status.REMOVED, failing=True)] * 10, None, None, id="ten-errors"),
    pytest.param([make(Status.REMOVED, failing=True)] * 11, "11 errors", "1 is",
                 id="eleven-errors"),
    pytest.param([make(Status.CHANGED)] * 12, "12 warnings", "2 are", id="twelve-warnings"),
    pytest.param([make(Status.REMOVED, failing=True)] * 122 + [make(Status.UNINDEXED)] * 11,
                 "122 errors and 13 notices", "115 are", id="the-catalogue"),
])
def test_github_says_how_many_annotations_it_does_not_show(
    results: list[RefResult], levels: str | None, hidden: str | None
) -> None:
    """Each annotation is printed, and when a level has more than GitHub shows, a notice
    after the summary, among the 10 it shows, says how many and where to see them all."""
    lines = render(report_of(*results), "github").splitlines()
    commands = [parse_command(line) for line in lines]
    levels_printed = {Status.REMOVED: "error", Status.CHANGED: "warning",
                      Status.UNINDEXED: "notice"}
    assert [name for name, _, _ in commands[-len(results):]] == [
        levels_printed[result.status] for result in results]
    if levels is None:
        assert len(lines) == 1 + len(results)
        return
    assert len(lines) == 2 + len(results)
    assert commands[1] == ("notice", {"title": "annotate: annotations GitHub does not show"},
                           BEYOND.format(levels=levels, hidden=hidden))


@pytest.mark.parametrize(
    ("raw", "data", "prop"),
    [
        pytest.param("plain", "plain", "plain", id="plain"),
        pytest.param("100%", "100%25", "100%25", id="percent"),
        pytest.param("%0A", "%250A", "%250A", id="pre-escaped"),
        pytest.param("a\nb", "a%0Ab", "a%0Ab", id="newline"),
        pytest.param("a\r\nb", "a%0D%0Ab", "a%0D%0Ab", id="crlf"),
        pytest.param("a:b,c", "a:b,c", "a%3Ab%2Cc", id="colon-comma"),
        pytest.param("::error::x", "::error::x", "%3A%3Aerror%3A%3Ax", id="command"),
        pytest.param("a\u2028b\x0bc\x85d", "a b c d", "a b c d", id="other-breaks"),
        pytest.param("文档", "文档", "文档", id="chinese"),
    ],
)
def test_github_escaping(raw: str, data: str, prop: str) -> None:
    assert github.escape_data(raw) == data
    assert github.escape_property(raw) == prop


HOSTILE = "100% evil\n::error file=x,line=1::pwned\r\n::set-output name=a::b, c: d"


@pytest.mark.parametrize(
    "field_name",
    ["claim_text", "ref", "claim", "file", "message", "article", "waiver_reason", "new_ref"],
)
def test_github_hostile_value_stays_in_one_command(field_name: str) -> None:
    result = make(Status.MOVED, waived_until="2030-01-01", **{field_name: HOSTILE})
    lines = render(report_of(result), "github").splitlines()
    assert len(lines) == 2
    name, props, message = parse_command(lines[1])
    assert name == "notice"
    assert set(props) == {"file", "line", "title"}
    if field_name == "file":
        assert props["file"] == HOSTILE
    if field_name == "claim":
        assert props["title"] == f"annotate: moved claim {HOSTILE}"
    if field_name in ("ref", "message", "new_ref"):
        assert HOSTILE in message
    assert parse_command(lines[0])[0] == "notice"


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text(), st.text())
def test_github_any_text_makes_one_command_per_result(claim: str, ref: str, path: str) -> None:
    result = make(Status.CHANGED, claim=claim, ref=ref, claim_text=claim, file=path)
    lines = render(report_of(result), "github").splitlines()
    assert len(lines) == 2
    name, props, message = parse_command(lines[1])
    assert name == "warning"
    assert props.get("file", "") == OTHER_BREAKS.sub(" ", path)
    assert message.startswith(OTHER_BREAKS.sub(" ", ref))


# --- sarif -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def sarif_of(report: CheckReport) -> dict:
    return json.loads(render(report, "sarif"))


def test_vendored_schema_is_the_official_one() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["id"].endswith("/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
    assert schema["title"] == "Static Analysis Results Format (SARIF) Version 2.1.0 JSON Schema"
    assert schema["properties"]["version"]["enum"] == ["2.1.0"]


HOSTILE_REPORT = report_of(
    make(
        Status.CHANGED,
        claim=HOSTILE,
        ref=HOSTILE,
        message=HOSTILE,
        claim_text=HOSTILE,
        file="annotations/a b#c%d/模型?.yaml",
        diff=HOSTILE,
        changes=(HOSTILE,),
    ),
    make(Status.BROKEN, line=0, file="/abs/path.yaml"),
)


@pytest.mark.parametrize(
    "report",
    [
        pytest.param(rich_report(), id="every-status"),
        pytest.param(CheckReport(()), id="empty"),
        pytest.param(report_of(make(Status.FRESH)), id="fresh-only"),
        pytest.param(HOSTILE_REPORT, id="hostile"),
    ],
)
def test_sarif_validates_against_the_schema(
    report: CheckReport, sarif_validator: jsonschema.protocols.Validator
) -> None:
    sarif_validator.validate(sarif_of(report))


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(lambda log: log.update(version="2.0.0"), id="wrong-version"),
        pytest.param(
            lambda log: log["runs"][0]["results"][0].update(level="fatal"), id="bad-level"
        ),
        pytest.param(lambda log: log["runs"][0]["tool"].pop("driver"), id="no-driver"),
    ],
)
def test_schema_rejects_broken_logs(
    breakage: Callable[[dict], object], sarif_validator: jsonschema.protocols.Validator
) -> None:
    log = sarif_of(rich_report())
    breakage(log)
    with pytest.raises(jsonschema.ValidationError):
        sarif_validator.validate(log)


def test_sarif_log_header_and_rules() -> None:
    log = sarif_of(rich_report())
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-schema-2.1.0.json")
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "annotate"
    assert [rule["id"] for rule in driver["rules"]] == [f"annotate/{s.value}" for s in Status]
    assert all(
        rule["shortDescription"]["text"] and rule["help"]["text"] for rule in driver["rules"]
    )


def test_sarif_driver_links_to_no_page() -> None:
    """vllm-annotate is not on PyPI (README) and declares no home page: code scanning is
    given no link for the tool rather than a dead one."""
    driver = sarif_of(rich_report())["runs"][0]["tool"]["driver"]
    assert set(driver) == {"name", "version", "rules"}


def test_sarif_results_reference_their_rule() -> None:
    run = sarif_of(rich_report())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["ruleId"] == f"annotate/{result['properties']['status']}"


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        pytest.param(make(Status.FRESH), None, id="fresh-omitted"),
        pytest.param(make(Status.FRESH, failing=True), "error", id="fresh-failing-error"),
        pytest.param(make(Status.COSMETIC), "note", id="cosmetic-note"),
        pytest.param(make(Status.UNINDEXED), "note", id="unindexed-note"),
        pytest.param(make(Status.CHANGED), "warning", id="stale-warning"),
        pytest.param(make(Status.REMOVED, failing=True), "error", id="failing-error"),
        pytest.param(make(Status.MOVED, waived_until="2030-01-01"), "note", id="waived-note"),
        pytest.param(
            make(Status.MOVED, waived_until="2020-01-01", waiver_expired=True),
            "warning",
            id="expired-waiver-warning",
        ),
    ],
)
def test_sarif_level(result: RefResult, expected: str | None) -> None:
    results = sarif_of(report_of(result))["runs"][0]["results"]
    assert [r["level"] for r in results] == ([expected] if expected else [])


def test_sarif_result_location_message_and_properties() -> None:
    result = make(Status.REMOVED, candidates=("a.py::f", "b.py::f"), changes=("body",))
    (item,) = sarif_of(report_of(result))["runs"][0]["results"]
    physical = item["locations"][0]["physicalLocation"]
    assert physical == {
        "artifactLocation": {"uri": "annotations/paged-attention.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 12},
    }
    assert item["message"]["text"] == (
        f"Claim kv-blocks of {ARTICLE}: vllm@v0.1.0:vllm/attention.py::PagedAttention.forward "
        "is removed (body): removed at vllm@v0.3.0. Candidates: a.py::f, b.py::f"
    )
    props = item["properties"]
    assert props["status"] == "removed"
    assert props["candidates"] == ["a.py::f", "b.py::f"]
    assert props["changes"] == ["body"]
    assert props["resolved"] == result.resolved
    assert props["target"] == "vllm@v0.3.0"
    assert props["new_ref"] is None
    assert "diff" not in props
    assert "suppressions" not in item


def test_sarif_waiver_is_a_suppression() -> None:
    result = make(Status.MOVED, waived_until="2030-06-30", waiver_reason="rewrite")
    (item,) = sarif_of(report_of(result))["runs"][0]["results"]
    assert item["suppressions"] == [
        {
            "kind": "external",
            "status": "accepted",
            "justification": "waived until 2030-06-30: rewrite",
        }
    ]
    assert item["message"]["text"].endswith("; waived until 2030-06-30 (rewrite)")


def test_sarif_expired_waiver_is_not_a_suppression() -> None:
    result = make(Status.MOVED, waived_until="2020-01-01", waiver_reason="old",
                  waiver_expired=True)
    (item,) = sarif_of(report_of(result))["runs"][0]["results"]
    assert "suppressions" not in item
    assert item["message"]["text"].endswith("; waiver expired 2020-01-01")


def test_sarif_unknown_line_has_no_region() -> None:
    (item,) = sarif_of(report_of(make(Status.BROKEN, line=0)))["runs"][0]["results"]
    assert "region" not in item["locations"][0]["physicalLocation"]


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        pytest.param("annotations/a.yaml", "annotations/a.yaml", id="plain"),
        pytest.param("./annotations/a.yaml", "annotations/a.yaml", id="dot-slash"),
        pytest.param("notes/my file.yaml", "notes/my%20file.yaml", id="space"),
        pytest.param("notes/a#b?c%d.yaml", "notes/a%23b%3Fc%25d.yaml", id="reserved"),
        pytest.param("文档/模型.yaml", "%E6%96%87%E6%A1%A3/%E6%A8%A1%E5%9E%8B.yaml", id="chinese"),
        pytest.param("notes\\win.yaml", "notes/win.yaml", id="backslash"),
        pytest.param("/abs/a b.yaml", "file:///abs/a%20b.yaml", id="absolute"),
    ],
)
def test_sarif_artifact_uri(path: str, uri: str) -> None:
    assert sarif.artifact_uri(path) == uri


@pytest.mark.parametrize(("path", "location"), [
    pytest.param("annotations/a.yaml", {"uri": "annotations/a.yaml", "uriBaseId": "%SRCROOT%"},
                 id="relative-from-the-source-root"),
    pytest.param("/abs/a.yaml", {"uri": "file:///abs/a.yaml"}, id="absolute-has-no-base"),
])
def test_sarif_relative_uri_names_its_base(path: str, location: dict) -> None:
    """SARIF 2.1.0 (3.4.4): a relative ``uri`` should come with the ``uriBaseId`` it is
    relative to; ``%SRCROOT%`` is the repository's root, as code scanning reads it."""
    (item,) = sarif_of(report_of(make(Status.BROKEN, file=path)))["runs"][0]["results"]
    assert item["locations"][0]["physicalLocation"]["artifactLocation"] == location


def test_sarif_fingerprint_is_stable_per_article_claim_ref() -> None:
    base = make(Status.CHANGED)
    same = replace(base, line=99, status=Status.MOVED, message="other", file="x.yaml")
    others = [replace(base, article="b.md"), replace(base, claim="c2"), replace(base, ref="r")]
    assert sarif.fingerprint(base) == sarif.fingerprint(same)
    assert len({sarif.fingerprint(r) for r in [base, *others]}) == 4
    (item,) = sarif_of(report_of(base))["runs"][0]["results"]
    assert item["partialFingerprints"] == {"annotateRef/v1": sarif.fingerprint(base)}


def test_sarif_tells_apart_a_ref_a_claim_writes_twice() -> None:
    """Same ref, two quotes: two alerts, not one that code scanning would merge."""
    first = make(Status.REMOVED)
    second = replace(first, line=first.line + 2)
    other = replace(first, claim="c2")
    items = sarif_of(report_of(first, second, other))["runs"][0]["results"]
    prints = [item["partialFingerprints"]["annotateRef/v1"] for item in items]
    assert prints == [sarif.fingerprint(first), sarif.fingerprint(first, 1),
                      sarif.fingerprint(other)]
    assert len(set(prints)) == 3


def test_sarif_keeps_chinese_text() -> None:
    output = render(report_of(make(Status.CHANGED, claim_text=CHINESE)), "sarif")
    assert CHINESE in output


# --- markdown ----------------------------------------------------------------------------------


def cells(row: str) -> list[str]:
    """A table row's cells, splitting on pipes that are not backslash-escaped."""
    parts, current, escaped = [], "", False
    for ch in row:
        if ch == "|" and not escaped:
            parts.append(current)
            current = ""
        else:
            current += ch
        escaped = ch == "\\" and not escaped
    parts.append(current)
    assert parts[0] == "" and parts[-1] == "", row
    return [part.strip() for part in parts[1:-1]]


def table_rows(output: str) -> list[list[str]]:
    return [cells(line) for line in output.splitlines() if line.startswith("|")]


def test_markdown_heading_verdict_and_summary_table() -> None:
    output = render(rich_report(), "markdown")
    lines = output.splitlines()
    assert lines[0] == "## annotate check"
    assert lines[2] == (
        "**12 claims, 12 refs** in 2 articles against <code>vllm@v0.3.0</code>. "
        "**Stale:** 8 refs need attention."
    )
    rows = table_rows(output)
    assert rows[0] == ["Status", "Refs"]
    counts = {row[0]: row[1] for row in rows[2:13]}
    assert counts == {
        "fresh": "1",
        "cosmetic": "1",
        "changed": "2",
        "moved": "2",
        "removed": "2",
        "quote-missing": "1",
        "relation-missing": "1",
        "broken": "1",
        "unindexed": "1",
        "waived": "1",
        "failing": "1",
    }


def test_markdown_tables_hold_only_non_fresh_rows() -> None:
    output = render(rich_report(), "markdown")
    assert f"### {ARTICLE}" in output
    assert f"### {OTHER_ARTICLE}" in output
    rows = [row for row in table_rows(output) if len(row) == 6 and row[0] != "Status"]
    rows = [row for row in rows if row[0] != "---"]
    badges = [row[0].split("<br>")[0].split()[0] for row in rows]
    assert "<kbd>fresh</kbd>" not in badges
    assert len(rows) == len(rich_report().results) - 1
    assert "<kbd>cosmetic</kbd>" in badges


def test_markdown_row_content() -> None:
    result = make(
        Status.REMOVED,
        candidates=("a.py::f",),
        changes=("body", "signature"),
        waived_until="2024-01-31",
        waiver_expired=True,
        failing=True,
        new_ref="vllm/x.py::g",
    )
    rows = table_rows(render(report_of(result), "markdown"))
    assert rows[-1] == [
        "<kbd>removed</kbd> **failing**<br>waiver expired 2024-01-31",
        "<code>kv-blocks</code><br>annotations/paged-attention.yaml:12",
        "<code>vllm@v0.1.0:vllm/attention.py::PagedAttention.forward</code>",
        "<code>vllm/x.py::g</code><br>candidates: <code>a.py::f</code>",
        "body, signature",
        "removed at vllm@v0.3.0<br><sub>The KV cache is split into fixed-size blocks.</sub>",
    ]


def test_markdown_links_the_refs_that_have_permalinks() -> None:
    result = make(Status.MOVED, new_ref="vllm/x.py::g", new_url="https://github.com/o/r/x#L2",
                  old_url="https://github.com/o/r/a#L1", candidates=("a.py::f", "b.py::f"),
                  candidate_urls=("https://github.com/o/r/a.py#L3", None))
    row = table_rows(render(report_of(result), "markdown"))[-1]
    assert row[2:4] == [
        "<code>vllm@v0.1.0:vllm/attention.py::PagedAttention.forward</code><br>"
        '<a href="https://github.com/o/r/a#L1">at v0.1.0</a> · '
        '<a href="https://github.com/o/r/x#L2">at v0.3.0</a>',
        '<a href="https://github.com/o/r/x#L2"><code>vllm/x.py::g</code></a><br>candidates: '
        '<a href="https://github.com/o/r/a.py#L3"><code>a.py::f</code></a>, <code>b.py::f</code>',
    ]


def test_markdown_active_waiver_badge() -> None:
    result = make(Status.MOVED, waived_until="2030-06-30", waiver_reason="rewrite <soon>")
    rows = table_rows(render(report_of(result), "markdown"))
    assert rows[-1][0] == "<kbd>moved</kbd><br>waived until 2030-06-30 (rewrite &lt;soon&gt;)"


def test_markdown_diffs_in_details() -> None:
    output = render(report_of(make(Status.CHANGED, diff=DIFF_30)), "markdown")
    details = output[output.index("<details>") :]
    assert details.startswith("<details><summary>Diffs of 1 changed ref</summary>\n\n")
    assert details.endswith("</details>")
    assert "```diff\n--- a\n+++ b\n" in details
    assert "\n... 11 more lines\n```\n" in details


def test_markdown_is_cut_to_fit_a_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """GitHub refuses a job summary over 1 MiB: every article's diffs go first, then
    whole articles, and the report says what it left out."""
    diff = "--- a\n+++ b\n" + "".join(f"-old line {n}\n+new line {n}\n" for n in range(20))
    results = [make(Status.CHANGED, article=f"blog/{n}.md", claim=f"c{n}", diff=diff)
               for n in range(10)]
    plain = render(report_of(*(replace(result, diff=None) for result in results)), "markdown")
    monkeypatch.setattr(markdown, "MAX_BYTES", len(plain.encode()) + 450)
    assert render(report_of(*results), "markdown") == plain  # all articles, no diffs
    monkeypatch.setattr(markdown, "MAX_BYTES", len(plain.encode()) // 2)
    cut = render(report_of(*results), "markdown")
    assert len(cut.encode()) <= markdown.MAX_BYTES and "<details>" not in cut
    shown = [n for n in range(10) if f"### blog/{n}.md" in cut]
    assert shown == list(range(len(shown))) and 0 < len(shown) < 10
    assert cut.endswith(f"*{10 - len(shown)} more articles ({10 - len(shown)} refs) not shown: "
                        "the report is cut to fit GitHub's 1 MiB job summary; run "
                        "`annotate check` for all.*")


def test_markdown_all_fresh() -> None:
    output = render(report_of(make(Status.FRESH)), "markdown")
    assert output.endswith("All refs are fresh.")
    assert "**Nothing stale.**" in output
    assert "<details>" not in output


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        pytest.param("a|b", "a\\|b", id="pipe"),
        pytest.param(
            "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;", id="html"
        ),
        pytest.param("a & b", "a &amp; b", id="ampersand"),
        pytest.param("&lt;", "&amp;lt;", id="entity"),
        pytest.param("one\ntwo\r\nthree", "one<br>two<br>three", id="newlines"),
        pytest.param("`code`", "\\`code\\`", id="backticks"),
        pytest.param("**bold** _it_", "\\*\\*bold\\*\\* \\_it\\_", id="emphasis"),
        pytest.param("[x](javascript:y)", "\\[x\\](javascript:y)", id="link"),
        pytest.param("a\\|b", "a\\\\\\|b", id="backslash-pipe"),
        pytest.param("$x$", "\\$x\\$", id="math"),
        pytest.param("模型", "模型", id="chinese"),
        pytest.param("a\x00b\x1bc\x7fd\x9be", "a b c d e", id="control-characters"),
    ],
)
def test_markdown_text_escaping(raw: str, escaped: str) -> None:
    assert markdown.text(raw) == escaped


PERMALINK = "https://github.com/vllm-project/vllm/blob/v0.1.0/vllm/model_executor/a.py#L3-L9"


@pytest.mark.parametrize(("raw", "escaped"), [
    pytest.param(PERMALINK, "https&#58;//github.com/vllm-project/vllm/blob/v0.1.0/vllm/"
                 "model\\_executor/a.py\\#L3-L9", id="permalink"),
    pytest.param("HTTP://a.org/x_y", "HTTP&#58;//a.org/x\\_y", id="upper-case-scheme"),
    pytest.param("see www.example.com/a_b", "see www&#46;example.com/a\\_b", id="www"),
    pytest.param("WWW.example.com", "WWW&#46;example.com", id="upper-case-www"),
    pytest.param("a://b", "a&#58;//b", id="any-scheme"),
])
def test_markdown_text_is_not_autolinked(raw: str, escaped: str) -> None:
    """GitHub's autolinker takes a URL (``scheme://`` or ``www.``) from the raw text, the
    backslash escapes with it: ``a.py\\#L3`` showed with its backslash and linked to
    ``a.py%5C#L3``, a file that does not exist. An entity for the ``:`` (or the ``.``) keeps
    it from starting a link; the text shows as written."""
    assert markdown.text(raw) == escaped
    assert markdown.code(raw) == f"<code>{escaped}</code>"


def test_markdown_permalink_ref_shows_as_written() -> None:
    output = render(report_of(make(Status.REMOVED, ref=PERMALINK, claim_text=PERMALINK)),
                    "markdown")
    assert "://" not in output
    unescaped = html.unescape(re.sub(r"\\(.)", r"\1", output))
    assert unescaped.count(f"<code>{PERMALINK}</code>") == 1
    assert unescaped.count(f"<sub>{PERMALINK}</sub>") == 1


@pytest.mark.parametrize(("url", "href"), [
    pytest.param("https://github.com/o/r/blob/v1/a.py#L1-L2",
                 "https://github.com/o/r/blob/v1/a.py#L1-L2", id="plain"),
    pytest.param('https://github.com/o/r/blob/v1|x"><b>/a&b.py#L1',
                 "https://github.com/o/r/blob/v1%7Cx&quot;&gt;&lt;b&gt;/a&amp;b.py#L1",
                 id="table-pipe-quote-and-tags"),
])
def test_markdown_permalinks_cannot_break_the_table_or_the_tag(url: str, href: str) -> None:
    assert markdown.linked("<code>x</code>", url) == f'<a href="{href}"><code>x</code></a>'
    assert markdown.linked("<code>x</code>", None) == "<code>x</code>"


@pytest.mark.parametrize(
    ("block", "fence"),
    [
        pytest.param("plain", "```", id="none"),
        pytest.param("a ``` b", "````", id="three"),
        pytest.param("`````", "``````", id="five"),
    ],
)
def test_markdown_fence_outgrows_backtick_runs(block: str, fence: str) -> None:
    assert markdown.fence_for(block) == fence


def test_markdown_hostile_claim_cannot_inject() -> None:
    hostile = "x | y\n<img src=x onerror=alert(1)> `` ``` </details> & @here **b**"
    result = make(
        Status.CHANGED,
        claim=hostile,
        claim_text=hostile,
        message=hostile,
        ref=hostile,
        changes=(hostile,),
        article=hostile,
        diff=f"-{hostile}\n+```\n+</details>\n",
    )
    output = render(report_of(result), "markdown")
    tables, details = output.split("<details>")
    assert "<img" not in tables and "</details>" not in tables and "```" not in tables
    rows = table_rows(tables)
    assert all(len(row) in (2, 6) for row in rows)
    assert rows[-1][0] == "<kbd>changed</kbd>"
    lines = details.splitlines()
    start, end = lines.index("````diff"), len(lines) - 3
    assert lines[end:] == ["````", "", "</details>"]
    inside, outside = lines[start + 1 : end], lines[:start] + lines[end:]
    assert inside == ["-x | y", hostile.splitlines()[1], "+```", "+</details>"]
    assert not any(line.startswith("````") for line in inside)
    assert "<img" not in "\n".join(outside)
    assert outside.count("</details>") == 1


def test_markdown_articles_in_report_order() -> None:
    report = report_of(
        make(Status.FRESH, article="first.md"),
        make(Status.CHANGED, article="second.md"),
        make(Status.CHANGED, article="first.md", claim="late"),
    )
    headings = [line for line in render(report, "markdown").splitlines() if line[:4] == "### "]
    assert headings == ["### first.md", "### second.md"]


def test_text_aligns_wide_characters() -> None:
    report = report_of(make(Status.FRESH, claim="分页"), make(Status.FRESH, claim="abcd"))
    first, second = render(report, "text").splitlines()[3:5]
    prefix = [line[: line.index("annotations/")] for line in (first, second)]
    assert [text.width(p) for p in prefix] == [text.width(prefix[0])] * 2
    assert prefix[0] != prefix[1]


# --- annotation files that could not be read --------------------------------------------------

UNREAD = InputError("annotations/bad.yml", 3, "invalid YAML: mapping values are not allowed here")
UNREAD_NOTE = "1 annotation file could not be read (not checked)"


def unread_report() -> CheckReport:
    return report_of(make(Status.FRESH)).with_input_errors((UNREAD,))


@pytest.mark.parametrize(("fmt", "expected"), [
    pytest.param("text", f"; nothing stale in the files read; {UNREAD_NOTE}", id="text"),
    pytest.param("github", "::error file=annotations/bad.yml,line=3,title=annotate%3A annotation "
                 f"file not read::{UNREAD.message}; its claims are not checked", id="github"),
    pytest.param("markdown", f"**Nothing stale in the files read.**\n\n**"
                 f"{UNREAD_NOTE.capitalize()}**: fix it and check again.\n\n"
                 f"- <code>annotations/bad.yml:3</code>: {UNREAD.message}", id="markdown"),
])
def test_a_file_not_read_is_in_the_report(fmt: str, expected: str) -> None:
    rendered = render(unread_report(), fmt)
    assert expected in rendered
    assert expected not in render(report_of(make(Status.FRESH)), fmt)


def test_a_file_not_read_is_in_the_json_report() -> None:
    data = json.loads(render(unread_report(), "json"))
    assert data["input_errors"] == [
        {"file": "annotations/bad.yml", "line": 3, "message": UNREAD.message}]


def test_a_file_not_read_makes_the_sarif_run_unsuccessful() -> None:
    log = json.loads(render(unread_report(), "sarif"))
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    [notification] = invocation["toolExecutionNotifications"]
    assert notification["level"] == "error"
    assert notification["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "annotations/bad.yml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 3}}
    clean = json.loads(render(report_of(make(Status.FRESH)), "sarif"))
    assert clean["runs"][0]["invocations"] == [
        {"executionSuccessful": True, "toolExecutionNotifications": []}]


def test_the_last_claims_of_a_file_not_read_are_not_reported() -> None:
    kept = make(Status.CHANGED, file="annotations/good.yml")
    report = report_of(kept, make(Status.CHANGED, file="annotations/bad.yml"))
    assert report.with_input_errors((UNREAD,)).results == (kept,)


# --- details each format shares ----------------------------------------------------------------


@pytest.mark.parametrize(("line", "shown"), [
    pytest.param(12, "annotations/paged-attention.yaml:12", id="known-line"),
    pytest.param(0, "annotations/paged-attention.yaml", id="line-zero"),
    pytest.param(None, "annotations/paged-attention.yaml", id="no-line"),
])
def test_text_location_names_the_line_only_when_known(line: int | None, shown: str) -> None:
    row = render(report_of(make(Status.CHANGED, line=line)), "text").splitlines()[3]
    assert re.split(r"\s{2,}", row.strip())[1:3] == ["kv-blocks", shown]


@pytest.mark.parametrize(("targets", "note"), [
    pytest.param(("vllm@v9",), "target vllm@v9 is not indexed, so its refs were compared with "
                 "nothing: run 'annotate index vllm@v9'", id="one"),
    pytest.param(("vllm@v9", "lmcache@v8"), "targets vllm@v9, lmcache@v8 are not indexed, so "
                 "their refs were compared with nothing: run 'annotate index vllm@v9 "
                 "lmcache@v8'", id="two"),
])
def test_unindexed_targets_are_named_in_the_summary(targets: tuple[str, ...], note: str) -> None:
    report = CheckReport((make(Status.UNINDEXED),), targets, unindexed_targets=targets)
    assert render(report, "text").splitlines()[-1] == (
        f"1 claim, 1 ref: 0 fresh, 0 cosmetic, 0 changed, 0 moved, 0 removed, 0 quote-missing, "
        f"0 relation-missing, 0 broken, 1 unindexed; nothing stale; {note}")


def test_text_diff_colours_headers_bold_and_lines_by_sign() -> None:
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n same"
    coloured = render(report_of(make(Status.CHANGED, diff=diff)), "text", color=True)
    assert coloured.splitlines()[4:10] == [
        "      \x1b[1m--- a\x1b[0m", "      \x1b[1m+++ b\x1b[0m",
        "      \x1b[36m@@ -1 +1 @@\x1b[0m", "      \x1b[31m-old\x1b[0m",
        "      \x1b[32m+new\x1b[0m", "       same",
    ]


@pytest.mark.parametrize(("value", "columns"), [
    pytest.param("abc", 3, id="ascii"),
    pytest.param("分页", 4, id="wide"),
    pytest.param("ＡＢ", 4, id="fullwidth"),
    pytest.param("ｶﾅ", 2, id="halfwidth"),
])
def test_text_width_counts_terminal_columns(value: str, columns: int) -> None:
    assert text.width(value) == columns


@pytest.mark.parametrize(("stale", "verdict"), [
    pytest.param(1, "**Stale:** 1 ref needs attention.", id="one"),
    pytest.param(2, "**Stale:** 2 refs need attention.", id="two"),
])
def test_markdown_verdict_counts_the_refs_needing_attention(stale: int, verdict: str) -> None:
    results = [make(Status.REMOVED, claim=f"c{n}") for n in range(stale)]
    output = render(report_of(*results, make(Status.FRESH, claim="ok")), "markdown")
    assert output.splitlines()[2].endswith(f"against <code>vllm@v0.3.0</code>. {verdict}")


@pytest.mark.parametrize(("stale", "verdict"), [
    pytest.param(True, "\x1b[31mstale\x1b[0m", id="stale-red"),
    pytest.param(False, "\x1b[32mnothing stale\x1b[0m", id="nothing-stale-green"),
])
def test_text_summary_verdict_colour(stale: bool, verdict: str) -> None:
    report = report_of(make(Status.REMOVED if stale else Status.FRESH))
    assert render(report, "text", color=True).endswith(f"; {verdict}")


def test_tabs_in_diffs_are_expanded_to_four_columns() -> None:
    diff = "--- a\n+++ b\n@@ -1 +1 @@\n-\tx = 1\n+\tx = 2"
    report = report_of(make(Status.CHANGED, diff=diff))
    assert render(report, "text").splitlines()[7:9] == ["      -   x = 1", "      +   x = 2"]
    assert "\n-   x = 1\n+   x = 2\n```" in render(report, "markdown")


# --- fail_on with a status that is not stale ---------------------------------------------------

UNINDEXED_FAILING = CheckReport(
    (make(Status.UNINDEXED, failing=True, message="target vllm@v9 is not indexed"),),
    ("vllm@v9",), fail_on=("unindexed",), unindexed_targets=("vllm@v9",))
FRESH_FAILING = CheckReport((make(Status.FRESH, failing=True),), ("vllm@v0.3.0",),
                            fail_on=("fresh",))


@pytest.mark.parametrize(("report", "verdict"), [
    pytest.param(UNINDEXED_FAILING, "nothing stale, but 1 ref failing (fail_on)", id="unindexed"),
    pytest.param(FRESH_FAILING, "nothing stale, but 1 ref failing (fail_on)", id="fresh"),
    pytest.param(report_of(make(Status.FRESH)), "nothing stale", id="not-failing"),
])
def test_summary_line_says_a_run_fails_when_nothing_is_stale(
    report: CheckReport, verdict: str
) -> None:
    """``fail_on = ["unindexed"]`` (as the README advises) fails the run with exit 1: the
    summary must not leave it at "nothing stale"."""
    line = render(report, "text").splitlines()[-1]
    assert line.split("; ")[1] == verdict
    summary = next(line for line in render(report, "github").splitlines()
                   if line.startswith("::notice::"))
    assert summary.split("; ")[1] == verdict


@pytest.mark.parametrize(("report", "verdict"), [
    pytest.param(UNINDEXED_FAILING, "**Failing:** 1 ref has a status in fail\\_on.",
                 id="unindexed"),
    pytest.param(FRESH_FAILING, "**Failing:** 1 ref has a status in fail\\_on.", id="fresh"),
    pytest.param(report_of(make(Status.FRESH)), "**Nothing stale.**", id="not-failing"),
])
def test_markdown_verdict_of_a_failing_run_with_nothing_stale(
    report: CheckReport, verdict: str
) -> None:
    assert render(report, "markdown").splitlines()[2].endswith(verdict)


def test_markdown_lists_a_failing_fresh_ref() -> None:
    """What fails the run is in the table, as in every other format."""
    output = render(FRESH_FAILING, "markdown")
    assert "<kbd>fresh</kbd> **failing**" in output
    assert "All refs are fresh." not in output


@pytest.mark.parametrize("fmt", ["text", "github", "markdown", "sarif"])
@pytest.mark.parametrize("fail_on", [pytest.param(("unindexed",), id="fail-on-unindexed"),
                                     pytest.param((), id="fail-on-nothing")])
def test_unindexed_target_note_does_not_advise_fail_on(fmt: str, fail_on: tuple[str, ...]) -> None:
    """A target not indexed fails the run whatever fail_on holds (exit 2)."""
    output = render(replace(UNINDEXED_FAILING, fail_on=fail_on), fmt)
    assert "target vllm@v9 is not indexed, so its refs were compared with nothing" in output
    assert "or add" not in output


@pytest.mark.parametrize(("report", "painted"), [
    pytest.param(UNINDEXED_FAILING, "\x1b[31mnothing stale, but 1 ref failing (fail_on)\x1b[0m",
                 id="failing-red"),
    pytest.param(replace(UNINDEXED_FAILING, results=(make(Status.UNINDEXED),), fail_on=()),
                 "\x1b[32mnothing stale\x1b[0m", id="with-a-note-green"),
])
def test_text_colours_the_verdict_not_the_note_after_it(report: CheckReport, painted: str) -> None:
    line = render(report, "text", color=True).splitlines()[-1]
    assert f"; {painted}; target" in line


def test_one_line_escapes_exactly_the_line_breaking_characters() -> None:
    """one_line finds them by a character class: it must hold every character of
    categories Cc, Zl and Zp, and no other, of this Python's Unicode."""
    import sys
    import unicodedata

    from annotations.errors import one_line

    escaped = [code for code in range(sys.maxunicode + 1) if one_line(chr(code)) != chr(code)]
    assert escaped == [code for code in range(sys.maxunicode + 1)
                       if unicodedata.category(chr(code)) in ("Cc", "Zl", "Zp")]
    assert one_line("a\u2028b\tc") == "a\\u2028b\\tc"


@pytest.mark.parametrize(("value", "columns"), [
    ("claim-1", 7), ("缓存 cache", 10), ("ａｂ", 4), ("", 0),
], ids=["ascii", "chinese", "fullwidth", "empty"])
def test_text_report_columns(value: str, columns: int) -> None:
    from annotations.reports.text import width

    assert width(value) == columns


def test_plain_text_cells_ask_unicodedata_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A report of 35,000 refs asked unicodedata of each character of each cell, twice."""
    from annotations import errors
    from annotations.reports import text

    def unasked(character: str) -> str:
        raise AssertionError(f"unicodedata asked of {character!r}")

    monkeypatch.setattr(errors.unicodedata, "category", unasked)
    monkeypatch.setattr(text.unicodedata, "east_asian_width", unasked)
    cell = "articles/blog/post.yml:12  vllm@v0.20.0:vllm/config/cache.py::CacheConfig"
    assert errors.one_line(cell) == cell
    assert text.width(cell) == len(cell)


@pytest.mark.parametrize("chunk_chars", [1, 64, 1 << 16], ids=["1-char", "64-chars", "64-KiB"])
@pytest.mark.parametrize("report", [
    pytest.param(rich_report(), id="rich"), pytest.param(unread_report(), id="unread"),
    pytest.param(report_of(), id="empty"),
])
def test_json_in_pieces_is_json_dumps_of_the_report(
    monkeypatch: pytest.MonkeyPatch, report: CheckReport, chunk_chars: int
) -> None:
    """Written as it is encoded, never whole: the same text as one json.dumps, in pieces
    of about CHUNK_CHARS characters."""
    monkeypatch.setattr(json_report, "CHUNK_CHARS", chunk_chars)
    whole = json.dumps(json_report.report_to_dict(report), indent=2, ensure_ascii=False)
    pieces = list(render_chunks(report, "json"))
    assert "".join(pieces) == whole == render(report, "json")
    assert all(len(piece) >= chunk_chars for piece in pieces[:-1])
    assert len(pieces) > 1 if len(whole) > chunk_chars else len(pieces) == 1


class _RenderFailed(Exception):
    """A render that stops half-way."""


def _half_a_report() -> Iterator[bytes]:
    yield b"## half"
    raise _RenderFailed


@pytest.mark.parametrize(("previous", "mode"), [
    pytest.param(None, None, id="a-new-file"),
    pytest.param("the previous report\n", 0o640, id="over-a-report-keeping-its-mode"),
])
def test_a_report_file_is_replaced_whole(
    tmp_path: Path, previous: str | None, mode: int | None
) -> None:
    report = tmp_path / "out" / "report.md"
    report.parent.mkdir()
    if previous is not None:
        report.write_text(previous)
        report.chmod(mode or 0o644)
    replace_whole(report, iter([b"## annotate check\n", b"fresh\n"]))
    assert report.read_bytes() == b"## annotate check\nfresh\n"
    if mode is not None:
        assert report.stat().st_mode & 0o777 == mode
    assert [path.name for path in report.parent.iterdir()] == ["report.md"]


@pytest.mark.parametrize("name", [
    pytest.param("r" * 255, id="255-characters"),
    pytest.param("é" * 127, id="254-bytes-of-127-characters"),
])
def test_a_report_whose_name_is_as_long_as_the_system_allows_is_written(
    tmp_path: Path, name: str
) -> None:
    """Its temporary file beside it is named shorter: the report's name and 18 more
    characters would be too long for the file system."""
    report = tmp_path / "out" / name
    report.parent.mkdir()
    report.write_text("the previous report\n")
    replace_whole(report, iter([b"fresh\n"]))
    assert report.read_bytes() == b"fresh\n"
    assert [path.name for path in report.parent.iterdir()] == [name]


HOURS_AGO = 2 * 3600


@pytest.mark.parametrize(("partial", "age", "held", "kept"), [
    pytest.param(".report.md.0badf00d.partial", HOURS_AGO, False, False,
                 id="left-by-a-killed-writer-removed"),
    pytest.param(".report.md.0badf00d.partial", 60, False, True,
                 id="a-minute-old-kept"),
    pytest.param(".report.md.0badf00d.partial", HOURS_AGO, True, True,
                 id="held-by-a-writer-kept-however-old"),
    pytest.param(".other.md.0badf00d.partial", HOURS_AGO, False, True,
                 id="of-another-report-kept"),
    pytest.param(".report.md.notmine.partial", HOURS_AGO, False, True,
                 id="not-named-as-annotate-names-them-kept"),
])
def test_a_partial_file_left_beside_a_report_is_removed_by_its_next_write(
    tmp_path: Path, partial: str, age: int, held: bool, kept: bool
) -> None:
    """A ``kill -9`` leaves the temporary file; the next write of that report removes it
    once it is an hour old and no writer holds its lock (one that holds it is alive)."""
    report = tmp_path / "report.md"
    left = tmp_path / partial
    left.write_bytes(b"## half")
    os.utime(left, (time.time() - age, time.time() - age))
    with left.open("rb") as holder:
        if held:
            fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
        replace_whole(report, iter([b"fresh\n"]))
    assert report.read_bytes() == b"fresh\n"
    assert left.exists() == kept


def test_a_report_being_written_holds_the_lock_of_its_partial_file(tmp_path: Path) -> None:
    """What tells a later writer that the partial file is in use, however long the render
    takes (a suspended run, a slow diff)."""
    locked = []

    def render() -> Iterator[bytes]:
        yield b"## half"
        for partial in tmp_path.glob(".report.md.*.partial"):
            with partial.open("rb") as other, pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked.append(partial.name)
        yield b"fresh\n"

    replace_whole(tmp_path / "report.md", render())
    assert len(locked) == 1


def test_a_report_file_through_a_symlink_stays_a_symlink(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "latest.md"
    target.write_text("the previous report\n")
    (tmp_path / "report.md").symlink_to(target)
    replace_whole(tmp_path / "report.md", iter([b"fresh\n"]))
    assert (tmp_path / "report.md").is_symlink()
    assert target.read_bytes() == b"fresh\n"


def test_a_render_that_stops_leaves_the_previous_report_and_no_partial_file(
    tmp_path: Path
) -> None:
    report = tmp_path / "out" / "report.md"
    report.parent.mkdir()
    report.write_text("the previous report\n")
    with pytest.raises(_RenderFailed):
        replace_whole(report, _half_a_report())
    assert report.read_text() == "the previous report\n"
    assert [path.name for path in report.parent.iterdir()] == ["report.md"]


_REPLACE_WATCHING_THE_UMASK = """
import os, sys
from pathlib import Path
from annotations.report_file import replace_whole

def umask_now():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))

seen = set()
os.umask(0o027)
report = Path(sys.argv[1])
sys.setprofile(lambda frame, event, arg: seen.add(umask_now()))
replace_whole(report, iter([b"fresh\\n"]))
sys.setprofile(None)
print(*sorted(map(oct, seen)), "then", oct(report.stat().st_mode & 0o777))
"""

_STATUS = Path("/proc/self/status")
_UMASK_SHOWN = _STATUS.is_file() and "Umask:" in _STATUS.read_text(errors="replace")


@pytest.mark.skipif(not _UMASK_SHOWN, reason="the umask cannot be read without setting it")
@pytest.mark.parametrize(("previous_mode", "mode"), [
    pytest.param(None, 0o640, id="a-new-file-as-open-makes-it"),
    pytest.param(0o604, 0o604, id="over-a-report-keeping-a-mode-the-umask-would-narrow"),
])
def test_a_report_file_is_written_without_changing_the_umask(
    tmp_path: Path, previous_mode: int | None, mode: int
) -> None:
    """The umask (0o027 here) is the process's: a thread creating a file while a report is
    written gets the mode it asked for, not one of an umask changed for a moment. Every
    call of replace_whole is watched (a profile hook reading /proc/self/status)."""
    report = tmp_path / "report.md"
    if previous_mode is not None:
        report.write_text("the previous report\n")
        report.chmod(previous_mode)
    done = subprocess.run([sys.executable, "-c", _REPLACE_WATCHING_THE_UMASK, str(report)],
                          capture_output=True, text=True, cwd=tmp_path, check=True)
    assert done.stdout.split() == ["0o27", "then", oct(mode)]
    assert report.read_text() == "fresh\n"
