"""Loading annotation YAML files and Markdown articles: claims, every error message, fuzzing."""

from __future__ import annotations

import datetime
import hashlib
import os
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotations import loader, markdown
from annotations.errors import AnnotationError, AnnotationFileError
from annotations.loader import (
    MAX_CLAIMS,
    MAX_FILE_BYTES,
    link_claim_id,
    load_annotation_file,
    load_annotation_text,
    load_file,
    load_markdown_article,
    load_markdown_text,
)
from annotations.markdown import code_span_ranges
from annotations.model import Article
from annotations.refs import Ref, RefForm

EXAMPLE = """\
article: module_analysis/mla-tp-sharding.md   # required; path or URL
title: "MLA 的 TP 切分"                        # optional
at: vllm@v0.20.0                              # optional default pin
claims:
  - id: replicated
    text: "ReplicatedLinear 使全部 576 维在 8 个 TP rank 上完全复制"
    at: vllm@v0.20.0
    refs:
      - vllm/model_executor/layers/linear.py::ReplicatedLinear
      - ref: vllm/config/cache.py::CacheConfig.gpu_memory_utilization
        quote: "default=0.92"
        uses: [vllm/x.py::Y]
      - lmcache@v0.5.1:lmcache/integration/vllm/utils.py::mla_enabled
    waive:
      - {status: changed, until: 2027-03-31, reason: "reviewed: only logging changed"}
"""

GH = "https://github.com/vllm-project/vllm/blob"


def test_uses_take_their_refs_own_pin(tmp_path: Path) -> None:
    text = ("article: a\nat: vllm@v0.20.0\nclaims:\n  - id: c\n    text: t\n    refs:\n"
            "      - ref: lmcache@v0.5.1:lmcache/v1/cache_engine.py::LMCacheEngine.store\n"
            "        uses: [lmcache/v1/storage.py::Backend, vllm@v0.25.0:vllm/a.py::f]\n"
            "      - ref: vllm/b.py::g\n        uses: [vllm/a.py::f]\n")
    article = load_annotation_file(_write(tmp_path, "a.yaml", text), "a.yaml")
    first, second = article.claims[0].refs
    assert first.uses == ("lmcache@v0.5.1:lmcache/v1/storage.py::Backend",
                          "vllm@v0.25.0:vllm/a.py::f")
    assert second.uses == ("vllm@v0.20.0:vllm/a.py::f",)


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names must be UTF-8")
def test_an_annotation_file_name_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    good = _write(tmp_path, "good.yaml", EXAMPLE)
    odd = tmp_path / os.fsdecode(b"odd\xff.yaml")
    odd.write_text(EXAMPLE, encoding="utf-8")
    results = [load_file(path, tmp_path, markdown=False) for path in (good, odd)]
    assert [article.source_file for result in results for article in result.articles] == [
        "good.yaml"]
    assert [str(error) for result in results for error in result.errors] == [
        "odd\\xff.yaml: the file name is not valid UTF-8 (hint: rename the file)"]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _yaml_errors(tmp_path: Path, text: str) -> list[str]:
    result = load_file(_write(tmp_path, "a.yaml", text), tmp_path, markdown=False)
    assert result.articles == [] or not result.errors
    return [str(error) for error in result.errors]


def _md_errors(tmp_path: Path, text: str) -> list[str]:
    result = load_file(_write(tmp_path, "a.md", text), tmp_path, markdown=True)
    return [str(error) for error in result.errors]


# -- the example ----------------------------------------------------------------------------------


def test_example_loads_with_exact_text_and_lines(tmp_path: Path) -> None:
    article = load_annotation_file(_write(tmp_path, "x.yaml", EXAMPLE), "notes/x.yaml")
    assert article.path == "module_analysis/mla-tp-sharding.md"
    assert article.title == "MLA 的 TP 切分"
    assert article.source_file == "notes/x.yaml"
    (claim,) = article.claims
    assert claim.claim_id == "replicated"
    assert claim.text == "ReplicatedLinear 使全部 576 维在 8 个 TP rank 上完全复制"
    assert (claim.at, claim.line, claim.article) == ("vllm@v0.20.0", 5, article.path)
    first, second, third = claim.refs
    assert first.text == "vllm/model_executor/layers/linear.py::ReplicatedLinear"
    assert first.ref == Ref(
        "vllm",
        "v0.20.0",
        RefForm.SYMBOL,
        path="vllm/model_executor/layers/linear.py",
        qualname="ReplicatedLinear",
    )
    assert (first.line, first.quote, first.uses) == (9, None, ())
    assert (second.line, second.quote) == (10, "default=0.92")
    assert second.uses == ("vllm@v0.20.0:vllm/x.py::Y",)
    assert (third.ref.repo, third.ref.version, third.line) == ("lmcache", "v0.5.1", 13)
    (waiver,) = claim.waivers
    assert waiver.status == "changed"
    assert waiver.until == datetime.date(2027, 3, 31)
    assert (waiver.reason, waiver.line) == ("reviewed: only logging changed", 15)


def test_file_default_pin_and_unpinned_refs() -> None:
    text = "article: a\nat: vllm@v1\nclaims:\n- {id: a, text: t, refs: [x.py::f]}\n"
    (claim,) = load_annotation_text(text, "a.yaml").claims
    assert claim.at == "vllm@v1" and claim.refs[0].ref.version == "v1"
    text = "article: a\nclaims:\n- {id: a, text: t, refs: [x.py::f], at: o@v2}\n"
    (claim,) = load_annotation_text(text, "a.yaml").claims
    assert claim.at == "o@v2" and claim.refs[0].ref.repo == "o"
    text = "article: a\nclaims:\n- {id: a, text: t, refs: [x.py::f]}\n"
    (claim,) = load_annotation_text(text, "a.yaml").claims
    assert claim.at is None and not claim.refs[0].ref.pinned


def test_a_claims_own_pin_wins_over_the_files() -> None:
    text = ("article: a\nat: vllm@v1\nclaims:\n- {id: a, text: t, refs: [x.py::f], at: o@v2}\n"
            "- {id: b, text: t, refs: [x.py::f, vllm@v3:y.py::g]}\n")
    first, second = load_annotation_text(text, "a.yaml").claims
    assert (first.at, first.refs[0].ref.repo, first.refs[0].ref.version) == ("o@v2", "o", "v2")
    assert [entry.ref.version for entry in second.refs] == ["v1", "v3"]


def test_scalars_are_read_as_written() -> None:
    text = "article: a\nclaims:\n- {id: 0123, text: yes, refs: [x.py::f]}\n"
    (claim,) = load_annotation_text(text, "a.yaml").claims
    assert (claim.claim_id, claim.text) == ("0123", "yes")


def test_until_as_iso_string() -> None:
    text = (
        "article: a\nclaims:\n- id: a\n  text: t\n  refs: [x.py::f]\n"
        "  waive: [{status: moved, until: '2027-01-02', reason: r}]\n"
    )
    (claim,) = load_annotation_text(text, "a.yaml").claims
    assert claim.waivers[0].until == datetime.date(2027, 1, 2)


def test_utf8_bom_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.encode())
    assert load_annotation_file(path).claims[0].claim_id == "replicated"


