"""The reference grammar: valid and invalid tables, round trips and fuzzing."""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotations.errors import RefSyntaxError
from annotations.refs import Ref, RefForm, format_ref, parse_pin, parse_ref
from indexer.config import BUILTIN_REPOS, line_span

LINEAR = "vllm/model_executor/layers/linear.py"
GH = "https://github.com/vllm-project/vllm/blob"

VALID = [
    pytest.param(
        f"vllm@v0.20.0:{LINEAR}::ReplicatedLinear.forward",
        Ref("vllm", "v0.20.0", RefForm.SYMBOL, path=LINEAR, qualname="ReplicatedLinear.forward"),
        id="symbol-pinned",
    ),
    pytest.param(
        f"{LINEAR}::ReplicatedLinear",
        Ref(None, None, RefForm.SYMBOL, path=LINEAR, qualname="ReplicatedLinear"),
        id="symbol-unpinned",
    ),
    pytest.param(
        "vllm@v1:a/b.py::outer.<locals>.inner",
        Ref("vllm", "v1", RefForm.SYMBOL, path="a/b.py", qualname="outer.<locals>.inner"),
        id="symbol-locals",
    ),
    pytest.param(
        "vLLM@1.0+cu121:文档/模型.py::类.方法",
        Ref("vLLM", "1.0+cu121", RefForm.SYMBOL, path="文档/模型.py", qualname="类.方法"),
        id="symbol-non-ascii",
    ),
    pytest.param(
        "vllm@v0.20.0:vllm.config.cache.CacheConfig.gpu_memory_utilization",
        Ref(
            "vllm",
            "v0.20.0",
            RefForm.DOTTED,
            dotted="vllm.config.cache.CacheConfig.gpu_memory_utilization",
        ),
        id="dotted-pinned",
    ),
    pytest.param("vllm", Ref(None, None, RefForm.DOTTED, dotted="vllm"), id="dotted-single"),
    pytest.param("vllm.a.f.<locals>.g",
                 Ref(None, None, RefForm.DOTTED, dotted="vllm.a.f.<locals>.g"), id="dotted-locals"),
    pytest.param(
        "lmcache@v0.5.1:a/b.py#L3-L9",
        Ref("lmcache", "v0.5.1", RefForm.LINES, path="a/b.py", start_line=3, end_line=9),
        id="lines-range",
    ),
    pytest.param(
        "a.py#L7",
        Ref(None, None, RefForm.LINES, path="a.py", start_line=7, end_line=7),
        id="lines-single",
    ),
    pytest.param(
        "a.py#L7-12",
        Ref(None, None, RefForm.LINES, path="a.py", start_line=7, end_line=12),
        id="lines-short-range",
    ),
    pytest.param(
        "a#b.py#L1",
        Ref(None, None, RefForm.LINES, path="a#b.py", start_line=1, end_line=1),
        id="lines-hash-in-path",
    ),
    pytest.param(
        f"{GH}/0123abcd/{LINEAR}#L10-L20",
        Ref(
            None,
            "0123abcd",
            RefForm.PERMALINK,
            path=LINEAR,
            start_line=10,
            end_line=20,
            github="vllm-project/vllm",
        ),
        id="permalink-range",
    ),
    pytest.param(
        f"{GH}/v0.20.0/a.py#L5",
        Ref(
            None,
            "v0.20.0",
            RefForm.PERMALINK,
            path="a.py",
            start_line=5,
            end_line=5,
            github="vllm-project/vllm",
        ),
        id="permalink-single",
    ),
    pytest.param(
        f"{GH}/v0.20.0/a.py?plain=1#L178C5-L209C40",
        Ref(None, "v0.20.0", RefForm.PERMALINK, path="a.py", start_line=178, end_line=209,
            github="vllm-project/vllm"),
        id="permalink-plain-view-and-columns",
    ),
    pytest.param(
        f"{GH}/v0.20.0/a.py#L7C3",
        Ref(None, "v0.20.0", RefForm.PERMALINK, path="a.py", start_line=7, end_line=7,
            github="vllm-project/vllm"),
        id="permalink-one-column",
    ),
    pytest.param(
        f"{GH}/v0.20.0/docs/%E4%B8%AD%20x.md",
        Ref(None, "v0.20.0", RefForm.PERMALINK, path="docs/中 x.md", github="vllm-project/vllm"),
        id="permalink-no-fragment-percent-encoded",
    ),
    pytest.param(
        "  a.py::f \n",
        Ref(None, None, RefForm.SYMBOL, path="a.py", qualname="f"),
        id="surrounding-whitespace",
    ),
    pytest.param(  # the micro sign is read as mu, as Python reads the name (PEP 3131)
        "a.py::T.\u00b5", Ref(None, None, RefForm.SYMBOL, path="a.py", qualname="T.\u03bc"),
        id="qualname-nfkc-normalized",
    ),
    pytest.param(
        "m.T.\ufb01x", Ref(None, None, RefForm.DOTTED, dotted="m.T.fix"),
        id="dotted-name-nfkc-normalized",
    ),
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_parse_valid(text: str, expected: Ref) -> None:
    assert parse_ref(text) == expected


CANONICAL = [
    ("a.py#L5-L5", "a.py#L5"),
    ("a.py#L5-9", "a.py#L5-L9"),
    ("a.py#L05", "a.py#L5"),
    (f"{GH}/v1/docs/%E4%B8%AD%20x.md", f"{GH}/v1/docs/中%20x.md"),
    (" x.y ", "x.y"),
]


@pytest.mark.parametrize(("text", "canonical"), CANONICAL, ids=[c for _, c in CANONICAL])
def test_format_is_canonical(text: str, canonical: str) -> None:
    assert format_ref(parse_ref(text)) == canonical


INVALID = [
    pytest.param("", "empty reference", id="empty"),
    pytest.param("   ", "empty reference", id="blank"),
    pytest.param(
        "vllm@--upload-pack=x:a.py::f",
        "invalid version '--upload-pack=x' in 'vllm@--upload-pack=x:a.py::f': "
        "a version starts with a letter or digit",
        id="version-option-injection",
    ),
    pytest.param(
        "vllm@v1 2:a.py::f",
        "invalid version 'v1 2' in 'vllm@v1 2:a.py::f': "
        "a version contains only letters, digits and '._+-'",
        id="version-bad-char",
    ),
    pytest.param("vllm@:a.py::f", "missing version after '@' in 'vllm@:a.py::f'", id="no-version"),
    pytest.param("@v1:a.py::f", "missing repository before '@' in '@v1:a.py::f'", id="no-repo"),
    pytest.param(
        "-vllm@v1:a.py::f",
        "invalid repository '-vllm' in '-vllm@v1:a.py::f': a repository name starts with a "
        "letter or digit and contains only letters, digits and '_.-'",
        id="repo-bad",
    ),
    pytest.param(
        "a.py:f",
        "invalid pin 'a.py' in 'a.py:f': expected 'REPO@VERSION' before ':'",
        id="single-colon",
    ),
    pytest.param(
        "vllm/a.py", "missing '::QUALNAME' or '#Lx-Ly' after path 'vllm/a.py'", id="bare-path"
    ),
    pytest.param(
        "setup-tools.py",
        "missing '::QUALNAME' or '#Lx-Ly' after path 'setup-tools.py'",
        id="bare-path-no-dotted-name",
    ),
    pytest.param("vllm//a.py", "path 'vllm//a.py' has an empty segment", id="bare-path-bad"),
    pytest.param("a.py::f::g", "invalid qualname 'f::g'", id="qualname-with-colons"),
    pytest.param("a.py::A..b", "invalid qualname 'A..b'", id="qualname-empty-part"),
    pytest.param("a.py::<locals>.f", "invalid qualname '<locals>.f'", id="qualname-locals-first"),
    pytest.param("a.py::f.<locals>", "invalid qualname 'f.<locals>'", id="qualname-locals-last"),
    pytest.param("a.py::1f", "invalid qualname '1f'", id="qualname-not-identifier"),
    pytest.param(
        "a.py::f.<locals>.<locals>.g",
        "invalid qualname 'f.<locals>.<locals>.g'",
        id="qualname-locals-twice",
    ),
    pytest.param("a.py::", "missing qualname after '::' in 'a.py::'", id="qualname-missing"),
    pytest.param("::f", "missing path before '::' in '::f'", id="path-missing"),
    pytest.param("vllm@v1:", "nothing after 'vllm@v1:'", id="nothing-after-the-pin"),
    pytest.param("#L1", "missing path before '#' in '#L1'", id="path-missing-lines"),
    pytest.param(
        "../a.py::f", "path '../a.py' must be relative and must not contain '..'", id="dotdot"
    ),
    pytest.param(
        "/etc/a.py::f", "path '/etc/a.py' must be relative and must not contain '..'", id="abs"
    ),
    pytest.param("a//b.py::f", "path 'a//b.py' has an empty segment", id="empty-segment"),
    pytest.param("a/./b.py::f", "path 'a/./b.py' must not contain '.' segments", id="dot-seg"),
    pytest.param(
        "a\\b.py::f", "path 'a\\b.py' must use '/' as separator, not '\\'", id="backslash"
    ),
    pytest.param("v@1:a:b.py::f", "path 'a:b.py' must not contain ':'", id="colon-in-path"),
    pytest.param(
        "v@1: a.py::f", "path ' a.py' has whitespace at its start or end", id="path-space"
    ),
    pytest.param("a.py\x00::f", "reference contains the control character U+0000", id="nul"),
    pytest.param("a\nb.py::f", "reference contains the control character U+000A", id="newline"),
    pytest.param("a.py::f\u2028g", "reference contains the control character U+2028",
                 id="line-separator"),
    pytest.param("a\x85\x01b.py::f", "reference contains the control character U+0085",
                 id="next-line-first"),
    pytest.param("a.py#L9-L3", "line range L9-L3 ends before it starts", id="range-reversed"),
    pytest.param("a.py#L5-L4", "line range L5-L4 ends before it starts", id="range-one-back"),
    pytest.param("a.py#L0", "line numbers start at 1, got '#L0'", id="line-zero"),
    pytest.param(
        "a.py#L1C3",
        "invalid line anchor '#L1C3' after path 'a.py': expected '#Lx' or '#Lx-Ly'",
        id="anchor-columns",
    ),
    pytest.param(
        "a.py#L1234567890",
        "invalid line anchor '#L1234567890' after path 'a.py': expected '#Lx' or '#Lx-Ly'",
        id="anchor-too-long",
    ),
    pytest.param(
        "vllm.config.",
        "invalid dotted name 'vllm.config.': expected identifiers joined by '.'",
        id="dotted-trailing-dot",
    ),
    pytest.param(
        "vllm.a.f.<locals>.<locals>.g",
        "invalid dotted name 'vllm.a.f.<locals>.<locals>.g': expected identifiers joined by '.'",
        id="dotted-locals-twice",
    ),
    pytest.param(
        "https://gitlab.com/a/b/blob/v1/x.py",
        "unsupported URL 'https://gitlab.com/a/b/blob/v1/x.py': "
        "only GitHub permalinks are supported",
        id="url-not-github",
    ),
    pytest.param(
        "https://github.com/a/b/tree/v1/x",
        "invalid GitHub permalink 'https://github.com/a/b/tree/v1/x': "
        "expected 'https://github.com/ORG/NAME/blob/REF/PATH#Lx-Ly'",
        id="url-tree",
    ),
    pytest.param(
        "https://github.com/a/b/blob/v1/",
        "invalid GitHub permalink 'https://github.com/a/b/blob/v1/': "
        "expected 'https://github.com/ORG/NAME/blob/REF/PATH#Lx-Ly'",
        id="url-no-path",
    ),
    pytest.param(
        "https://github.com/a/b/blob/v1/x.py?raw=true#L2",
        "GitHub permalink 'https://github.com/a/b/blob/v1/x.py?raw=true#L2' "
        "must not have a query string",
        id="url-query",
    ),
    pytest.param(
        "https://github.com/-a/b/blob/v1/x.py",
        "invalid GitHub repository '-a/b' in 'https://github.com/-a/b/blob/v1/x.py'",
        id="url-bad-owner",
    ),
    pytest.param(
        "https://github.com/a/b/blob/-v/x.py",
        "invalid version '-v' in 'https://github.com/a/b/blob/-v/x.py': "
        "a version starts with a letter or digit",
        id="url-bad-version",
    ),
    pytest.param(
        "https://github.com/a/b/blob/v1/%2E%2E/x.py",
        "path '../x.py' must be relative and must not contain '..'",
        id="url-encoded-dotdot",
    ),
    pytest.param(
        "https://github.com/a/b/blob/v1/x%00.py",
        "path contains the control character U+0000",
        id="url-encoded-nul",
    ),
    pytest.param(
        "https://github.com/a/b/blob/v1/%FF.py",
        "path of 'https://github.com/a/b/blob/v1/%FF.py' is not valid percent-encoded UTF-8",
        id="url-bad-utf8",
    ),
    pytest.param(
        "https://github.com/a/b/blob/v1/x.py#L3-L1",
        "line range L3-L1 ends before it starts",
        id="url-range-reversed",
    ),
    pytest.param(
        "a.py::" + "f" * 5000,
        "reference is too long (5006 characters, max 4096)",
        id="too-long",
    ),
    pytest.param(
        "a.py::" + "f" * 4091,
        "reference is too long (4097 characters, max 4096)",
        id="too-long-by-one",
    ),
]


@pytest.mark.parametrize(("text", "message"), INVALID)
def test_parse_invalid(text: str, message: str) -> None:
    with pytest.raises(RefSyntaxError) as caught:
        parse_ref(text)
    assert caught.value.message == message
    assert "\n" not in str(caught.value)


def test_error_hints() -> None:
    with pytest.raises(RefSyntaxError) as caught:
        parse_ref("a.py::A..b")
    assert str(caught.value) == (
        "invalid qualname 'A..b' (hint: a qualname is identifiers joined by '.', "
        "e.g. 'Outer.method' or 'f.<locals>.g')"
    )
    with pytest.raises(RefSyntaxError) as caught:
        parse_ref("a.py:f")
    assert caught.value.hint == "use '::' between a path and a qualname"


def test_with_pin_and_pinned() -> None:
    ref = parse_ref("a.py::f")
    assert not ref.pinned
    pinned = ref.with_pin("vllm", "v0.20.0")
    assert pinned.pinned
    assert format_ref(pinned) == "vllm@v0.20.0:a.py::f"
    assert pinned.with_pin("other", "v9") is pinned
    link = parse_ref(f"{GH}/abc/a.py#L1")
    assert link.pinned and link.with_pin("vllm", "v1") is link
    with pytest.raises(RefSyntaxError, match="a version starts with a letter or digit"):
        ref.with_pin("vllm", "--upload-pack=x")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vllm", "invalid pin 'vllm': expected 'REPO@VERSION'"),
        ("vllm@-x", "invalid version '-x' in 'vllm@-x': a version starts with a letter or digit"),
        ("@v1", "missing repository before '@' in '@v1'"),
    ],
    ids=["no-at", "bad-version", "no-repo"],
)
def test_parse_pin_invalid(text: str, message: str) -> None:
    with pytest.raises(RefSyntaxError) as caught:
        parse_pin(text)
    assert caught.value.message == message


