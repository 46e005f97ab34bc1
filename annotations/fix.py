"""``annotate fix``: rewrite refs of moved symbols, and move claims' pins forward.

Edits touch only the text they replace: every other byte of a file (comments, order,
quoting, line endings) stays as it was.

* A ``moved`` ref whose match is unambiguous (no other candidates) and whose content did
  not change (or only cosmetically) is rewritten to the symbol's new place at the target
  version: a ref as ``REPO@TARGET:PATH::QUALNAME`` in annotation files, a permalink as
  the new permalink in Markdown articles. A symbol that moved *and* changed is left as it
  is, with a note: pinning the ref at the target would call the changed code fresh before
  anyone read it.
* ``--bump CLAIM`` moves the claim to the target version after its author re-checked it
  (``CLAIM`` is ``ARTICLE#ID`` or just ``ID`` when that is unique): its ``at:`` becomes
  the target, its moved refs (changed or not) and its permalinks their new places, and
  its refs written with their own pin that pin's target. A claim with a ref that would
  not hold at the target (removed, broken, an ambiguous move, a quote or ``uses:`` that
  no longer stands, an unindexed version) is refused, naming that ref.
"""

from __future__ import annotations

import difflib
import re
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from annotations.errors import AnnotationError
from annotations.loader import front_matter_yaml
from annotations.results import CheckReport, RefResult, Status

# Lines end where the loader's (and YAML's) line numbers say they do: also at a lone CR,
# NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR.
_LINE = re.compile("[^\r\n\x85\u2028\u2029]*(?:\r\n|[\r\n\x85\u2028\u2029])"
                   "|[^\r\n\x85\u2028\u2029]+\\Z")
_ENDING = re.compile("(?:\r\n|[\r\n\x85\u2028\u2029])\\Z")
_URL_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#@!$&*+,;=%]*")  # as the loader finds permalinks
_EXTENDS_BEFORE = re.compile(r"[\w./:@#<>-]")
_EXTENDS_AFTER = re.compile(r"[\w<>#/-]|[.:][\w:<]")


class FixError(AnnotationError):
    """A fix that cannot be applied as asked."""


@dataclass
class FilePlan:
    """The new text of one file, line by line."""

    path: Path
    original: str
    lines: list[str] = field(default_factory=list)
    edits: int = 0

    @classmethod
    def read(cls, path: Path) -> FilePlan:
        text = path.read_bytes().decode("utf-8")
        return cls(path, text, _LINE.findall(text))

    @property
    def text(self) -> str:
        return "".join(self.lines)

    def replace_on_line(self, line: int, old: str, new: str) -> bool:
        """Replace the ref ``old`` where it stands whole on ``line`` (not inside a longer
        ref that starts or ends with it)."""
        if not 0 < line <= len(self.lines):
            return False
        current = self.lines[line - 1]
        start = _find_ref(current, old)
        if start < 0:
            return False
        self.replace_columns(line - 1, start, start + len(old), new)
        return True

    def replace_columns(self, index: int, start: int, end: int, new: str) -> None:
        """Replace characters ``start:end`` of line ``index`` (0-based) with ``new``."""
        line = self.lines[index]
        self.lines[index] = line[:start] + new + line[end:]
        self.edits += 1

    def diff(self, display: str) -> str:
        return "".join(
            difflib.unified_diff(
                _LINE.findall(self.original), self.lines,
                fromfile=f"a/{display}", tofile=f"b/{display}",
            )
        )


def _find_ref(line: str, ref: str) -> int:
    """Where ``ref`` stands on ``line`` as a whole ref, or -1."""
    start = line.find(ref)
    while start >= 0:
        end = start + len(ref)
        if ref.startswith("https://"):
            whole = not _URL_CHARS.match(line, end).group(0).rstrip(".,;:!?*")
        else:
            whole = not _EXTENDS_BEFORE.match(line[start - 1:start]) and not (
                _EXTENDS_AFTER.match(line, end))
        if whole:
            return start
        start = line.find(ref, start + 1)
    return -1


@dataclass
class FixPlan:
    root: Path
    files: dict[str, FilePlan] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def file(self, display: str) -> FilePlan:
        if display not in self.files:
            self.files[display] = FilePlan.read(self.root / display)
        return self.files[display]

    def diff(self) -> str:
        return "".join(plan.diff(name) for name, plan in sorted(self.files.items()) if plan.edits)

    def write(self) -> list[str]:
        written = []
        for name, plan in sorted(self.files.items()):
            if plan.edits:
                temporary = plan.path.with_name(plan.path.name + ".annotate-fix")
                temporary.write_bytes(plan.text.encode("utf-8"))
                shutil.copymode(plan.path, temporary)
                temporary.replace(plan.path)
                written.append(name)
        return written