def test_utf8_bom_before_front_matter_is_dropped(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.md", "\ufeff---\ntitle: T\n---\nbody\n")
    assert load_markdown_article(path, "a.md").title == "T"


# -- the error catalogue --------------------------------------------------------------------------

OK_CLAIM = "  - id: c\n    text: t\n    refs: [a.py::f]\n"

YAML_ERRORS = [
    pytest.param(
        "article: [a\n",
        [
            "a.yaml:1: invalid YAML: while parsing a flow sequence, "
            "expected ',' or ']', but got '<stream end>'"
        ],
        id="invalid-yaml",
    ),
    pytest.param(
        'article: a\ntitle: "坏的\nclaims: []\n',
        ["a.yaml:2: invalid YAML: while scanning a quoted scalar, "
         "found unexpected end of stream"],
        id="unclosed-quote-is-reported-where-it-opens",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: x\n   text: y\n",
        ["a.yaml:4: invalid YAML: while parsing a block collection (on line 3), "
         "expected <block end>, but found '<block mapping start>'"],
        id="problem-line-names-the-line-of-its-context",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: x\n\ttext: y\n",
        ["a.yaml:4: invalid YAML: while scanning for the next token, found character '\\t' "
         "that cannot start any token (hint: write spaces in place of the tab: YAML takes "
         "none there)"],
        id="a-tab-that-indents",
    ),
    pytest.param(
        "article: a\nclaims: []\n---\nx: 1\n",
        [
            "a.yaml:3: invalid YAML: expected a single document in the stream, "
            "but found another document"
        ],
        id="two-documents",
    ),
    pytest.param(
        "article: a\ntitle: \x07\n",
        ["a.yaml:2: invalid YAML: unacceptable character U+0007"],
        id="unprintable-character",
    ),
    *(pytest.param(
        f'article: a\ntitle: "x{escape}"\n',
        ["a.yaml:2: invalid YAML: an escape names no Unicode character (at most \\U0010FFFF)"],
        id=f"escape-{name}") for name, escape in (("past-unicode", "\\U0011FFFF"),
                                                  ("past-a-c-int", "\\UFFFFFFFF"))),
    pytest.param(
        "- a\n- b\n", ["a.yaml:1: the top level must be a mapping, not a list"], id="list"
    ),
    pytest.param(
        "# nothing\n",
        ["a.yaml:1: the top level must be a mapping, not an empty document"],
        id="empty",
    ),
    pytest.param(
        "article: a\nclaims: []\nnotes: x\n",
        ["a.yaml:3: unknown key 'notes' at top level (allowed: article, title, at, claims)"],
        id="unknown-top-key",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs: [a.py::f]\n    note: x\n",
        ["a.yaml:6: unknown key 'note' in claim 'c' (allowed: id, text, at, refs, waive)"],
        id="unknown-claim-key",
    ),
    pytest.param(
        "article: a\nclaims:\n  - idd: c\n    text: t\n    refs: [a.py::f]\n",
        ["a.yaml:3: claim #1 is missing 'id'", "a.yaml:3: unknown key 'idd' in claim #1 (did "
         "you mean 'id'? allowed: id, text, at, refs, waive)"],
        id="claim-key-misspelt",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - {ref: a.py::f, "
        "qoute: x}\n",
        ["a.yaml:6: unknown key 'qoute' in a ref of claim 'c' (did you mean 'quote'? allowed: "
         "ref, quote, uses)"],
        id="ref-key-misspelt",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - {ref: a.py::f, q: x}\n",
        ["a.yaml:6: unknown key 'q' in a ref of claim 'c' (allowed: ref, quote, uses)"],
        id="unknown-ref-key",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n"
        "      - {status: moved, until: 2027-01-01, reason: r, by: me}\n",
        ["a.yaml:7: unknown key 'by' in a waiver of claim 'c' (allowed: status, until, reason)"],
        id="unknown-waiver-key",
    ),
    pytest.param(
        "claims: []\n", ["a.yaml:1: missing required key 'article' at top level"], id="no-article"
    ),
    pytest.param(
        "article: a\n", ["a.yaml:1: missing required key 'claims' at top level"], id="no-claims"
    ),
    pytest.param(
        "article: null\nclaims: []\n",
        ["a.yaml:1: 'article' must be a string, not null"],
        id="article-null",
    ),
    pytest.param(
        "article: [a]\nclaims: []\n",
        ["a.yaml:1: 'article' must be a string, not a list"],
        id="article-list",
    ),
    pytest.param(
        "article: a\ntitle: {x: 1}\nclaims: []\n",
        ["a.yaml:2: 'title' must be a string, not a mapping"],
        id="title-mapping",
    ),
    pytest.param(
        "article: a\nclaims: {id: c}\n",
        ["a.yaml:2: 'claims' must be a list, not a mapping"],
        id="claims-mapping",
    ),
    pytest.param(
        "article: a\nclaims:\n  - just text\n",
        ["a.yaml:3: claim #1 must be a mapping, not a string"],
        id="claim-string",
    ),
    pytest.param(
        "article: a\nclaims:\n  - text: t\n    refs: [a.py::f]\n",
        ["a.yaml:3: claim #1 is missing 'id'"],
        id="claim-no-id",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    refs: [a.py::f]\n",
        ["a.yaml:3: claim 'c' is missing 'text'"],
        id="claim-no-text",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: ' '\n    refs: [a.py::f]\n",
        ["a.yaml:4: 'text' of claim 'c' must not be empty"],
        id="claim-empty-text",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: [t]\n    refs: [a.py::f]\n",
        ["a.yaml:4: 'text' of claim 'c' must be a string, not a list"],
        id="claim-text-list",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: [c]\n    text: t\n    refs: [a.py::f]\n",
        ["a.yaml:3: 'id' of claim #1 must be a string, not a list"],
        id="claim-id-list",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n",
        ["a.yaml:3: claim 'c' has no refs"],
        id="claim-no-refs",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs: []\n",
        ["a.yaml:5: claim 'c' has no refs"],
        id="claim-empty-refs",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs: a.py::f\n",
        ["a.yaml:5: 'refs' of claim 'c' must be a list, not a string"],
        id="refs-string",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - [a.py::f]\n",
        ["a.yaml:6: each ref of claim 'c' must be a string or a mapping, not a list"],
        id="ref-list",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - {quote: x}\n",
        ["a.yaml:6: a ref of claim 'c' is missing 'ref'"],
        id="ref-no-ref",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n"
        "      - {ref: a.py::f, quote: ''}\n",
        ["a.yaml:6: 'quote' of a ref of claim 'c' must not be empty"],
        id="ref-empty-quote",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - {ref: a.py::f, uses: b}\n",
        ["a.yaml:6: 'uses' of a ref of claim 'c' must be a list, not a string"],
        id="uses-string",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n"
        "      - ref: a.py::f\n        uses:\n          - {x: 1}\n",
        ["a.yaml:8: each entry of 'uses' of claim 'c' must be a string, not a mapping"],
        id="uses-entry-mapping",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n"
        "      - ref: a.py::f\n        uses:\n          - b/c.py\n",
        ["a.yaml:8: missing '::QUALNAME' or '#Lx-Ly' after path 'b/c.py'"],
        id="uses-entry-bad-ref",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs: [a.py::f]\n    waive: {}\n",
        ["a.yaml:6: 'waive' of claim 'c' must be a list, not a mapping"],
        id="waive-mapping",
    ),
    pytest.param(
        'article: a\nclaims:\n  - id: c\n    text: "x \\ud800"\n    refs: [a.py::f]\n',
        ["a.yaml:4: invalid character U+D800 (half of a UTF-16 pair) (hint: remove it, or "
         "write the character itself)"],
        id="lone-surrogate-escape",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n      - changed\n",
        ["a.yaml:7: each waiver of claim 'c' must be a mapping, not a string"],
        id="waiver-string",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n"
        "      - {status: fresh, until: 2027-01-01, reason: r}\n",
        [
            "a.yaml:7: unknown waiver status 'fresh' (allowed: changed, moved, removed, "
            "quote-missing, broken, relation-missing, unindexed)"
        ],
        id="waiver-status",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n"
        "      - {status: moved, until: 2027-02-30, reason: r}\n",
        [
            "a.yaml:7: invalid date '2027-02-30' for 'until' of a waiver of claim 'c': "
            "day is out of range for month"
        ],
        id="waiver-impossible-date",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n"
        "      - {status: moved, until: next year, reason: r}\n",
        [
            "a.yaml:7: invalid date 'next year' for 'until' of a waiver of claim 'c': "
            "expected YYYY-MM-DD"
        ],
        id="waiver-text-date",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n"
        "      - {status: moved, until: [2027-01-01], reason: r}\n",
        [
            "a.yaml:7: invalid date 'a list' for 'until' of a waiver of claim 'c': "
            "expected YYYY-MM-DD"
        ],
        id="waiver-list-date",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + "    waive:\n"
        "      - {status: moved, until: 2027-01-01}\n",
        ["a.yaml:7: a waiver of claim 'c' is missing 'reason'"],
        id="waiver-no-reason",
    ),
    pytest.param(
        "article: a\nclaims:\n" + OK_CLAIM + OK_CLAIM,
        ["a.yaml:6: duplicate claim id 'c' (first defined at line 3)"],
        id="duplicate-id",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: Bad_Id\n    text: t\n    refs: [a.py::f]\n",
        ["a.yaml:3: invalid claim id 'Bad_Id': must match ^[a-z0-9][a-z0-9-]*$ (hint: "
         "lowercase letters, digits and '-': 'bad-id')"],
        id="id-shape",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: 显存\n    text: t\n    refs: [a.py::f]\n",
        ["a.yaml:3: invalid claim id '显存': must match ^[a-z0-9][a-z0-9-]*$ (hint: "
         "lowercase letters, digits and '-', e.g. 'kv-cache-size')"],
        id="id-shape-nothing-to-keep",
    ),
    pytest.param(
        "article: a\nat: vllm\nclaims: []\n",
        [
            "a.yaml:2: invalid pin 'vllm': expected 'REPO@VERSION' "
            "(hint: 'at' takes REPO@VERSION, e.g. vllm@v0.20.0)"
        ],
        id="at-no-version",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    at: vllm@--x\n    refs: [a.py::f]\n",
        [
            "a.yaml:5: invalid version '--x' in 'vllm@--x': a version starts with a letter "
            "or digit (hint: 'at' takes REPO@VERSION, e.g. vllm@v0.20.0)"
        ],
        id="claim-at-bad-version",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n"
        "      - a.py::f\n      - a.py::A..b\n",
        [
            "a.yaml:7: invalid qualname 'A..b' (hint: a qualname is identifiers joined by '.', "
            "e.g. 'Outer.method' or 'f.<locals>.g')"
        ],
        id="ref-syntax-at-its-line",
    ),
    pytest.param(
        "article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - ref: vllm@-x:a.py::f\n",
        [
            "a.yaml:6: invalid version '-x' in 'vllm@-x:a.py::f': "
            "a version starts with a letter or digit"
        ],
        id="ref-mapping-syntax",
    ),
    pytest.param(
        "article: a\nx: !!python/object/apply:os.system [echo hi]\nclaims: []\n",
        [
            "a.yaml:2: unsupported YAML tag '!!python/object/apply:os.system' "
            "(hint: only plain YAML data is read)"
        ],
        id="python-tag",
    ),
    pytest.param(
        "article: a\nclaims: !custom []\n",
        ["a.yaml:2: unsupported YAML tag '!custom' (hint: only plain YAML data is read)"],
        id="local-tag",
    ),
    pytest.param(
        "base: &b {article: a}\n<<: *b\nclaims: []\n",
        ["a.yaml:2: YAML merge keys ('<<') are not supported"],
        id="merge-key",
    ),
    pytest.param(
        "article: a\narticle: b\nclaims: []\n",
        ["a.yaml:2: duplicate key 'article' (first at line 1)"],
        id="duplicate-key",
    ),
    pytest.param(
        "article: a\n[x]: 1\nclaims: []\n",
        ["a.yaml:2: mapping keys must be plain strings"],
        id="key-list",
    ),
    pytest.param(
        "a: " + "[" * 25 + "]" * 25 + "\n",
        ["a.yaml:1: YAML nesting is deeper than 20 levels"],
        id="too-deep",
    ),
    pytest.param(
        "a: &a [*a]\n",
        ["a.yaml:1: YAML nesting is deeper than 20 levels"],
        id="recursive-alias",
    ),
    pytest.param(
        "".join(
            f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else "x"] * 10) + "]\n"
            for i in range(9)
        ),
        [
            "a.yaml:1: more than 100000 YAML nodes (aliases counted as expanded) "
            "(hint: split the file into several (an article's claims may come from many); "
            "each use of an alias (*x) counts its anchor's nodes again)"
        ],
        id="billion-laughs",
    ),
    pytest.param(
        "a: [" + "x, " * 100_001 + "]\n",
        [
            "a.yaml:1: more than 100000 YAML nodes (aliases counted as expanded) "
            "(hint: split the file into several (an article's claims may come from many); "
            "each use of an alias (*x) counts its anchor's nodes again)"
        ],
        id="too-many-nodes",
    ),
]


