"""Match a symbol of version A to version B: the one engine behind check, diff and history.

For a symbol ``old`` of A (``Matcher.match``):

1. **Unchanged file.** If ``old.path`` has the same blob at B, ``old`` is ``unchanged``
   without comparing anything.
2. **Same place.** If B's file at ``old.path`` defines ``old.qualname``, the two are
   compared (``changes.classify``): ``unchanged``, ``cosmetic`` or ``changed`` with the
   kinds of change. A qualname defined several times in a file (a property's getter and
   setter) is paired in order of appearance. When the kind group differs (a class whose
   name now holds an alias ``X = XUpstream`` or a factory function), ``old`` is first
   searched for as in 3; if it did not move, an alias ``X = Y`` whose ``Y`` B newly
   defines in ``old``'s kind group (in that file or imported there) is where it went,
   when ``Y`` scores at least ``CANDIDATE_FLOOR``; else it is ``changed`` at its place.
3. **Moved or renamed** (verdict ``moved``; ``content_changed`` and ``changes`` say how
   the content differs). Only *unmatched* symbols of B are candidates: those whose
   (path, qualname, occurrence) does not exist in A, of the same kind group (class;
   function or method; attribute). So a module that merely re-exports the old name (an
   import is not a definition) does not keep ``old`` in place. In order:

   a. *Parent.* A member (``Cls.meth``, ``f.<locals>.g``) whose parent moved follows it:
      it is looked up under the parent's new location (and the parent's alternatives);
      when only an alternative of another name holds it (a class split into a base and
      a renamed subclass, tied with another file's class), it is searched for as in b, c.
      When the member it finds there does not resemble it (scores under
      ``MOVE_THRESHOLD``: a stub that raises ``NotImplementedError``), a new method of
      its name in a subclass of the parent's new place that is a move target, succeeds
      no method of its own qualname and scores better by more than ``AMBIGUITY_MARGIN``
      is its match (`Matcher._pushed_down`).
   b. *Fingerprints.* Candidates with ``old``'s exact, else normalized, fingerprint.
   c. *Similarity.* The best-scoring candidate, if its score reaches ``MOVE_THRESHOLD``
      (``RENAME_MOVE_THRESHOLD`` if it is both renamed and in another file,
      ``SAME_CLASS_MOVE_THRESHOLD`` if it is a member renamed in its own class; a renamed
      candidate only if ``old``'s body has ``MIN_RENAME_TOKENS`` word tokens; a name that
      gained or lost leading underscores is the same name here: ``prefill`` made
      ``_prefill``). A module-level function of a file B no longer has, found so renamed
      in another file, is removed instead when every other class and function of its
      file was: a file dropped whole leaves no successor (`Matcher._may_defect_alone`).

   d. *Methods.* A class that b and c leave removed follows its methods: when at least
      ``MIN_METHODS_FOLLOWED`` of them, and more than half of those that moved, moved (as
      orphans) to one class whose name A does not define, and that class scores as a move
      target (``KimiDeltaAttention`` -> ``KimiGatedDeltaNetAttention``, renamed in another
      file with other bases: blocked on nothing), or, when ``MIN_METHODS_OUTWEIGH`` of
      them went there and none elsewhere (or more than half, when its file now defines
      its name as a function or an attribute: ``def FusedMoE(...)``, a factory, took
      the place of the class whose methods went to ``RoutedExperts``), scores at least
      ``CANDIDATE_FLOOR`` (``GPUTransferModule`` -> ``LMCacheDrivenTransferModule``).
      Fewer methods, or a
      class that scores under the bar, do when every method that moved went there, a
      short method of its name and code is there too, and the class keeps most of its name
      (`Matcher._followed_with_seconds`: ``DeepseekV4FlashMLASparseBackend`` ->
      ``DeepseekV4FlashMLABackend``).

   Candidates are scored (b and c alike) by::

       score = W_BODY * body + W_NAME * name + W_SCOPE * scope + W_PARAMS * params

   with every term in [0, 1]:

   * ``body``: weighted Jaccard similarity of the word-token multisets (identifiers,
     keywords, numbers) of the two bodies (the code after the header; an attribute's
     value); 1 for identical fingerprints.
   * ``name``: Dice coefficient of the character bigrams of the unqualified names.
   * ``scope``: half for the parent (same enclosing qualname, or the parent's match
     target), half for the path (1 same file, 0.6 same file name in another directory
     plus 0.05 for each of the last three folders the two paths share, 0.4 same
     directory, 0.2 same top-level package, else 0).
   * ``params``: Jaccard similarity of the word-token sets of the parameter lists and
     return annotations (functions), of the bases (classes), of the values (attributes).

   To keep a whole-version diff fast, similarity only compares *blocked* candidates: the
   same name, a name that starts with ``old``'s and a ``_`` or differs in leading
   underscores (``mhc_pre`` -> ``mhc_pre_tilelang``, ``_stateless_init``), a name that
   ends with ``old``'s after a ``_`` or a capital (``AdapterDescriptor`` ->
   ``L2AdapterDescriptor``), or the same
   non-trivial parameter list / bases (buckets of at most ``BLOCK_CAP``: ``forward`` or
   ``logger`` are everywhere), the same file, or members of the parent's target; a pair
   whose sizes alone cap its score below ``CANDIDATE_FLOOR`` is not tokenized.

   The candidate named like ``old`` and of its kind gets ``UNIQUE_NAME_BONUS`` when that
   name belongs to one unmatched symbol on each side (not a dunder): a class moved *and*
   rewritten keeps its name (a function does not become a method by its name alone).

   A best candidate whose qualname A defined at places that B no longer has is presumed
   to succeed that symbol, not ``old``, when B defines the qualname no more often than A
   did and a symbol that left scores as a move to it (`Matcher._taken`): ``old`` is then
   removed, with it among the candidates (a deleted model's ``forward`` and
   ``MiMoV2FlashForCausalLM.forward``, whose file was merged into another). ``old`` of
   that very qualname is not held back.

   A best candidate of another name in another file, for a module-level class or
   function of a file B no longer has, is a look-alike, not where ``old`` went, when a
   symbol that B keeps at its place, of the candidate's kind group and bases (classes) or
   parameter list (functions), has code as close to the candidate's as ``old``'s
   (`Matcher._kept_look_alike`: the deleted Tarsier's input schema is the new OpenVLA's no
   more than the kept PaliGemma's): ``old`` is then removed, with it among the candidates.

   Of candidates tied within ``AMBIGUITY_MARGIN``, a module-level function or attribute
   whose file B keeps takes the one that file now imports its name from, unambiguously
   (`Matcher._imported_from`: ``describe.py`` imports ``normalize_url`` from
   ``cli/http.py``, not from a command's copy of it).

   Candidates within ``AMBIGUITY_MARGIN`` of the best are listed in ``candidates``, and so
   is every other new copy of a class that moved, however it scores (a class split into
   per-platform copies: the copy a reader runs need not be the closest text), and every
   other class of a new name beside the best, a rename, that derives from a new base of the
   best's file, when it scores at least ``CANDIDATE_FLOOR`` (a class split into a base and
   renamed subclasses, `Matcher._split_siblings`). More than
   ``MAX_TIES`` ties (boilerplate like ``logger = init_logger(__name__)``) are no evidence
   of a move: ``removed``. A member that left its class (removed, or kept or moved
   without it) moves only to an unambiguous candidate (otherwise it is boilerplate such
   as ``get_hf_processor`` of a deleted model, or ``supports_expert_map`` dropped from a
   dozen kept classes).

   When its parent lives on, a member that left it moves first into the nearest class
   among the parent's bases (and theirs: each the class its subclass's file defines or
   imports under that name, or a class nested in one, or in the class body around the
   subclass, `Matcher._classes_named_by`) that newly defines its name, however
   the two score (`Matcher._pulled_up`: ``build_tok_params`` of six pooling requests,
   generalized in the mixins they now inherit). Otherwise it moves to a method only if
   no rival scores about as well against that method (`Matcher._contested`): a rival
   has the method's name, left its place in another class, and has no new place of
   its own qualname (the stock ``load_weights`` dropped from Olmo, OPT and Phi is not a
   new model's). A function is not contested (helpers of several classes made one). Nor
   does it move to a method of a class that neither inherits its parent's place nor is
   among its bases when a class B keeps has a method of that name whose code is as close
   (`Matcher._left_for_a_copy`: ``FusedMoE.ep_rank`` is not the new
   ``FusedMoEWithLoRA.ep_rank`` while ``ExpertMapManager`` keeps the same property).

   A member of a removed class moves only when its body has ``MIN_RENAME_TOKENS`` word
   tokens outside strings and comments (a docstring over ``return`` says nothing of
   where it went); a method that alone of its class moved, changed, to a class is
   removed when a method of another removed class contests it there
   (`Matcher._drop_look_alikes`: the ``forward`` of four deleted models and a new
   model's); and any method of a removed class that moved, changed or not, alone or
   with others of its class, is removed when a method of its name that B keeps in
   another class has code as close to the target's (`Matcher._kept_twin`: a deleted
   model's stock ``load_weights``, ``Qwen2ForCausalLM``'s and a new model's; the
   ``forward`` and ``embed_multimodal`` of a deleted vision model, both like a new
   model's and a kept one's). A class
   attribute only ever follows its class (same name, in the
   class's match; or, when the class lives on, into a base as above, down into the one
   subclass that newly declares it as it was (`Matcher._pushed_down_field`), or to the
   one new attribute of the class that has its value, when that value has
   ``MIN_RENAME_TOKENS`` word tokens: `Matcher._attribute_kept`): a bare field ``x:
   torch.Tensor`` says too little to be tracked elsewhere.

   e. *File.* A module attribute that no one candidate claims (``logger =
      init_logger(__name__)`` is in hundreds of files), or whose one candidate in another
      file another module attribute of its name that left its place matches as well (two
      deleted files' ``logger = logging.getLogger(__name__)``, one new file's), moves with
      its file, to the file where most of the file's classes and functions went, when that
      file newly defines it, with its copies in the other files that its moves list as
      often (a file split into per-platform copies); otherwise it is removed
      (`Matcher._with_its_file`).

4. Otherwise **removed**, with up to ``MAX_CLOSEST`` candidates scoring at least
   ``CANDIDATE_FLOOR`` in ``candidates``, among the unmatched symbols and those beside it
   that B kept (a method merged into one that stayed), of its name or whose bodies share
   at least ``CANDIDATE_MIN_BODY`` (a wrapper does not succeed one whose bases it shares).
   A removed class is offered the classes its moved methods went to, and each of its
   removed methods their method of its name, which blocking may not compare (a class
   merged into one that took another's place: ``DeepseekV4MultiHeadLatentAttentionWrapper``
   and its ``__init__``, one of hundreds of new ones, are ``DeepseekV4Attention``'s now).
   Apart from its match, `Matcher.where_code_went` tells where removed symbols' code went,
   by its distinctive lines (`annotations.code_lines`): a hint, never a move.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import re
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache

from annotations import comparison
from annotations.changes import (
    Change,
    ChangeKind,
    KindGroup,
    Verdict,
    change_from_data,
    change_to_data,
    classify,
    kind_group,
)
from annotations.code_lines import (
    MAX_PLACES,
    MIN_HEADER_LINES,
    MIN_LINES_APART,
    LinePlaces,
    evidence_bar,
    normalized_lines,
)
from annotations.forking import balanced, fork_map
from annotations.modules import VersionModules
from db import diff_cache
from db import match_queries as mq
from db.database import Database
from db.errors import MissingIndex
from db.queries import file_blob, require_version, symbols_named
from indexer.literals import blank_literals, universal_newlines

__all__ = [
    "AMBIGUITY_MARGIN", "BLOCK_CAP", "CACHED_CONTENT_BYTES", "CANDIDATE_FLOOR",
    "CANDIDATE_MIN_BODY", "MAX_CLOSEST",
    "MAX_TIES", "MIN_METHODS_FOLLOWED", "MIN_METHODS_OUTWEIGH", "SECONDED_NAME_SIMILARITY",
    "MIN_RENAME_TOKENS", "MOVE_THRESHOLD", "PARALLEL_MIN_SYMBOLS", "RENAME_MOVE_THRESHOLD",
    "SAME_CLASS_MOVE_THRESHOLD",
    "UNIQUE_NAME_BONUS",
    "W_BODY", "W_NAME", "W_PARAMS", "W_SCOPE",
    "HistoryEvent", "HistoryStep", "Match", "Matcher", "SourceStore", "SymbolSnapshot",
    "VersionDiff", "diff_versions", "find_symbol", "history", "match_symbol",
    "package_of",
]

PARALLEL_MIN_SYMBOLS = 2000
"""Fewer symbols to match than this: a diff does not fork (not worth a process)."""
MOVE_THRESHOLD = 0.6
"""Lowest score of a similarity match to call a symbol moved rather than removed."""
AMBIGUITY_MARGIN = 0.05
"""Candidates scoring within this of the best are reported alongside it."""
RENAME_MOVE_THRESHOLD = 0.65
"""Lowest score for a candidate that is both renamed and in another file."""
SAME_CLASS_MOVE_THRESHOLD = 0.55
"""Lowest score for a member renamed in its own class (``postprocess`` ->
``postprocess_sampled``): the class is the same, so less of the rest need be."""
MIN_RENAME_TOKENS = 8
"""A renamed candidate needs ``old`` to have at least this many body word tokens:
``return True`` resembles every other ``return True``."""
MAX_TIES = 5
"""More candidates than this within the margin: the evidence is boilerplate, not a move."""
CANDIDATE_FLOOR = 0.3
"""Lowest score worth listing as a close candidate of a removed symbol."""
CANDIDATE_MIN_BODY = 0.15
"""Lowest body similarity of a removed symbol's listed candidate not of its name: place and
parameters alone (a wrapper's bases) make no successor."""
MAX_CLOSEST = 3
"""How many close candidates a removed symbol lists."""
BLOCK_CAP = 50
"""Name or parameter-list buckets larger than this (``forward``, ``__init__``, ``logger``)
are too common to block on."""
W_BODY, W_NAME, W_SCOPE, W_PARAMS = 0.55, 0.15, 0.15, 0.15
MIN_METHODS_FOLLOWED = 2
"""Methods of a removed class that need to have moved to one new class (and more than
half of those that moved anywhere) for the class to follow them there."""
MIN_METHODS_OUTWEIGH = 4
"""Methods of a removed class that, when every one of its methods that moved went to one
new class, make it follow them there however low the class scores (at least
``CANDIDATE_FLOOR``): ``GPUTransferModule``, whose seven methods went to
``LMCacheDrivenTransferModule``, a class renamed with a new base in another file. Of a
class whose name its file now gives a function or an attribute (a factory, an alias),
most of those that moved will do (``FusedMoE``: 15 of 19, to ``RoutedExperts``)."""
SECONDED_NAME_SIMILARITY = 0.8
"""Lowest name similarity (``_name_similarity``) of a removed class and the class its
moved methods went to, for the class to follow them there on the word of its short
methods (`Matcher._followed_with_seconds`): a deleted model's boilerplate is in every
new model."""
UNIQUE_NAME_BONUS = 0.2
"""Added (score capped at 1) when the only unmatched symbol of a name in A meets the only
one of that name in B: a rename is unlikely, a rewrite while moving is not."""
CACHED_CONTENT_BYTES = 64 * 1024 * 1024
"""The decompressed file contents a `SourceStore` keeps, in bytes: all that a diff of vLLM
reads (v0.20.0 -> v0.25.0: 2,676 files, 48 MB), each decompressed once. Bounded by count
(4,096 files), a diff of large files (generated tables, vendored code) kept them all."""

_SIZE_SLACK = 1.25
_WORD = re.compile(r"\w+")
_DOTTED_NAME = re.compile(r"\w+(?:\s*\.\s*\w+)*")
_TRIVIAL_PARAMETERS = frozenset({"", "()", "(self)", "(cls)", "(self)->None"})
_LOCALS = ".<locals>"
_Key = tuple[str, str, int]  # (path, qualname, occurrence)
_SIGNATURE = mq.MATCH_COLUMNS.index("signature")
_PATH, _BLOB, _QUALNAME, _NAME, _KIND, _START_LINE, _END_LINE, _START_BYTE, _EXACT = (
    mq.MATCH_COLUMNS.index(column) for column in (
        "path", "blob_id", "qualname", "name", "kind", "start_line", "end_line", "start_byte",
        "exact")
)
_NAME_PART = re.compile(r"(?<=_)(?=[^_])|(?<=[a-z0-9])(?=[A-Z])")
_DEF_NAME = re.compile(r"(?:^|\n)[ \t]*(?:async\s+)?(?:def|class)\s+\w+")


# --- snapshots ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SymbolSnapshot:
    """One definition at one version, as indexed; ``source`` is read lazily from its blob.

    ``occurrence`` counts earlier definitions of the same qualname in the file (0 for
    the first; a property setter is 1).
    """

    repo: str
    version: str
    path: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    exact: str
    normalized: str
    shape: str | None
    blob_id: str
    start_byte: int
    end_byte: int
    occurrence: int = 0
    _store: SourceStore | None = field(default=None, repr=False, compare=False)
    header_key: str | None = field(default=None, repr=False)
    body_key: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def parent(self) -> str:
        """The enclosing class or function's qualname ('' at module level)."""
        return _parent(self.qualname)

    @property
    def ref(self) -> str:
        return f"{self.path}::{self.qualname}"

    @property
    def source_bytes(self) -> bytes:
        return self._require_store().content(self.blob_id)[self.start_byte:self.end_byte]

    @property
    def source(self) -> str:
        return self.source_bytes.decode("utf-8", "replace")

    def members(self) -> dict[str, tuple[SymbolSnapshot, ...]]:
        """Direct members of a class by name (``{}`` for other kinds)."""
        if self.kind != "class":
            return {}
        return self._require_store().members(self)

    def at_version(self, version: str) -> SymbolSnapshot:
        """The same definition (same blob) seen at another version."""
        return dataclasses.replace(self, version=version)

    def _require_store(self) -> SourceStore:
        if self._store is None:
            raise ValueError(f"{self.ref} was built without a SourceStore")
        return self._store


def _snapshot(
    values: tuple, repo: str, version: str, store: SourceStore | None, occurrence: int
) -> SymbolSnapshot:
    (path, blob_id, qualname, _name, kind, start_line, end_line, start_byte, end_byte,
     signature, exact, normalized, shape, header_key, body_key) = values
    return SymbolSnapshot(
        repo, version, path, qualname, kind, start_line, end_line, signature, exact,
        normalized, shape, blob_id, start_byte, end_byte, occurrence, store, header_key,
        body_key,
    )


class SourceStore:
    """Blob contents and blob symbol rows, loaded on demand and cached: the contents up to
    ``max_bytes`` in all (`CACHED_CONTENT_BYTES`), the oldest forgotten first."""

    def __init__(self, database: Database, max_bytes: int = CACHED_CONTENT_BYTES) -> None:
        self.database = database
        self._max_bytes = max_bytes
        self._content_bytes = 0
        self._contents: dict[str, bytes] = {}
        self._rows: dict[str, list[tuple]] = {}
        self._children: dict[str, dict[str, list[tuple]]] = {}
        self._members: dict[tuple, dict[str, tuple[SymbolSnapshot, ...]]] = {}

    def clear(self) -> None:
        """Forget every cached blob, row and member. Member snapshots point back at the
        store: clearing breaks that cycle, so a finished diff is freed at once instead of
        by a garbage collection of every object it made."""
        self._contents.clear()
        self._content_bytes = 0
        self._rows.clear()
        self._children.clear()
        self._members.clear()

    def content(self, blob_id: str) -> bytes:
        found = self._contents.get(blob_id)
        if found is None:
            found = universal_newlines(mq.blob_contents(self.database, [blob_id]).get(blob_id, b""))
            while len(found) <= self._max_bytes < self._content_bytes + len(found):
                self._content_bytes -= len(self._contents.pop(next(iter(self._contents))))
            self._keep(blob_id, found)
        return found

    def contents(self, blob_ids: Iterable[str]) -> dict[str, bytes]:
        """The content of each blob: cached ones as they are, the others in bulk queries,
        decompressed once and cached while there is room (a large batch evicts nothing)."""
        wanted = list(dict.fromkeys(blob_ids))
        found = {blob_id: self._contents[blob_id] for blob_id in wanted
                 if blob_id in self._contents}
        missing = [blob_id for blob_id in wanted if blob_id not in found]
        loaded = mq.blob_contents(self.database, missing) if missing else {}
        for blob_id in missing:
            found[blob_id] = universal_newlines(loaded.get(blob_id, b""))
            self._keep(blob_id, found[blob_id])
        return found

    def _keep(self, blob_id: str, content: bytes) -> None:
        """Cache ``content`` if it fits in the room left."""
        if self._content_bytes + len(content) <= self._max_bytes:
            self._contents[blob_id] = content
            self._content_bytes += len(content)

    def blob_rows(self, blob_id: str) -> list[tuple]:
        """A blob's symbol rows (``MATCH_COLUMNS`` tuples), in source order."""
        if blob_id not in self._rows:
            self._rows[blob_id] = mq.blob_symbol_rows(self.database, blob_id)
        return self._rows[blob_id]

    def add_blob_rows(self, blob_id: str, rows: Iterable[tuple]) -> None:
        """Remember a blob's symbol rows (``MATCH_COLUMNS`` tuples) for ``members``."""
        self._rows.setdefault(blob_id, list(rows))

    def members(self, symbol: SymbolSnapshot) -> dict[str, tuple[SymbolSnapshot, ...]]:
        key = (symbol.repo, symbol.version, symbol.path, symbol.blob_id, symbol.qualname)
        found = self._members.get(key)
        if found is None:
            found = self._load_members(symbol)
            self._members[key] = found
        return found

    def _load_members(self, symbol: SymbolSnapshot) -> dict[str, tuple[SymbolSnapshot, ...]]:
        grouped: dict[str, list[SymbolSnapshot]] = defaultdict(list)
        prefix = symbol.qualname + "."
        for row in self._children_of(symbol.blob_id).get(symbol.qualname, ()):
            if not row[_QUALNAME].startswith(prefix):
                continue  # a function's locals share the parent key
            name = row[_QUALNAME][len(prefix):]
            values = (symbol.path, *row[1:])
            grouped[name].append(
                _snapshot(values, symbol.repo, symbol.version, self, len(grouped[name]))
            )
        return {name: tuple(items) for name, items in grouped.items()}

    def _children_of(self, blob_id: str) -> dict[str, list[tuple]]:
        children = self._children.get(blob_id)
        if children is None:
            if blob_id not in self._rows:
                self._rows[blob_id] = mq.blob_symbol_rows(self.database, blob_id)
            children = defaultdict(list)
            for row in self._rows[blob_id]:
                children[_parent(row[_QUALNAME])].append(row)
            self._children[blob_id] = children
        return children


def _match_key(symbol: SymbolSnapshot) -> tuple[str, str, int, str]:
    return (symbol.path, symbol.qualname, symbol.occurrence, symbol.blob_id)


def _parent(qualname: str) -> str:
    head = qualname.rpartition(".")[0]
    return head[: -len(_LOCALS)] if head.endswith(_LOCALS) else head


# --- results --------------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    """What became of ``old`` at the other version.

    ``new`` is None when removed. ``content`` is how the content compares (unchanged,
    cosmetic or changed; None when removed), ``content_changed`` whether it changed.
    ``candidates`` lists the other close candidates of an ambiguous move, or the closest
    ones of a removed symbol. ``via`` says how the match was found: blob, same-place,
    parent, exact, normalized, similarity, methods (a class that followed its methods),
    none, subclass (a member of a class that moved, found in a subclass of its class's
    new place), alias (what the alias left at its place names).
    """

    old: SymbolSnapshot
    verdict: Verdict
    new: SymbolSnapshot | None
    changes: tuple[Change, ...] = ()
    content: Verdict | None = None
    candidates: tuple[SymbolSnapshot, ...] = ()
    score: float = 1.0
    via: str = "same-place"

    @property
    def content_changed(self) -> bool:
        return self.content is Verdict.CHANGED

    @property
    def kinds(self) -> tuple[ChangeKind, ...]:
        return tuple(change.kind for change in self.changes)

    @property
    def ambiguous(self) -> bool:
        return self.verdict is Verdict.MOVED and bool(self.candidates)

    @property
    def moved_to(self) -> SymbolSnapshot | None:
        """``new`` when ``old`` moved there, else None."""
        return self.new if self.verdict is Verdict.MOVED else None

    def towards(self, new: SymbolSnapshot) -> Match:
        """This match, led to ``new`` instead (the copy a history follows when a symbol
        was split in several close copies): the others become the candidates."""
        if new == self.new:
            return self
        others = tuple(c for c in (self.new, *self.candidates) if c is not None and c != new)
        content, changes = classify(self.old, new)
        moved = (new.path, new.qualname) != (self.old.path, self.old.qualname)
        return dataclasses.replace(
            self, verdict=Verdict.MOVED if moved else content, new=new, changes=changes,
            content=content, candidates=others if moved else (),
        )

    def explain(self) -> tuple[str, ...]:
        return tuple(change.explain() for change in self.changes)

    def explain_in_full(self) -> tuple[str, ...]:
        return tuple(change.in_full() for change in self.changes)


@dataclass(frozen=True)
class VersionDiff:
    """Every symbol of A matched against B, plus B's additions.

    ``matches`` holds the A symbols that are not unchanged (unchanged ones are only
    counted). ``added`` are B's unmatched symbols that no move points to (neither as
    ``new`` nor among an ambiguous move's ``candidates``). ``packages`` maps a package
    (``package_of``: the first two path components of the file's directory, e.g.
    ``vllm/v1``) to its counts per verdict and ``added`` (moved and removed symbols count
    under their old path, added ones under their new path).
    """

    repo: str
    version_a: str
    version_b: str
    matches: tuple[Match, ...]
    added: tuple[SymbolSnapshot, ...]
    packages: dict[str, dict[str, int]]

    @property
    def counts(self) -> dict[str, int]:
        total: Counter[str] = Counter()
        for counts in self.packages.values():
            total.update(counts)
        return {name: total.get(name, 0) for name in _COUNT_NAMES}

    def having(self, verdict: Verdict) -> tuple[Match, ...]:
        return tuple(match for match in self.matches if match.verdict is verdict)


_COUNT_NAMES = (*(verdict.value for verdict in Verdict), "added")


class HistoryEvent(str, Enum):
    INTRODUCED = "introduced"
    UNCHANGED = "unchanged"
    COSMETIC = "cosmetic"
    CHANGED = "changed"
    MOVED = "moved"
    REMOVED = "removed"


@dataclass(frozen=True)
class HistoryStep:
    """The symbol at one version. ``symbol`` is None once removed; ``match`` is None at
    ``introduced`` (the first listed version where the symbol is found)."""

    version: str
    event: HistoryEvent
    symbol: SymbolSnapshot | None
    match: Match | None = None
    code_went_to: tuple[SymbolSnapshot, ...] = ()  # once removed: `Matcher.where_code_went`

    @property
    def changes(self) -> tuple[Change, ...]:
        return self.match.changes if self.match else ()


def package_of(path: str) -> str:
    """The first two components of ``path``'s directory (``.`` for a top-level file)."""
    return "/".join(path.split("/")[:-1][:2]) or "."


# --- one version's symbols ------------------------------------------------------------


class _VersionView:
    """The symbol rows of one version, loaded per file on demand or all at once.

    Rows become ``SymbolSnapshot`` objects only when asked for, so the symbols a diff
    finds unchanged by their fingerprint never cost an object.
    """

    def __init__(self, database: Database, key: int, store: SourceStore) -> None:
        label = mq.version_label(database, key)
        if label is None:
            raise MissingIndex(f"no indexed version has id {key}", "run 'annotate index'")
        self.database, self.key, self.store = database, key, store
        self.repo, self.version = label
        self._blobs: dict[str, str] | None = None
        self._blob_cache: dict[str, str | None] = {}
        self._files: dict[str, list[_Key]] = {}
        self._rows: dict[_Key, tuple] = {}
        self._symbols: dict[_Key, SymbolSnapshot] = {}

    def blobs(self) -> dict[str, str]:
        if self._blobs is None:
            self._blobs = mq.file_blobs(self.database, self.key)
        return self._blobs

    def blob(self, path: str) -> str | None:
        if self._blobs is not None:
            return self._blobs.get(path)
        if path not in self._blob_cache:
            self._blob_cache[path] = file_blob(self.database, self.key, path)
        return self._blob_cache[path]

    def has(self, path: str, qualname: str, occurrence: int = 0) -> bool:
        return self._ensure(path) and (path, qualname, occurrence) in self._rows

    def rows(self) -> Mapping[_Key, tuple]:
        """Every row loaded so far, by key (all of them, after ``load``, but skipped files)."""
        return self._rows

    def row(self, key: _Key) -> tuple | None:
        return self._rows.get(key) if self._ensure(key[0]) else None

    def lookup(self, path: str, qualname: str, occurrence: int = 0) -> SymbolSnapshot | None:
        return self.symbol((path, qualname, occurrence)) if self._ensure(path) else None

    def file_symbols(self, path: str) -> list[SymbolSnapshot]:
        if not self._ensure(path):
            return []
        return [self._materialize(key) for key in self._files[path]]

    def holding(self, path: str, line: int) -> list[SymbolSnapshot]:
        """The definitions in ``path`` that hold its line ``line``."""
        if not self._ensure(path):
            return []
        return [self._materialize(key) for key in self._files[path]
                if self._rows[key][_START_LINE] <= line <= self._rows[key][_END_LINE]]

    def symbol(self, key: _Key) -> SymbolSnapshot | None:
        """The snapshot of a loaded row (None if there is no such row)."""
        return self._materialize(key) if key in self._rows else None

    def loaded(self, key: _Key) -> SymbolSnapshot:
        """The snapshot of a row that ``rows`` or ``files`` gave the key of."""
        return self._materialize(key)

    def load(self, skip: Callable[[str, str], bool], unless_same_in: int | None = None
             ) -> list[tuple]:
        """Load every row in one query, but for files where ``skip(path, blob)``.

        Returns the rows of the skipped files (to be counted, not matched), but those of
        the files that version ``unless_same_in`` has with the same blob, not even read.
        """
        skipped: list[tuple] = []
        by_file: dict[str, list[tuple]] = defaultdict(list)
        for row in mq.all_symbol_rows(self.database, self.key, unless_same_in):
            if skip(row[_PATH], row[_BLOB]):
                skipped.append(row)
            else:
                by_file[row[_PATH]].append(row)
        for path, blob in self.blobs().items():
            if path not in self._files and not skip(path, blob):
                self._add_file(path, by_file.get(path, []))
        return skipped

    def files(self) -> list[tuple[str, list[_Key]]]:
        """The files loaded so far with their symbol keys in source order."""
        return list(self._files.items())

    def _ensure(self, path: str) -> bool:
        """Whether ``path`` is a file of this version (its rows loaded, lazily). A path it
        does not have is not loaded as a file: a whole diff after lookups reads every
        loaded file's blob."""
        if path in self._files:
            return True
        if self._blobs is not None and path not in self._blobs:
            return False
        if path in self._blob_cache and self._blob_cache[path] is None:
            return False  # asked before
        rows = mq.file_symbol_rows(self.database, self.key, path)
        if not rows and self.blob(path) is None:
            return False
        self._add_file(path, rows)
        return True

    def _materialize(self, key: _Key) -> SymbolSnapshot:
        found = self._symbols.get(key)
        if found is None:
            found = _snapshot(self._rows[key], self.repo, self.version, self.store, key[2])
            self._symbols[key] = found
        return found

    def _add_file(self, path: str, rows: list[tuple]) -> None:
        seen: dict[str, int] = {}
        keys = []
        for row in rows:
            qualname = row[_QUALNAME]
            occurrence = seen.get(qualname, 0)
            seen[qualname] = occurrence + 1
            key = (path, qualname, occurrence)
            keys.append(key)
            self._rows[key] = row
        if rows:
            self.store.add_blob_rows(rows[0][_BLOB], rows)
        self._files[path] = keys


# --- similarity -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Scored:
    score: float
    symbol: SymbolSnapshot


class _Pool:
    """B's unmatched symbols, indexed for fingerprint lookups and blocking."""

    def __init__(
        self, unmatched: list[SymbolSnapshot], gone: Mapping[tuple[KindGroup, str], list[_Key]]
    ) -> None:
        self.unmatched = unmatched
        self.gone = gone  # A's keys that B does not have, by kind group and name
        self.fingerprints: dict[tuple[str, str], list[SymbolSnapshot]] = defaultdict(list)
        self.blocks: dict[tuple, list[SymbolSnapshot]] = defaultdict(list)
        for symbol in unmatched:
            group = kind_group(symbol.kind)
            self.fingerprints[("exact", symbol.exact)].append(symbol)
            self.fingerprints[("normalized", symbol.normalized)].append(symbol)
            self.blocks[("name", group, symbol.name)].append(symbol)
            self.blocks[("path", group, symbol.path)].append(symbol)
            self.blocks[("parent", symbol.path, symbol.parent)].append(symbol)
            shape_key = _block_key(symbol)
            if shape_key is not None:
                self.blocks[("shape", group, shape_key)].append(symbol)
            for stem in dict.fromkeys([*_stems(symbol.name), *_tails(symbol.name)]):
                self.blocks[("stem", group, stem)].append(symbol)

    def with_fingerprint(self, column: str, value: str) -> list[SymbolSnapshot]:
        return self.fingerprints.get((column, value), [])

    def unique_name(self, old: SymbolSnapshot) -> bool:
        """Whether ``old``'s name is, on each side, that of one unmatched symbol only."""
        key = (kind_group(old.kind), old.name)
        return (
            not old.name.startswith("__")
            and len(self.gone.get(key, ())) == 1
            and len(self.blocks.get(("name", *key), ())) == 1
        )

    def candidates(
        self, old: SymbolSnapshot, hint: tuple[str, str] | None
    ) -> list[SymbolSnapshot]:
        """The blocked similarity candidates of ``old``."""
        group = kind_group(old.kind)
        found = list(self._capped(("name", group, old.name)))
        found += self._capped(("stem", group, old.name.lstrip("_")))
        if hint is not None:
            found += self.blocks.get(("parent", *hint), ())
        if group is not KindGroup.ATTRIBUTE:
            found += self.blocks.get(("path", group, old.path), ())
            found += self._capped(("shape", group, _block_key(old)))
        return [s for s in dict.fromkeys(found) if kind_group(s.kind) is group]


    def _capped(self, key: tuple) -> list[SymbolSnapshot]:
        bucket = self.blocks.get(key, [])
        return bucket if len(bucket) <= BLOCK_CAP else []


class _Scorer:
    """The documented score, with each symbol's body tokens computed once."""

    def __init__(self) -> None:
        self._tokens: dict[SymbolSnapshot, tuple[Counter[str], int]] = {}

    def ranked(
        self, old: SymbolSnapshot, symbols: Iterable[SymbolSnapshot],
        hint: tuple[str, str] | None, identical: bool = False, unique: bool = False,
    ) -> list[_Scored]:
        """Candidates scoring at least ``CANDIDATE_FLOOR``, best first.

        ``unique``: ``old``'s name is unique among A's and B's unmatched symbols, so the
        candidate of that name gets ``UNIQUE_NAME_BONUS``.
        """
        scored = []
        for symbol in symbols:
            score = self.score(old, symbol, hint, identical)
            if unique and symbol.name == old.name and symbol.kind == old.kind:
                score = min(1.0, round(score + UNIQUE_NAME_BONUS, 4))
            if score >= CANDIDATE_FLOOR:
                scored.append(_Scored(score, symbol))
        scored.sort(key=lambda s: (-s.score, s.symbol.path, s.symbol.qualname))
        return scored

    def score(
        self, old: SymbolSnapshot, new: SymbolSnapshot, hint: tuple[str, str] | None,
        identical: bool = False,
    ) -> float:
        """``score`` of the module docstring (``identical``: the body term is 1)."""
        cheap = (
            W_NAME * _name_similarity(old.name, new.name)
            + W_SCOPE * _scope(old, new, hint)
            + W_PARAMS * _params_similarity(old, new)
        )
        if identical:
            return round(cheap + W_BODY, 4)
        if cheap + W_BODY * min(1.0, _SIZE_SLACK * _size_ratio(old, new)) < CANDIDATE_FLOOR:
            return 0.0
        return round(cheap + W_BODY * self._body_similarity(old, new), 4)

    def body_similarity(self, old: SymbolSnapshot, new: SymbolSnapshot) -> float:
        if old.exact == new.exact or old.normalized == new.normalized:
            return 1.0
        return self._body_similarity(old, new)

    def _body_similarity(self, old: SymbolSnapshot, new: SymbolSnapshot) -> float:
        old_tokens, old_total = self._tokens_of(old)
        new_tokens, new_total = self._tokens_of(new)
        if not old_total and not new_total:
            return 1.0
        shared = sum(min(old_tokens[token], new_tokens[token])
                     for token in old_tokens.keys() & new_tokens.keys())
        return shared / (old_total + new_total - shared)

    def token_count(self, symbol: SymbolSnapshot) -> int:
        return self._tokens_of(symbol)[1]

    def code_token_count(self, symbol: SymbolSnapshot) -> int:
        """Word tokens of the body outside strings and comments (a docstring says nothing
        of what the code does)."""
        return len(_WORD.findall(blank_literals(_body_of(symbol).encode()).decode("utf-8",
                                                                                   "replace")))

    def _tokens_of(self, symbol: SymbolSnapshot) -> tuple[Counter[str], int]:
        found = self._tokens.get(symbol)
        if found is None:
            tokens = Counter(_WORD.findall(_body_of(symbol)))
            found = (tokens, sum(tokens.values()))
            self._tokens[symbol] = found
        return found


def _body_of(symbol: SymbolSnapshot) -> str:
    if symbol.kind == "attribute":
        return symbol.signature
    return symbol.source[len(symbol.signature):]


def _size_ratio(old: SymbolSnapshot, new: SymbolSnapshot) -> float:
    sizes = sorted((old.end_byte - old.start_byte, new.end_byte - new.start_byte))
    return sizes[0] / sizes[1] if sizes[1] else 1.0


@lru_cache(maxsize=65536)
def _name_similarity(old: str, new: str) -> float:
    """Dice coefficient of the two names' character bigrams."""
    if old == new:
        return 1.0
    old_pairs, new_pairs = _bigrams(old), _bigrams(new)
    if not old_pairs or not new_pairs:
        return 0.0
    return 2 * len(old_pairs & new_pairs) / (len(old_pairs) + len(new_pairs))


@lru_cache(maxsize=65536)
def _bigrams(name: str) -> frozenset[str]:
    return frozenset(name[index:index + 2] for index in range(len(name) - 1))


def _scope(old: SymbolSnapshot, new: SymbolSnapshot, hint: tuple[str, str] | None) -> float:
    parent = (new.path, new.parent) == hint if hint is not None else old.parent == new.parent
    return 0.5 * parent + 0.5 * _path_similarity(old.path, new.path)


@lru_cache(maxsize=65536)
def _beside(path: str, other: str) -> bool:
    """Whether ``path`` is in ``other``'s folder, or is a file of ``other``'s name in a
    folder beside ``other``'s."""
    folder, name = posixpath.split(path)
    other_folder, other_name = posixpath.split(other)
    return folder == other_folder or (
        name == other_name and posixpath.dirname(folder) == posixpath.dirname(other_folder))


def _path_similarity(old: str, new: str) -> float:
    if old == new:
        return 1.0
    old_dir, _, old_file = old.rpartition("/")
    new_dir, _, new_file = new.rpartition("/")
    if old_file == new_file:  # more for each folder the two paths end with (at most 3)
        return 0.6 + 0.05 * _shared_tail(old_dir.split("/"), new_dir.split("/"))
    if old_dir == new_dir:
        return 0.4
    return 0.2 if package_of(old) == package_of(new) else 0.0


def _shared_tail(old: list[str], new: list[str]) -> int:
    """How many of the last (up to 3) folders two paths share, from the file up."""
    shared = 0
    for old_part, new_part in zip(reversed(old), reversed(new), strict=False):
        if old_part != new_part or shared == 3:
            break
        shared += 1
    return shared


def _params_similarity(old: SymbolSnapshot, new: SymbolSnapshot) -> float:
    return _text_similarity(_params_text(old), _params_text(new))


def _params_text(symbol: SymbolSnapshot) -> str:
    """Parameters and return annotation, bases, or value: what follows the name."""
    if symbol.kind == "attribute":
        return symbol.signature[:300]
    return _header_tail(symbol.signature)


@lru_cache(maxsize=65536)
def _header_tail(signature: str) -> str:
    found = _DEF_NAME.search(signature)
    tail = signature[found.end():] if found else signature
    return " ".join(tail.split()).rstrip(":")


@lru_cache(maxsize=65536)
def _text_similarity(old: str, new: str) -> float:
    """Jaccard similarity of the word-token sets of two short texts."""
    if old == new:
        return 1.0
    old_words, new_words = _word_set(old), _word_set(new)
    if not old_words and not new_words:
        return 1.0
    return len(old_words & new_words) / len(old_words | new_words)


@lru_cache(maxsize=65536)
def _word_set(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text))