def test_parse_pin_valid() -> None:
    assert parse_pin(" vllm@v0.20.0 ") == ("vllm", "v0.20.0")


def test_str_is_format() -> None:
    assert str(parse_ref("v@1:a.b")) == "v@1:a.b"


# -- round trip -----------------------------------------------------------------------------------

_BAD_CATEGORIES = {"Cc", "Cs", "Zl", "Zp"}

repos = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,12}", fullmatch=True)
versions = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,16}", fullmatch=True)
ascii_identifiers = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)
unicode_identifiers = st.text(  # as Python reads them (NFKC), as a canonical ref writes them
    st.characters(categories=["Lu", "Ll", "Lo", "Nd"]), min_size=1, max_size=6
).filter(lambda text: text.isidentifier() and unicodedata.normalize("NFKC", text) == text)
identifiers = ascii_identifiers | unicode_identifiers


@st.composite
def qualnames(draw: st.DrawFn) -> str:
    parts = draw(st.lists(identifiers, min_size=1, max_size=5))
    out = [parts[0]]
    for part in parts[1:]:
        if draw(st.booleans()):
            out.append("<locals>")
        out.append(part)
    return ".".join(out)


def _segment_char(ch: str) -> bool:
    return unicodedata.category(ch) not in _BAD_CATEGORIES and ch not in "/\\:"