@pytest.mark.parametrize(("text", "expected"), YAML_ERRORS)
def test_yaml_error_messages(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert _yaml_errors(tmp_path, text) == expected


def test_every_error_of_a_file_is_reported_in_line_order(tmp_path: Path) -> None:
    text = (
        "article: a\n"
        "claims:\n"
        "  - id: c\n"
        "    text: t\n"
        "    refs: [a.py::f]\n"
        "    extra: 1\n"
        "  - id: c\n"
        "    refs: [a.py::A..b]\n"
        "junk: 1\n"
    )
    assert _yaml_errors(tmp_path, text) == [
        "a.yaml:6: unknown key 'extra' in claim 'c' (allowed: id, text, at, refs, waive)",
        "a.yaml:7: duplicate claim id 'c' (first defined at line 3)",
        "a.yaml:7: claim 'c' is missing 'text'",
        "a.yaml:8: invalid qualname 'A..b' (hint: a qualname is identifiers joined by '.', "
        "e.g. 'Outer.method' or 'f.<locals>.g')",
        "a.yaml:9: unknown key 'junk' at top level (allowed: article, title, at, claims)",
    ]


def test_single_file_loader_raises_first_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.yaml", "article: a\nnope: 1\nclaims: [1]\n")
    with pytest.raises(AnnotationFileError) as caught:
        load_annotation_file(path, "a.yaml")
    assert str(caught.value) == (
        "a.yaml:2: unknown key 'nope' at top level (allowed: article, title, at, claims)"
    )
    assert (caught.value.file, caught.value.line) == ("a.yaml", 2)


def test_a_text_libyaml_cannot_take_is_read_by_pyyaml() -> None:
    """A lone surrogate (a text given to the loader, not a file) cannot be encoded for
    libyaml: PyYAML reads it and says which character it refuses, on which line."""
    with pytest.raises(AnnotationFileError) as caught:
        load_annotation_text("article: a\nclaims: [\ud800]\n", "a.yaml")
    assert str(caught.value) == "a.yaml:2: invalid YAML: unacceptable character U+D800"


def test_too_many_claims(tmp_path: Path) -> None:
    claims = "".join(f"- {{id: c{i}, text: t, refs: [a.py::f]}}\n" for i in range(MAX_CLAIMS + 1))
    text = "article: a\nclaims:\n" + claims
    assert _yaml_errors(tmp_path, text) == [f"a.yaml:3: too many claims (5001, max {MAX_CLAIMS})"]


def test_file_too_large(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"#" * (MAX_FILE_BYTES + 1))
    result = load_file(path, tmp_path, markdown=False)
    assert [str(e) for e in result.errors] == [
        "a.yaml: file is larger than 2097152 bytes (hint: split it into several files)"]


def test_invalid_utf8_names_the_byte_offset(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"article: a\ntitle: \xff\n")
    with pytest.raises(AnnotationFileError) as caught:
        load_annotation_file(path, "a.yaml")
    assert str(caught.value) == "a.yaml:2: not valid UTF-8: byte 0xff at offset 18"


def test_unreadable_file(tmp_path: Path) -> None:
    result = load_file(tmp_path / "missing.yaml", tmp_path, markdown=False)
    assert [str(e) for e in result.errors] == [
        "missing.yaml: cannot read file: No such file or directory"
    ]


def test_load_file_names_files_by_their_relative_posix_paths(tmp_path: Path) -> None:
    good = _write(tmp_path, "notes/good.yaml", EXAMPLE)
    bad1 = _write(tmp_path, "notes/bad1.yaml", "article: a\n")
    bad2 = _write(tmp_path, "notes/bad2.yaml", "[")
    md = _write(tmp_path, "articles/x.md", f"see {GH}/v1/a.py#L2\n")
    results = [load_file(path, tmp_path, markdown=path == md)
               for path in (bad1, good, bad2, tmp_path / "gone.yaml", md)]
    assert [a.source_file for result in results for a in result.articles] == [
        "notes/good.yaml", "articles/x.md"]
    assert [str(e) for result in results for e in result.errors] == [
        "notes/bad1.yaml:1: missing required key 'claims' at top level",
        "notes/bad2.yaml:1: invalid YAML: while parsing a flow node, "
        "expected the node content, but found '<stream end>'",
        "gone.yaml: cannot read file: No such file or directory",
    ]


# -- Markdown -------------------------------------------------------------------------------------

MARKDOWN = f"""\
---
title: "MLA 的 TP 切分"
at: vllm@v0.20.0
claims:
  - id: replicated
    text: "ReplicatedLinear 使全部 576 维在 8 个 TP rank 上完全复制"
    refs: [vllm/model_executor/layers/linear.py::ReplicatedLinear]
---
# MLA

ReplicatedLinear 见 [linear.py]({GH}/v0.20.0/vllm/model_executor/layers/linear.py#L10-L20)。
另见 <{GH}/abc123/vllm/b.py#L5>.

- again {GH}/v0.20.0/vllm/model_executor/layers/linear.py#L10-L20, twice
- not a permalink: https://github.com/vllm-project/vllm/pull/1
"""


def test_markdown_front_matter_and_permalinks(tmp_path: Path) -> None:
    path = _write(tmp_path, "articles/mla.md", MARKDOWN)
    article = load_markdown_article(path, "articles/mla.md")
    assert (article.path, article.title, article.source_file) == (
        "articles/mla.md",
        "MLA 的 TP 切分",
        "articles/mla.md",
    )
    own, link1, link2, link3 = article.claims
    assert own.claim_id == "replicated" and own.line == 5 and own.at == "vllm@v0.20.0"
    assert own.text == "ReplicatedLinear 使全部 576 维在 8 个 TP rank 上完全复制"
    url = f"{GH}/v0.20.0/vllm/model_executor/layers/linear.py#L10-L20"
    digest = hashlib.sha1(f"articles/mla.md\n{url}".encode()).hexdigest()[:10]
    assert link1.claim_id == f"link-{digest}" == link_claim_id("articles/mla.md", url)
    assert link3.claim_id == f"link-{digest}-2"
    assert (link1.line, link2.line, link3.line) == (11, 12, 14)
    assert link1.text == "ReplicatedLinear 见 linear.py。另见 " + f"{GH}/abc123/vllm/b.py#L5."
    assert link3.text == f"again {url}, twice"
    assert link1.at is None and link1.waivers == ()
    (entry,) = link1.refs
    assert (entry.text, entry.line) == (url, 11)
    assert entry.ref.form is RefForm.PERMALINK and entry.ref.github == "vllm-project/vllm"
    assert link2.refs[0].ref.version == "abc123"


def test_markdown_without_claims() -> None:
    article = load_markdown_text("# Title\n\nJust prose.\n", "a.md")
    assert article == Article("a.md", None, "a.md", ())


def test_markdown_front_matter_article_overrides_default() -> None:
    text = f"---\narticle: https://example.com/post\n---\nsee {GH}/v1/a.py\n"
    article = load_markdown_text(text, "a.md")
    assert article.path == "https://example.com/post"
    assert article.claims[0].claim_id == link_claim_id("https://example.com/post", f"{GH}/v1/a.py")


CODE_BLOCKS = [
    pytest.param("```\n{A}\n```\n{B}\n", [6], id="backtick-fence"),
    pytest.param("~~~\n{A}\n~~~\n{B}\n", [6], id="tilde-fence"),
    pytest.param("```python\n# Adapted from\n# {A}\n```\n{B}\n", [7], id="info-string"),
    pytest.param("   ```\n{A}\n   ```\n{B}\n", [6], id="fence-indented-three"),
    pytest.param("- item\n\n    ```\n    {A}\n    ```\n{B}\n", [8], id="fence-indented-in-a-list"),
    pytest.param("> ```python\n> # {A}\n> ```\n{B}\n", [6], id="fence-in-a-block-quote"),
    pytest.param("- ```\n  {A}\n  ```\n{B}\n", [6], id="fence-on-the-list-marker-line"),
    pytest.param("1. ```\n   {A}\n   ```\n{B}\n", [6], id="fence-in-a-numbered-item"),
    pytest.param("````\n```\n{A}\n````\n{B}\n", [7], id="shorter-fence-does-not-close"),
    pytest.param("~~~\n```\n{A}\n~~~\n{B}\n", [7], id="other-character-does-not-close"),
    pytest.param("```\n{A}\n``` not a close\n{B}\n```\n{B}\n", [8],
                 id="closing-fence-takes-no-info"),
    pytest.param("```\n{A}\n````\n{B}\n", [6], id="longer-fence-closes"),
    pytest.param("```x`y\n{A}\n", [4], id="backtick-in-info-is-inline-code"),
    pytest.param("```\n{A}\n{B}\n", [], id="unclosed-fence-runs-to-the-end"),
    pytest.param("- item\n  ```\n  {A}\n  ```\n{B}\n", [7], id="fence-in-a-list-item"),
    pytest.param("Inline `{A}` here\n{B}\n", [4], id="code-span"),
    pytest.param("Inline `` `{A}` `` here\n{B}\n", [4], id="code-span-of-two-backticks"),
    pytest.param("One ` alone, {A}\n", [3], id="lone-backtick-is-no-code-span"),
    pytest.param("Inline `code` then {A}\n", [3], id="link-after-a-code-span"),
    pytest.param("Not ``code` {A}`\n", [], id="a-run-closes-only-one-of-its-length"),
    pytest.param("Text `a\n{A} b`\n{B}\n", [5], id="code-span-over-two-lines"),
    pytest.param("Text ``a\n{A}`\nb``\n{B}\n", [6],
                 id="code-span-of-two-backticks-over-three-lines"),
    pytest.param("> a `x\n> {A}`\n\n{B}\n", [6], id="code-span-over-two-quoted-lines"),
    pytest.param("- a `x\n- {A}`\n", [4], id="list-items-share-no-code-span"),
    pytest.param("Text `a\n\n{A}`\n", [5], id="paragraphs-share-no-code-span"),
    pytest.param("    {A}\n\n{B}\n", [5], id="indented-code"),
    pytest.param("\t{A}\n\n{B}\n", [5], id="tab-indented-code"),
    pytest.param("    x = 1\n\n    {A}\n\n{B}\n", [7], id="indented-code-over-a-blank-line"),
    pytest.param("## Heading\n    {A}\n", [], id="indented-code-after-a-heading"),
    pytest.param("#1 reason:\n    {A}\n", [4], id="indented-continuation-of-a-hash-line"),
    pytest.param("```\nx\n```\n    {A}\n", [], id="indented-code-after-a-fence"),
    pytest.param("Text\n    {A}\n\n{B}\n", [4, 6], id="indented-paragraph-continuation"),
    pytest.param("- item\n\n    {A}\n", [5], id="indented-paragraph-of-a-list-item"),
    pytest.param("- item\n    {A}\n", [4], id="indented-lazy-line-of-a-list-item"),
    pytest.param("- item\n\n      {A}\n\n{B}\n", [7], id="indented-code-in-a-list-item"),
    pytest.param("10. item\n\n        {A}\n", [], id="indented-code-in-a-numbered-item"),
    pytest.param("- a\n  - b\n\n        {A}\n\n{B}\n", [8], id="indented-code-in-a-nested-item"),
    pytest.param("- a\n  - b\n\n      {A}\n", [6], id="indented-paragraph-of-a-nested-item"),
    pytest.param("- item\n\nText\n\n    {A}\n\n{B}\n", [9],
                 id="indented-code-after-the-list-ends"),
    pytest.param("- item\n\n```\nx\n```\n\n    {A}\n\n{B}\n", [11],
                 id="indented-code-after-a-fence-that-ends-the-list"),
    pytest.param("- item\n```\nx\n```\n    {A}\n\n{B}\n", [9],
                 id="indented-code-after-a-fence-interrupting-the-item"),
    pytest.param("- item\n<!-- c -->\n    {A}\n\n{B}\n", [7],
                 id="indented-code-after-a-comment-that-ends-the-list"),
    pytest.param("- item\n\n<pre>x</pre>\n\n    {A}\n\n{B}\n", [9],
                 id="indented-code-after-a-pre-that-ends-the-list"),
    pytest.param("- item\n## H\n    {A}\n\n{B}\n", [7],
                 id="indented-code-after-a-heading-that-ends-the-list"),
    pytest.param("- item\n\n  ```\n  x\n  ```\n\n    {A}\n\n{B}\n", [9, 11],
                 id="a-fence-in-the-item-keeps-the-list"),
    pytest.param("- ```\n  x\n  ```\n\n    {A}\n\n{B}\n", [7, 9],
                 id="indented-paragraph-of-an-item-opening-with-a-fence"),
    pytest.param("<!-- {A} -->\n{B}\n", [4], id="html-comment"),
    pytest.param("Text <!-- todo {A} --> then {B}\n", [3], id="html-comment-inside-a-line"),
    pytest.param("<!--\n{A}\n\n{A}\n-->\n{B}\n", [8], id="html-comment-over-a-blank-line"),
    pytest.param("Text <!-- a\nnote {A} --> {B}\n", [4], id="html-comment-over-two-lines"),
    pytest.param("Text <!--> {B}\n", [3], id="shortest-html-comment-closes-itself"),
    pytest.param("`<!--` {B}\n{B}\n", [3, 4], id="html-comment-opener-in-a-code-span"),
    pytest.param("<pre>\n{A}\n</pre>\n{B}\n", [6], id="pre-block"),
    pytest.param("<PRE class=\"x\">{A}</PRE>\n{B}\n", [4], id="pre-block-on-one-line"),
    pytest.param("<pre>\n{A}\n", [], id="unclosed-pre-runs-to-the-end"),
    pytest.param("<prefix> {B}\n", [3], id="a-tag-named-like-pre-is-not-pre"),
    pytest.param("```html\n<pre>\n```\n\n{B}\n", [7], id="pre-shown-in-a-fence-opens-nothing"),
    pytest.param("<!--\n<pre>\n-->\n\n{B}\n", [7], id="pre-in-a-comment-opens-nothing"),
    pytest.param("<pre>\n</script>\n{B}\n", [5], id="any-raw-end-tag-closes"),
    pytest.param("Text <!-- old\nnote --> is at {B} <!-- more\nnote --> today.\n", [4],
                 id="between-a-comment-closing-and-one-opening"),
    pytest.param("<!-- a\nb --> and {B} <!-- c\nd -->\n", [4], id="between-two-block-comments"),
    pytest.param("Text <?php {A} ?> then {B}\n", [3], id="inline-processing-instruction"),
    pytest.param("Text <!DOCTYPE {A}> then {B}\n", [3], id="inline-declaration"),
    pytest.param("Text <![CDATA[ {A} ]]> then {B}\n", [3], id="inline-cdata-section"),
    pytest.param("A List<?> of {B}\n", [3], id="an-unclosed-processing-instruction-is-text"),
    pytest.param("`<?x` {B} `?>`\n", [3], id="a-processing-instruction-in-code-spans-is-code"),
]


@pytest.mark.parametrize(("line", "urls"), [
    pytest.param(f"[x]({GH}/v1/docs/中文/a.py#L3)", [f"{GH}/v1/docs/中文/a.py#L3"],
                 id="link-destination-to-its-end"),
    pytest.param(f"[x](<{GH}/v1/文档.py>)", [f"{GH}/v1/文档.py"], id="bracketed-destination"),
    pytest.param(f"见 <{GH}/v1/文档.py>。", [f"{GH}/v1/文档.py"], id="autolink-to-its-end"),
    pytest.param(f"见 <https://x<{GH}/v1/文档.py>。", [f"{GH}/v1/文档.py"],
                 id="autolink-after-an-unclosed-one"),
    pytest.param(f"见{GH}/v1/a.py#L10中的实现。", [f"{GH}/v1/a.py#L10"],
                 id="prose-ends-at-chinese"),
    pytest.param(f"[{GH}/v1/a.py 中](https://example.com)", [f"{GH}/v1/a.py"],
                 id="url-in-link-text-ends-as-prose"),
    pytest.param(f"see [x]({GH}/v1/a.py#L1).", [f"{GH}/v1/a.py#L1"], id="ascii-unchanged"),
    pytest.param(f"~~旧链接：{GH}/v1/a.py#L1-L9~~", [f"{GH}/v1/a.py#L1-L9"], id="struck-out"),
    pytest.param(f"_见 {GH}/v1/a.py#L66_", [f"{GH}/v1/a.py#L66"], id="emphasised"),
    pytest.param(f"{GH}/v1/a_b/c~d.py", [f"{GH}/v1/a_b/c~d.py"], id="inner-underscore-tilde"),
])
def test_markdown_permalink_urls_end_where_markdown_ends_them(line: str, urls: list[str]) -> None:
    claims = load_markdown_text(f"# T\n\n{line}\n", "a.md").claims
    assert [entry.text for claim in claims for entry in claim.refs] == urls


@pytest.mark.parametrize(("body", "urls"), [
    pytest.param("![diagram]({G}/docs/x.png)", [], id="image"),
    pytest.param('![diagram]({G}/docs/x.png "the flow")', [], id="image-with-a-title"),
    pytest.param("![a file]({G}/vllm/a.py#L1)", [], id="image-of-any-file"),
    pytest.param("见图![流程]({G}/docs/x.png)。", [], id="image-right-after-text"),
    pytest.param("[![logo]({G}/docs/logo.png)]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"],
                 id="image-in-a-link-to-code"),
    pytest.param("[the diagram]({G}/docs/x.png)", [], id="link-to-an-image-file"),
    pytest.param("[diagram]({G}/docs/X.PNG?raw=true)", [], id="link-to-an-image-raw-upper-case"),
    pytest.param("see {G}/docs/x.svg", [], id="image-file-in-prose"),
    pytest.param('<img src="{G}/docs/x.png?raw=true" width="300">', [], id="html-img"),
    pytest.param("<IMG alt='a' SRC='{G}/vllm/a.py'>", [], id="html-img-of-any-file"),
    pytest.param("![d][fig]\n\n[fig]: {G}/docs/fig", [], id="reference-used-as-an-image-only"),
    pytest.param("![d][x] and [see][x]\n\n[x]: {G}/vllm/a.py", ["{G}/vllm/a.py"],
                 id="reference-used-as-a-link-too"),
    pytest.param("[x]({G}/vllm/a.py#L1) ![y]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"],
                 id="a-link-and-an-image-of-one-url"),
    pytest.param("Wow! [x]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"], id="a-bang-before-a-link"),
    pytest.param("\\![x]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"],
                 id="an-escaped-bang-before-a-link"),
    pytest.param("\\![d][x]\n\n[x]: {G}/vllm/a.py", ["{G}/vllm/a.py"],
                 id="an-escaped-bang-before-a-reference"),
    pytest.param("\\\\![x]({G}/vllm/a.py#L1)", [], id="an-escaped-backslash-before-an-image"),
    pytest.param("[x]({G}/vllm/png.py) {G}/docs/png/a.py", ["{G}/vllm/png.py", "{G}/docs/png/a.py"],
                 id="image-names-in-code-paths"),
    pytest.param("See ![the scheduler's\nwaiting queue]({G}/vllm/core/scheduler.py?raw=true)", [],
                 id="image-alt-text-wrapped-onto-the-next-line"),
    pytest.param("![the [v1] engine]({G}/vllm/v1/engine.py?raw=true)", [],
                 id="image-alt-text-holding-brackets"),
    pytest.param('<img alt="the flow"\n     src="{G}/vllm/a.py?raw=true">', [],
                 id="html-img-source-on-a-later-line"),
    pytest.param("See ![x] and\n[the engine]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"],
                 id="a-link-on-the-line-after-an-image-label"),
    pytest.param("See [a [b] c]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"],
                 id="a-link-whose-text-holds-brackets"),
    pytest.param("![see [the engine]({G}/vllm/a.py#L1)](fig.png)", [],
                 id="a-link-in-an-images-alt-text"),
    pytest.param("![the engine at {G}/vllm/a.py#L1](fig.png)", [],
                 id="a-url-in-an-images-alt-text"),
    pytest.param("See ![the\n[engine]({G}/vllm/a.py#L1) flow](fig.png)", [],
                 id="a-link-in-alt-text-opened-on-the-line-before"),
    pytest.param("![see\n[engine]({G}/vllm/a.py#L1)\nflow](fig.png)", [],
                 id="a-link-in-alt-text-closed-on-the-line-after"),
    pytest.param("![see [x]({G}/vllm/a.py#L1)][fig]\n\n[fig]: fig.png", [],
                 id="a-link-in-a-reference-images-alt-text"),
    pytest.param("![see [x]({G}/vllm/a.py#L1)][The  Fig]\n\n[the fig]: fig.png", [],
                 id="a-link-in-alt-text-of-a-reference-matched-as-commonmark-does"),
    pytest.param("![see [x]({G}/vllm/a.py#L1)][nodef]", ["{G}/vllm/a.py#L1"],
                 id="a-link-in-brackets-of-an-undefined-reference-is-a-link"),
    pytest.param("![see [x]({G}/vllm/a.py#L1)][]\n\n[fig]: fig.png", ["{G}/vllm/a.py#L1"],
                 id="a-link-in-brackets-of-an-undefined-collapsed-reference-is-a-link"),
    pytest.param("![see [x]({G}/vllm/a.py#L1)][nodef]\n\n    [nodef]: fig.png",
                 ["{G}/vllm/a.py#L1"], id="a-link-in-brackets-of-a-reference-defined-in-code"),
    pytest.param("![a [b]({G}/vllm/a.py#L1) c](fig.png) and [d]({G}/vllm/b.py#L2)",
                 ["{G}/vllm/b.py#L2"], id="a-link-after-an-image-holding-one"),
    pytest.param("![a]\n[b]({G}/vllm/a.py#L1)", ["{G}/vllm/a.py#L1"],
                 id="a-link-on-the-line-after-an-image-label-alone"),
])
def test_markdown_images_and_links_to_images_are_not_claims(body: str, urls: list[str]) -> None:
    """An image shows a picture, and a picture cites no code: were it a claim, a diagram
    from vLLM's docs would be a ref broken at every version indexed from a wheel."""
    text = "# T\n\n" + body.format(G=f"{GH}/v0.20.0") + "\n"
    claims = load_markdown_text(text, "a.md").claims
    assert [entry.text for claim in claims for entry in claim.refs] == [
        url.format(G=f"{GH}/v0.20.0") for url in urls]


