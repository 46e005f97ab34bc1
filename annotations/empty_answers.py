"""What to tell a user whose query found nothing, when an empty answer would hide the
reason: a typo, a name defined in another version, a file no version has (or a wheel
does not hold), a folder or a class whose parts claims cite. Each function returns the
text of a note (the CLI prints it), or None when the empty answer needs none.
"""

from __future__ import annotations

from pathlib import Path

from db import queries
from db.database import Database
from indexer.config import ProjectConfig

# The links' and citations' modules (and YAML's, through them: 40 ms) are imported by the
# functions that need them: `annotate symbols` and `xref` import this module, and need
# none of them unless their answer is empty.

MEMBERS_NAMED = 5
"""Members (a folder's files) named in the note on claims that cite them, not the class
(folder)."""


def nothing_cites(database: Database, config: ProjectConfig, symbol: str) -> str | None:
    """Why no claim cites ``symbol`` (``annotate links SYMBOL``): a file no indexed version
    has, a class whose members claims cite, or a name nothing defines."""
    from annotations.citations import file_path, written_as_a_file

    if written_as_a_file(symbol):
        return unknown_file(database, file_path(symbol))
    return cited_members(database, config, symbol) or unknown_name(
        database, symbol, config.file_name)


def nothing_defines(
    database: Database, name: str, repo: str, version: str, *, referenced: bool,
    config_name: str,
) -> str | None:
    """Why ``repo@version`` defines nothing named ``name`` (``annotate xref``): it is
    defined in other versions, or is a file's path; else, when nothing refers to it
    either (not ``referenced``), it is a name nothing defines."""
    from annotations.citations import file_path, written_as_a_file

    elsewhere = defined_elsewhere(database, name, repo, version)
    if elsewhere is not None:
        return elsewhere
    if written_as_a_file(name):
        return unknown_file(database, file_path(name))
    if referenced:
        return None
    return unknown_name(database, name, config_name, (repo, version))


def no_claims_of(database: Database, config: ProjectConfig, article: str) -> str:
    """Why ``article`` has no stored links: the file holds no claims, or is no annotation
    file or article of the config, or no file or article has that name."""
    from annotations.links import (
        LinkState,
        annotation_files,
        file_named,
        link_state,
        selects,
    )
    from annotations.loader import display_path
    from db.claims import claim_order
    from db.close_matches import close_matches, did_you_mean

    path = file_named(config, article)
    if path is None:
        stored = sorted({name for row in claim_order(database) for name in (row[0], row[2])})
        close = [name for name in stored if name.endswith(f"/{article}")] or close_matches(
            article, stored, n=1, cutoff=0.8)
        return f"no claims of article '{article}' are linked; " + (
            did_you_mean(close) if close else "check the path, or run 'annotate link'")
    shown = display_path(Path(path), config.root)
    files = annotation_files(config)
    if not selects(files, path):
        return (f"'{shown}' is neither an annotation file nor an article: the 'annotations' "
                f"and 'articles' globs of {config.file_name} do not select it")
    if link_state(database, config, files) is LinkState.CURRENT:
        return f"'{shown}' holds no claims"
    return (f"'{shown}' held no claims at the last link; run 'annotate link' to link the "
            "claims it holds now")


def cited_members(database: Database, config: ProjectConfig, symbol: str) -> str | None:
    """Which members of ``symbol`` claims cite, if any."""
    from annotations.citations import member_links

    rows = member_links(database, config, symbol)
    if not rows:
        return None
    members = list(dict.fromkeys(f"{row['path']}::{row['qualname']}" for row in rows))
    return claims_citing_parts(rows, "members", members)


def claims_citing_parts(rows: list[dict], parts_name: str, parts: list[str]) -> str:
    """How many claims of ``rows`` cite ``parts`` (a class's members, a folder's files),
    the first `MEMBERS_NAMED` of them, and the command that lists those of one."""
    more = f", and {len(parts) - MEMBERS_NAMED} more" if len(parts) > MEMBERS_NAMED else ""
    claims = len({(row["article"], row["claim_id"]) for row in rows})
    cite = "claims cite" if claims != 1 else "claim cites"
    return (f"{claims} {cite} its {parts_name}: {', '.join(parts[:MEMBERS_NAMED])}{more}; "
            f"'annotate links {parts[0]}' lists those of one")


