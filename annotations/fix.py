"""``annotate fix``: rewrite refs of moved symbols, and move claims' pins forward.

Edits touch only the text they replace: every other byte of a file (comments, order,
quoting, line endings) stays as it was.

* A ``moved`` ref whose match is unambiguous (no other candidates) is rewritten to the
  symbol's new place at the target version: a ref as ``REPO@TARGET:PATH::QUALNAME`` in
  annotation files, a permalink as the new permalink in Markdown articles.
* ``--bump CLAIM`` sets the claim's ``at:`` to the target version, after its author
  re-checked it (``CLAIM`` is ``ARTICLE#ID`` or just ``ID`` when that is unique).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from annotations.errors import AnnotationError
from annotations.results import CheckReport, RefResult, Status

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


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
        current = self.lines[line - 1]
        if old not in current:
            return False
        self.lines[line - 1] = current.replace(old, new, 1)
        self.edits += 1
        return True

    def diff(self, display: str) -> str:
        return "".join(
            difflib.unified_diff(
                _LINE.findall(self.original), self.lines,
                fromfile=f"a/{display}", tofile=f"b/{display}",
            )
        )


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
                temporary.replace(plan.path)
                written.append(name)
        return written


def plan_fixes(root: Path, report: CheckReport, bump: Iterable[str] = ()) -> FixPlan:
    plan = FixPlan(root)
    for result in report.results:
        if result.status is Status.MOVED:
            _fix_move(plan, result)
    for claim in bump:
        _bump(plan, report, claim)
    return plan


def _fix_move(plan: FixPlan, result: RefResult) -> None:
    where = f"{result.file}:{result.line}"
    if result.candidates:
        plan.notes.append(f"{where}: left {result.ref} as it is: the move is ambiguous "
                          f"({', '.join(result.candidates)})")
        return
    replacement = result.new_url if result.ref.startswith("https://") else result.new_ref
    if not replacement:
        return
    if not plan.file(result.file).replace_on_line(result.line, result.ref, replacement):
        plan.notes.append(f"{where}: {result.ref} is not written on that line; left as it is")


_AT_LINE = re.compile(r"^(?P<indent>\s*)at:\s*(?P<value>\S.*?)\s*(?P<end>\r?\n)?$")
_ID_LINE = re.compile(r"^(?P<lead>\s*-\s+)id:\s*['\"]?(?P<id>[a-z0-9][a-z0-9-]*)['\"]?\s*$")


def _bump(plan: FixPlan, report: CheckReport, wanted: str) -> None:
    results = _claim_results(report, wanted)
    target = next((r.target for r in results if r.target), None)
    if target is None:
        raise FixError(f"claim '{wanted}' has no indexed target version to bump to",
                       hint="run 'annotate index' for the target version first")
    first = results[0]
    if first.file.endswith(".md"):
        raise FixError(f"claim '{wanted}' comes from a Markdown permalink",
                       hint="bump it by editing the permalink's version")
    file_plan = plan.file(first.file)
    start = _claim_start(file_plan, first.claim)
    _set_claim_pin(file_plan, start, target)


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


def _claim_start(file_plan: FilePlan, claim_id: str) -> int:
    for index, line in enumerate(file_plan.lines):
        match = _ID_LINE.match(line)
        if match and match.group("id") == claim_id:
            return index
    raise FixError(f"cannot find 'id: {claim_id}' in {file_plan.path}",
                   hint="bump this claim by editing its 'at:' by hand")


def _set_claim_pin(file_plan: FilePlan, start: int, target: str) -> None:
    lines = file_plan.lines
    lead = _ID_LINE.match(lines[start]).group("lead")
    indent = " " * len(lead)
    index = start + 1
    while index < len(lines) and _inside_claim(lines[index], indent):
        match = _AT_LINE.match(lines[index])
        if match and match.group("indent") == indent:
            lines[index] = f"{indent}at: {target}{match.group('end') or ''}"
            file_plan.edits += 1
            return
        index += 1
    ending = "\r\n" if lines[start].endswith("\r\n") else "\n"
    lines.insert(start + 1, f"{indent}at: {target}{ending}")
    file_plan.edits += 1


def _inside_claim(line: str, indent: str) -> bool:
    return not line.strip() or line.startswith(indent) or line.lstrip().startswith("#")