def test_a_reference_link_after_an_escaped_bang_is_claimed_by_its_paragraph() -> None:
    """``\\![the cache][x]`` is a '!' and a link: its claim is the paragraph that uses it,
    as a link's is, not the line that defines it."""
    text = f"# T\n\nLook \\![the cache][x] here.\n\n[x]: {GH}/v0.20.0/vllm/a.py\n"
    claims = load_markdown_text(text, "a.md").claims
    assert [claim.text for claim in claims] == ["Look \\![the cache][x] here."]


@pytest.mark.parametrize(("body", "lines"), CODE_BLOCKS)
def test_markdown_permalinks_in_code_blocks_are_not_claims(body: str, lines: list[int]) -> None:
    """Code shown in an article is not its author citing it: a header pasted from vLLM's
    sources, ``# Adapted from https://github.com/...``, would otherwise be a claim."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    claims = load_markdown_text(text, "a.md").claims
    assert [claim.line for claim in claims] == lines
    assert all(claim.body_link for claim in claims)


@pytest.mark.parametrize(("body", "lines"), [
    pytest.param("<!--\n```\n-->\n\n{B}\n", [7], id="fence-in-a-comment-opens-nothing"),
    pytest.param("<!--\n```\n-->\n```\n{A}\n```\n{B}\n", [9],
                 id="fence-after-a-comment-holding-one"),
    pytest.param("<pre>\n```\n</pre>\n\n{B}\n", [7], id="fence-in-a-pre-opens-nothing"),
    pytest.param("<pre>\n~~~\n</pre>\n~~~\n{A}\n~~~\n{B}\n", [9],
                 id="fence-after-a-pre-holding-one"),
    pytest.param("   <!--\n```\n-->\n{B}\n", [6], id="comment-indented-three-holds-a-fence"),
    pytest.param("```\n<!--\n```\n{B}\n", [6], id="comment-opener-in-a-fence-opens-nothing"),
    pytest.param("```\n-->\n```\n<!--\n{A}\n-->\n{B}\n", [9],
                 id="comment-closer-in-a-fence-closes-nothing"),
    pytest.param("Text <!-- a\n```\n```\n{B}\n\n-->\n", [6],
                 id="a-fence-ends-the-paragraph-of-an-open-comment"),
    pytest.param("Text\n\t<!-- a\n\n{B}\n", [6], id="tab-indented-opener-continues-a-paragraph"),
    pytest.param("\t<!-- a\n\n{B}\n", [5], id="tab-indented-opener-is-indented-code"),
    pytest.param("<!-- a -->\n    {A}\n\n{B}\n", [6], id="indented-code-after-a-comment"),
    pytest.param("<pre>a</pre>\n    {A}\n\n{B}\n", [6], id="indented-code-after-a-pre"),
])
def test_html_blocks_and_fences_are_found_in_one_pass(body: str, lines: list[int]) -> None:
    """As CommonMark reads blocks, line by line: an HTML block (a comment, ``<pre>``) that
    starts a line runs to its end, and a fence in it is text; a fence's content is text,
    and ``<!--`` or ``-->`` there opens or closes nothing. An HTML block starts at most
    three columns in (a tab is four)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


