"""Untrusted input, end to end through the ``annotate`` command.

Annotation files and Markdown articles arrive in pull requests, and the Python sources being
indexed are someone else's code. This module feeds the real commands hostile versions of
each and checks what must never happen: code runs, git or pip see an option or a new URL,
a report grows an extra line, tag, table cell or workflow command, or a limit is ignored.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import unicodedata
import zipfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import fakevllm as fv
import jsonschema
import pytest
from fakeproject import DB
from fakeproject import invoke as run
from fakeproject import write_file as write

from annotations.loader import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES
from db.database import open_database

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


def claim_file(*refs: str, at: str | None = None, article: str = "notes") -> str:
    """An annotation file (JSON is YAML) with one claim per ref."""
    document: dict = {"article": article, "claims": [
        {"id": f"c{number}", "text": f"claim {number}", "refs": [ref]}
        for number, ref in enumerate(refs)
    ]}
    if at is not None:
        document["at"] = at
    return json.dumps(document, ensure_ascii=False, indent=1)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argument list of every process started in this process (git, pip, anything)."""
    calls: list[list[str]] = []
    original = subprocess.Popen.__init__

    def recording(self: subprocess.Popen, args: object, *rest: object, **kwargs: object) -> None:
        calls.append([os.fsdecode(a) for a in args] if isinstance(args, list | tuple)
                     else [os.fsdecode(args)])  # type: ignore[arg-type]
        original(self, args, *rest, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(subprocess.Popen, "__init__", recording)
    return calls


def cache() -> Path:
    return Path.cwd() / "xdg-cache" / "annotate"


@pytest.fixture
def empty_index() -> Path:
    """annotate.toml with vllm (git only, at a local path) and an empty index."""
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["git", "pypi"]\n'
                                     'git = "nowhere"\nversions = ["v0.1.0"]\n')
    db = DB
    open_database(db).close()
    return db


# ------------------------------------------------------------------------------ YAML limits


def billion_laughs() -> str:
    rows = [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}" if i else '"lol"'] * 10) + "]"
            for i in range(10)]
    return "\n".join(rows) + "\narticle: bomb\nclaims: []\n"


def deep() -> str:
    return "article: deep\nclaims: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"