def unknown_name(
    database: Database, name: str, config_name: str, version: tuple[str, str] | None = None
) -> str | None:
    """When nothing (at ``version``, or in any indexed version) defines ``name`` (not a
    file's path: `unknown_file`): a typo, most likely; ``config_name``: the config, as
    hints name it."""
    from annotations.citations import names_its_place

    if names_its_place(name):
        return None
    short = name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]
    key = queries.require_version(database, *version, config_name=config_name) if version else None
    close = queries.names_close_to(database, short, key)
    if close is None:
        return None
    where = f"at {version[0]}@{version[1]}" if version else "in any indexed version"
    closest = f" (closest: {', '.join(close)})" if close else ""
    return f"nothing named '{short}' is defined {where}{closest}"


def unknown_file(database: Database, path: str) -> str | None:
    """When no indexed version has a file ``path``: a typo, or a folder."""
    if queries.is_indexed_path(database, path):
        return None
    return f"no indexed version has a file '{path}'{_file_advice(database, path)}"


def _file_advice(database: Database, path: str) -> str:
    """What to write for ``path``, which no indexed version has as a file: of a folder, the
    files in it that claims cite (not its module, which is its ``__init__.py`` alone);
    else the closest paths, if any."""
    from annotations.citations import links_in_folder

    if not queries.is_indexed_folder(database, path):
        close = queries.paths_close_to(database, path)
        return f" (closest: {', '.join(close)})" if close else ""
    rows = links_in_folder(database, path)
    if not rows:
        return ": it is a folder, and no claim cites a file in it"
    files = sorted({row["path"] for row in rows})
    return f": it is a folder; {claims_citing_parts(rows, 'files', files)}"


def no_file_matches(
    database: Database, pin: str, version_key: int, path_glob: str
) -> str | None:
    """When no file of version ``pin`` matches ``path_glob`` (``annotate symbols
    --path``): the closest paths, and which paths the version has."""
    matches = queries.path_matcher(path_glob)
    paths = queries.version_paths(database, version_key)
    if any(matches(path) for path in paths):
        return None
    close = queries.closest_paths(path_glob.removeprefix("./"), paths)
    closest = f" (closest: {', '.join(close)})" if close else ""
    return (f"no file of {pin} matches --path {path_glob}{closest}; "
            + _where_files_are(database, pin, version_key, paths, path_glob))


def _where_files_are(
    database: Database, pin: str, version_key: int, paths: list[str], path_glob: str
) -> str:
    """Which paths version ``pin`` has: of a wheel, its package's files only, unless
    ``path_glob`` is in its package's folder (a path that is not there, which a git index
    would not have either)."""
    tops = {path.split("/", 1)[0] for path in paths}
    in_package = path_glob.removeprefix("./").split("/", 1)[0] in tops
    if in_package or queries.version_source(database, version_key) != "pypi":
        return "paths are relative to the repository, as in vllm/config/cache.py"
    folders = ", ".join(f"{top}/" for top in sorted(tops))
    return (f"it was indexed from its PyPI wheel, which holds its package's Python files "
            f"only, under {folders} (to list others, index {pin} from git, or from a checkout "
            "with --from PATH, into a new index, --db NEW.db)")


def defined_elsewhere(database: Database, name: str, repo: str, version: str) -> str | None:
    """Where ``name``, which ``repo@version`` does not define, is defined (another repo's
    name, as LMCacheEngine for vllm's target, or a removed one), if anywhere."""
    elsewhere = [f"{r}@{v}" for r, v in queries.versions_defining(database, name)]
    if not elsewhere:
        return None
    same_repo = [place for place in elsewhere if place.startswith(f"{repo}@")]
    return (f"nothing named '{name}' is defined at {repo}@{version}; it is defined at "
            f"{', '.join(elsewhere)}: 'annotate xref {name} {(same_repo or elsewhere)[-1]}' "
            "lists it there")