@pytest.mark.parametrize(("body", "lines"), [
    pytest.param("    ```\n    x\n\n{B}\n", [6], id="fence-indented-four-is-indented-code"),
    pytest.param("\t```\n\n{B}\n", [5], id="fence-after-a-tab-is-indented-code"),
    pytest.param("Text\n    ```\n{B}\n", [5], id="fence-indented-four-continues-a-paragraph"),
    pytest.param("Text\n    ```\n    {A}\n", [5],
                 id="fence-indented-four-keeps-the-paragraph-open"),
    pytest.param("Text\n    # x\n    {A}\n", [5],
                 id="heading-indented-four-keeps-the-paragraph-open"),
    pytest.param("> {A}\n    ```\n      x\n    {A}\n", [3, 6],
                 id="fence-indented-four-continues-a-quoted-paragraph"),
    pytest.param("Text\n    ```\n    {A}\n    ```\n{B}\n", [7],
                 id="fences-indented-four-in-a-paragraph-are-a-code-span"),
    pytest.param("- item\n\n      ```\n\n{B}\n", [7],
                 id="fence-indented-four-in-a-list-item-is-indented-code"),
    pytest.param("```\n    ```\n{A}\n```\n{B}\n", [7], id="closer-indented-four-does-not-close"),
    pytest.param("   ```\n{A}\n      ```\n{B}\n", [], id="closer-indented-past-three-is-code"),
    pytest.param("~~~\n  ~~~~ \n{B}\n", [5], id="longer-closer-indented-two-closes"),
    pytest.param("~~~ `x`\n{A}\n~~~\n{B}\n", [6], id="tilde-fence-info-may-hold-backticks"),
    pytest.param("```\n- ```\n{A}\n```\n{B}\n", [7], id="list-marker-in-a-fence-is-code"),
    pytest.param("```\n> ```\n{A}\n```\n{B}\n", [7], id="quote-marker-in-a-fence-is-code"),
    pytest.param("> ```\n> {A}\n\n{B}\n", [6], id="unclosed-fence-ends-with-its-block-quote"),
    pytest.param("> ```\n> {A}\n{B}\n", [5], id="a-line-out-of-the-quote-ends-its-fence"),
    pytest.param("- ```\n  {A}\n\n{B}\n", [6], id="unclosed-fence-ends-with-its-list-item"),
    pytest.param("- ```\n  {A}\n{B}\n", [5], id="a-line-left-of-the-item-ends-its-fence"),
    pytest.param("- ```\n{A}\n```\n{B}\n", [4], id="a-fence-left-of-the-item-opens-anew"),
    pytest.param("- ```\n  {A}\n- ```\n  {A}\n  ```\n{B}\n", [8],
                 id="the-next-list-item-ends-a-fence"),
    pytest.param("- a\n  - ```\n    {A}\n    ```\n{B}\n", [7], id="fence-in-a-nested-item"),
    pytest.param("- a\n\n  ```\n  {A}\n\n  ```\n{B}\n", [9],
                 id="blank-line-in-a-fence-of-a-list-item"),
    pytest.param("> - ```\n>   {A}\n>   ```\n{B}\n", [6], id="fence-in-a-list-in-a-quote"),
    pytest.param("- > ```\n  > {A}\n  > ```\n{B}\n", [6], id="fence-in-a-quote-in-a-list"),
])
def test_fences_open_and_end_where_commonmark_has_them(body: str, lines: list[int]) -> None:
    """A fence opens at most three columns past the content of the list item it is in (four
    is indented code, or a paragraph's text), closes at most three columns in, and ends
    with the block quote or list item it is in; inside it, a list or quote marker is code.
    Each expectation was checked against a CommonMark reader (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


LAZY_LINES = [
    pytest.param("> A quoted note.\n>\n    {A}\n\n{B}\n", [7],
                 id="after-an-empty-quote-line-indented-four-is-code"),
    pytest.param("> ## Quoted heading\n    {A}\n\n{B}\n", [6],
                 id="after-a-quoted-heading-indented-four-is-code"),
    pytest.param("> A quoted note.\n>\n{B}\n", [5], id="after-an-empty-quote-line-a-paragraph"),
    pytest.param("> Run `serve\nwith {A}\n> --flag` then {B}\n", [5],
                 id="a-code-span-over-a-lazy-line-of-a-quote"),
    pytest.param("> > Run `serve\n> with {A}`\n\n{B}\n", [6],
                 id="a-shallower-quote-line-continues-the-deeper-paragraph"),
    pytest.param("> Run `serve\nwith\n> --x` as {B}, or\n`--y`\n", [5],
                 id="a-code-span-closes-on-the-quoted-line-after-a-lazy-one"),
    pytest.param("> Quoted `a\n{A}\n\n> b` {B}\n", [4, 6],
                 id="a-blank-line-ends-the-lazy-paragraph"),
    pytest.param("> A quoted note.\n    {A}\n", [4], id="indented-four-after-quoted-text-is-lazy"),
    pytest.param("- Item\n> Quote\n\n    {A}\n\n{B}\n", [8],
                 id="a-quote-left-of-a-list-items-text-ends-the-item"),
    pytest.param("- Item\n  > Quote\n\n    {A}\n", [6], id="a-quote-in-a-list-item-keeps-it"),
]


@pytest.mark.parametrize(("body", "lines"), LAZY_LINES)
def test_lazy_lines_continue_only_a_quoted_paragraph(body: str, lines: list[int]) -> None:
    """A line that leaves a block quote goes on the quote's paragraph (a lazy line), as one
    with fewer '>' does, but only a paragraph: after an empty '>' line or a quoted heading
    there is none, and the line is a block of its own (indented four: code). Each
    expectation was checked against a CommonMark reader (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


NESTED_LISTS = [
    pytest.param("- The scheduler:\n  - keeps a queue\n  ```python\n  waiting = deque()\n{B}\n",
                 [7], id="a-fence-left-of-a-sub-item-ends-with-the-parent-item"),
    pytest.param("- Engine\n  - Scheduler\n    - Queue\n\n    Its loop:\n\n    {A}\n", [9],
                 id="a-paragraph-of-a-sub-item-after-its-own-sub-item"),
    pytest.param("- Engine\n  - Scheduler\n    - Queue\n\n    Its loop:\n\n        {A}\n\n{B}\n",
                 [11], id="indented-code-of-a-sub-item-after-its-own-sub-item"),
    pytest.param("Steps:\n    1. build\n    ```\n    {A}\n", [6],
                 id="an-item-indented-four-in-a-paragraph-is-its-text"),
    pytest.param("- Engine\n  - Scheduler\n    - Run `serve\n  --x {A}`\n{B}\n", [7],
                 id="a-code-span-over-a-lazy-line-of-a-sub-sub-item"),
    pytest.param("- Engine\n  - Scheduler\n    - Queue\n\n      ```\n      {A}\n      ```\n"
                 "    {B}\n", [10], id="a-fence-in-a-sub-sub-item"),
]


@pytest.mark.parametrize(("body", "lines"), NESTED_LISTS)
def test_nested_list_items_hold_what_their_indentation_says(body: str, lines: list[int]) -> None:
    """A line is in each list item whose content column it reaches: one left of a sub-item
    goes on the parent item (its fence, paragraph or indented code is the parent's), unless
    it is a lazy line of a paragraph, and one indented four past a paragraph is its text,
    a list marker included. Each expectation was checked against a CommonMark reader
    (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


HTML_BLOCKS_IN_CONTAINERS = [
    pytest.param("- <pre>\n  {A}\n  </pre>\n{B}\n", [6], id="a-pre-on-a-list-marker-line"),
    pytest.param("> <pre>\n> {A}\n\n{B}\n", [6], id="a-pre-in-a-block-quote-ends-with-it"),
    pytest.param("- Notes\n  <pre>\n  {A}\n{B}\n", [6], id="a-pre-in-a-list-item-ends-with-it"),
    pytest.param("- <!-- old link:\n\n  {A}\n  -->\n{B}\n", [7],
                 id="a-comment-on-a-list-marker-line-over-a-blank-line"),
    pytest.param("1. Build\n   <!-- TODO\n2. Run {B}\n   -->\n", [5],
                 id="a-comment-in-a-list-item-ends-with-it"),
    pytest.param("- Step one\n\n  <pre>\n  {A}\n  </pre>\n{B}\n", [8], id="a-pre-in-a-list-item"),
    pytest.param("> <!-- old link:\n>\n> {A}\n> -->\n{B}\n", [7], id="a-comment-in-a-block-quote"),
    pytest.param("- Notes\n      <pre>\n  {A}\n", [5],
                 id="a-pre-indented-four-past-an-item-is-text"),
]


@pytest.mark.parametrize(("body", "lines"), HTML_BLOCKS_IN_CONTAINERS)
def test_html_blocks_end_with_their_list_item_or_block_quote(body: str, lines: list[int]) -> None:
    """An HTML block (a comment, ``<pre>``) opens past the markers of the list items and
    block quotes it is in, at most three columns past their content, and ends with them, as
    a fence does. Each expectation was checked against a CommonMark reader
    (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


QUOTED_CONTAINERS = [
    pytest.param(">     {A}\n\n{B}\n", [5], id="indented-four-in-a-block-quote-is-code"),
    pytest.param("> Run it so:\n>\n>     {A}\n\n{B}\n", [7],
                 id="indented-four-after-an-empty-quote-line-is-code"),
    pytest.param("> - Step one\n>\n>       {A}\n\n{B}\n", [7],
                 id="indented-four-in-a-list-item-in-a-quote-is-code"),
    pytest.param("> - Step one\n>\n>     {A}\n", [5],
                 id="a-paragraph-of-a-list-item-in-a-quote"),
    pytest.param("- > Quoted in an item\n  >\n  >     {A}\n\n{B}\n", [7],
                 id="indented-four-in-a-quote-in-a-list-item-is-code"),
    pytest.param("> - > Deep\n>   >\n>   >     {A}\n\n{B}\n", [7],
                 id="indented-four-in-a-quote-in-an-item-in-a-quote-is-code"),
    pytest.param("> > Run `serve\n> with {A}\n> > --x` now\n\n{B}\n", [7],
                 id="a-deeper-quoted-line-after-a-shallower-lazy-one-goes-on"),
    pytest.param("- Steps: run `serve\n      - with {A}`\n\n{B}\n", [6],
                 id="a-marker-indented-four-past-an-items-paragraph-is-its-text"),
    pytest.param("Pinned at `v0.20\n2. {A}` here\n\n{B}\n", [6],
                 id="an-item-numbered-2-does-not-interrupt-a-paragraph"),
]


@pytest.mark.parametrize(("body", "lines"), QUOTED_CONTAINERS)
def test_block_quotes_and_list_items_nest_as_commonmark_nests_them(
    body: str, lines: list[int]
) -> None:
    """A line goes on the block quotes and list items it is in, each read past the one
    around it (a quote in an item in a quote): indented four past them it is code, and
    a paragraph's text goes on over a lazy line and the quoted lines after it. Each
    expectation was checked against a CommonMark reader (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


HTML_BLOCKS_OF_OTHER_TAGS = [
    pytest.param("<details>\n<summary>The scheduler</summary>\n```python\n{A}\n```\n</details>\n"
                 "\n{B}\n", [6, 10], id="a-fence-in-a-details-block-is-its-text"),
    pytest.param('<div align="center">\n`{A}`\n</div>\n', [4],
                 id="backticks-in-a-div-block-are-text"),
    pytest.param("</pre>\n```\n\n{B}\n", [6], id="a-lone-closing-tag-runs-to-a-blank-line"),
    pytest.param("- <div>\n  ```\n\n  {B}\n", [6], id="a-div-block-in-a-list-item"),
    pytest.param("<div>\n\n```\n{A}\n```\n{B}\n", [8], id="a-blank-line-ends-a-div-block"),
    pytest.param('Run `serve\n<a id="x">\n{A}` now\n', [],
                 id="a-lone-tag-does-not-interrupt-a-paragraph"),
]


@pytest.mark.parametrize(("body", "lines"), HTML_BLOCKS_OF_OTHER_TAGS)
def test_html_blocks_of_other_tags_run_to_a_blank_line(body: str, lines: list[int]) -> None:
    """A line opened by a block-level tag (``<div>``, ``<details>``), or by any other tag
    alone on it (``</pre>``) where no paragraph goes on, opens an HTML block that runs to a
    blank line: its text is shown as written, a fence or a backtick there opens nothing.
    Each expectation was checked against a CommonMark reader (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


HIDDEN_HTML_BLOCKS = [
    pytest.param("<?php\n{A}\n?>\n{B}\n", [6], id="a-processing-instruction-hides-its-lines"),
    pytest.param("<!DOCTYPE html\n{A}\n>\n{B}\n", [6], id="a-declaration-hides-its-lines"),
    pytest.param("<![CDATA[\n{A}\n]]>\n{B}\n", [6], id="a-cdata-section-hides-its-lines"),
    pytest.param("- <?php\n  {A}\n{B}\n", [5], id="a-processing-instruction-ends-with-its-item"),
    pytest.param("Text\n<?php {A} ?>\n{B}\n", [5], id="a-processing-instruction-ends-a-paragraph"),
    pytest.param("<![CDATA[\n```\n]]>\n{B}\n", [6], id="a-fence-in-a-cdata-section-opens-nothing"),
    pytest.param("```\n<?php\n```\n{B}\n", [6], id="a-processing-instruction-in-a-fence-is-code"),
    pytest.param("<!doctype html>\n{B}\n", [4], id="a-declaration-on-one-line-ends-there"),
]


@pytest.mark.parametrize(("body", "lines"), HIDDEN_HTML_BLOCKS)
def test_html_blocks_a_browser_shows_nothing_of_hide_their_permalinks(
    body: str, lines: list[int]
) -> None:
    """CommonMark's HTML blocks of types 3 to 5 (``<?php ... ?>``, ``<!DOCTYPE ...>``,
    ``<![CDATA[ ... ]]>``) run, as a comment does, to the line holding their end, and a
    browser shows nothing of them: a permalink there is no claim. Each expectation was
    checked against a CommonMark reader (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


HEADINGS_AND_BREAKS = [
    pytest.param("Text\n***\n    {A}\n\n{B}\n", [7], id="a-thematic-break-interrupts-a-paragraph"),
    pytest.param("Text\n---\n    {A}\n\n{B}\n", [7], id="a-dash-underline-ends-a-heading"),
    pytest.param("Text\n===\n    {A}\n\n{B}\n", [7], id="an-equals-underline-ends-a-heading"),
    pytest.param("- - -\n    {A}\n\n{B}\n", [6], id="a-spaced-dash-line-is-a-break-not-an-item"),
    pytest.param("Text `a\n---\n{A}`\n", [5], id="a-code-span-does-not-pair-over-an-underline"),
    pytest.param("> Text\n---\n    {A}\n\n{B}\n", [7], id="a-dash-line-after-a-quote-is-a-break"),
    pytest.param("- Item\n  ---\n      {A}\n\n{B}\n", [7], id="an-underline-in-a-list-item"),
    pytest.param("> Text\n===\n{A}\n", [5], id="a-lazy-equals-line-is-text"),
    pytest.param("Text\n    ---\n{A}\n", [5], id="a-dash-line-indented-four-is-text"),
]


@pytest.mark.parametrize(("body", "lines"), HEADINGS_AND_BREAKS)
def test_setext_headings_and_thematic_breaks_end_a_paragraph(body: str, lines: list[int]) -> None:
    """A thematic break (``***``, ``- - -``: no list item) interrupts a paragraph, and an
    underline (``===``, ``---``) in the paragraph's containers makes it a heading and ends
    it: the line indented four after either is code, and no code span pairs over them; a
    lazy ``===`` line is text. Each expectation was checked against a CommonMark reader
    (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


EMPTY_LIST_ITEMS = [
    pytest.param("-\n\n    {A}\n\n{B}\n", [7], id="a-blank-line-ends-an-empty-item"),
    pytest.param("1.\n\n      {A}\n\n{B}\n", [7], id="a-blank-line-ends-an-empty-numbered-item"),
    pytest.param("- a\n-\n\n    {A}\n\n{B}\n", [8], id="a-blank-line-ends-an-empty-second-item"),
    pytest.param("> -\n>\n>     {A}\n\n{B}\n", [7], id="a-blank-line-ends-an-empty-quoted-item"),
    pytest.param("-\n  {A}\n", [4], id="an-empty-item-goes-on-on-the-next-line"),
    pytest.param("- \n- x\n\n  {A}\n", [6], id="an-empty-item-then-one-with-text"),
]


@pytest.mark.parametrize(("body", "lines"), EMPTY_LIST_ITEMS)
def test_a_list_item_opens_with_one_blank_line_at_most(body: str, lines: list[int]) -> None:
    """A list item opened empty (``-`` alone) ends at a blank line after it: the line
    indented four after that is code, not the item's text. Each expectation was checked
    against a CommonMark reader (markdown-it-py)."""
    text = "# T\n\n" + body.format(A=f"{GH}/v1/a.py#L1", B=f"see {GH}/v1/b.py#L2")
    assert [claim.line for claim in load_markdown_text(text, "a.md").claims] == lines


def test_a_fenced_line_is_read_past_its_containers_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a line goes on its fence and whether it closes it are read from one reading
    of the line past the fence's block quotes and list item."""
    read: list[str] = []
    content = markdown._Fence.content

    def counted(fence: markdown._Fence, line: str) -> str | None:
        read.append(line)
        return content(fence, line)

    monkeypatch.setattr(markdown._Fence, "content", counted)
    body = "> - ```python\n>   x = 1\n>   ```\n\n```\ny = 2\n```\n"
    load_markdown_text(f"# T\n\n{body}see {GH}/v1/a.py#L1\n", "a.md")
    assert read == [">   x = 1", ">   ```", "y = 2", "```"]


def test_the_lines_before_a_line_are_read_only_for_a_line_with_a_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where an image's alt text or tag may open is looked for in the lines before a line
    holding a URL alone: reading them for each of 20,000 lines copied 10 MB (530 characters
    a line)."""
    read: list[int] = []
    before = markdown.Body._before

    def counted(body: markdown.Body, index: int) -> str:
        read.append(index)
        return before(body, index)

    monkeypatch.setattr(markdown.Body, "_before", counted)
    lines = [f"Line {number} of the scheduler's notes" + (
        f" [x]({GH}/v1/a{number}.py)" if number % 10 == 0 else "") for number in range(20_000)]
    claims = load_markdown_text("# T\n\n" + "\n".join(lines) + "\n", "a.md").claims
    assert len(claims) == 2_000
    assert read == [claim.line - 1 for claim in claims]


@pytest.mark.parametrize(("text", "visible"), [
    pytest.param("Text <!-- a -->b\n", {0: "Text           b", 1: ""}, id="comment-in-a-line"),
    pytest.param("Text <!-- a\nb -->c\n", {0: "Text       ", 1: "     c", 2: ""},
                 id="comment-over-two-lines"),
    pytest.param("<!-- a\nb -->c\n", {1: "     c", 2: ""}, id="comment-block"),
    pytest.param("x `<!--` y\n", {0: "x        y", 1: ""}, id="code-span"),
])
def test_visible_lines_blank_comments_through_their_last_character(
    text: str, visible: dict[int, str]
) -> None:
    """What fix may rewrite: a column whose character is blanked is hidden."""
    assert markdown.markdown_visible_lines(text) == visible


@pytest.mark.parametrize(("body", "texts"), [
    pytest.param(f"用 [`capture`][cap] 逐个捕获，见 [x][]。\n\n[cap]: {GH}/v1/a.py#L1\n"
                 f"[X]: <{GH}/v1/b.py#L2> \"t\"\n",
                 ["用 [`capture`][cap] 逐个捕获，见 [x][]。"] * 2, id="reference-definitions"),
    pytest.param(f"```python\nx = sizes[1]\n```\n\n<!-- see [1] -->\n\nThe top-k step[1] sorts."
                 f"\n\n[1]: {GH}/v1/a.py#L1\n", ["The top-k step[1] sorts."],
                 id="reference-used-in-code-or-a-comment-is-not-its-use"),
    pytest.param(f"The engine [`CacheEngine`][] allocates.\n\n[`CacheEngine`]: {GH}/v1/a.py#L1\n",
                 ["The engine [`CacheEngine`][] allocates."], id="reference-label-in-code"),
    pytest.param(f"Indexed as `kv_cache[layer][block]`, see {GH}/v1/a.py#L1.\n",
                 [f"Indexed as `kv_cache[layer][block]`, see {GH}/v1/a.py#L1."],
                 id="brackets-in-code-stay-as-written"),
    pytest.param(f"Index it as `f[0](x)`, see {GH}/v1/a.py#L1.\n",
                 [f"Index it as `f[0](x)`, see {GH}/v1/a.py#L1."],
                 id="inline-link-in-code-stays-as-written"),
    pytest.param(f"See [the pool].\n\n[The  Pool]: {GH}/v1/a.py#L1\n", ["See [the pool]."],
                 id="shortcut-reference-any-case-and-spacing"),
    pytest.param(f"[unused]: {GH}/v1/a.py#L1\n", [f"[unused]: {GH}/v1/a.py#L1"],
                 id="unused-definition-keeps-its-line"),
    pytest.param(f"See [a].\n\n[a]: {GH}/v1/a.py#L1\n[unused]: {GH}/v1/b.py#L2\n",
                 ["See [a].", f"[unused]: {GH}/v1/b.py#L2"],
                 id="unused-definition-below-a-used-one-keeps-only-its-line"),
    pytest.param(f"> 显存不够时，\n> 直接报错，见 {GH}/v1/a.py#L1 。\n",
                 [f"显存不够时，直接报错，见 {GH}/v1/a.py#L1 。"], id="wrapped-block-quote"),
    pytest.param(f"> 外层\n> > 内层 {GH}/v1/a.py#L1\n", [f"内层 {GH}/v1/a.py#L1"],
                 id="deeper-quote-starts-a-paragraph"),
    pytest.param(f"> 一段\n>\n> 另一段 {GH}/v1/a.py#L1\n", [f"另一段 {GH}/v1/a.py#L1"],
                 id="blank-quote-line-ends-a-paragraph"),
    pytest.param(f"> ## 为什么\n见 {GH}/v1/a.py#L1\n", [f"见 {GH}/v1/a.py#L1"],
                 id="a-line-after-a-quoted-heading-starts-a-paragraph"),
    pytest.param(f"> - see {GH}/v1/a.py#L1\n", [f"see {GH}/v1/a.py#L1"],
                 id="a-list-item-in-a-quote-without-its-markers"),
    pytest.param(f"- > see {GH}/v1/a.py#L1\n", [f"see {GH}/v1/a.py#L1"],
                 id="a-quote-in-a-list-item-without-its-markers"),
    pytest.param(f">\t-\tsee {GH}/v1/a.py#L1\n", [f"see {GH}/v1/a.py#L1"],
                 id="markers-after-tabs"),
    pytest.param(f"Steps:\n    - see {GH}/v1/a.py#L1\n", [f"Steps: - see {GH}/v1/a.py#L1"],
                 id="a-marker-indented-four-past-a-paragraph-is-its-text"),
    pytest.param(f"Pinned at\n2. {GH}/v1/a.py#L1 here\n", [f"Pinned at 2. {GH}/v1/a.py#L1 here"],
                 id="an-item-numbered-2-in-a-paragraph-is-its-text"),
    pytest.param(f"## Why {GH}/v1/a.py#L1 ##\n", [f"Why {GH}/v1/a.py#L1"],
                 id="an-atx-heading-without-its-closing-marks"),
    pytest.param(f"> # Why {GH}/v1/a.py#L1\n", [f"Why {GH}/v1/a.py#L1"], id="a-quoted-heading"),
    pytest.param(f"Why {GH}/v1/a.py#L1\n===\nThe rest {GH}/v1/b.py#L1\n---\n",
                 [f"Why {GH}/v1/a.py#L1", f"The rest {GH}/v1/b.py#L1"],
                 id="a-setext-heading-is-its-text-without-its-underline"),
    pytest.param(f"<!--\nsecret note\n-->\nsee {GH}/v1/a.py#L1\n", [f"see {GH}/v1/a.py#L1"],
                 id="a-comment-block-is-no-text-of-the-paragraph-after-it"),
    pytest.param(f"<pre>\nsecret\n</pre>\nsee {GH}/v1/a.py#L1\n", [f"see {GH}/v1/a.py#L1"],
                 id="a-pre-block-is-no-text-of-the-paragraph-after-it"),
    pytest.param(f"before\n<!-- note -->\nsee {GH}/v1/a.py#L1\n", [f"see {GH}/v1/a.py#L1"],
                 id="a-comment-block-ends-the-paragraph-before-it"),
    pytest.param(f"<!-- secret\nstill secret --> see [this]({GH}/v1/a.py#L1).\n", ["see this."],
                 id="a-comment-block-hides-its-last-line-up-to-its-end"),
    pytest.param(f"A <!-- one --> B <!-- two\nlines -->C {GH}/v1/a.py#L1\n",
                 [f"A B C {GH}/v1/a.py#L1"], id="comments-in-a-paragraph-are-no-text"),
    pytest.param(f"Use `<!-- x -->` at {GH}/v1/a.py#L1\n", [f"Use `<!-- x -->` at {GH}/v1/a.py#L1"],
                 id="a-comment-in-code-is-code"),
])
def test_markdown_link_claim_texts(body: str, texts: list[str]) -> None:
    claims = load_markdown_text(f"# T\n\n{body}", "a.md").claims
    assert [claim.text for claim in claims] == texts


@pytest.mark.parametrize(("text", "reduced"), [
    pytest.param('See [a](x "t") now', "See a now", id="title"),
    pytest.param("See [a]( <x y> ) now", "See [a]( <x y> ) now", id="space-in-destination"),
    pytest.param("See [a]( <x> ) now", "See a now", id="spaces-and-angle-brackets"),
    pytest.param("See ![a](x) now", "See a now", id="image"),
    pytest.param("See \\![a](x) now", "See \\!a now", id="an-escaped-bang-is-text"),
    pytest.param("See [a [b](x) now", "See a [b now", id="label-from-the-first-bracket"),
    pytest.param('See [a](x "t" y) now', 'See [a](x "t" y) now', id="text-after-the-title"),
    pytest.param("[" + "a" * 500 + "](x)", "a" * 500, id="label-of-500"),
    pytest.param("[" + "a" * 501 + "](x)", "[" + "a" * 501 + "](x)", id="label-of-501"),
    pytest.param("[a](" + "x" * 2000 + ")", "a", id="destination-of-2000"),
    pytest.param("[a](" + "x" * 2001 + ")", "[a](" + "x" * 2001 + ")", id="destination-of-2001"),
    pytest.param('[a](x "' + "t" * 500 + '")', "a", id="title-of-500"),
    pytest.param('[a](x "' + "t" * 501 + '")', '[a](x "' + "t" * 501 + '")', id="title-of-501"),
    pytest.param("Call `f[0](x)` now", "Call `f[0](x)` now", id="link-in-a-code-span"),
    pytest.param("[not a `link](/foo`)", "[not a `link](/foo`)", id="code-span-over-the-brackets"),
    pytest.param("[`a]`](x) now", "`a]` now", id="bracket-in-code-in-the-label"),
    pytest.param("[`f`](x) and `<https://x>`", "`f` and `<https://x>`",
                 id="autolink-in-a-code-span"),
    pytest.param("See `[`b](x) now", "See `[`b](x) now", id="opening-bracket-in-a-code-span"),
    pytest.param("See [a] b](x) now", "See [a] b](x) now", id="label-ends-at-its-first-bracket"),
    pytest.param("See ](y) [x] now", "See ](y) [x] now", id="no-label-before-the-bracket"),
    pytest.param('See [a](x "t]u[v](w)") now', "See a now", id="brackets-in-a-title"),
    pytest.param('See [a]( "a title") now', "See a now", id="title-and-no-destination"),
])
def test_inline_links_are_reduced_to_their_labels(text: str, reduced: str) -> None:
    assert markdown._Reduced.of(text).text == reduced


def test_a_body_permalink_that_cannot_be_read_is_a_claim_of_its_own() -> None:
    """Not an error that hides the article: the link stores it as a broken ref."""
    text = f"intro\n\nsee {GH}/v1/x.py#L5-C3 now\n\nand {GH}/v1/x.py#L5\n"
    bad, good = load_markdown_text(text, "a.md").claims
    assert (bad.line, bad.refs[0].text, good.refs[0].unreadable) == (3, f"{GH}/v1/x.py#L5-C3", None)
    assert str(bad.refs[0].unreadable) == (
        "invalid line anchor '#L5-C3' after path 'x.py': expected '#Lx' or '#Lx-Ly'")


def test_markdown_long_sentence_is_cut_after_its_links_are_reduced() -> None:
    """A window of the raw sentence could start inside the URL of the link before."""
    filler = "Filler words here. " * 30
    first = f"{GH}/v1/{'deep/' * 12}a.py#L1-L9"
    sentence = f"It loads ([load]({first})), then frees ([free]({GH}/v1/b.py#L2)) at the end."
    claims = load_markdown_text(f"{filler}{sentence} {filler}\n", "a.md").claims
    assert [claim.text for claim in claims] == [
        "It loads (load), then frees (free) at the end.",
    ] * 2
    long_sentence = "Words " * 80 + sentence
    claims = load_markdown_text(f"{long_sentence}\n", "a.md").claims
    assert all("https" not in claim.text and len(claim.text) <= 300 for claim in claims)
    assert claims[1].text.endswith("It loads (load), then frees (free) at the end.")


def _sentence(length: int) -> str:
    """``xxx… see URL end.``, ``length`` characters long."""
    tail = f" see {GH}/v1/a.py end."
    return "x" * (length - len(tail)) + tail


@pytest.mark.parametrize(("paragraph", "text"), [
    pytest.param("First. " + _sentence(293), None, id="paragraph-of-300"),
    pytest.param("First. " + _sentence(294), _sentence(294), id="paragraph-of-301"),
    pytest.param("First. " * 50 + _sentence(300), _sentence(300), id="sentence-of-300"),
])
def test_markdown_link_text_limit_is_inclusive(paragraph: str, text: str | None) -> None:
    """A paragraph (else the sentence) of MAX_LINK_TEXT characters is a link's claim text."""
    (claim,) = load_markdown_text(paragraph + "\n", "a.md").claims
    assert claim.text == (paragraph if text is None else text)


def test_markdown_a_line_after_a_heading_starts_a_paragraph() -> None:
    text = f"# Notes\nsee {GH}/v1/a.py\n"
    assert [claim.text for claim in load_markdown_text(text, "a.md").claims] == [
        f"see {GH}/v1/a.py"]


def test_markdown_long_paragraph_uses_the_sentence() -> None:
    filler = "Filler words here. " * 30
    text = f"{filler}The key point is {GH}/v1/a.py#L3 right here. {filler}\n"
    (claim,) = load_markdown_text(text, "a.md").claims
    assert claim.text == f"The key point is {GH}/v1/a.py#L3 right here."


def test_markdown_long_sentence_is_cut_around_the_link() -> None:
    url = f"{GH}/v1/a.py#L3"
    text = "x" * 500 + f" {url} " + "y" * 500 + "\n"
    (claim,) = load_markdown_text(text, "a.md").claims
    assert claim.text == ("…" + "x" * 99 + f" {url} " + "y" * 500)[:299] + "…"
    assert len(claim.text) == 300


MARKDOWN_ERRORS = [
    pytest.param(
        "---\ntitle: x\n",
        ["a.md:1: front matter opened on line 1 is not closed (hint: end it with '---')"],
        id="front-matter-not-closed",
    ),
    pytest.param(
        "---\ntitle: x\ntags: [a]\n---\nbody\n",
        ["a.md:3: unknown key 'tags' at top level (allowed: article, title, at, claims)"],
        id="front-matter-unknown-key",
    ),
    pytest.param(
        "---\nclaims:\n  - id: c\n    text: t\n    refs: [a.py::A..b]\n---\n",
        [
            "a.md:5: invalid qualname 'A..b' (hint: a qualname is identifiers joined by '.', "
            "e.g. 'Outer.method' or 'f.<locals>.g')"
        ],
        id="front-matter-ref-line",
    ),
    pytest.param(
        "---\n- a\n---\n",
        ["a.md:2: the top level must be a mapping, not a list"],
        id="front-matter-list",
    ),
    pytest.param(
        f"---\nclaims:\n  - id: {link_claim_id('a.md', GH + '/v1/a.py')}\n    text: t\n"
        f"    refs: [a.py::f]\n---\n{GH}/v1/a.py\n",
        [
            f"a.md:7: duplicate claim id '{link_claim_id('a.md', GH + '/v1/a.py')}' "
            "(first defined at line 3)"
        ],
        id="link-id-clash",
    ),
]


@pytest.mark.parametrize(("text", "expected"), MARKDOWN_ERRORS)
def test_markdown_error_messages(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert _md_errors(tmp_path, text) == expected


def test_markdown_too_many_links() -> None:
    text = "".join(f"{GH}/v1/a.py#L{i}\n" for i in range(1, MAX_CLAIMS + 3))
    with pytest.raises(AnnotationFileError) as caught:
        load_markdown_text(text, "a.md")
    assert str(caught.value) == f"a.md:{MAX_CLAIMS + 1}: too many claims (more than {MAX_CLAIMS})"


def test_limits_are_documented_constants() -> None:
    assert (loader.MAX_FILE_BYTES, loader.MAX_DEPTH) == (2 * 1024 * 1024, 20)
    assert (loader.MAX_NODES, loader.MAX_CLAIMS) == (100_000, 5_000)


def test_error_str_is_one_line() -> None:
    error = AnnotationFileError("bad\nthing\u2028x", file="a\nb.yaml", line=3, hint="h\r")
    assert str(error) == "a\\nb.yaml:3: bad\\nthing\\u2028x (hint: h\\r)"
    assert str(AnnotationError("m")) == "m"
    assert str(AnnotationError("m", line=2)) == "2: m"
    assert str(AnnotationError("m", file="f")) == "f: m"
    moved = AnnotationFileError("m", hint="h").located("f.yaml", 4)
    assert isinstance(moved, AnnotationFileError) and str(moved) == "f.yaml:4: m (hint: h)"


# -- fuzzing --------------------------------------------------------------------------------------

_KEYS = st.sampled_from(
    ["article", "title", "at", "claims", "id", "text", "refs", "ref", "quote", "uses", "waive"]
    + ["status", "until", "reason", "<<"]
) | st.text(max_size=6)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.dates()
    | st.text(max_size=12)
    | st.sampled_from(
        ["a.py::f", "vllm@v1", "vllm@v1:a.b", "a.py#L2-L1", "changed", "2027-01-01", "c-1"]
        + [f"{GH}/v1/a.py#L1", "", " "]
    )
)
_DATA = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=5),
    max_leaves=25,
)
_CLAIM = st.fixed_dictionaries(
    {},
    optional={
        "id": _DATA,
        "text": _DATA,
        "at": _DATA,
        "refs": st.lists(
            _SCALARS
            | st.fixed_dictionaries({"ref": _SCALARS}, optional={"quote": _DATA, "uses": _DATA}),
            max_size=3,
        ),
        "waive": st.lists(
            st.fixed_dictionaries(
                {}, optional={"status": _SCALARS, "until": _SCALARS, "reason": _SCALARS}
            ),
            max_size=2,
        ),
    },
)
_DOCUMENT = _DATA | st.fixed_dictionaries(
    {"claims": st.lists(_CLAIM, max_size=4)},
    optional={"article": _SCALARS, "title": _SCALARS, "at": _SCALARS},
)


def _loads_or_annotation_error(text: str, markdown: bool) -> None:
    try:
        article = (load_markdown_text if markdown else load_annotation_text)(text, "f")
    except AnnotationError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(article, Article)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_DOCUMENT, st.text(max_size=40))
def test_fuzz_yaml_shaped_data(data: object, body: str) -> None:
    dumped = yaml.safe_dump(data, allow_unicode=True)
    _loads_or_annotation_error(dumped, markdown=False)
    _loads_or_annotation_error(f"---\n{dumped}---\n{body}\n", markdown=True)


_MD_TOKENS = st.sampled_from(
    ["---\n", "\n", f"{GH}/v1/a.py#L1", "https://github.com/", "[x](", ")", "<", ">", "# ", "- "]
    + ["claims:", " - ", "id: a", "。", "..."]
)


@settings(max_examples=300)
@given(st.text() | st.lists(_MD_TOKENS | st.text(max_size=4)).map("".join))
def test_fuzz_arbitrary_text(text: str) -> None:
    _loads_or_annotation_error(text, markdown=False)
    _loads_or_annotation_error(text, markdown=True)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=100)