segments = (
    st.text(st.characters().filter(_segment_char), min_size=1, max_size=8)
    | st.from_regex(r"[a-z_]{1,8}(\.py)?", fullmatch=True)
    | st.sampled_from(["vllm", "模型", "データ", "naïve", "a b", "x#y", "%41", "q?", "@x"])
).filter(lambda s: s not in (".", ".."))
paths = st.lists(segments, min_size=1, max_size=4).map("/".join).filter(lambda p: p == p.strip())
pins = st.one_of(st.just(""), st.builds(lambda r, v: f"{r}@{v}:", repos, versions))


@st.composite
def anchors(draw: st.DrawFn) -> str:
    start = draw(st.integers(1, 999_999_999))
    if draw(st.booleans()):
        return f"#L{start}"
    end = draw(st.integers(start + 1, 1_000_000_000 - 1)) if start < 999_999_999 else start
    return f"#L{start}" if end == start else f"#L{start}-L{end}"


def _url_path(path: str) -> str:
    return "".join(quote(ch, safe="") if ch in "%#?" or ch.isspace() else ch for ch in path)


@st.composite
def permalinks(draw: st.DrawFn) -> str:
    owner = draw(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,10}", fullmatch=True))
    name = draw(
        st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True).filter(
            lambda n: n not in (".", "..")
        )
    )
    fragment = draw(st.one_of(st.just(""), anchors()))
    path = _url_path(draw(paths))
    return f"https://github.com/{owner}/{name}/blob/{draw(versions)}/{path}{fragment}"