def plan_fixes(root: Path, report: CheckReport, bump: Iterable[str] = ()) -> FixPlan:
    plan = FixPlan(root)
    bumps = {wanted: _claim_results(report, wanted) for wanted in bump}
    bumped = {result for results in bumps.values() for result in results}
    for result in report.results:
        if result.status is Status.MOVED and result not in bumped:
            _fix_move(plan, result)
    for wanted, results in bumps.items():
        _bump(plan, wanted, results)
    return plan


def _fix_move(plan: FixPlan, result: RefResult) -> None:
    where = f"{result.file}:{result.line}"
    if result.candidates:
        plan.notes.append(f"{where}: left {result.ref} as it is: the move is ambiguous "
                          f"({', '.join(result.candidates)})")
        return
    if result.changes:
        plan.notes.append(f"{where}: left {result.ref} as it is: {_moved_and_changed(result)}")
        return
    _rewrite_at_target(plan, result)


def _moved_and_changed(result: RefResult) -> str:
    changes = ", ".join(result.changes)
    if result.ref.startswith("https://"):
        return (f"it moved to {result.new_url} and changed ({changes}); re-read the text "
                "that links it, then write the new permalink")
    return (f"it moved to {result.new_ref} and changed ({changes}); re-read claim "
            f"'{result.claim}', then 'annotate fix --bump {result.article}#{result.claim}' "
            "moves it")


def _rewrite_at_target(plan: FixPlan, result: RefResult) -> None:
    """Write the ref as its symbol's place at the target: a move's new ref, or the
    permalink at the target."""
    where = f"{result.file}:{result.line}"
    replacement = _new_permalink(result) if result.ref.startswith("https://") else result.new_ref
    if not replacement:
        plan.notes.append(f"{where}: left {result.ref} as it is: no new ref to write")
        return
    if not plan.file(result.file).replace_on_line(result.line, result.ref, replacement):
        plan.notes.append(f"{where}: {result.ref} is not written on that line; left as it is")


def _new_permalink(result: RefResult) -> str | None:
    """The permalink at the target: the lines the author linked, moved with their symbol (all
    of the symbol when its length changed); no anchor stays none, and one line is ``#Lx``."""
    if not result.new_url:
        return None
    base = result.new_url.split("#", 1)[0]
    written, old, new = (_anchor(url) for url in (result.ref, result.old_url, result.new_url))
    if written is None or new is None:
        return base if written is None else result.new_url
    start, end = new
    if old is not None and old[1] - old[0] == end - start:
        start, end = written[0] + start - old[0], written[1] + start - old[0]
    return f"{base}#L{start}" if start == end else f"{base}#L{start}-L{end}"


def _anchor(url: str | None) -> tuple[int, int] | None:
    match = _ANCHOR.search(url or "")
    if match is None:
        return None
    start = int(match.group(1))
    return start, int(match.group(2) or start)


_ANCHOR = re.compile(r"#L([0-9]+)(?:-L?([0-9]+))?\Z")
_ALIAS_AFTER_KEY = re.compile(r"[ \t]*:[ \t]*(\*[^\s,\[\]{}]+)")


_BUMP_BLOCKERS = {
    Status.REMOVED: "edit or drop that ref first",
    Status.BROKEN: "mend that ref first",
    Status.QUOTE_MISSING: "update its quote first",
    Status.RELATION_MISSING: "update its uses: first",
    Status.UNINDEXED: "index that version first",
}


def _bump(plan: FixPlan, wanted: str, results: list[RefResult]) -> None:
    first = results[0]
    if first.file.endswith(".md") and first.ref.startswith("https://") and (
        first.claim.startswith("link-")
    ):
        raise FixError(f"claim '{wanted}' comes from a Markdown permalink",
                       hint="bump it by editing the permalink's version")
    target = next((result.target for result in results if result.target), "its target")
    for result in results:
        _refuse_unless_it_holds_at_the_target(wanted, target, result)
    for result in results:
        if result.status is Status.MOVED or result.ref.startswith("https://"):
            _rewrite_at_target(plan, result)  # a permalink pins its own version
        else:
            _repin_written_version(plan, result)
    _set_claim_pin(plan.file(first.file), first.claim, target)


def _refuse_unless_it_holds_at_the_target(wanted: str, target: str, result: RefResult) -> None:
    hint = _BUMP_BLOCKERS.get(result.status)
    if result.status is Status.MOVED and result.candidates:
        hint = "choose one of its candidates and write it first"
    if hint is not None:
        raise FixError(f"claim '{wanted}' cannot move to {target}: "
                       f"{result.ref} is {result.status.value} ({result.message})", hint=hint)