def huge() -> str:
    filler = "# " + "x" * 98 + "\n"
    return "article: huge\nclaims: []\n" + filler * (MAX_FILE_BYTES // len(filler) + 1)


GOOD = "article: good\nat: vllm@v0.1.0\nclaims:\n  - id: ok\n    text: fine\n    refs: [a.py::f]\n"
TOO_MANY = f"more than {MAX_NODES} YAML nodes (aliases counted as expanded)"
BAD_FILES = {  # in the order they are reported: YAML files, then Markdown articles
    "annotations/a-bomb.yml": (billion_laughs(), f"annotations/a-bomb.yml:1: {TOO_MANY}"),
    "annotations/b-deep.yml": (
        deep(), f"annotations/b-deep.yml:2: YAML nesting is deeper than {MAX_DEPTH} levels"
    ),
    "annotations/c-huge.yml": (
        huge(), f"annotations/c-huge.yml: file is larger than {MAX_FILE_BYTES} bytes (hint: split "
        "it into several files)"
    ),
    "annotations/d-python.yml": (
        "article: evil\nclaims: !!python/object/apply:os.system ['touch SENTINEL']\n",
        "annotations/d-python.yml:2: unsupported YAML tag '!!python/object/apply:os.system'",
    ),
    "articles/e-bomb.md": (
        "---\n" + billion_laughs() + "---\n# Bomb\n", f"articles/e-bomb.md:2: {TOO_MANY}"
    ),
    "articles/f-huge.md": (
        "# Huge\n\n" + huge(),
        f"articles/f-huge.md: file is larger than {MAX_FILE_BYTES} bytes (hint: split it "
        "into several files)"
    ),
}


@pytest.fixture
def bad_files(empty_index: Path) -> None:
    for name, (text, _) in BAD_FILES.items():
        write(name, text)
    write("annotations/z-good.yml", GOOD)


def _file_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error: ")][:-1]


@pytest.mark.parametrize("command", ["link", "check"])
def test_oversized_and_bomb_files_are_refused_and_the_others_still_reported(
    bad_files: None, command: str
) -> None:
    started = time.monotonic()
    result = run(command)
    assert time.monotonic() - started < 20  # no bomb was expanded
    assert result.exit_code == 2
    errors = _file_errors(result.stderr)
    expected = [message for _, message in BAD_FILES.values()]
    assert len(errors) == len(expected)  # one line per problem
    for error, message in zip(errors, expected, strict=True):
        assert error.startswith(f"Error: {message}"), (error, message)
    last = result.stderr.splitlines()[-1]
    if command == "link":
        assert last == f"Error: {len(expected)} problems in the annotations (see above)"
        assert result.stdout == "1 article, 1 claim, 1 ref: 0 linked, 1 unindexed, 0 broken\n"
    else:
        assert last == (f"Error: {len(expected)} annotation files could not be read (see "
                        "above); target vllm@v0.1.0 is not indexed, so 1 ref was not checked; "
                        "run 'annotate index vllm@v0.1.0'")  # the index is empty
        assert "good" in result.stdout and "1 claim, 1 ref" in result.stdout
    assert not Path("SENTINEL").exists()


# ------------------------------------------------------------------------------ Markdown scans

PERMALINK = "https://github.com/vllm-project/vllm/blob/v0.1.0/a.py#L1"
HOSTILE_LINES = {  # what a line is made of, each line after a permalink the article cites
    "unclosed-links": "[a](",
    "unclosed-bracketed-links": "[a](<",
    "unclosed-labels": "[",
    "unclosed-autolinks": "<https://x",
}


def hostile_article() -> str:
    """An article of MAX_FILE_BYTES, one line per HOSTILE_LINES, each citing PERMALINK."""
    size = (MAX_FILE_BYTES - 20) // len(HOSTILE_LINES) - len(PERMALINK) - 3
    return "# Hostile\n\n" + "".join(
        f"{PERMALINK} {unit * (size // len(unit))}\n\n" for unit in HOSTILE_LINES.values())


def test_a_hostile_markdown_line_is_read_in_linear_time(empty_index: Path) -> None:
    write("articles/hostile.md", hostile_article())
    started = time.monotonic()
    result = run("link")
    assert time.monotonic() - started < 20  # no scan to the line's end from each '[' or '<'
    count = len(HOSTILE_LINES)
    assert result.stdout == (f"1 article, {count} claims, {count} refs: 0 linked, "
                             f"{count} unindexed, 0 broken\n")


def test_markdown_nested_deep_is_read_in_linear_time(empty_index: Path) -> None:
    """A line of a million '>' opens MAX_CONTAINERS block quotes, and the rest is text: each
    quote opened copied the ones before it, and each line after went over all of them."""
    depth = (MAX_FILE_BYTES - 100 - 2 * len(PERMALINK)) // 4
    write("articles/deep.md", f"# Deep\n\n{'> ' * depth}{PERMALINK}\n{'> ' * depth}x\n")
    started = time.monotonic()
    result = run("link")
    assert time.monotonic() - started < 20
    assert result.stdout == "1 article, 1 claim, 1 ref: 0 linked, 1 unindexed, 0 broken\n"


# ------------------------------------------------------------------------------ refs are data

SENTINEL = str(Path(tempfile.gettempdir()) / f"annotate-hostile-{os.getpid()}")
HOSTILE_VERSIONS = [  # in the order of VERSION_IDS
    f"--upload-pack=touch {SENTINEL}",
    f"-oProxyCommand=touch {SENTINEL}",
    f"v1 --upload-pack=touch {SENTINEL}",
    f"v1;touch {SENTINEL}",
    f"$(touch {SENTINEL})",
    f"`touch {SENTINEL}`",
    "v1/../../../etc",
    "..",
    ".v1",
    "v1\x00--upload-pack=x",
    "v1\n--upload-pack=x",
]
VERSION_IDS = ["upload-pack", "ssh-option", "space-option", "semicolon", "dollar-paren",
               "backticks", "slash-dotdot", "dotdot", "leading-dot", "nul", "newline"]
HOSTILE_PATHS = [
    "../../etc/passwd",
    "/etc/passwd",
    "vllm/../../../etc/passwd",
    "a\x00b.py",
    "C:\\Windows\\win.ini",
    "a\\..\\..\\b.py",
    "./a.py",
    "a//b.py",
    " a.py",
]
HOSTILE_REFS = (
    [f"vllm@{version}:vllm/utils.py::cdiv" for version in HOSTILE_VERSIONS]
    + [f"vllm@v0.1.0:{path}::f" for path in HOSTILE_PATHS]
    + [f"vllm@v0.1.0:{path}#L1" for path in HOSTILE_PATHS]
    + [f"https://github.com/vllm-project/vllm/blob/{version.replace(' ', '%20')}/a.py#L1"
       for version in HOSTILE_VERSIONS if "\n" not in version and "\0" not in version]
    + ["https://github.com/vllm-project/vllm/blob/v1/..%2F..%2Fetc/passwd#L1",
       "https://github.com/vllm-project/vllm/blob/v1/%00.py#L1",
       "ext::sh -c touch% /tmp/x", "file:///etc/passwd", "--upload-pack=x"]
)


@pytest.fixture
def hostile_refs(empty_index: Path) -> int:
    """One annotation file per hostile ref, plus files whose `at:` pin is hostile."""
    for number, ref in enumerate(HOSTILE_REFS):
        write(f"annotations/ref{number:03}.yml", claim_file(ref))
    for number, version in enumerate(HOSTILE_VERSIONS):
        write(f"annotations/pin{number:03}.yml", claim_file("a.py::f", at=f"vllm@{version}"))
    return len(HOSTILE_REFS) + len(HOSTILE_VERSIONS)


@pytest.mark.parametrize("command", ["link", "check"])
def test_hostile_refs_and_pins_are_rejected_before_any_process_starts(
    hostile_refs: int, spy: list[list[str]], command: str
) -> None:
    result = run(command)
    assert result.exit_code == 2
    errors = _file_errors(result.stderr)
    assert len(errors) == hostile_refs  # every one refused, each on its own line
    assert all(re.match(r"Error: annotations/(ref|pin)\d{3}\.yml:\d+: ", e) for e in errors)
    assert spy == []  # not one git or pip process, with or without the bad argument
    assert not Path(SENTINEL).exists()
    assert not cache().exists()


@pytest.mark.parametrize("version", HOSTILE_VERSIONS, ids=VERSION_IDS)
def test_hostile_version_on_the_command_line_never_reaches_git_or_pip(
    empty_index: Path, spy: list[list[str]], version: str
) -> None:
    before = empty_index.read_bytes()
    result = run("index", f"vllm@{version}")
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1].startswith("Error: ")
    assert spy == []
    assert not Path(SENTINEL).exists()
    assert not cache().exists()
    assert empty_index.read_bytes() == before