canonical_refs = st.one_of(
    st.builds(lambda p, path, q: f"{p}{path}::{q}", pins, paths, qualnames()),
    st.builds(lambda p, d: p + ".".join(d), pins, st.lists(identifiers, min_size=1, max_size=5)),
    st.builds(lambda p, path, a: f"{p}{path}{a}", pins, paths, anchors()),
    permalinks(),
)


@settings(max_examples=400)
@given(canonical_refs)
def test_round_trip(text: str) -> None:
    ref = parse_ref(text)
    assert format_ref(ref) == text
    assert parse_ref(format_ref(ref)) == ref


_TOKENS = [
    "vllm",
    "@",
    "v0.1",
    ":",
    "::",
    "#",
    "#L",
    "L1",
    "-L",
    "-",
    "/",
    "..",
    ".",
    "<locals>",
    "https://github.com/",
    "o/n/blob/",
    "blob",
    "%",
    "%E4",
    "%2F",
    "1",
    " ",
    "\t",
    "中",
    "\\",
    "?",
    "\x00",
    "a.py",
    "f",
]
fuzz_text = st.text() | st.lists(st.sampled_from(_TOKENS) | st.text(max_size=3)).map("".join)


@settings(max_examples=1000)
@given(fuzz_text)
def test_fuzz_parse_only_raises_ref_syntax_error(text: str) -> None:
    try:
        ref = parse_ref(text)
    except RefSyntaxError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(ref, Ref)
    assert parse_ref(format_ref(ref)) == ref


