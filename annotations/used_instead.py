"""What the users of a removed module-level symbol name instead: a hint of ``check``.

``spec_manager_map``, a dict that vLLM v0.25.0 replaced by a registry, is not found at
v0.25.0, and its code went nowhere; its user ``get_manager_for_kv_cache_spec`` lives on
and now asks ``KVCacheSpecRegistry``. `SymbolComparer` finds it once per removed symbol
and version pair, with where its code went, and stores it with its comparison.
"""

from __future__ import annotations

import difflib
import keyword
import re
from collections.abc import Callable, Sequence

from annotations.changes import logical_lines
from annotations.diffs.usage import used_identifiers
from annotations.errors import AnnotationError
from annotations.modules import VersionModules
from annotations.refs import parse_ref
from annotations.resolve import Resolved, Resolver
from annotations.xref import references_in
from db import references as store
from db.database import Database
from db.queries import module_name
from indexer.literals import blank_literals

USERS_NAMED = 3
_TOKEN = re.compile(r"\w+|==|!=|<=|>=|->|:=|\*\*|//|[^\w\s]")
"""A token of Python code without its strings and comments: a word, or an operator."""

UsersInstead = tuple[tuple[str, tuple[str, ...]], ...]
"""(a user's qualname at the pin, the places it names instead: ``REPO@VERSION:PATH::QUALNAME``
each), in the order of the users."""


def used_instead(
    resolver: Resolver, pinned: Resolved, new_place: Callable[[Resolved], Resolved | None]
) -> UsersInstead:
    """Of ``pinned``, a removed module-level symbol, each of its users at the pin (the
    innermost definitions that name it, as ``xref`` resolves them: by import or in their
    module; up to `USERS_NAMED`) that lives on at the target (``new_place``) naming it no
    more, with the classes and functions it names in its place in the statements that
    replaced those naming it (`_replacing`): ``get_manager_for_kv_cache_spec`` names
    ``KVCacheSpecRegistry`` where it named ``spec_manager_map``."""
    name = pinned.qualname
    if not name or "." in name:
        return ()
    found: dict[str, tuple[str, ...]] = {}
    for path, qualname in _users(resolver, pinned)[:USERS_NAMED]:
        user = _place(resolver, f"{pinned.pin}:{path}::{qualname}")
        if user is None:  # a file no ref can name (``a::b.py``)
            continue
        new = new_place(user)
        if new is not None and new.qualname is not None and (
                places := _replacing(resolver, name, resolver.text_of(user), new)):
            found[qualname] = tuple(place.canonical for place in places)
    return tuple(found.items())


def _users(resolver: Resolver, pinned: Resolved) -> list[tuple[str, str]]:
    """(path, qualname) of the innermost definitions at the pin whose code names
    ``pinned``, a module-level symbol, resolved by import or in their module, in the order
    ``xref`` finds them; not ``pinned`` itself."""
    name = pinned.qualname or ""
    references = references_in(resolver.database, pinned.version_key, name,
                               user_files(resolver.database, pinned))
    return list(dict.fromkeys(
        (found.path, found.enclosing) for found in references
        if found.enclosing and found.target == f"{pinned.path}::{name}"
        and found.context != "import" and found.resolution in ("import", "local")
        and not (found.path == pinned.path and found.enclosing.partition(".")[0] == name)))


def user_files(database: Database, pinned: Resolved) -> list[tuple[str, str]]:
    """(path, blob_id) of the files at the pin where `_users` can be, in path order: its
    own; those that import its name; those that import whole a module that binds it (its
    own, or one that re-exports it: ``import vllm.envs as envs`` for ``envs.VLLM_X``).
    Those where xref would find them, from a scan of the imports or two: xref reads every
    file that names the symbol, ~100 ms for one at vLLM v0.20.0 (``logger``, say)."""
    name, version_key = pinned.qualname or "", pinned.version_key
    modules = VersionModules(database, version_key)
    files = {pinned.path: modules.paths[pinned.path]}
    binding: set[str] = set()
    rows: list[tuple[str, str, tuple]] = []
    wanted = [name, "*"]
    while (more := {pinned.path} | _reexporting(modules, pinned, rows)) - binding:
        named = {module_name(path) for path in more - binding}
        lasts = [module.rpartition(".")[2] for module in named]
        binding = more
        rows += store.importing_files(database, version_key, [*wanted, *lasts], named)
        wanted = []
    files.update((path, blob_id) for path, blob_id, row in rows if row[2] != "*")
    return sorted(files.items())


def _reexporting(
    modules: VersionModules, pinned: Resolved, rows: list[tuple[str, str, tuple]]
) -> set[str]:
    """The files of ``rows`` (imports) whose module binds ``pinned`` by importing it: by
    its name, or ``*`` of one that does."""
    target, name = f"{pinned.path}::{pinned.qualname}", pinned.qualname or ""
    found: set[str] = set()
    tried: set[str] = set()
    while True:
        sources = {pinned.path} | found
        more = {path for path, _blob, (_line, module, imported, alias, level) in rows
                if path not in tried and (name in (imported, alias) or (
                    imported == "*" and modules.module_path(module, level, path) in sources))}
        if not more:
            return found
        tried |= more
        found |= {path for path in more if modules.follow(path, name) == target}