@given(st.binary(max_size=64))
def test_fuzz_arbitrary_bytes(fuzz_dir: Path, data: bytes) -> None:
    path = fuzz_dir / "f.yaml"
    path.write_bytes(data)
    for as_markdown in (False, True):
        result = load_file(path, fuzz_dir, markdown=as_markdown)
        assert all(isinstance(error, AnnotationError) for error in result.errors)


@pytest.mark.parametrize(("line", "spans"), [
    pytest.param("a `b` c", [(2, 5)], id="one"),
    pytest.param("`a` `b`", [(0, 3), (4, 7)], id="two"),
    pytest.param("`` a ` b ``", [(0, 11)], id="shorter-run-inside"),
    pytest.param("`a``b`", [(0, 6)], id="longer-run-inside"),
    pytest.param("``x`", [], id="no-closer-of-its-length"),
    pytest.param("```", [], id="a-lone-run"),
    pytest.param("x ``` y ` z `", [(8, 13)], id="an-unclosed-run-is-text"),
    pytest.param("".join("`" * n + "x" for n in range(1, 60)), [], id="runs-all-of-other-lengths"),
])
def test_code_span_ranges(line: str, spans: list[tuple[int, int]]) -> None:
    assert code_span_ranges(line) == spans


# --- the two YAML parsers --------------------------------------------------------------