def test_the_process_spy_sees_git_and_pip(
    empty_index: Path, spy: list[list[str]], fake_vllm: fv.FakeRepo, tmp_path: Path
) -> None:
    """Control for the tests above: a good version does start git (with ``--`` before the
    URL) and pip, so an empty spy really means that nothing was started."""
    write("annotate.toml", f'[repos.vllm]\nsources = ["git", "pypi"]\ngit = "{tmp_path}/x"\n')
    result = run("index", "vllm@v0.9.9")
    assert result.exit_code == 2
    fetch = next(call for call in spy if "fetch" in call)
    assert fetch[fetch.index("--") + 1:] == [
        Path(f"{tmp_path}/x").resolve().as_uri(),
        "+refs/tags/v0.9.9:refs/tags/v0.9.9",
    ]
    pip = next(call for call in spy if call[1:4] == ["-m", "pip", "download"])
    assert pip[-1] == "vllm==0.9.9" and "--only-binary" in pip


UNCONFIGURED = [
    "evil@v1:a.py::f",
    "evil@v1:a.dotted.name",
    "https://github.com/evil/repo/blob/v1/a.py#L1",
    "https://github.com/evil/vllm/blob/v0.1.0/vllm/utils.py#L1",
    "https://github.com/vllm-project/evil/blob/v0.1.0/vllm/utils.py#L1",
]