def test_a_plain_ref_asks_unicodedata_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every ref of a collection was checked for control characters one character at a
    time, asking unicodedata each: the link of 35,000 refs asked it 2.5 million times."""
    def unasked(character: str) -> str:
        raise AssertionError(f"unicodedata asked of {character!r}")

    monkeypatch.setattr(unicodedata, "category", unasked)
    ref = parse_ref("vllm@v0.20.0:vllm/config/cache.py::CacheConfig.block_size")
    assert (ref.path, ref.qualname) == ("vllm/config/cache.py", "CacheConfig.block_size")


@pytest.mark.parametrize(("start", "end", "span"), [
    pytest.param(5, 5, "L5", id="one-line"),
    pytest.param(5, None, "L5", id="no-end"),
    pytest.param(5, 7, "L5-L7", id="several-lines"),
])
def test_a_line_span_is_written_as_github_anchors_write_it(
    start: int, end: int | None, span: str
) -> None:
    assert line_span(start, end) == span


@pytest.mark.parametrize(("start", "end", "anchor"), [
    pytest.param(5, 5, "#L5", id="one-line"),
    pytest.param(5, 7, "#L5-L7", id="several-lines"),
])
def test_a_permalink_links_its_lines_as_github_does(start: int, end: int, anchor: str) -> None:
    """Every permalink annotate writes (show, history, check's old_url, new_url and
    alias_url, the diff's) is the repo's; one line is GitHub's ``#L5``, as refs write it."""
    repo = BUILTIN_REPOS["vllm"]
    assert repo.permalink("v0.20.0", "vllm/config/cache.py", start, end) == (
        f"https://github.com/vllm-project/vllm/blob/v0.20.0/vllm/config/cache.py{anchor}")