def _stems(name: str) -> list[str]:
    """The name without its leading underscores, and each of its leading parts that ends
    before a ``_``: ``_mhc_pre_tilelang`` -> ``mhc_pre_tilelang``, ``mhc``, ``mhc_pre``.
    A symbol of A whose name is one of them may have been renamed to it (made private,
    or given a suffix)."""
    bare = name.lstrip("_")
    parts = bare.split("_")
    return [bare] + ["_".join(parts[:count]) for count in range(1, len(parts))]


def _tails(name: str) -> list[str]:
    """The name's trailing parts that start after a ``_`` or at a capital that follows a
    small letter or digit: ``L2AdapterDescriptor`` -> ``AdapterDescriptor``,
    ``Descriptor``; ``gpu_fold`` -> ``fold``. A symbol of A whose name is one of them may
    have been renamed to it (given a prefix)."""
    bare = name.lstrip("_")
    cuts = {found.start() for found in _NAME_PART.finditer(bare)}
    return [bare[cut:] for cut in sorted(cuts) if bare[cut:].strip("_")]


def _bases(symbol: SymbolSnapshot) -> tuple[tuple[str, ...], ...]:
    """The dotted names in a class's bases (and keywords), in order, each as its words
    (``Mixins.Tokenize`` is ``("Mixins", "Tokenize")``): none for other kinds."""
    if symbol.kind != "class":
        return ()
    return tuple(dict.fromkeys(tuple(_WORD.findall(name))
                               for name in _DOTTED_NAME.findall(_params_text(symbol))))