def test_annotations_cannot_name_a_new_repo_or_url(
    empty_index: Path, spy: list[list[str]]
) -> None:
    write("annotations/evil.yml", claim_file(*UNCONFIGURED))
    write("articles/evil.md", "# Evil\n\nSee https://github.com/evil/repo/blob/v2/x.py#L3 and "
          "https://github.com/vllm-project/vllm/blob/v9.9.9/vllm/utils.py#L1.\n")
    result = run("link")
    assert result.exit_code == 2
    errors = _file_errors(result.stderr)
    assert len(errors) == len(UNCONFIGURED) + 1  # the body's link into evil/repo: a note
    assert sum("unknown repo 'evil'" in e for e in errors) == 2
    assert sum("is not a configured repo" in e for e in errors) == 3
    assert "Note: 1 permalink into repos not configured (github.com/evil/repo)" in result.stderr
    assert sum("articles/evil.md:3: vllm@v9.9.9 is neither indexed nor configured" in e
               for e in errors) == 1
    for command in (["show", "evil@v1:a.py::f"], ["index", "evil@v1"],
                    ["show", "https://github.com/evil/repo/blob/v1/a.py#L1"],
                    ["xref", "evil@v1:a.py::f"]):
        assert run(*command).exit_code == 2, command
    assert run("check").exit_code == 1  # reported as broken refs, and nothing fetched
    assert spy == []
    assert not cache().exists()  # no mirror, no wheel folder, for evil or anyone


# ------------------------------------------------------------------------------ reports

EVIL_DIR = "pkg/h|<img src=x onerror=alert(1)>&%0A,*_[a](b)~'\" onmouseover=\"alert(2)\" y=\"$ x"
EVIL_PATH = f"{EVIL_DIR}/mod.py"
REF = f"vllm@v1:{EVIL_PATH}::Evil.run"
ARTICLE = "<script>x</script>|%0A::warning::a,b"
ANNOTATION_FILE = "annotations/x|<b>%0A,&amp;.yml"
HOSTILE_TEXT = (
    "100% <script>alert(1)</script> | cell | `code` **b** [l](javascript:x)\n"
    "::error file=x,line=1::pwned\r\n%0A%25\u2028\u0085\x1b[2J\x07\x00 &amp; ]]> <!-- ```` end"
)


def _payload(version: int) -> str:
    return "\n".join([
        f"::error file=evil.py,line=1::pwned {version}",
        f"</code></details><script>alert({version})</script>",
        f"```````` {version}",
        "````````````",  # the same in both versions: a context line, " ````````````"
        f"| a | b | {version}",
        f"%0A%25 \x1b[2J \u2028 {version} \u0085 <!-- end",
    ])


def _evil_tree(root: Path, version: int) -> None:
    path = root / EVIL_PATH
    path.parent.mkdir(parents=True)
    path.write_text(
        f'class Evil:\n    def run(self):\n        payload = """\n{_payload(version)}\n"""\n'
        f"        return payload\n",
        encoding="utf-8",
    )


@pytest.fixture
def hostile_report_project() -> None:
    write("annotate.toml", '[repos.vllm]\nsources = ["git"]\nversions = ["v1", "v2"]\n'
          'github = "vllm-project/vllm"\n')
    for version in (1, 2):
        _evil_tree(Path(f"tree-v{version}"), version)
        assert run("index", f"vllm@v{version}", "--from", f"tree-v{version}").exit_code == 0
    document = {"article": ARTICLE, "claims": [{"id": "evil", "text": HOSTILE_TEXT,
                                                "refs": [REF]}]}
    write(ANNOTATION_FILE, json.dumps(document))  # \uXXXX escapes: YAML breaks lines at NEL


def check_output(fmt: str) -> str:
    result = run("check", "--format", fmt)
    assert result.exit_code == 1, result.output  # the ref changed: failing
    assert result.stderr == ""
    return result.stdout


def _no_line_breaks_but_newline(text: str) -> None:
    bad = {ch for ch in text if ch != "\n" and unicodedata.category(ch) in ("Cc", "Zl", "Zp")}
    assert not bad, bad