CATALOGUE = Path(__file__).resolve().parent.parent / "articles"
YAML_TEXTS = {
    "block-and-flow": "a: 1\nb: [x, 'y', \"z\"]\nc: {d: e}\n",
    "cjk-and-escapes": 'text: "缓存\\t引擎 \\u00e9"\nraw: 缓存引擎\n',
    "anchors-and-aliases": "a: &x [1, 2]\nb: *x\nc: &y {k: v}\nd: *y\n",
    "block-scalars": "a: |\n  line one\n  line two\nb: >-\n  folded\n  text\n",
    "implicit-tags": "d: 2027-01-01\nn: null\nt: ~\nb: yes\nf: 1.5\ni: 0x1f\ne:\n",
    "crlf-and-comments": "# c\r\na: 1  # trailing\r\nb:\r\n  - x\r\n",
    "bom-and-document-marker": "\ufeff---\na: 1\n",
    "quoted-keys": "'a: b': 1\n\"c\": 2\n? complex\n: 3\n",
}


def _nodes(node: yaml.Node | None) -> list[tuple]:
    """What the loader reads of the nodes: not their style (libyaml writes a plain one '',
    PyYAML None) nor where they end, nor where an empty value stands (at the end of the
    text, libyaml counts one more line: ``?``)."""
    if node is None:
        return []
    empty = isinstance(node, yaml.ScalarNode) and node.value == ""
    found = [(type(node).__name__, node.tag, None if empty else node.start_mark.line)]
    if isinstance(node, yaml.ScalarNode):
        return [found[0] + (node.value,)]
    for item in node.value:
        for part in item if isinstance(item, tuple) else (item,):
            found.extend(_nodes(part))
    return found