def _block_key(symbol: SymbolSnapshot) -> str | None:
    """A non-trivial parameter list (functions) or bases (classes) to block on."""
    return _signature_block_key(symbol.kind, symbol.signature)


def _signature_block_key(kind: str, signature: str) -> str | None:
    """`_block_key` of a symbol of ``kind`` and ``signature`` (a row, not a snapshot)."""
    if kind == "attribute":
        return None
    text = _header_tail(signature).replace(" ", "")
    return None if text in _TRIVIAL_PARAMETERS else text


# --- the matcher ----------------------------------------------------------------------


class Matcher:
    """Matches symbols of version A (``version_a_key``) to version B; caches per pair."""

    def __init__(
        self, database: Database, version_a_key: int, version_b_key: int,
        store: SourceStore | None = None,
    ) -> None:
        self.database = database
        self.store = store or SourceStore(database)
        self.a = _VersionView(database, version_a_key, self.store)
        self.b = _VersionView(database, version_b_key, self.store)
        self._matches: dict[tuple[str, str, int, str], Match] = {}
        self._pool: _Pool | None = None
        self._copies: dict[str, list[str]] | None = None  # see _class_copies
        self._scorer = _Scorer()
        self._a_same: list[tuple] = []
        self._kept: dict[str, dict[str, list[SymbolSnapshot]]] = {}
        self._names: tuple[frozenset[str], frozenset[str]] | None = None  # defined_names
        self._qualname_places: dict[tuple[int, str], list[tuple[str, str]]] = {}  # _places
        self._kept_methods: dict[str, list[tuple[str, str]]] | None = None  # _kept_twin
        self._kept_by_block: dict[tuple[KindGroup, str], list[tuple[str, str]]] | None = None
        self._modules: VersionModules | None = None  # _imported_from
        self._named_classes: dict[tuple[str, str], list[tuple[str, str]]] = {}  # _ancestors
        self._lines_at_a: dict[_Key, list[tuple[SymbolSnapshot, Container[str]]]] = {}
        self._gone_by_path: dict[str, list[_Key]] | None = None  # _moved_to

    def definition(self, path: str, qualname: str, start_line: int) -> SymbolSnapshot | None:
        """`find_definition` at A, from the rows of ``path`` that A's view holds: read once
        for all the symbols of the file (the rows a search loads for the file are those)."""
        return _definition_in(self.a, path, qualname, start_line)

    def match(self, old: SymbolSnapshot) -> Match:
        """What became of ``old`` (a symbol of A) at B."""
        key = _match_key(old)
        found = self._matches.get(key)
        if found is None:
            found = self._match(old)
            self._matches[key] = found
        return found

    def _match(self, old: SymbolSnapshot) -> Match:
        blob = self.b.blob(old.path)
        if blob == old.blob_id:
            return Match(old, Verdict.UNCHANGED, old.at_version(self.b.version),
                         content=Verdict.UNCHANGED, via="blob")
        if blob is not None:
            new = self.b.lookup(old.path, old.qualname, old.occurrence)
            if new is not None:
                verdict, changes = classify(old, new)
                same_place = Match(old, verdict, new, changes, content=verdict)
                if kind_group(new.kind) is kind_group(old.kind):
                    return same_place
                return self._kind_changed(old, same_place)
        return self._parent_move(old) or self._search(old)

    def _kind_changed(self, old: SymbolSnapshot, same_place: Match) -> Match:
        """A class whose place now holds a function or an alias (``X = Y``) of that name:
        its code may live on under another name, which then is its match; else the
        symbol that an alias names, when B newly defines it (`_aliased`)."""
        moved = self._parent_move(old) or self._search(old)
        if moved.verdict is Verdict.MOVED:
            return moved
        self._forget_methods(old)  # matched as if it was removed (`_where_methods_went`)
        if same_place.new is not None and (aliased := self._aliased(old, same_place.new)):
            return self._moved(old, aliased.symbol, (), aliased.score, "alias")
        return same_place

    def _aliased(self, old: SymbolSnapshot, alias: SymbolSnapshot) -> _Scored | None:
        """The symbol of B, in ``old``'s kind group, that the attribute ``alias`` now at
        ``old``'s place names (``_get_kv_cache_config_deepseek_v4 =
        _get_kv_cache_config_packed``), scored, when B newly defines it (A had no such
        place) and it scores at least ``CANDIDATE_FLOOR``: the old name, kept for the new
        one, says where the code went however much it changed."""
        if alias.kind != "attribute" or not alias.signature.isidentifier():
            return None
        place = self._modules_b().follow(alias.path, alias.signature)
        if place is None:
            return None
        path, qualname = place.split("::", 1)
        target = self.b.lookup(path, qualname)
        if (target is None or kind_group(target.kind) is not kind_group(old.kind)
                or self.a.has(path, qualname)):
            return None
        scored = self._scorer.ranked(old, [target], None)
        return scored[0] if scored else None

    # -- moves -------------------------------------------------------------------------

    def _parent_match(self, old: SymbolSnapshot) -> Match | None:
        parent = old.parent
        if not parent:
            return None
        found = self.a.lookup(old.path, parent)
        return self.match(found) if found is not None else None

    def _parent_move(self, old: SymbolSnapshot) -> Match | None:
        parent = self._parent_match(old)
        home = None if parent is None else parent.moved_to
        if parent is None or home is None:
            return None
        # the parent's place and its copies, not a class of another name tied with it
        copies = [target.path for target in (home, *parent.candidates)
                  if target.qualname == home.qualname]
        qualname = home.qualname + old.qualname[len(old.parent):]
        found = [
            symbol for path in copies
            for symbol in [self.b.lookup(path, qualname, old.occurrence)]
            if symbol is not None and kind_group(symbol.kind) is kind_group(old.kind)
        ]
        if not found:
            return None
        if pushed := self._pushed_down(old, found[0], home):
            return self._moved(old, pushed[0].symbol, tuple(s.symbol for s in pushed[1:]),
                               pushed[0].score, "subclass")
        others = [*found[1:], *self._copies_as_good(old, found[0], found, home)]
        return self._moved(old, found[0], tuple(others), parent.score, "parent")

    def _pushed_down(
        self, old: SymbolSnapshot, stub: SymbolSnapshot, home: SymbolSnapshot
    ) -> list[_Scored]:
        """Where ``old``'s code went when its class lives on as ``home`` but ``home``'s
        method of its name, ``stub``, does not resemble it (scores under
        ``MOVE_THRESHOLD``): B's new methods of that name in classes that inherit
        ``home``, that are move targets, beat ``stub`` by more than ``AMBIGUITY_MARGIN``
        and do not succeed a method of their own qualname (`_taken`: a subclass that
        moved keeps its own), best first, with those as good (``NixlConnectorScheduler``
        split into ``NixlBaseConnectorScheduler``, whose ``request_finished`` raises
        ``NotImplementedError``, and the ``NixlPullConnectorScheduler`` that has its
        body)."""
        hint = (home.path, home.qualname)
        floor = self._scorer.score(old, stub, hint)
        if old.kind != "method" or floor >= MOVE_THRESHOLD:
            return []
        group = kind_group(old.kind)
        ranked = [scored for scored in self._scorer.ranked(
                      old, self.pool().blocks.get(("name", group, old.name), ()), hint)
                  if scored.score - floor > AMBIGUITY_MARGIN and self._eligible(old, scored)
                  and self._inherits(scored.symbol, home)
                  and not self._taken(old, scored.symbol)]
        return [s for s in ranked if ranked[0].score - s.score <= AMBIGUITY_MARGIN]

    def _inherits(self, member: SymbolSnapshot, home: SymbolSnapshot) -> bool:
        """Whether ``member`` is a member of a class of B that has ``home`` among its
        bases (or theirs)."""
        cls = self.b.lookup(member.path, member.parent) if member.parent else None
        return cls is not None and cls.kind == "class" and (
            home.path, home.qualname) in self._ancestors(cls)

    def _copies_as_good(
        self, old: SymbolSnapshot, chosen: SymbolSnapshot, known: list[SymbolSnapshot],
        parent: SymbolSnapshot | None,
    ) -> list[SymbolSnapshot]:
        """The chosen member of the other new copies of its class in B that score as well
        against ``old``: a method follows its class, but a copy of the class elsewhere
        (DeepSeek V4's per-platform models) may hold the very same method."""
        paths = self._class_copies(parent) if parent is not None else []
        copies = self._defined_at(paths, chosen.qualname, old, known)
        if not copies:
            return []
        bar = self._scorer.score(old, chosen, None) - AMBIGUITY_MARGIN
        return [symbol for symbol in copies if self._scorer.score(old, symbol, None) >= bar]

    def _defined_at(
        self, paths: Iterable[str], qualname: str, like: SymbolSnapshot,
        known: list[SymbolSnapshot],
    ) -> list[SymbolSnapshot]:
        """B's definitions of ``qualname`` in ``paths`` (of ``like``'s occurrence and kind
        group), but those ``known``."""
        found = (self.b.lookup(path, qualname, like.occurrence) for path in paths)
        return [symbol for symbol in dict.fromkeys(found)
                if symbol is not None and symbol not in known
                and kind_group(symbol.kind) is kind_group(like.kind)]

    def _class_copies(self, cls: SymbolSnapshot) -> list[str]:
        """The other files of B that newly define ``cls``'s qualname."""
        if self._copies is None:  # one query for the whole pair
            self._copies = mq.classes_in_several_files(self.database, self.b.key)
        return list(dict.fromkeys(
            path for path in self._copies.get(cls.qualname, ())
            if path != cls.path and not self.a.has(path, cls.qualname)))

    def _search(self, old: SymbolSnapshot) -> Match:
        parent = self._parent_match(old)
        if parent is not None and old.kind == "attribute":  # it only follows its class
            return self._attribute_kept(old, parent.new) or self._removed(old, [])
        home = None if parent is None else parent.new  # of a member that may have left it
        hint = None if home is None else (home.path, home.qualname)
        orphan = parent is not None and home is None
        if orphan and (settled := self._matches.get(_match_key(old))) is not None:
            return settled  # matched with its class's methods (`_where_methods_went`)
        max_ties = 0 if parent is not None else MAX_TIES
        ranked, via = self._ranked(old, hint)
        if orphan and self._scorer.code_token_count(old) < MIN_RENAME_TOKENS:
            # ``return``, ``pass``: that a method of a removed class says as little as one of
            # another class is no evidence that it moved there
            return self._removed(old, ranked)
        if home is not None and (pulled_up := self._pulled_up(old, home)):
            return self._moved(old, pulled_up[0], tuple(pulled_up[1:]),
                               self._scorer.score(old, pulled_up[0], hint), "base")
        found = self._decide(old, ranked, via, max_ties)
        moved_to = found.moved_to
        if home is not None and moved_to is not None and (
                self._contested(old, moved_to, home) or self._left_for_a_copy(old, moved_to, home)):
            return self._removed(old, ranked)
        if found.verdict is Verdict.REMOVED and old.kind == "class" and old.occurrence == 0:
            return self._where_methods_went(old, found, ranked)
        if self._may_defect_alone(old, found):
            self._matches[_match_key(old)] = found  # while the others of its file are matched
            if self._rest_of_file_removed(old):
                return self._removed(old, ranked)
        if old.kind == "attribute" and (found.verdict is Verdict.REMOVED or found.ambiguous
                                        or self._shared_by_a_leaver(old, found.moved_to)):
            return self._with_its_file(old, found, ranked)
        return found

    def _may_defect_alone(self, old: SymbolSnapshot, found: Match) -> bool:
        """Whether ``found`` takes ``old``, a module-level function of a file that B no
        longer has, for renamed in another file on the likeness of its text alone: a
        lone defector when every other class and function of its file was removed
        (`_rest_of_file_removed`), for a file dropped whole leaves no successor, and a
        helper resembles others of its kind (``musicflamingo.py``, a model v0.25.0
        dropped: its ``rotate_half``, which splits pairs, reads like mimo_audio's new
        ``_rotate_half``, which splits halves). A class is not judged so: its methods,
        matched with it, are evidence of their own (``GPTQConfig``, whose file's other
        classes v0.25.0 dropped, went to ``AutoGPTQConfig``)."""
        new = found.moved_to
        return not (new is None or found.via != "similarity" or new.name == old.name
                    or old.parent or old.kind != "function"
                    or self.b.blob(old.path) is not None)

    def _rest_of_file_removed(self, old: SymbolSnapshot) -> bool:
        """Whether ``old``'s file had other definitions, all of them removed at B."""
        others = [symbol for symbol in self._definitions_at_a(old.path) if symbol != old]
        return bool(others) and all(
            self.match(other).verdict is Verdict.REMOVED for other in others)

    def _shared_by_a_leaver(self, old: SymbolSnapshot, new: SymbolSnapshot | None) -> bool:
        """Whether another module attribute of A of ``old``'s name, which left its place
        too, scores as well against ``new`` in another file: two deleted files'
        ``logger = logging.getLogger(__name__)`` and one new file's say nothing of which,
        if either, went there (its file tells: `_with_its_file`)."""
        if new is None or old.parent or new.path == old.path:
            return False
        bar = self._scorer.score(old, new, None) - AMBIGUITY_MARGIN
        return any(
            rival.path != old.path and not rival.parent
            and self._scorer.score(rival, new, None) >= bar
            for rival in self._gone_named(KindGroup.ATTRIBUTE, old.name)
        ) and self._imported_from(old, [_Scored(1.0, new)]) is None

    def _with_its_file(self, old: SymbolSnapshot, found: Match, ranked: list[_Scored]) -> Match:
        """A module attribute that no one place claims (``logger = init_logger(__name__)``
        is in hundreds of files) moves with its file: to the file where most of the file's
        classes and functions went, when that file newly defines it. Otherwise it is
        removed: a tie says nothing of where it went."""
        place, copies = self._where_file_went(old.path)
        new = None if place is None else self._new_copy(old, place)
        if new is None:
            return found if found.verdict is Verdict.REMOVED else self._removed(old, ranked)
        others = tuple(copy for path in copies if (copy := self._new_copy(old, path)) is not None)
        return self._moved(old, new, others, self._scorer.score(old, new, None), "file")

    def _new_copy(self, old: SymbolSnapshot, path: str) -> SymbolSnapshot | None:
        """The module attribute of ``old``'s qualname that B's file ``path`` newly defines."""
        new = self.b.lookup(path, old.qualname, old.occurrence)
        if new is None or new.kind != "attribute" or self.a.has(path, old.qualname,
                                                                old.occurrence):
            return None
        return new

    def _definitions_at_a(self, path: str) -> list[SymbolSnapshot]:
        """The module-level classes and functions of A's file ``path``."""
        return [symbol for symbol in self.a.file_symbols(path)
                if not symbol.parent and symbol.kind != "attribute"]

    def _where_file_went(self, path: str) -> tuple[str | None, list[str]]:
        """The file of B where most classes and functions of A's file ``path`` moved (None
        when B still has ``path``, what left it was removed, or no one file took most),
        and the other files that each of its moves lists as a place, as often as that
        file: a file split into per-platform copies went to each of them (boilerplate
        such as ``attach_router``, a tie in any file, does not make one a copy)."""
        if self.b.blob(path) is not None:
            return None, []
        top = self._definitions_at_a(path)
        moves = [(match.moved_to, match.candidates) for match in map(self.match, top)
                 if match.moved_to is not None]
        places = Counter(new.path for new, _ in moves)
        if not places:
            return None, []
        place, count = places.most_common(1)[0]
        if 2 * count <= len(top):
            return None, []
        held = Counter(path for new, candidates in moves
                       for path in {symbol.path for symbol in (new, *candidates)})
        return place, sorted(path for path, count in held.items()
                             if path != place and count >= held[place])

    def _where_methods_went(
        self, cls: SymbolSnapshot, removed: Match, ranked: list[_Scored]
    ) -> Match:
        """``removed``, unless most of ``cls``'s methods moved to one new class of a new
        name that scores as a move target (`_eligible`), which is then its match: a class
        renamed as it moved (``KimiDeltaAttention`` -> ``KimiGatedDeltaNetAttention``)
        keeps neither the name nor the place that blocking looks for, and its methods,
        matched one by one as orphans, still find their bodies. A class whose name A
        defines is that symbol's successor (dots1's model methods went to MiMo V2's, which
        only moved): ``cls`` is removed, the classes its methods went to among its
        candidates (`_merged_into`)."""
        self._matches[_match_key(cls)] = removed  # while its methods are matched
        matches = [self.match(method) for method in self._methods(cls)]
        moved = [new for match in matches
                 if (new := match.moved_to) is not None and new.kind == "method"]
        places = Counter((new.path, new.parent) for new in moved)
        target = (self._followed_class(cls, places, len(moved))
                  or self._followed_with_seconds(cls, matches, places, len(moved)))
        if target is None:
            self._drop_look_alikes(matches, places)
            return self._merged_into(cls, ranked)
        self._forget_methods(cls)  # matched again as members of a class that moved
        return self._moved(cls, target.symbol, (), target.score, "methods")

    def _merged_into(self, cls: SymbolSnapshot, ranked: list[_Scored]) -> Match:
        """``cls`` removed, with the classes that its methods which moved went to among
        its candidates, and each of its methods left removed with those classes' method of
        its name among its own: a class merged into one that took another's place keeps
        its code there, under a name that blocking does not look for
        (``DeepseekV4MultiHeadLatentAttentionWrapper``, whose ``attention_impl`` went to
        ``DeepseekV4Attention``, and its ``__init__``, one of hundreds of new ones)."""
        homes = list(dict.fromkeys(home for method in self._methods(cls)
                                   if (home := self._home_of(self.match(method))) is not None))
        for method in self._methods(cls):
            namesakes = self._methods_named(homes, method.name)
            if namesakes and self.match(method).verdict is Verdict.REMOVED:
                found, _ = self._ranked(method, None)
                self._matches[_match_key(method)] = self._removed(
                    method, self._with_others(method, found, namesakes))
        return self._removed(cls, self._with_others(cls, ranked, homes))

    def _home_of(self, match: Match) -> SymbolSnapshot | None:
        """The class of B that the method of ``match`` moved into, if it did."""
        new = match.moved_to
        if new is None or new.kind != "method":
            return None
        return self.b.lookup(new.path, new.parent)

    def _methods_named(self, classes: list[SymbolSnapshot], name: str) -> list[SymbolSnapshot]:
        """The method ``name`` of each of ``classes`` (of B) that has one."""
        found = [self.b.lookup(cls.path, f"{cls.qualname}.{name}") for cls in classes]
        return [method for method in found
                if method is not None and kind_group(method.kind) is KindGroup.FUNCTION]

    def _with_others(
        self, old: SymbolSnapshot, ranked: list[_Scored], others: list[SymbolSnapshot]
    ) -> list[_Scored]:
        """``ranked`` and, scored, those of ``others`` it does not hold."""
        known = {scored.symbol for scored in ranked}
        return [*ranked, *self._scorer.ranked(
            old, [other for other in others if other not in known], None)]

    def _followed_class(
        self, cls: SymbolSnapshot, places: Counter[tuple[str, str]], moved: int
    ) -> _Scored | None:
        """The class of B that ``cls`` follows, scored, when most of its ``moved``
        methods went there (``places``: how many to each (path, class))."""
        if not places:
            return None
        (path, parent), count = places.most_common(1)[0]
        target = self.b.lookup(path, parent)
        if (count < MIN_METHODS_FOLLOWED or 2 * count <= moved or target is None
                or target.kind != "class" or target.name in self.defined_names()[0]):
            return None
        scored = self._scorer.ranked(cls, [target], None)
        if not scored:
            return None
        outweighed = count >= MIN_METHODS_OUTWEIGH and (
            count == moved or self._place_taken_by_other_kind(cls))
        return scored[0] if outweighed or self._eligible(cls, scored[0]) else None

    def _place_taken_by_other_kind(self, cls: SymbolSnapshot) -> bool:
        """Whether B's file of ``cls`` defines its name as a function or an attribute
        (a factory or an alias kept for callers: ``def FusedMoE(...)`` builds the
        ``RoutedExperts`` that took its methods)."""
        found = self.b.lookup(cls.path, cls.qualname, cls.occurrence)
        return found is not None and kind_group(found.kind) is not kind_group(cls.kind)

    def _followed_with_seconds(
        self, cls: SymbolSnapshot, matches: list[Match], places: Counter[tuple[str, str]],
        moved: int,
    ) -> _Scored | None:
        """The class of B that every moved method of ``cls`` went to, scored, when methods
        too short to move on their own second it (a method of their name and code is
        there), its name is most of ``cls``'s (``SECONDED_NAME_SIMILARITY``) and it scores
        at least ``CANDIDATE_FLOOR``: a class renamed and rewritten as it moved
        (``DeepseekV4FlashMLASparseBackend`` -> ``DeepseekV4FlashMLABackend``, whose
        ``get_kv_cache_shape`` moved and whose ``return [256]`` is there too) scores low
        as a whole. Methods that moved as copies of code a kept class has too
        (`_kept_twin`) are no such evidence: a deleted backend's stock
        ``get_kv_cache_shape``, ``TritonAttentionBackend``'s and a new backend's."""
        if len(places) != 1:
            return None
        (path, parent), count = places.most_common(1)[0]
        seconds = sum(1 for match in matches if self._seconds(match, path, parent))
        target = self.b.lookup(path, parent)
        if (count != moved or seconds == 0 or count + seconds < MIN_METHODS_FOLLOWED
                or target is None or target.kind != "class"
                or target.name in self.defined_names()[0]
                or _name_similarity(cls.name, target.name) < SECONDED_NAME_SIMILARITY
                or all(self._kept_twin(match.old, new) for match in matches
                       if (new := match.moved_to) is not None)):  # the costly test last
            return None
        scored = self._scorer.ranked(cls, [target], None)
        return scored[0] if scored and scored[0].score >= CANDIDATE_FLOOR else None

    def _seconds(self, match: Match, path: str, parent: str) -> bool:
        """Whether the method of ``match``, removed as too short to move on its own,
        lists a method of its name and code in class ``parent`` of ``path``."""
        return match.verdict is Verdict.REMOVED and (
            self._scorer.code_token_count(match.old) < MIN_RENAME_TOKENS) and any(
            (symbol.path, symbol.parent, symbol.name) == (path, parent, match.old.name)
            and symbol.normalized == match.old.normalized for symbol in match.candidates)

    def _drop_look_alikes(
        self, matches: list[Match], places: Counter[tuple[str, str]]
    ) -> None:
        """Call removed each method of a removed class that alone of its class moved,
        changed, to another class, where a rival from a third class scores as well
        (`_contested`): the ``forward`` of four deleted models is no more one new model's
        than the others'. Methods that went together to one class (those of
        ``AWQConfig`` merged into ``AutoAWQConfig``) are evidence for each other, and code
        kept as it was is where it went (``_validate_chat_template`` of two removed
        servings, now their renderer's); but neither holds for a method when one of its
        name that B keeps in another class is as close to its new place (`_kept_twin`:
        the stock ``load_weights`` of a deleted model is a new model's no more than
        ``Qwen2ForCausalLM``'s, and two such methods are no more evidence than one)."""
        for match in matches:
            new = match.moved_to
            if (new is not None and new.kind == "method"
                    and (places[(new.path, new.parent)] == 1
                         and match.content_changed and self._contested(match.old, new, None)
                         or self._kept_twin(match.old, new))):
                ranked, _ = self._ranked(match.old, None)
                self._matches[_match_key(match.old)] = self._removed(match.old, ranked)

    def _methods(self, cls: SymbolSnapshot) -> list[SymbolSnapshot]:
        return [symbol for symbol in self.a.file_symbols(cls.path)
                if symbol.parent == cls.qualname and symbol.kind == "method"]

    def _forget_methods(self, cls: SymbolSnapshot) -> None:
        for method in self._methods(cls):
            self._matches.pop(_match_key(method), None)

    def _ranked(
        self, old: SymbolSnapshot, hint: tuple[str, str] | None
    ) -> tuple[list[_Scored], str]:
        """``old``'s candidates, best first: those of its fingerprint, else the blocked
        ones by similarity; and which it was."""
        for column in ("exact", "normalized"):
            hits = self._fingerprint_hits(old, column)
            if hits:
                return self._scorer.ranked(old, hits, hint, identical=True), column
        pool = self.pool()
        ranked = self._scorer.ranked(
            old, pool.candidates(old, hint), hint, unique=pool.unique_name(old)
        )
        return ranked, "similarity"

    def _fingerprint_hits(self, old: SymbolSnapshot, column: str) -> list[SymbolSnapshot]:
        value = getattr(old, column)
        group = kind_group(old.kind)
        hits: Sequence[SymbolSnapshot | None]
        if self._pool is not None:
            hits = self._pool.with_fingerprint(column, value)
        else:
            rows = mq.rows_with_fingerprint(self.database, self.b.key, column, value)
            hits = [self.b.lookup(row[_PATH], row[_QUALNAME], _occurrence(self.b, row))
                    for row in rows]
        return [
            symbol for symbol in hits
            if symbol is not None and kind_group(symbol.kind) is group
            and not self.a.has(symbol.path, symbol.qualname, symbol.occurrence)
        ]

    def _decide(
        self, old: SymbolSnapshot, ranked: list[_Scored], via: str, max_ties: int
    ) -> Match:
        eligible = [scored for scored in ranked if self._eligible(old, scored)]
        if not eligible:
            return self._removed(old, ranked)
        best = eligible[0]
        ties = [s.symbol for s in eligible[1:] if best.score - s.score <= AMBIGUITY_MARGIN]
        if (len(ties) > max_ties or self._taken(old, best.symbol)
                or self._kept_look_alike(old, best.symbol)):
            return self._removed(old, ranked)
        if ties and (imported := self._imported_from(old, eligible)) is not None:
            return self._moved(old, imported.symbol, (), imported.score, via)
        if old.kind == "class":
            ties += self._other_copies(best.symbol, ties)
            ties += self._split_siblings(old, best.symbol, ties)
        return self._moved(old, best.symbol, tuple(ties), best.score, via)

    def _imported_from(self, old: SymbolSnapshot, eligible: list[_Scored]) -> _Scored | None:
        """Of ``eligible`` tied copies of a module-level function or attribute, the one
        that ``old``'s file, kept at B, now imports ``old``'s name from (``describe.py``
        takes ``normalize_url`` from ``cli/http.py``, not from a command's copy of it):
        the file says where its code went. None for a class (its copies are each listed)."""
        if old.parent or old.kind == "class" or self.b.blob(old.path) is None:
            return None
        modules = self._modules_b()
        for _line, module, name, alias, level in modules.module_imports(old.path):
            if name != old.name or alias not in (None, old.name):
                continue
            source = modules.module_path(module, level, old.path)
            place = None if source is None else modules.follow(source, name)
            found = [scored for scored in eligible if scored.symbol.ref == place]
            if found:
                return found[0]
        return None

    def _other_copies(
        self, cls: SymbolSnapshot, known: list[SymbolSnapshot]
    ) -> list[SymbolSnapshot]:
        """The copies of ``cls`` that B newly defines beside it, however they score: a
        class split into per-platform copies (DeepSeek V4's ``amd/model.py``,
        ``nvidia/model.py``, ``xpu/model.py``) went to each of them, and the closest text
        need not be the one a reader runs. Beside: in its folder, or in a file of its name
        in a folder beside its own (an unrelated ``Config`` elsewhere is no copy)."""
        beside = [path for path in self._class_copies(cls) if _beside(path, cls.path)]
        return self._defined_at(beside, cls.qualname, cls, known)

    def _split_siblings(
        self, old: SymbolSnapshot, new: SymbolSnapshot, known: list[SymbolSnapshot]
    ) -> list[SymbolSnapshot]:
        """Of ``old`` renamed to ``new``, the classes of names A does not define that B
        defines in ``new``'s file deriving from a base that B newly defines there and
        ``new`` derives from, scoring at least ``CANDIDATE_FLOOR`` against ``old``, best
        first: a class split into a base and renamed subclasses went to each subclass, and
        the closest text need not be the one a reader runs (classes that kept their names
        as they moved beside a new base are no split: ``MarlinExperts`` and
        ``BatchedMarlinExperts``) (``FlashInferMLASparseBackend``, at vLLM v0.25.0
        ``_FlashInferMLASparseBackendBase`` with ``FlashInferMLASparseTRTLLMBackend`` and
        ``FlashInferMLASparseSM120Backend``)."""
        bases = self._new_bases_beside(new) if new.qualname != old.qualname else set()
        if not bases:
            return []
        siblings = [symbol for symbol in self.b.file_symbols(new.path)
                    if symbol.kind == "class" and not symbol.parent and symbol != new
                    and symbol not in known and not self._places(self.a, symbol)
                    and not bases.isdisjoint(self._new_bases_beside(symbol))]
        return [scored.symbol for scored in self._scorer.ranked(old, siblings, None)]

    def _new_bases_beside(self, cls: SymbolSnapshot) -> set[tuple[str, str]]:
        """The (path, qualname) of ``cls``'s direct bases that B newly defines in its
        file."""
        return {place for name in _bases(cls) for place in self._classes_named_by(cls, name)
                if place[0] == cls.path and not self.a.has(*place)}

    def _eligible(self, old: SymbolSnapshot, scored: _Scored) -> bool:
        """Whether a candidate's score makes it a move target (see the module docstring)."""
        new = scored.symbol
        if new.name.lstrip("_") == old.name.lstrip("_"):  # made private or public
            return scored.score >= MOVE_THRESHOLD
        if self._scorer.token_count(old) < MIN_RENAME_TOKENS:
            return False
        if new.path != old.path:
            return scored.score >= RENAME_MOVE_THRESHOLD
        if old.kind == new.kind == "method" and new.parent == old.parent:
            return scored.score >= SAME_CLASS_MOVE_THRESHOLD
        return scored.score >= MOVE_THRESHOLD

    def _taken(self, old: SymbolSnapshot, new: SymbolSnapshot) -> bool:
        """Whether ``new`` is presumed to succeed a symbol of A of its own qualname that
        left its place (``MiMoV2FlashForCausalLM.forward``, whose file was merged into
        another), and not ``old``, whatever their bodies share: when B defines that
        qualname no more often than A did (``new`` is new, so each of B's new places then
        has a predecessor of its name), and one that left scores as a move to ``new`` (a
        deleted legacy ``fused_norm`` unlike it does not keep ``fused_norm_v2``, renamed in
        its file, from taking its name)."""
        if new.qualname == old.qualname:
            return False
        places_a, places_b = self._places(self.a, new), self._places(self.b, new)
        if len(places_b) > len(places_a):
            return False
        return any(
            self._eligible(symbol, scored)
            for symbol in self._left(places_a, new)
            for scored in self._scorer.ranked(symbol, [new], None)
        )

    def _kept_look_alike(self, old: SymbolSnapshot, new: SymbolSnapshot) -> bool:
        """Whether ``new``, of another name in another file than ``old``, a module-level
        symbol of a file B no longer has, is one more copy of code that a symbol B keeps
        has too, of ``new``'s kind group and bases or parameter list, as close to
        ``new``'s as ``old``'s (as `_kept_twin` weighs): then ``old`` is a look-alike of a
        deleted file, not renamed there (the deleted Tarsier's ``TarsierImagePixelInputs``
        is a new ``OpenVLAImagePixelInputs`` no more than the kept
        ``PaliGemmaImagePixelInputs``)."""
        if (old.parent or new.name == old.name or new.path == old.path
                or self.b.blob(old.path) is not None or (key := _block_key(new)) is None):
            return False
        level, similarity = self._closeness(old, new)
        bar = (level, similarity - AMBIGUITY_MARGIN if level == 0 else similarity)
        return any(
            (twin := self.b.lookup(path, qualname)) is not None
            and self._closeness(twin, new) >= bar
            for path, qualname in self._kept_alike().get((kind_group(new.kind), key), ()))

    def _kept_alike(self) -> dict[tuple[KindGroup, str], list[tuple[str, str]]]:
        """(path, qualname) of each module-level class and function of A that B keeps at
        its place, by kind group and block key at A (bases, or a non-trivial parameter
        list)."""
        if self._kept_by_block is None:
            self.pool()
            found: dict[tuple[KindGroup, str], list[tuple[str, str]]] = defaultdict(list)
            rows = [*self._a_same, *(row for key, row in self.a.rows().items()
                                     if self.b.has(*key))]
            for row in rows:
                key = _signature_block_key(row[_KIND], row[_SIGNATURE])
                if key is not None and row[_QUALNAME] == row[_NAME]:
                    found[(kind_group(row[_KIND]), key)].append((row[_PATH], row[_QUALNAME]))
            self._kept_by_block = dict(found)
        return self._kept_by_block

    def _contested(
        self, old: SymbolSnapshot, new: SymbolSnapshot, home: SymbolSnapshot | None
    ) -> bool:
        """Whether the method ``new`` is a look-alike, not where ``old`` went: ``old``
        left its parent, which lives on as ``home`` (None: its class was removed), and a
        rival, a symbol of ``new``'s name that left its place in another class and has
        no new place of its own qualname, scores as a move to ``new`` about as well (the
        stock ``load_weights`` dropped from Olmo, OPT, Phi... and a new model's). The
        rival of a method of a removed class is one of a removed class too (``forward``
        of four deleted models): a method that left a class that lives on may share its
        new place (``validate_chat_template`` of two servings, now their renderer's).
        Not contested: a method pulled up into a base of ``home`` (``_log_inputs`` of two
        servings, now of their ``BaseServing``), and a function (helpers of several
        classes or functions made one)."""
        if new.kind != "method" or home is not None and (
                new.path, _parent(new.qualname)) in self._ancestors(home):
            return False
        bar = self._scorer.score(old, new, None) - AMBIGUITY_MARGIN
        return any(
            self._scorer.score(rival, new, None) >= bar
            and (home is not None or self._orphaned(rival))
            for rival in self._gone_named(kind_group(new.kind), new.name)
            if (rival.path, rival.parent) != (old.path, old.parent)
            and not self._has_new_place(rival)
        )

    def _left_for_a_copy(
        self, old: SymbolSnapshot, new: SymbolSnapshot, home: SymbolSnapshot
    ) -> bool:
        """Whether the method ``new``, in a class that neither inherits ``home`` (where
        ``old``'s class lives on) nor is one of its bases, is one more copy of code that a
        class B keeps has too (`_kept_twin`), not where ``old`` went: ``FusedMoE.ep_rank``,
        dropped as its class became ``RoutedExperts``, is not the new
        ``FusedMoEWithLoRA.ep_rank`` when ``ExpertMapManager`` keeps the very same
        property."""
        return (new.kind == "method" and not self._inherits(new, home)
                and (new.path, _parent(new.qualname)) not in self._ancestors(home)
                and self._kept_twin(old, new))

    def _kept_twin(self, old: SymbolSnapshot, new: SymbolSnapshot) -> bool:
        """Whether a method of ``new``'s name that A has in a class other than ``old``'s,
        and B keeps at its place, has code as close to ``new``'s as ``old``'s (the same
        text, or normalized text, when ``old``'s is; else body tokens as similar, less
        ``AMBIGUITY_MARGIN`` at most, as ``_contested`` weighs rivals):
        then ``new`` is one more copy of code that classes repeat, not where ``old`` went
        (``WekaGdsBackend.exists_in_put_tasks``, the very body ``GdsBackend`` keeps, and a
        new ``MaruBackend``'s; a deleted model's stock ``load_weights``, ``Qwen2``'s and a
        new model's)."""
        level, similarity = self._closeness(old, new)
        bar = (level, similarity - AMBIGUITY_MARGIN if level == 0 else similarity)
        return any(
            (path, _parent(qualname)) != (old.path, old.parent)
            and (twin := self.b.lookup(path, qualname)) is not None
            and self._closeness(twin, new) >= bar
            for path, qualname in self._kept_named(new.name)
        )

    def _closeness(self, old: SymbolSnapshot, new: SymbolSnapshot) -> tuple[int, float]:
        """How close ``old``'s code is to ``new``'s: 2 for the same text, 1 for the same
        normalized text, else 0 and the body similarity."""
        if old.exact == new.exact:
            return 2, 1.0
        if old.normalized == new.normalized:
            return 1, 1.0
        return 0, self._scorer.body_similarity(old, new)

    def _kept_named(self, name: str) -> list[tuple[str, str]]:
        """(path, qualname) of each method of A of that name that B has at its place."""
        if self._kept_methods is None:
            self.pool()
            kept: dict[str, list[tuple[str, str]]] = defaultdict(list)
            rows = [*self._a_same, *(row for key, row in self.a.rows().items()
                                     if self.b.has(*key))]
            for row in rows:
                if row[_KIND] == "method":
                    kept[row[_NAME]].append((row[_PATH], row[_QUALNAME]))
            self._kept_methods = {name: list(dict.fromkeys(places))
                                  for name, places in kept.items()}
        return self._kept_methods.get(name, [])

    def _orphaned(self, member: SymbolSnapshot) -> bool:
        """Whether ``member``'s class (or function) was removed. One whose place B still
        holds is not, though while it is searched for (`_kind_changed`) it looks so."""
        if self.b.has(member.path, member.parent):
            return False
        parent = self._parent_match(member)
        return parent is not None and parent.new is None

    def _has_new_place(self, symbol: SymbolSnapshot) -> bool:
        """Whether B defines ``symbol``'s qualname in a file where A does not (it moved
        with its class or file, as ``phi.py`` -> ``models/phi.py``)."""
        group = kind_group(symbol.kind)
        return any(new.qualname == symbol.qualname and not self.a.has(new.path, new.qualname)
                   for new in self.pool().blocks.get(("name", group, symbol.name), ()))

    def _ancestors(self, cls: SymbolSnapshot) -> list[tuple[str, str]]:
        """The (path, qualname) of ``cls``'s bases at B, then of their bases, and so on,
        nearest first: classes of B, each the one its subclass's file means by the base's
        name (`_classes_named_by`)."""
        found: dict[tuple[str, str], None] = {}
        level = [cls]
        while level:
            places = [place for symbol in level for name in _bases(symbol)
                      for place in self._classes_named_by(symbol, name)
                      if place not in found]
            found.update(dict.fromkeys(places))
            level = [symbol for path, qualname in dict.fromkeys(places)
                     if (symbol := self.b.lookup(path, qualname)) is not None]
        return list(found)

    def _classes_named_by(
        self, cls: SymbolSnapshot, name: tuple[str, ...]
    ) -> list[tuple[str, str]]:
        """The classes of B that the dotted ``name`` among ``cls``'s bases is: a class
        that the class body around ``cls`` defines under its first word (Python looks
        there first: ``Tokenize`` in ``class Requests: class Tokenize: ...; class
        Embed(Tokenize)``), else a class the file binds it to (`_classes_named_in`), then
        the class nested in it under each further word (``Mixins.Tokenize``). A first word
        that is no such class (a module, ``layers.Linear``) leaves each word to
        `_classes_named_in`, as a bare name is."""
        outer = self._class_in_body_around(cls, name[0])
        heads = [outer] if outer is not None else (
            self._classes_named_in(cls.path, name[0]) if len(name) > 1 else [])
        if not heads:
            return [place for word in name for place in self._classes_named_in(cls.path, word)]
        return [place for head in heads
                if (place := self._nested_class(head, name[1:])) is not None]

    def _class_in_body_around(self, cls: SymbolSnapshot, name: str) -> tuple[str, str] | None:
        """The class of B that the body of the class holding ``cls`` defines as ``name``
        before ``cls`` (a later one is not bound yet); None when ``cls`` is not a class's
        member or no such class comes before it."""
        if not cls.parent or cls.qualname != f"{cls.parent}.{cls.name}":
            return None  # a top-level class, or one inside a function (``f.<locals>.C``)
        place = self._nested_class((cls.path, cls.parent), (name,))
        found = self.b.lookup(*place) if place is not None else None
        return place if found is not None and found.start_byte < cls.start_byte else None

    def _nested_class(
        self, place: tuple[str, str], names: tuple[str, ...]
    ) -> tuple[str, str] | None:
        """The class of B nested in the class at ``place`` through ``names`` (``place``
        itself for none); None when one of them is no class."""
        path, qualname = place
        for name in names:
            qualname = f"{qualname}.{name}"
            symbol = self.b.lookup(path, qualname)
            if symbol is None or symbol.kind != "class":
                return None
        return path, qualname

    def _classes_named_in(self, path: str, name: str) -> list[tuple[str, str]]:
        """The top-level classes of B that ``name`` is in B's file ``path``: the one the
        file defines or imports under that name (through re-exports and aliases, ``from m
        import Base as _Base``; none when it names something else, or a library's class),
        else, when the file does neither (a dotted base, ``layers.Linear``), every one of
        that name."""
        key = (path, name)
        if key not in self._named_classes:
            bound = self._class_bound(path, name) if self.b.blob(path) is not None else None
            self._named_classes[key] = bound if bound is not None else [
                (where, name) for where, kind in self._qualname_places_in(self.b, name)
                if kind == "class"]
        return self._named_classes[key]

    def _class_bound(self, path: str, name: str) -> list[tuple[str, str]] | None:
        """The top-level class of B that ``name`` is bound to in ``path`` (none when it is
        bound to something else); None when nothing in ``path`` binds it."""
        modules = self._modules_b()
        place = modules.follow(path, name)
        if place is not None:
            where, qualname = place.split("::", 1)
            symbol = self.b.lookup(where, qualname)
            is_class = symbol is not None and symbol.kind == "class" and not symbol.parent
            return [(where, qualname)] if is_class else []
        bound = any((alias or imported) == name
                    for _line, _module, imported, alias, _level in modules.module_imports(path))
        return [] if bound else None

    def _modules_b(self) -> VersionModules:
        if self._modules is None:
            self._modules = VersionModules(self.database, self.b.key)
        return self._modules

    def _attribute_kept(
        self, old: SymbolSnapshot, home: SymbolSnapshot | None
    ) -> Match | None:
        """Where a class attribute went while its class lives on as ``home``: into a base
        that ``home`` names (`_pulled_up`), down into the one subclass of ``home`` that
        newly declares it as it was (`_pushed_down_field`), or to the one new attribute of
        ``home`` that has its value, when the value says something (``weight_mapper``
        renamed ``hf_to_vllm_mapper``, still ``WeightsMapper(...)``), but for the new name
        where the old one was (``Other.weight_mapper`` renamed too)."""
        if home is None:
            return None
        rules = ((self._pulled_up, "base"), (self._pushed_down_field, "subclass"),
                 (self._renamed_attribute, "base"))
        for rule, via in rules:
            if found := rule(old, home):
                return self._moved(old, found[0], tuple(found[1:]),
                                   self._scorer.score(old, found[0], None), via)
        return None

    def _renamed_attribute(
        self, old: SymbolSnapshot, home: SymbolSnapshot
    ) -> list[SymbolSnapshot]:
        """The one new attribute of ``home`` whose value is ``old``'s, with the new name
        where the old one was, when that value says something (``MIN_RENAME_TOKENS``)."""
        if self._scorer.token_count(old) < MIN_RENAME_TOKENS:
            return []
        found = [symbol for symbol in self.b.file_symbols(home.path)
                 if symbol.parent == home.qualname and symbol.kind == "attribute"
                 and symbol.signature.replace(symbol.name, old.name) == old.signature
                 and not self.a.has(symbol.path, symbol.qualname, symbol.occurrence)]
        return found if len(found) == 1 else []

    def _pushed_down_field(
        self, old: SymbolSnapshot, home: SymbolSnapshot
    ) -> list[SymbolSnapshot]:
        """B's new attribute of ``old``'s name and declaration in a class that inherits
        ``home``, when one class alone declares it: ``NixlStorageAgent``'s
        ``storage_xfer_descs``, now declared by ``NixlStaticStorageAgent`` alone of its
        two subclasses (declared by several, new or kept, it is no one subclass's)."""
        found = [symbol for symbol in self.pool().blocks.get(
                     ("name", KindGroup.ATTRIBUTE, old.name), ())
                 if symbol.kind == "attribute" and symbol.source == old.source
                 and self._inherits(symbol, home)]
        if len(found) != 1 or self._declared_by_a_kept_subclass(old, home):
            return []
        return found

    def _declared_by_a_kept_subclass(self, old: SymbolSnapshot, home: SymbolSnapshot) -> bool:
        """Whether a class inheriting ``home`` declares ``old``'s name as ``old`` did, at
        a place that A has too (a subclass that already declared it keeps its own)."""
        return any(
            row["kind"] == "attribute" and self.a.has(row["path"], row["qualname"])
            and (symbol := self.b.lookup(row["path"], row["qualname"])) is not None
            and symbol.source == old.source and self._inherits(symbol, home)
            for row in symbols_named(self.database, self.b.key, old.name)
        )

    def _pulled_up(self, old: SymbolSnapshot, home: SymbolSnapshot) -> list[SymbolSnapshot]:
        """B's new definitions of ``old``'s name, in its kind group, in a class that
        ``home``, where ``old``'s parent lives on, has among its bases (or theirs), in
        the nearest such class (the one ``home`` inherits it from, unless a copy of it
        is elsewhere): ``build_tok_params`` that six pooling requests lost to the mixins
        they now inherit is theirs, however much it was generalized there."""
        for base_path, base in self._ancestors(home):
            qualname = f"{base}.{old.name}"
            found = [
                symbol for path, kind in self._qualname_places_in(self.b, qualname)
                if path == base_path and kind_group(kind) is kind_group(old.kind)
                and self.a.blob(path) != self.b.blob(path)  # else it defines nothing new
                and not self.a.has(path, qualname, old.occurrence)
                and (symbol := self.b.lookup(path, qualname, old.occurrence)) is not None
            ]
            if found:
                return list(dict.fromkeys(found))
        return []

    def _gone_named(self, group: KindGroup, name: str) -> list[SymbolSnapshot]:
        """A's symbols of that kind group and name whose place B does not have."""
        return [self.a.loaded(key) for key in self.pool().gone.get((group, name), ())]

    def _places(self, view: _VersionView, new: SymbolSnapshot) -> list[str]:
        """The path of each definition of ``new``'s qualname, in its kind group, in
        ``view``."""
        group = kind_group(new.kind)
        return [path for path, kind in self._qualname_places_in(view, new.qualname)
                if kind_group(kind) is group]

    def _qualname_places_in(self, view: _VersionView, qualname: str) -> list[tuple[str, str]]:
        """(path, kind) of each definition of ``qualname`` in ``view``."""
        key = (view.key, qualname)
        if key not in self._qualname_places:
            self._qualname_places[key] = mq.places_of(self.database, view.key, qualname)
        return self._qualname_places[key]

    def _left(self, places_a: list[str], new: SymbolSnapshot) -> Iterator[SymbolSnapshot]:
        """A's definitions of ``new``'s qualname (in its kind group) in the files of
        ``places_a`` where B does not define it."""
        for path in dict.fromkeys(places_a):
            if self.b.has(path, new.qualname):
                continue
            occurrence = 0
            while (symbol := self.a.lookup(path, new.qualname, occurrence)) is not None:
                if kind_group(symbol.kind) is kind_group(new.kind):
                    yield symbol
                occurrence += 1

    def _moved(
        self, old: SymbolSnapshot, new: SymbolSnapshot, others: tuple[SymbolSnapshot, ...],
        score: float, via: str,
    ) -> Match:
        content, changes = classify(old, new)
        return Match(old, Verdict.MOVED, new, changes, content, others, score, via)

    def _removed(self, old: SymbolSnapshot, ranked: list[_Scored]) -> Match:
        listed = sorted([*ranked, *self._kept_in_its_file(old, ranked)],
                        key=lambda s: (-s.score, s.symbol.path, s.symbol.qualname))
        listed = [s for s in listed if s.symbol.name == old.name
                  or self._scorer.body_similarity(old, s.symbol) >= CANDIDATE_MIN_BODY
                  ][:MAX_CLOSEST]
        score = listed[0].score if listed else 0.0
        return Match(old, Verdict.REMOVED, None, candidates=tuple(s.symbol for s in listed),
                     score=score, via="none")

    def _kept_in_its_file(self, old: SymbolSnapshot, ranked: list[_Scored]) -> list[_Scored]:
        """The symbols beside ``old`` (same file, same parent) that B kept at their place,
        scored as candidates: a method merged into one that stayed
        (``_get_connector_class_with_compat`` into ``get_connector_class``) is closest to
        it, and the pool holds only the new ones. More than ``BLOCK_CAP`` of them (a module
        of many functions) are not compared, as in blocking."""
        if old.kind == "attribute" or self.b.blob(old.path) is None:
            return []
        known = {s.symbol for s in ranked}
        kept = [symbol for symbol in self._kept_by_parent(old.path).get(old.parent, ())
                if symbol not in known and kind_group(symbol.kind) is kind_group(old.kind)]
        return self._scorer.ranked(old, kept, None) if len(kept) <= BLOCK_CAP else []

    def _kept_by_parent(self, path: str) -> dict[str, list[SymbolSnapshot]]:
        """The symbols of B's file ``path`` that A has at the same place, by parent."""
        if path not in self._kept:
            by_parent: dict[str, list[SymbolSnapshot]] = defaultdict(list)
            for symbol in self.b.file_symbols(path):
                if self.a.has(symbol.path, symbol.qualname, symbol.occurrence):
                    by_parent[symbol.parent].append(symbol)
            self._kept[path] = by_parent
        return self._kept[path]

    # -- where a removed symbol's code went ---------------------------------------------

    def where_code_went(
        self, removed: Sequence[SymbolSnapshot]
    ) -> list[tuple[SymbolSnapshot, ...]]:
        """Of each of ``removed`` (symbols of A that B does not have), the definitions of B
        that hold the most of its distinctive lines (`annotations.code_lines`), lines they
        did not hold at A, when they hold enough of them (``evidence_bar``): the innermost,
        or, of several that hold as many, the one holding them all (a class whose methods
        share them), else each (per-platform copies), at most ``MAX_PLACES``. One line says
        where only in a definition of its name (`_one_line_says_where`); places holding
        different lines need ``MIN_LINES_APART`` each, and those holding only lines of its
        header ``MIN_HEADER_LINES``. A hint for a removed symbol, not a match.

        Asked about all of them at once (a whole-version diff's, a check's), from an index
        of the lines they ask about alone, B's changed files read once: not every line of
        them (290,358 at vLLM v0.20.0 -> v0.25.0; its 1,983 removed symbols ask about
        16,446)."""
        places = LinePlaces(self._changed_files(), frozenset(
            line for old in removed for line in self._lines_asked(old)))
        return [self._where_its_code_went(old, places) for old in removed]

    def _lines_asked(self, old: SymbolSnapshot) -> list[str]:
        """The lines `where_code_went` asks the index about: ``old``'s, and its class's when
        it is an attribute (`_one_line_says_where`)."""
        lines = normalized_lines(old.source)
        if old.kind == "attribute" and old.parent:
            old_class = self.a.lookup(old.path, old.parent)
            lines += normalized_lines(old_class.source) if old_class is not None else []
        return lines

    def _where_its_code_went(
        self, old: SymbolSnapshot, places: LinePlaces
    ) -> tuple[SymbolSnapshot, ...]:
        lines = places.distinctive(old.source)
        held: dict[SymbolSnapshot, set[str]] = defaultdict(set)
        for line in lines:
            for path, number in places.places(line):
                for holder in self._holders_new_to(path, number, line, old):
                    held[holder].add(line)
        header = set() if old.kind == "attribute" else set(normalized_lines(old.signature))
        evidence = {holder: shared for holder, shared in held.items()
                    if len(shared) >= MIN_HEADER_LINES or not shared <= header}
        top = max(map(len, evidence.values()), default=0)
        if not top or top < evidence_bar(len(lines)):
            return ()
        found = _innermost([holder for holder, shared in evidence.items() if len(shared) == top
                            and (top > 1 or self._one_line_says_where(old, holder, places))])
        apart = len({frozenset(evidence[place]) for place in found}) > 1
        return () if apart and top < MIN_LINES_APART else found

    def _one_line_says_where(
        self, old: SymbolSnapshot, holder: SymbolSnapshot, places: LinePlaces
    ) -> bool:
        """Whether ``holder``, holding one line of ``old``, is where its code went: a
        definition of its name; of an attribute, whose one line names it, in its file or in
        a class holding another line of its class (an enum's ``CUTLASS = "CUTLASS"`` stands
        in unrelated enums; ``FlashMLASparseMetadata``'s ``c128a_*`` fields went together to
        ``DeepseekV4FlashMLAMetadata``)."""
        if holder.name != old.name or old.kind != "attribute" or holder.path == old.path:
            return holder.name == old.name
        old_class = self.a.lookup(old.path, old.parent) if old.parent else None
        new_class = self.b.lookup(holder.path, holder.parent) if holder.parent else None
        if old_class is None or new_class is None:
            return False
        theirs = set(normalized_lines(new_class.source)).difference(normalized_lines(old.source))
        return any(line in theirs for line in places.distinctive(old_class.source))

    def _changed_files(self) -> Iterator[tuple[str, str, bytes, str]]:
        """Each file of B that changed: its path, its text, which of its lines are new code
        (`_new_code`), and its text at A (empty when it is new). Files gone at B are left
        out: copies merged into one place (the AWQ methods of five files, now in
        auto_awq.py) are not boilerplate."""
        self.pool()  # loads the symbols of the files that changed
        a_blobs, b_blobs = self.a.blobs(), self.b.blobs()
        changed = [(path, keys) for path, keys in self.b.files()
                   if keys and a_blobs.get(path) != b_blobs[path]]
        contents = self.store.contents(
            [b_blobs[path] for path, _ in changed]
            + [a_blobs[path] for path, _ in changed if path in a_blobs])
        for path, keys in changed:
            former = contents[a_blobs[path]] if path in a_blobs else b""
            yield (path, contents[b_blobs[path]].decode("utf-8", "replace"),
                   self._new_code(keys), former.decode("utf-8", "replace"))

    def _new_code(self, keys: list[_Key]) -> bytes:
        """Which lines of a file of B (by its symbols' keys, in source order), from line 1,
        its innermost definition holds as A did not (a definition new, or changed)."""
        new_rows, old_rows = self.b.rows(), self.a.rows()
        taken = bytearray(max(new_rows[key][_END_LINE] for key in keys) + 1)
        for key in keys:  # a parent comes before its members, which overwrite its lines
            row, old = new_rows[key], old_rows.get(key)
            start, end = row[_START_LINE], row[_END_LINE] + 1
            taken[start:end] = bytes([old is None or old[_EXACT] != row[_EXACT]]) * (end - start)
        return bytes(taken[1:])

    def _holders_new_to(
        self, path: str, number: int, line: str, removed: SymbolSnapshot
    ) -> list[SymbolSnapshot]:
        """B's definitions in ``path`` that hold its line ``number``, ``line``, but those
        that held it at A already (the same definition, at the same place or moved from
        elsewhere than ``removed``) and those around one that did (a class new around a
        method that held it)."""
        holders = self.b.holding(path, number)
        held = [symbol for symbol in holders if any(
            line in lines for before, lines in self._lines_at_a_of(symbol)
            if before != removed and not _inside(before, removed))]
        return [symbol for symbol in holders if symbol not in held
                and not any(_inside(inner, symbol) for inner in held)]

    def _lines_at_a_of(
        self, new: SymbolSnapshot
    ) -> list[tuple[SymbolSnapshot, Container[str]]]:
        """The definitions of A that ``new`` was, with the lines they held, normalized: at
        its place, else those that moved to it (its file moved or renamed, it renamed in
        its file); none when it is new."""
        key = _key_of(new)
        if key not in self._lines_at_a:
            same_place = self.a.lookup(*key)
            before = [same_place] if same_place is not None else self._moved_to(new)
            self._lines_at_a[key] = [
                (old, _EVERY_LINE if old.exact == new.exact
                 else frozenset(normalized_lines(old.source))) for old in before]
        return self._lines_at_a[key]

    def _moved_to(self, new: SymbolSnapshot) -> list[SymbolSnapshot]:
        """A's definitions gone from their place that moved to ``new``, a definition of B
        new at its place, or to a place about as close (a copy of a class split into
        per-platform copies: the xpu copy of ``DeepSeekV4MTP`` held its remapping lines
        as the nvidia one it moved to does): of its qualname, or from its file."""
        pool = self.pool()
        if self._gone_by_path is None:
            self._gone_by_path = defaultdict(list)
            for keys in pool.gone.values():
                for gone in keys:
                    self._gone_by_path[gone[0]].append(gone)
        named = pool.gone.get((kind_group(new.kind), new.name), ())
        keys = [gone for gone in named if gone[1] == new.qualname]
        keys += self._gone_by_path.get(new.path, ())
        matches = (self.match(self.a.loaded(gone)) for gone in dict.fromkeys(keys))
        return [match.old for match in matches if match.new is not None and _key_of(new) in {
            _key_of(place) for place in (match.new, *(
                match.candidates if match.verdict is Verdict.MOVED else ()))}]

    # -- the unmatched remainder -------------------------------------------------------

    def pool(self) -> _Pool:
        """B's unmatched symbols (computed once: loads both versions' symbol rows)."""
        if self._pool is None:
            a_blobs, b_blobs = self.a.blobs(), self.b.blobs()
            self._a_same = self.a.load(lambda path, blob: b_blobs.get(path) == blob)
            self.b.load(lambda path, blob: a_blobs.get(path) == blob, self.a.key)
            # Both versions are loaded but for the files they share unchanged (which a
            # rule may have read already: left out all the same).
            a_rows = {key: row for key, row in self.a.rows().items()
                      if a_blobs[key[0]] != b_blobs.get(key[0])}
            b_rows = {key: row for key, row in self.b.rows().items()
                      if b_blobs[key[0]] != a_blobs.get(key[0])}
            unmatched = [self.b.symbol(key) for key in b_rows if key not in a_rows]
            gone: dict[tuple[KindGroup, str], list[_Key]] = defaultdict(list)
            for key, row in a_rows.items():
                if key not in b_rows:
                    gone[(kind_group(row[_KIND]), key[1].rsplit(".", 1)[-1])].append(key)
            self._pool = _Pool([symbol for symbol in unmatched if symbol is not None], gone)
        return self._pool

    # -- whole versions ----------------------------------------------------------------

    def defined_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The names of every symbol of A and of B, from the rows ``pool`` loads."""
        if self._names is None:
            self.pool()
            shared = {row[_NAME] for row in self._a_same}
            self._names = (
                frozenset(shared.union(row[_NAME] for row in self.a.rows().values())),
                frozenset(shared.union(row[_NAME] for row in self.b.rows().values())),
            )
        return self._names

    def diff(self, workers: int = 1) -> VersionDiff:
        """Every symbol of A against B (see ``diff_versions``), matched by up to
        ``workers`` processes when there are at least ``PARALLEL_MIN_SYMBOLS`` to match."""
        pool = self.pool()
        packages: dict[str, Counter[str]] = defaultdict(Counter)
        for row in self._a_same:
            packages[package_of(row[_PATH])][Verdict.UNCHANGED.value] += 1
        matches: list[Match] = []
        targets: set[SymbolSnapshot | None] = set()
        found = self._match_all(self._to_match(), workers)
        a_blobs, b_blobs = self.a.blobs(), self.b.blobs()
        for path, keys in self.a.files():
            if a_blobs[path] == b_blobs.get(path):
                continue  # loaded while matching, counted with the rest of _a_same
            package = packages[package_of(path)]
            for key in keys:
                match = found.get(key)
                if match is None:  # the same exact fingerprint at the same place
                    package[Verdict.UNCHANGED.value] += 1
                    continue
                package[match.verdict.value] += 1
                if match.verdict is not Verdict.UNCHANGED:
                    matches.append(match)
                if match.verdict is Verdict.MOVED:
                    targets.update((match.new, *match.candidates))
        added = tuple(symbol for symbol in pool.unmatched if symbol not in targets)
        for symbol in added:
            packages[package_of(symbol.path)]["added"] += 1
        return VersionDiff(
            self.a.repo, self.a.version, self.b.version, tuple(matches), added,
            {name: dict(counts) for name, counts in sorted(packages.items())},
        )

    def _to_match(self) -> list[list[_Key]]:
        """Per file of A, the keys of the symbols whose exact fingerprint is not the same
        at the same place in B."""
        old_rows, new_rows = self.a.rows(), self.b.rows()
        per_file = []
        for _path, keys in self.a.files():
            changed = []
            for key in keys:
                new_row = new_rows.get(key)
                if new_row is None or new_row[_EXACT] != old_rows[key][_EXACT]:
                    changed.append(key)
            if changed:
                per_file.append(changed)
        return per_file

    def _match_all(self, per_file: list[list[_Key]], workers: int) -> dict[_Key, Match]:
        """The match of each key. A member's parent is in its file, so a file's keys stay
        in one process; every match depends only on the two versions, so the split does
        not change any result, and this process keeps what the others matched (where a
        removed symbol's code went asks again). Stored in the index (`db.diff_cache`), and
        read back by the next diff of the pair while what they were made of stands."""
        identity = diff_cache.pair_identity(self.database, self.a.key, self.b.key,
                                           comparison.ENGINE)
        stored = diff_cache.cached_matches(self.database, self.a.key, self.b.key, identity)
        if stored is not None:
            results = decode_matches(stored)
        else:
            total = sum(len(keys) for keys in per_file)
            parts = workers if total >= PARALLEL_MIN_SYMBOLS else 1
            results = [item for part in fork_map(
                self._match_part, balanced(per_file, parts),
                in_child=self.database.reconnect_in_child) for item in part]
            diff_cache.store_matches(self.database, self.a.key, self.b.key, identity,
                                     encode_matches(results))
        found = {key: self._expand(key, result) for key, result in results}
        for match in found.values():
            self._matches.setdefault(_match_key(match.old), match)
        return found

    def _match_part(self, keys: list[_Key]) -> list[tuple[_Key, tuple]]:
        """Matches as plain tuples (snapshots by key): what a child can send back."""
        return [(key, _compact(self.match(self.a.loaded(key)))) for key in keys]

    def _expand(self, key: _Key, compact: tuple) -> Match:
        verdict, new_key, changes, content, candidate_keys, score, via = compact
        old = self.a.loaded(key)
        if new_key is None:
            new = None
        elif via == "blob":
            new = old.at_version(self.b.version)
        else:
            new = self.b.lookup(*new_key)
        candidates = tuple(
            symbol for symbol in (self.b.lookup(*item) for item in candidate_keys)
            if symbol is not None
        )
        return Match(old, verdict, new, changes, content, candidates, score, via)


class _EveryLine:
    """Holds every line: the lines of code that did not change."""

    def __contains__(self, line: object) -> bool:
        return True


_EVERY_LINE = _EveryLine()


def _innermost(holders: list[SymbolSnapshot]) -> tuple[SymbolSnapshot, ...]:
    """Of definitions that each hold as many of a symbol's lines: those no other is
    inside, each replaced by the innermost other that holds it and another of them (the
    class whose methods share the lines), in path order, at most ``MAX_PLACES``."""
    inner = [symbol for symbol in holders
             if not any(_inside(other, symbol) for other in holders)]
    found = []
    for symbol in inner:
        around = [outer for outer in holders if _inside(symbol, outer) and any(
            _inside(other, outer) for other in inner if other != symbol)]
        found.append(min(around, key=lambda s: s.end_byte - s.start_byte, default=symbol))
    return tuple(sorted(dict.fromkeys(found), key=lambda s: (s.path, s.start_line)))[:MAX_PLACES]


def _inside(inner: SymbolSnapshot, outer: SymbolSnapshot) -> bool:
    """Whether ``inner`` is a definition within ``outer`` (not ``outer`` itself)."""
    return (inner.path == outer.path and inner != outer
            and outer.start_byte <= inner.start_byte and inner.end_byte <= outer.end_byte)


def _compact(match: Match) -> tuple:
    new = match.new
    return (
        match.verdict, None if new is None else _key_of(new), match.changes, match.content,
        tuple(_key_of(symbol) for symbol in match.candidates), match.score, match.via,
    )


def encode_matches(matches: list[tuple[_Key, tuple]]) -> bytes:
    """`Matcher._match_part`'s (key, compact match) pairs as zlib-compressed JSON."""
    return zlib.compress(json.dumps([
        [list(key), verdict.value, new_key and list(new_key),
         [change_to_data(change) for change in changes], content and content.value,
         [list(candidate) for candidate in candidates], score, via]
        for key, (verdict, new_key, changes, content, candidates, score, via) in matches
    ], separators=(",", ":")).encode())


def decode_matches(data: bytes) -> list[tuple[_Key, tuple]]:
    """The pairs `encode_matches` made ``data`` of."""
    return [
        (_as_key(key), (Verdict(verdict), new_key and _as_key(new_key),
                        tuple(change_from_data(change) for change in changes),
                        content and Verdict(content),
                        tuple(_as_key(candidate) for candidate in candidates), score, via))
        for key, verdict, new_key, changes, content, candidates, score, via
        in json.loads(zlib.decompress(data))
    ]


def _as_key(items: list) -> _Key:
    path, qualname, occurrence = items
    return (path, qualname, occurrence)


def _key_of(symbol: SymbolSnapshot) -> _Key:
    return (symbol.path, symbol.qualname, symbol.occurrence)


def _occurrence(view: _VersionView, row: tuple) -> int:
    """The occurrence of a fingerprint-query row among its file's same-qualname symbols."""
    for symbol in view.file_symbols(row[_PATH]):
        if symbol.qualname == row[_QUALNAME] and symbol.start_byte == row[_START_BYTE]:
            return symbol.occurrence
    return 0


# --- entry points ---------------------------------------------------------------------


def find_symbol(
    database: Database, version_key: int, path: str, qualname: str, occurrence: int = 0,
    store: SourceStore | None = None,
) -> SymbolSnapshot | None:
    """The symbol ``path::qualname`` (its ``occurrence``-th definition) at a version."""
    view = _VersionView(database, version_key, store or SourceStore(database))
    return view.lookup(path, qualname, occurrence)


def find_definition(
    database: Database, version_key: int, path: str, qualname: str, start_line: int,
    store: SourceStore | None = None,
) -> SymbolSnapshot | None:
    """The definition of ``path::qualname`` that starts on ``start_line``: of a qualname
    defined twice in a file (a property's getter and setter), a permalink may cite either;
    the first definition when none starts there."""
    view = _VersionView(database, version_key, store or SourceStore(database))
    return _definition_in(view, path, qualname, start_line)


def _definition_in(
    view: _VersionView, path: str, qualname: str, start_line: int
) -> SymbolSnapshot | None:
    """`find_definition` in ``view``, from the rows it holds of ``path`` (read once)."""
    first, occurrence = None, 0
    while True:
        found = view.lookup(path, qualname, occurrence)
        if found is None or found.start_line == start_line:
            return found or first
        first, occurrence = first or found, occurrence + 1


def match_symbol(
    database: Database, old: SymbolSnapshot, new_version_key: int, *, config_name: str
) -> Match:
    """What became of ``old`` at version ``new_version_key`` (a one-off ``Matcher``);
    ``config_name``: the config, as hints name it."""
    old_key = require_version(database, old.repo, old.version, config_name=config_name)
    return Matcher(database, old_key, new_version_key, old._store).match(old)


def diff_versions(database: Database, a_key: int, b_key: int, workers: int = 1) -> VersionDiff:
    """Every symbol of version ``a_key`` matched at ``b_key``, and what B added."""
    return Matcher(database, a_key, b_key).diff(workers)


def history(
    database: Database, repo: str, symbol: SymbolSnapshot, versions: list[tuple[str, int]]
) -> list[HistoryStep]:
    """``symbol``'s timeline over ``versions`` ((version, key), oldest first).

    The symbol is followed back from its own version to the first listed version where
    it is found (``introduced``), then forward across each consecutive pair, through
    moves, until it is removed (the last step, with where its code went, if anywhere).
    """
    names = [version for version, _ in versions]
    if symbol.version not in names or symbol.repo != repo:
        raise ValueError(f"{repo}@{symbol.version} is not among the listed versions")
    store = symbol._store or SourceStore(database)
    start, back = _back_to_earliest(database, symbol, versions, names.index(symbol.version),
                                    store)
    steps = [HistoryStep(back[0].version, HistoryEvent.INTRODUCED, back[0])]
    current = back[0]
    pairs = zip(versions[start:], versions[start + 1:], strict=False)
    for offset, ((_, key_a), (version_b, key_b)) in enumerate(pairs, start=1):
        matcher = Matcher(database, key_a, key_b, store)
        match = matcher.match(current)
        if offset < len(back):  # up to the version asked about: the way back, exactly
            match = match.towards(back[offset])
        event = HistoryEvent(match.verdict.value)
        if match.new is None:
            [went] = matcher.where_code_went([current])
            steps.append(HistoryStep(version_b, event, None, match, went))
            break
        steps.append(HistoryStep(version_b, event, match.new, match))
        current = match.new
    return steps


def _back_to_earliest(
    database: Database, symbol: SymbolSnapshot, versions: list[tuple[str, int]], index: int,
    store: SourceStore,
) -> tuple[int, list[SymbolSnapshot]]:
    """The index of the first version where ``symbol`` is found going back from its own
    (``index``), and the symbol at each version from there to its own, oldest first."""
    back = [symbol]
    while index > 0:
        match = Matcher(database, versions[index][1], versions[index - 1][1], store).match(
            back[0]
        )
        if match.new is None:
            break
        back.insert(0, match.new)
        index -= 1
    return index, back