def test_text_report_keeps_hostile_text_on_its_lines(hostile_report_project: None) -> None:
    out = check_output("text")
    _no_line_breaks_but_newline(out)  # no ESC, BEL, NUL, CR, NEL, LS reach the terminal
    row = next(line for line in out.splitlines() if " evil " in line)
    assert re.split(r"\s{2,}", row.strip())[:5] == [
        "changed", "evil", f"{ANNOTATION_FILE}:1", REF, "[body]"
    ]
    assert "\\x1b[2J" in out  # the code's escape sequence is shown, not obeyed


def test_json_report_round_trips_every_hostile_value(hostile_report_project: None) -> None:
    (result,) = json.loads(check_output("json"))["results"]
    assert (result["article"], result["claim_text"], result["file"], result["ref"]) == (
        ARTICLE, HOSTILE_TEXT, ANNOTATION_FILE, REF
    )
    assert f"-{_payload(1).splitlines()[0]}" in result["diff"]
    assert _is_permalink_to_the_evil_file(result["old_url"])  # '%0A', '#', ' ' encoded
    assert _is_permalink_to_the_evil_file(result["new_url"])


def parse_workflow_command(line: str) -> tuple[str, dict[str, str], str]:
    """Parse one line as the GitHub Actions runner does (ActionCommand.TryParseV2)."""
    assert line.startswith("::"), line
    end = line.index("::", 2)
    info, data = line[2:end], line[end + 2:]
    name, _, props_text = info.partition(" ")
    props = {}
    for pair in filter(None, props_text.split(",")):
        key, _, value = pair.partition("=")
        for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","),
                             ("%25", "%")):
            value = value.replace(escaped, raw)
        props[key] = value
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        data = data.replace(escaped, raw)
    return name, props, data


def test_github_report_is_one_command_per_result(hostile_report_project: None) -> None:
    out = check_output("github")
    _no_line_breaks_but_newline(out)
    lines = out.splitlines()
    assert len(lines) == 2  # the summary and one annotation: nothing injected
    name, props, message = parse_workflow_command(lines[1])
    assert (name, props) == ("error", {"file": ANNOTATION_FILE, "line": "1",
                                       "title": "annotate: changed claim evil"})
    head, claim = message.split("\n")[:2]
    assert head == f"{REF} is changed (body): body changed"
    assert claim.startswith(f"claim evil of {ARTICLE}: 100% <script>alert(1)</script> | cell")
    assert "::error file=x,line=1::pwned" in claim  # inside the message, not a command
    assert parse_workflow_command(lines[0])[0] == "notice"


def test_sarif_report_is_valid_and_round_trips(hostile_report_project: None) -> None:
    log = json.loads(check_output("sarif"))
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    (result,) = log["runs"][0]["results"]
    uri = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert re.fullmatch(r"[A-Za-z0-9\-._~/%!$'()*+;=@]+", uri), uri  # a URI, percent-encoded
    assert unquote(uri) == ANNOTATION_FILE
    assert result["properties"]["claim_text"] == HOSTILE_TEXT
    assert result["message"]["text"].startswith(f"Claim evil of {ARTICLE}: {REF} is changed")


ALLOWED_TAGS = {"code", "br", "sub", "kbd", "details", "summary", "a"}


def test_markdown_report_renders_hostile_text_literally(hostile_report_project: None) -> None:
    out = check_output("markdown")
    lines = out.splitlines()
    opening = next(i for i, line in enumerate(lines) if re.fullmatch(r"`{3,}diff", line))
    fence = lines[opening].removesuffix("diff")
    closing = next(i for i in range(opening + 1, len(lines))  # CommonMark's closing fence
                   if re.fullmatch(rf" {{0,3}}`{{{len(fence)},}}\s*", lines[i]))
    assert lines[closing + 1:] == ["", "</details>"]  # no diff line closed the block early
    assert any(line.startswith("-::error file=evil.py") for line in lines[opening:closing])
    prose = lines[:opening] + lines[closing + 1:]
    for line in prose:
        tags = {m.group(1).lower() for m in re.finditer(r"</?([A-Za-z][A-Za-z0-9]*)", line)}
        assert tags <= ALLOWED_TAGS, (tags, line)
        links = re.findall(r"<a [^>]*>", line)
        assert all(re.fullmatch(r'<a href="https://github\.com/[^"<> ]*">', link)
                   for link in links), links
        assert "<!--" not in line and "](javascript" not in line.replace("\\]", "")
        assert not line.startswith("::")
    row = next(line for line in prose if "<kbd>changed</kbd>" in line)
    assert len(re.findall(r"(?<!\\)\|", row)) == 7  # six cells, however many '|' they hold
    assert html.unescape(re.sub(r"\\(.)", r"\1", row)).count("<script>alert(1)</script>") == 1