def _repin_written_version(plan: FixPlan, result: RefResult) -> None:
    """A ref written with its own pin (``vllm@v1:PATH::QUALNAME``) gets its target's."""
    repo, _, version = (result.resolved or "").partition(":")[0].partition("@")
    pin = f"{repo}@{version}:"
    if version and result.ref.startswith(pin) and result.target:
        new = result.target + ":" + result.ref[len(pin):]
        plan.file(result.file).replace_on_line(result.line, result.ref, new)


def _claim_results(report: CheckReport, wanted: str) -> list[RefResult]:
    article, _, claim_id = wanted.rpartition("#")
    results = [
        r for r in report.results
        if r.claim == claim_id and (not article or r.article == article)
    ]
    if not results:
        raise FixError(f"no claim '{wanted}'", hint="write ARTICLE#ID or the claim's id")
    if len({r.article for r in results}) > 1:
        articles = ", ".join(sorted({r.article for r in results}))
        raise FixError(f"claim id '{claim_id}' is in several articles: {articles}",
                       hint=f"write ARTICLE#{claim_id}")
    return results


def _set_claim_pin(file_plan: FilePlan, claim_id: str, target: str) -> None:
    """Write the claim's ``at:``: its own value replaced (quotes, comments and spaces stay),
    or a new ``at: TARGET`` after its ``id``, in the claim's style (block or flow)."""
    claim = _claim_node(file_plan, claim_id)
    keys = {key.value: (key, value) for key, value in claim.value
            if isinstance(key, yaml.ScalarNode)}
    if "at" in keys:
        _replace_pin(file_plan, claim_id, *keys["at"], target)
    else:
        _insert_pin(file_plan, claim.flow_style, *keys["id"], target)


def _claim_node(file_plan: FilePlan, claim_id: str) -> yaml.MappingNode:
    """The claim's mapping, composed from the file's current text: a YAML annotation file,
    or a Markdown article's front matter (the marks keep the file's lines and columns)."""
    text = file_plan.text
    for source in (text, front_matter_yaml(text)):
        for claim in _claim_nodes(source):
            id_node = _value_of(claim, "id")
            if isinstance(id_node, yaml.ScalarNode) and id_node.value == claim_id:
                return claim
    raise FixError(f"cannot find claim '{claim_id}' in {file_plan.path}",
                   hint="bump this claim by editing its 'at:' by hand")


def _claim_nodes(source: str | None) -> list[yaml.MappingNode]:
    if source is None:
        return []
    try:
        root = yaml.compose(source, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, RecursionError):  # not this file's YAML: its front matter is
        return []
    claims = _value_of(root, "claims")
    if not isinstance(claims, yaml.SequenceNode):
        return []
    return [item for item in claims.value if isinstance(item, yaml.MappingNode)]


def _value_of(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    return next((value for name, value in node.value
                 if isinstance(name, yaml.ScalarNode) and name.value == key), None)


def _replace_pin(
    file_plan: FilePlan, claim_id: str, key: yaml.Node, value: yaml.Node, target: str
) -> None:
    start, end = value.start_mark, value.end_mark
    if start.index < key.end_mark.index:  # an alias: the node's marks are its anchor's
        alias = _ALIAS_AFTER_KEY.match(file_plan.lines[key.end_mark.line], key.end_mark.column)
        if alias is not None:
            file_plan.replace_columns(key.end_mark.line, *alias.span(1), target)
            return
    if not isinstance(value, yaml.ScalarNode) or start.index < key.end_mark.index or (
            start.line != end.line):
        raise FixError(f"claim '{claim_id}' has an 'at:' that fix cannot rewrite "
                       "(a value over several lines)",
                       hint="bump this claim by editing its 'at:' by hand")
    first, last = start.column, end.column
    if value.style in ("'", '"'):
        first, last = first + 1, last - 1
    elif first == last:  # "at:" with no value
        target = " " + target
    file_plan.replace_columns(start.line, first, last, target)


def _insert_pin(
    file_plan: FilePlan, flow: bool, key: yaml.Node, value: yaml.Node, target: str
) -> None:
    end = value.end_mark
    if flow:
        file_plan.replace_columns(end.line, end.column, end.column, f", at: {target}")
        return
    lines = file_plan.lines
    found = _ENDING.search(lines[end.line])
    ending = found.group(0) if found else "\n"
    if not found:
        lines[end.line] += ending
    lines.insert(end.line + 1, " " * key.start_mark.column + f"at: {target}{ending}")
    file_plan.edits += 1