@pytest.mark.skipif(not yaml.__with_libyaml__, reason="libyaml is not installed")
@pytest.mark.parametrize("text", [
    *(pytest.param(text, id=name) for name, text in YAML_TEXTS.items()),
    pytest.param("claims:\n- id: c\n  at: !\n  waive: !\n  refs: [!x a.py::X]\n", id="lone-tags"),
    *(pytest.param(path.read_text(encoding="utf-8"), id=path.stem)
      for path in sorted(CATALOGUE.glob("*/*.yml"))[:4]),
])
def test_libyaml_events_compose_what_pyyaml_composes(text: str) -> None:
    fast = loader._composed(loader._FastLoader, text)
    assert _nodes(fast) == _nodes(loader._composed(loader._DepthLimitedLoader, text))
    assert _nodes(fast)  # not an empty document


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet="ab:-[]{},&*|>'\"#\n\t 1\\`%@!?", max_size=40))
def test_what_pyyaml_composes_the_loader_composes_alike(text: str) -> None:
    """Text PyYAML reads is read alike (libyaml's events, or PyYAML again where libyaml
    refuses); text it refuses may pass libyaml (a tab after a scalar: '1\\t'). Tags and
    complex keys (``!``, ``?``) included: a lone ``!`` is untagged for both."""
    try:
        expected = _nodes(loader._composed(loader._DepthLimitedLoader, text))
    except (yaml.YAMLError, UnicodeError, ValueError, loader._ComposeLimit):
        return
    assert _nodes(loader._compose_single(text)) == expected


def _flow_claims(count: int, indent: str = "") -> str:
    return "".join(f"{indent}- {{id: c{i}, text: t, refs: [a.py::f]}}\n" for i in range(count))


def test_limits_are_inclusive(tmp_path: Path) -> None:
    """A file of exactly MAX_FILE_BYTES, with exactly MAX_CLAIMS claims, is read."""
    text = "article: a\nclaims:\n" + _flow_claims(MAX_CLAIMS)
    text += "#" * (MAX_FILE_BYTES - len(text.encode()) - 1) + "\n"
    assert len(text.encode()) == MAX_FILE_BYTES
    result = load_file(_write(tmp_path, "a.yaml", text), tmp_path, markdown=False)
    assert result.errors == []
    assert len(result.articles[0].claims) == MAX_CLAIMS


@pytest.mark.parametrize(("uses", "error"), [
    pytest.param(loader.MAX_NODES - 17, None, id="at-the-limit"),
    pytest.param(loader.MAX_NODES - 16, "a.yaml:7: more than 100000 YAML nodes (aliases counted as "
                 "expanded)", id="one-over"),
])
def test_the_node_limit_is_inclusive(tmp_path: Path, uses: int, error: str | None) -> None:
    """17 nodes besides the uses: targets (every mapping, sequence, key and value)."""
    text = ("article: a\nclaims:\n  - id: c\n    text: t\n    refs:\n      - ref: a.py::f\n"
            "        uses: [" + "a.py::f, " * uses + "]\n")
    result = load_file(_write(tmp_path, "a.yaml", text), tmp_path, markdown=False)
    assert [str(e).split(" (hint")[0] for e in result.errors] == ([error] if error else [])


@pytest.mark.parametrize(("links", "error"), [
    pytest.param(1, None, id="at-the-limit"),
    pytest.param(2, f"a.md: too many claims ({MAX_CLAIMS + 1}, max {MAX_CLAIMS})",
                 id="one-over"),
])
def test_front_matter_claims_and_permalink_claims_count_together(
    tmp_path: Path, links: int, error: str | None
) -> None:
    front = "---\nclaims:\n" + _flow_claims(MAX_CLAIMS - 1, "  ") + "---\n"
    body = "".join(f"see {GH}/v1/a.py#L{line}\n" for line in range(1, links + 1))
    assert _md_errors(tmp_path, front + body) == ([error] if error else [])


@pytest.mark.parametrize("text", [
    pytest.param("---\ntitle: T\n---\nsee {url}\n", id="dashes"),
    pytest.param("---\ntitle: T\n...\nsee {url}\n", id="closed-by-dots"),
    pytest.param("---  \ntitle: T\n---\t\nsee {url}\n", id="trailing-blanks"),
])
def test_front_matter_fences_as_yaml_writes_them(text: str) -> None:
    article = load_markdown_text(text.format(url=f"{GH}/v1/a.py"), "a.md")
    assert article.title == "T"
    assert [(claim.line, claim.refs[0].text) for claim in article.claims] == [
        (4, f"{GH}/v1/a.py")]