DANGEROUS_TAGS = {"script", "iframe", "frame", "object", "embed", "img", "svg", "math",
                  "link", "base", "form", "input", "button", "audio", "video", "source"}


class _Page(HTMLParser):
    """Elements, attributes and text of an HTML page, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]

    handle_startendtag = handle_starttag

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _is_permalink_to_the_evil_file(url: str) -> bool:
    parts = urlsplit(url)
    return (f"{parts.scheme}://{parts.netloc}" == "https://github.com"
            and unquote(parts.path).endswith(f"/{EVIL_PATH}")
            and re.fullmatch(r"L\d+-L\d+", parts.fragment) is not None)


def test_html_diff_page_escapes_hostile_paths_claims_and_code(
    hostile_report_project: None
) -> None:
    assert run("link").exit_code == 0
    result = run("diff", "vllm@v1", "vllm@v2", "--annotated", "--format", "html")
    assert result.exit_code == 0, result.output
    page = _Page()
    page.feed(result.stdout)
    page.close()
    assert not set(page.tags) & DANGEROUS_TAGS
    links = 0
    for _, name, value in page.attributes:
        assert not name.startswith("on") and name not in ("src", "srcdoc"), name
        assert not (name == "http-equiv" and value.lower() == "refresh")
        assert not (name == "style" and ("alert" in value or "url(" in value))
        if name == "href" and not value.startswith("#"):
            assert _is_permalink_to_the_evil_file(value), value  # the path is percent-encoded
            links += 1
    assert links >= 2  # the pinned and the target version
    text = "".join(page.text)
    assert "::error file=evil.py,line=1::pwned 1" in text  # the code, as text
    assert "</code></details><script>alert(1)</script>" in text
    assert EVIL_PATH in text and "100% <script>alert(1)</script> | cell" in text


# ------------------------------------------------------------------------------ code is data

TRAP = (
    "import os, pathlib\n"
    "pathlib.Path({sentinel!r}).write_text('ran: ' + __file__)\n"
    "os.system('touch {sentinel}-system')\n"
    "def trap():\n"
    "    os.system('touch {sentinel}-system')\n"
)


def trap(sentinel: Path) -> str:
    return TRAP.format(sentinel=str(sentinel))


SHADOWED = ("yaml.py", "click.py", "git/__init__.py", "sqlite3.py", "tree_sitter.py",
            "zipfile.py", "sitecustomize.py", "usercustomize.py", "conftest.py",
            "__main__.py", "setup.py", "pkg/__init__.py", "pkg/__main__.py")


def _sprung(sentinel: Path) -> bool:
    return sentinel.exists() or Path(f"{sentinel}-system").exists()


def _annotate() -> list[str]:
    script = Path(sys.executable).with_name("annotate")
    return [str(script)] if script.exists() else [shutil.which("annotate") or "annotate"]


def _annotate_process(*args: str, cwd: Path | None = None, **env: str
                      ) -> subprocess.CompletedProcess:
    return subprocess.run([*_annotate(), *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **env}, timeout=120)


def test_indexed_sources_are_never_imported_or_run(tmp_path: Path) -> None:
    sentinel = tmp_path / "SPRUNG"
    tree = tmp_path / "checkout"
    for name in SHADOWED:
        write(str(tree / name), trap(sentinel))
    write(str(tree / "evil.pth"), f"import os; os.system('touch {sentinel}-system')\n")
    config = tmp_path / "annotate.toml"
    config.write_text('[repos.vllm]\nsources = ["git"]\n')
    # Run from inside the checkout, as `annotate index ... --from .` would be.
    done = _annotate_process("--config", str(config), "index", "vllm@v1.0.0", "--from", ".",
                             cwd=tree)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith(f"vllm@v1.0.0: {len(SHADOWED) + 1} files, ")
    listed = _annotate_process("--config", str(config), "symbols", "vllm@v1.0.0", cwd=tree)
    assert listed.returncode == 0 and "setup.py" in listed.stdout
    assert not _sprung(sentinel)
    # Control: the trap is armed; importing the package does spring it.
    subprocess.run([sys.executable, "-c", "import pkg"], cwd=tree, check=True)
    assert sentinel.read_text().startswith("ran: ")


def _trap_wheel(path: Path, sentinel: Path) -> None:
    members = {
        "vllm/__init__.py": trap(sentinel),
        "vllm/setup.py": trap(sentinel),
        "zz_evil.pth": f"import os; os.system('touch {sentinel}-system')\n",
        "vllm-7.0.0.data/scripts/evil.py": trap(sentinel),
        "vllm-7.0.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: vllm\nVersion: 7.0.0\n",
        "vllm-7.0.0.dist-info/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"
                                      "Tag: py3-none-any\n",
        "vllm-7.0.0.dist-info/entry_points.txt": "[console_scripts]\nvllm = vllm:main\n",
        "vllm-7.0.0.dist-info/RECORD": "",
    }
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)


def test_wheels_are_read_not_installed(tmp_path: Path) -> None:
    sentinel = tmp_path / "SPRUNG"
    links = tmp_path / "links"
    links.mkdir()
    wheel = links / "vllm-7.0.0-py3-none-any.whl"
    _trap_wheel(wheel, sentinel)
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["pypi"]\n')
    done = _annotate_process("index", "vllm@v7.0.0", PIP_NO_INDEX="1", PIP_FIND_LINKS=str(links))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("vllm@v7.0.0: 2 files, ")  # vllm/*.py only
    local = _annotate_process("index", "vllm@v7.0.1", "--from", str(wheel))
    assert local.returncode == 0
    assert _annotate_process("versions").returncode == 0  # a new interpreter starts cleanly
    assert not _sprung(sentinel)
    # Control: installed into a site directory, the wheel's .pth would run at start-up.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    subprocess.run([sys.executable, "-c", f"import site; site.addsitedir({str(site)!r})"],
                   check=True)
    assert Path(f"{sentinel}-system").exists()


def test_a_release_with_only_an_sdist_is_never_built(tmp_path: Path) -> None:
    """pip would run an sdist's setup.py to build it; ``--only-binary :all:`` refuses, even
    when the user's pip configuration turns build isolation off."""
    sentinel = tmp_path / "SPRUNG"
    links = tmp_path / "links"
    source = tmp_path / "src" / "vllm-7.1.0"
    write(str(source / "setup.py"), trap(sentinel)
          + "from setuptools import setup\nsetup(name='vllm', version='7.1.0')\n")
    write(str(source / "PKG-INFO"), "Metadata-Version: 2.1\nName: vllm\nVersion: 7.1.0\n")
    links.mkdir()
    with tarfile.open(links / "vllm-7.1.0.tar.gz", "w:gz") as archive:
        archive.add(source, arcname="vllm-7.1.0")
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links), "PIP_NO_BUILD_ISOLATION": "0"}
    # Control: without --only-binary, pip runs setup.py here.
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d",
                    str(tmp_path / "dl"), "vllm==7.1.0"], capture_output=True,
                   env={**os.environ, **env}, timeout=120)
    if not _sprung(sentinel):
        pytest.skip("pip cannot build an sdist here, so the trap is not armed")
    sentinel.unlink()
    Path(f"{sentinel}-system").unlink(missing_ok=True)
    Path("annotate.toml").write_text('[repos.vllm]\nsources = ["pypi"]\n')
    done = _annotate_process("index", "vllm@v7.1.0", **env)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: vllm@v7.1.0 was not found (pypi: pip: vllm==7.1.0: "
                                  "No matching distribution found for vllm==7.1.0")
    assert not _sprung(sentinel)