def _place(resolver: Resolver, ref: str) -> Resolved | None:
    try:
        return resolver.resolve(parse_ref(ref))
    except AnnotationError:
        return None


LONGEST_STATEMENT = 2000
"""Tokens of the longest statement of a user that is aligned with what replaced it: the
alignment's cost grows with the square of the length (a 9,000-token literal took 3.5 s),
and a statement that long is a table of data, whose one entry names nothing in its place."""


def _replacing(resolver: Resolver, name: str, before: str, new: Resolved) -> tuple[Resolved, ...]:
    """The classes and functions that ``new``'s module binds and that ``new`` names in the
    place of ``name``: each statement of ``before`` naming it that was rewritten (the two
    texts' statements aligned by ``difflib``) against the most alike of those that replaced
    it (`_in_place`); none when ``new`` still names it."""
    after = resolver.text_of(new)
    if name.encode() in used_identifiers(after.encode()):
        return ()
    old, rewritten = _statements(before), _statements(after)
    words: dict[str, None] = {}
    matcher = difflib.SequenceMatcher(None, old, rewritten, autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag != "replace":
            continue
        replaced = {word for statement in old[old_start:old_end] for word in statement}
        for statement in old[old_start:old_end]:
            if name in statement and len(statement) <= LONGEST_STATEMENT:
                alike = _most_alike(statement, rewritten[new_start:new_end])
                words.update(dict.fromkeys(
                    word for word in _in_place(name, statement, alike) if word not in replaced))
    places = (resolver.function_or_class_named(new, word) for word in words)
    return tuple(dict.fromkeys(place for place in places
                               if place is not None and place.qualname != new.qualname))


def _statements(code: str) -> list[tuple[str, ...]]:
    """The statements of ``code`` (its logical lines), as tokens, strings and comments left
    out."""
    blanked = blank_literals(code.encode()).decode()
    return [tuple(_TOKEN.findall(line)) for line in logical_lines(blanked, blanked)]


def _most_alike(statement: tuple[str, ...], others: list[tuple[str, ...]]) -> tuple[str, ...]:
    """Of ``others``, the first of those most like ``statement``, token for token."""
    if len(others) == 1:
        return others[0]
    return max(others, key=lambda other: difflib.SequenceMatcher(
        None, statement, other, autojunk=False).ratio())


def _in_place(name: str, old: tuple[str, ...], new: tuple[str, ...]) -> list[str]:
    """The names ``new`` writes where ``old`` has ``name``: in each stretch of ``old``
    holding it that ``new`` rewrote (tokens aligned by ``difflib``) and that code both keep
    follows (the call's arguments, the rest of the line: ``spec_manager_map[type(spec)]``
    made ``KVCacheSpecRegistry.get_manager_class(spec)``), the words of ``new``'s stretch
    that name something there; or, where the one change of the statement is one word for
    another, that word (`_one_word_swapped`). What ``new`` merely ends with does not count:
    ``force_kernel = _NVFP4_BACKEND_TO_KERNEL.get(backend)`` set against a new branch's
    ``force_kernel = MarlinNvFp4LinearKernel`` names no successor of the dict."""
    found: list[str] = []
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    swapped = _one_word_swapped(opcodes)
    for tag, old_start, old_end, new_start, new_end in opcodes:
        if tag == "replace" and name in old[old_start:old_end] and (
                old_end < len(old) or swapped):
            found += [new[index] for index in range(new_start, new_end)
                      if _names_something(new, index)]
    return found


def _one_word_swapped(opcodes: Sequence[tuple[str, int, int, int, int]]) -> bool:
    """Whether the one change of two statements is one word for another (``raise OldError``
    made ``raise NewError``, ``@old_wrap`` made ``@new_wrap``): at the statement's end, no
    code both keep follows it, yet the rest of the statement is kept whole."""
    changed = [opcode for opcode in opcodes if opcode[0] != "equal"]
    return len(changed) == 1 and changed[0][0] == "replace" and (
        changed[0][2] - changed[0][1] == changed[0][4] - changed[0][3] == 1)


def _names_something(tokens: tuple[str, ...], index: int) -> bool:
    """Whether ``tokens[index]`` is a name a module can bind: an identifier, not a keyword,
    not an attribute after a dot, not a keyword argument's name (``dtype`` in
    ``f(x, dtype=t)``)."""
    word = tokens[index]
    before = tokens[index - 1] if index else ""
    after = tokens[index + 1] if index + 1 < len(tokens) else ""
    return (word.isidentifier() and not keyword.iskeyword(word) and before != "."
            and not (after == "=" and before in ("(", ",")))
