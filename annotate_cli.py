"""The ``annotate`` command: a thin layer turning library results and errors into output.

Every error a user can cause is one line on stderr (``Error: ...``) and exit code 2.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import json
import os
import shlex
import signal
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from annotate_start import INTERRUPTED
from annotations.diff_report import DIFF_FORMATS
from annotations.reports import FORMATS
from annotations.wording import counted
from db.config_names import table_in
from db.errors import DatabaseError
from indexer.config import (
    ProjectConfig,
    check_version_name,
    folder_in_repository,
    load_config,
    refuse_a_pypi_number,
    run_from,
)
from indexer.errors import ConfigError, IndexerError
from indexer.models import SymbolKind
from indexer.stopping import STOPPING_SIGNALS

if TYPE_CHECKING:
    from annotations.errors import AnnotationError
    from db.database import Database

P = ParamSpec("P")
R = TypeVar("R")


class UserError(click.ClickException):
    exit_code = 2

    def __init__(self, message: str) -> None:
        from annotations.errors import one_line  # a path may hold a line break

        super().__init__(one_line(message))


def _library_errors() -> tuple[type[Exception], ...]:
    from annotations.errors import AnnotationError

    return (IndexerError, DatabaseError, AnnotationError)


def reports_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn the libraries' named errors into ``Error: ...`` and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except _library_errors() as error:
            raise UserError(str(error)) from None
        except sqlite3.Error as error:
            if "full" in str(error):  # SQLITE_FULL: the transaction was rolled back whole
                raise UserError(f"the index database failed: {error}; free some space on "
                                "its disk and run the command again") from None
            if "locked" in str(error):
                from db.database import LOCKED_HINT

                raise UserError(f"the index database is locked by another process ({error}); "
                                f"{LOCKED_HINT}") from None
            if "readonly" in str(error):
                raise UserError(f"the index database cannot be written ({error}); make it, "
                                "its -wal and -shm files and its folder writable, or pass "
                                "another --db PATH") from None
            raise UserError(
                f"the index database failed: {error}; if it is damaged, rebuild it with "
                "'annotate index' into a fresh --db PATH"
            ) from None
        except KeyboardInterrupt as interrupt:
            click.echo(INTERRUPTED, err=True)
            sys.exit(128 + getattr(interrupt, "signum", signal.SIGINT))
        except OSError as error:
            if error.errno not in _OUTPUT_ERRNOS:
                raise
            _drop_standard_output()
            raise UserError(f"cannot write the output: {error.strerror}; free some space, "
                            "or send the output elsewhere") from None

    return wrapper


_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""What writing standard output can fail with (click handles a closed pipe itself); every
other file the commands write turns its errors into named ones."""


def _drop_standard_output() -> None:
    """Point standard output at the null device, so that the flush at exit of what could
    not be written does not fail again with a traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class Context:
    def __init__(self, db_path: str | None, config_path: str | None) -> None:
        self._db_path = db_path
        self._config_path = config_path
        self._blobs_checked = False  # a command may open the index several times

    @functools.cached_property
    def config(self) -> ProjectConfig:
        config = load_config(config_file=Path(self._config_path) if self._config_path else None)
        if self._config_path is None and self._db_path is None:
            _refuse_a_subfolder(config)
        return config

    @property
    def db_path(self) -> Path:
        return Path(self._db_path) if self._db_path else self.config.db

    def database(self, create: bool = False) -> Database:
        from db.database import open_database

        database = open_database(self.db_path, create=create, notify=_note)
        # `annotate index` (the one command that creates) parses them again
        if not create and not self._blobs_checked:
            self._blobs_checked = True
            _note_outdated_blobs(database)
        return database


def _refuse_a_subfolder(config: ProjectConfig) -> None:
    """Refuse to run with the defaults in a subfolder of a project (``articles/``), where
    the index would be another one, built or read in ``articles/.annotate/``."""
    found = config.config_above()
    if found is not None:
        raise UserError(f"no annotate.toml in {config.root}; {run_from(found)}")


def _note_outdated_blobs(database: Any) -> None:
    from db import queries
    from indexer.extractor import extractor_id

    if queries.has_outdated_blobs(database, extractor_id()):
        _note(
            "Note: some blobs were indexed by another extractor (an older annotate or "
            "tree-sitter); run 'annotate index' to parse them again"
        )


def _cores(most: int) -> int:
    """The processes a command uses by default: one per core it may use, up to ``most``."""
    from indexer.cores import available_cores

    return min(available_cores(), most)


def _note(message: str) -> None:
    click.echo(message, err=True)


def _note_outdated_links(context: Context, database: Any, files: Any = None) -> None:
    """Commands that read the stored links say so when the annotation files (``files``,
    default those the config's globs find), the index or annotate's way of linking changed
    since the last link, instead of linking again themselves: run from another folder,
    that would replace the links with that folder's claims."""
    from annotations.links import LinkState, link_state
    from db import claims as claim_store

    state = link_state(database, context.config, files)
    if state is LinkState.CHANGED and not claim_store.was_linked(database):
        _note("Note: no claim is linked yet, so none is shown here; run 'annotate link' (or "
              "'annotate check') first")
    elif state is LinkState.CHANGED:
        _note("Note: the annotation files, the index or annotate changed since the last link; "
              "run 'annotate link' (or 'annotate check') to bring the claims shown here up to "
              "date")
    elif state is LinkState.NO_FILES:
        _note(f"Note: no annotation file under {context.config.root} matches the config's "
              "globs; the claims shown are those of the last link")
    elif state is LinkState.UNREADABLE:
        _note("Note: some annotation files could not be read at the last link, and keep the "
              "claims they had before; run 'annotate link' to see which")


pass_context = click.make_pass_decorator(Context)


class OneLineUsageError(click.UsageError):
    """A usage error shown as one ``Error:`` line that says where the help is, instead of
    click's usage text, blank line and error."""

    def __init__(self, message: str, command_path: str) -> None:
        super().__init__(message)
        self.command_path = command_path

    def show(self, file: Any = None) -> None:
        message = self.format_message()  # click ends some with a period: "'xml' is not one of ..."
        if message.endswith(".") and not message.endswith(".."):
            message = message[:-1]
        click.echo(f"Error: {message} (see '{self.command_path} --help')", err=True)


class OneLineErrorsGroup(click.Group):
    """The command group whose usage errors, its own and its commands', are one line."""

    def make_context(
        self, info_name: str | None, args: list[str], *rest: Any, **kwargs: Any
    ) -> click.Context:
        with _usage_errors_on_one_line(lambda: info_name or self.name or "annotate"):
            return super().make_context(info_name, args, *rest, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``annotate`` alone asks what it can do: the help, and success (click 8.2 made
        it a usage error)."""
        if not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help())
            ctx.exit(0)
        ctx.meta[_ARGUMENTS] = list(args)
        return super().parse_args(ctx, args)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        ctx.meta[_COMMAND_PATH] = f"{ctx.command_path} {name}"  # before its options parse
        given = ctx.meta.get(_ARGUMENTS, [])
        ctx.meta[_INVOCATION] = (given[:len(given) - len(args)], name or "", list(rest))
        return name, command, rest

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Every command takes ``--db PATH`` after its name too, after its own options."""
        cmd.params.append(_db_after_the_command())
        super().add_command(cmd, name)

    def invoke(self, ctx: click.Context) -> Any:
        with _usage_errors_on_one_line(lambda: ctx.meta.get(_COMMAND_PATH, ctx.command_path)):
            try:
                return super().invoke(ctx)
            except click.NoSuchOption as error:
                _refuse_misplaced_global_options(self, ctx, error)
                raise


_COMMAND_PATH = "annotate.command_path"
_ARGUMENTS = "annotate.arguments"
_INVOCATION = "annotate.invocation"
"""The global arguments, the command's name and its arguments, as given."""

GLOBAL_OPTIONS = {"--db": "PATH", "--config": "FILE"}
"""The group's options, with the metavar of their value."""


def _refuse_misplaced_global_options(
    group: click.Group, ctx: click.Context, error: click.NoSuchOption
) -> None:
    """``annotate check --config a.toml``: say where ``--config`` goes, with the command
    line fixed (every global option the command does not take moved before its name)."""
    if error.option_name not in GLOBAL_OPTIONS or _INVOCATION not in ctx.meta:
        return
    given, name, rest = ctx.meta[_INVOCATION]
    command = group.get_command(ctx, name)
    taken = {opt for param in (command.params if command else ()) for opt in param.opts}
    moved, kept = _move_global_options(rest, set(GLOBAL_OPTIONS) - taken)
    from annotations.errors import one_line

    misplaced = list(dict.fromkeys(moved[::2]))  # moved: each option, then its value
    # given before the command too: the later value is the one the user means
    _, given = _move_global_options(given, set(misplaced))
    fixed = one_line(shlex.join([ctx.find_root().info_name or "annotate", *given, *moved,
                                 name, *kept]))
    verb = "goes" if len(misplaced) == 1 else "go"
    raise UserError(f"{' and '.join(misplaced)} {verb} before the command: {fixed}") from None


def _move_global_options(
    arguments: list[str], options: set[str]
) -> tuple[list[str], list[str]]:
    """``arguments`` split into the ``options`` (each followed by its value, or its
    metavar when it has none) and the others; nothing after ``--`` is an option."""
    moved: list[str] = []
    kept: list[str] = []
    items = iter(arguments)
    for argument in items:
        option, equals, value = argument.partition("=")
        if argument == "--":
            kept += [argument, *items]
        elif option in options:
            given = value if equals else next(items, None)
            moved += [option, GLOBAL_OPTIONS[option] if given is None else given]
        else:
            kept.append(argument)
    return moved, kept


@contextlib.contextmanager
def _usage_errors_on_one_line(command_path: Callable[[], str]) -> Iterator[None]:
    """Click's usage errors as `OneLineUsageError`; ``command_path`` names the command
    when click has not given the error a context (an option missing its value)."""
    try:
        yield
    except OneLineUsageError:
        raise
    except click.UsageError as error:
        path = error.ctx.command_path if error.ctx else command_path()
        raise OneLineUsageError(error.format_message(), path) from None


def _not_empty(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """An empty argument or option (``annotate show "$REF"`` with REF unset), or one of only
    white space (``-o "$OUT "``), is refused as such, every command's alike, not read as a
    ref ("empty reference"), a glob that matches no file, a name nothing defines, or a path
    (an empty ``--db``, taken as not given, would read or write the default index; ``-o " "``
    would write a file named " ")."""
    if value is not None and not value.strip():
        raise click.BadParameter("it is empty", param_hint=_named(ctx, param))
    return value


def _named(ctx: click.Context, param: click.Parameter) -> str:
    """``param`` as every usage error names it: an option as click does ('--output' /
    '-o'), an argument by its metavar without the marks of an optional or repeated one
    ('REPO@VERSION' of ``[REPO@VERSION]...``, which click would keep)."""
    if not isinstance(param, click.Argument):
        return param.get_error_hint(ctx)
    return f"'{(param.metavar or (param.name or '').upper()).strip('[].')}'"


def _none_empty(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
                ) -> tuple[str, ...]:
    """`_not_empty` for an option given any number of times (``--bump "$CLAIM"``)."""
    for value in values:
        _not_empty(ctx, param, value)
    return values


def _an_existing_path(ctx: click.Context, param: click.Parameter, value: str | None
                      ) -> Path | None:
    """``--from`` as a path that exists; an empty one is refused by `_not_empty`, where
    click would take it for the current folder or say "Path '' does not exist"."""
    given = _not_empty(ctx, param, value)
    if given is None:
        return None
    return click.Path(exists=True, path_type=Path).convert(given, param, ctx)


def _an_output(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """``--output`` as a path, None for standard output (``-o -``, as click's own file
    options read it; ``-o ./-`` names a file ``-``); an empty one (``-o "$OUT"`` unset) is
    refused by `_not_empty`, where it would be taken for the current folder, and one that
    ends with a slash (``-o "$DIR/"``), which `Path` would take for the file before it."""
    given = _not_empty(ctx, param, value)
    if given == "-":
        return None
    if given is not None and given.endswith(("/", os.sep)):
        raise click.BadParameter(
            f"{given!r} ends with a slash, which names a folder: give the report file's "
            f"path ({given.rstrip('/' + os.sep) or 'report'}, say)", param_hint=_named(ctx, param))
    return Path(given) if given is not None else None


@click.group(cls=OneLineErrorsGroup)
@click.version_option(package_name="vllm-annotate")
@click.option("--db", "db_path", metavar="PATH", callback=_not_empty,
              help="Index database (default from config).")
@click.option("--config", "config_path", metavar="FILE", callback=_not_empty,
              help="Config file (default: annotate.toml, or [tool.annotate] in "
                   "pyproject.toml, in the current folder only).")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, config_path: str | None) -> None:
    """Index vLLM versions, link article claims to symbols, and flag stale claims.

    Give --config before the command: annotate --config other.toml check (--db goes
    before it or after it).
    """
    ctx.obj = Context(db_path, config_path)


def split_version(text: str, param_hint: str) -> tuple[str, str]:
    """``REPO@VERSION`` as (repo, version); ``param_hint``: the argument or option it was
    given as, which a usage error names."""
    from annotations.errors import one_line  # a line break in it would split the error

    repo, at, version = text.partition("@")
    if not at or not repo or not version:
        raise click.BadParameter(
            f"'{one_line(text)}' is not REPO@VERSION (for example vllm@v0.20.0)",
            param_hint=param_hint,
        )
    # a hint to run 'annotate index' for a version that can never be indexed would mislead
    try:
        return repo, check_version_name(one_line(version))
    except ConfigError as error:
        raise click.BadParameter(str(error), param_hint=param_hint) from None


def require_indexed(
    database: Database, config: ProjectConfig, pin: tuple[str, str], param_hint: str
) -> int:
    """The key of the indexed version ``pin`` (repo, version), given as the argument or
    option ``param_hint``, which the usage error of one not indexed names: of a command's
    two versions, it says which one is wrong."""
    from db.errors import MissingIndex

    repo, version = pin
    try:
        return config.require_version(database, repo, version)
    except MissingIndex as error:
        raise click.BadParameter(str(error), param_hint=param_hint) from None


def _db_after_the_command() -> click.Option:
    """``--db PATH`` after the command name too: ``annotate show REF --db x.db``; the
    group gives it to every command (`OneLineErrorsGroup.add_command`)."""

    def remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if _not_empty(ctx, param, value) is not None:
            context = ctx.find_object(Context)
            assert context is not None  # made by the group before its command's options
            context._db_path = value

    return click.Option(["--db"], metavar="PATH", expose_value=False, callback=remember,
                        help="Index database (default from config).")


# --- index --------------------------------------------------------------------------


@cli.command()
@click.argument("versions", nargs=-1, metavar="[REPO@VERSION]...", callback=_none_empty)
@click.option("--from", "from_path", metavar="PATH", callback=_an_existing_path,
              help="Read the one version given from this checkout or wheel.")
@click.option("--keep-going", is_flag=True,
              help="Exit 0 even when some versions cannot be fetched (they are reported).")
@click.option("--workers", type=click.IntRange(1, 64),
              help="Parser processes (default: cores, at most 8).")
@click.option("--no-references", is_flag=True, hidden=True,
              help="Skip names and imports (the benchmark compares with and without).")
@pass_context
@reports_errors
def index(
    context: Context,
    versions: tuple[str, ...],
    from_path: Path | None,
    keep_going: bool,
    workers: int | None,
    no_references: bool,
) -> None:
    """Index the given versions, or every configured one."""
    _refuse_above_a_project(context)
    wanted = [split_version(text, "'REPO@VERSION'") for text in versions] or [
        (repo.name, version)
        for repo in context.config.repos.values()
        for version in repo.versions
    ]
    if from_path is not None and len(wanted) != 1:
        raise click.UsageError("--from reads one version: name exactly one REPO@VERSION")
    if not wanted:
        _parse_again_or_refuse(context, workers)
        return
    for repo, version in wanted:  # before the database is opened: a typo creates no index
        refuse_a_pypi_number(context.config.repo(repo), version)
    alone = len(wanted) == 1 and not keep_going  # its one error is the command's error
    # what --keep-going lets pass is a warning: "Error:" in a green CI log reads as a failure
    echo = None if alone else ("Warning" if keep_going else "Error")
    failures = _index_all(context, wanted, from_path, workers, echo_as=echo,
                          references=not no_references)
    if failures and alone:
        raise UserError(failures[0])
    if failures and not keep_going:
        raise UserError(
            f"{len(failures)} of {len(wanted)} versions could not be indexed (see above)"
        )


def _refuse_above_a_project(context: Context) -> None:
    """Refuse to index with the defaults above a project's folder (a repository's top, its
    config in ``docs/``): the built-in versions, some 500 MB of wheels, into an index of
    this folder that the project's commands do not read."""
    found = context.config.config_below()
    if found is not None:
        raise UserError(f"no annotate.toml in {context.config.root}, so 'annotate index' would "
                        f"index the built-in defaults, not those of {found}; {run_from(found)} "
                        f"(for the defaults here, write an empty annotate.toml in "
                        f"{context.config.root})")


def _parse_again_or_refuse(context: Context, workers: int | None) -> None:
    """`annotate index` with no version named and none configured: parse again what
    another extractor indexed, when an index is there; else say there is nothing to do
    (an empty index, which `versions` answers with 'run annotate index', would loop)."""
    from indexer.pipeline import reextract_outdated

    if context.db_path.exists():
        with context.database(create=True) as database:
            reextracted = reextract_outdated(database, progress=_progress(), workers=workers)
        if reextracted is not None:
            click.echo(_reextraction_summary(*reextracted))
            return
    config = context.config
    where = config.file_name if config.source_file else "the config"
    raise UserError(f"no version to index: {where} lists none; name one ('annotate index "
                    f"{next(iter(config.repos))}@VERSION'), or list them in 'versions' of "
                    f"{config.table('repos.NAME')}")


def _index_all(
    context: Context, wanted: list[tuple[str, str]], from_path: Path | None, workers: int | None,
    echo_as: str | None = "Error", references: bool = True,
) -> list[str]:
    """Index each version; a version that fails is listed, and said as ``echo_as``
    ("Error", "Warning") unless that is None."""
    from indexer.errors import SourceError
    from indexer.pipeline import index_version, reextract_outdated

    failures: list[str] = []
    with context.database(create=True) as database:
        if references:
            reextracted = reextract_outdated(database, progress=_progress(), workers=workers)
            if reextracted is not None:
                click.echo(_reextraction_summary(*reextracted))
        for repo, version in wanted:
            try:
                outcome = index_version(
                    database, context.config, repo, version, from_path=from_path,
                    progress=_progress(), workers=workers, references=references,
                )
            except SourceError as error:
                failures.append(str(error))
                if echo_as is not None:
                    click.echo(f"{echo_as}: {error}", err=True)
                continue
            click.echo(_summary(outcome))
            for reason in outcome.passed_over:
                click.echo(f"Note: {repo}@{version} was read from {outcome.source}: {reason}",
                           err=True)
            if outcome.already and from_path is not None:
                click.echo(f"Note: {from_path} was not read: {repo}@{version} is indexed and "
                           "an indexed version never changes; name the checkout's version "
                           f"otherwise ({repo}@{version}-local) to index it", err=True)
    return failures


def _reextraction_summary(done: Any, seconds: float) -> str:
    from indexer.extractor import extractor_id

    previous = ", ".join(name or "not recorded" for name in done.previous)
    return (
        f"{done.blobs} blobs indexed by another extractor ({previous}) parsed again: "
        f"{done.symbols_before} -> {done.symbols_after} symbols, {done.changed} blobs changed, "
        f"{seconds:.2f}s ({extractor_id()})"
    )


def _summary(outcome: Any) -> str:
    name = f"{outcome.repo}@{outcome.version}"
    if outcome.already:
        return f"{name}: already indexed, nothing to do"
    source = " ".join(filter(None, [outcome.source, (outcome.source_id or "")[:12]]))
    return (
        f"{name}: {counted(outcome.files, 'file')}, {counted(outcome.parsed, 'new blob')} "
        f"parsed, {counted(outcome.symbols, 'new symbol')}, {outcome.seconds:.2f}s ({source})"
    )


class _TerminalProgress:
    """A progress bar on a terminal; on a pipe, nothing (the summary line says it all)."""

    def __init__(self) -> None:
        self._bar: Any = None

    def start(self, label: str, total: int) -> None:
        if sys.stderr.isatty() and total:
            self._bar = click.progressbar(length=total, label=f"parsing {label}", file=sys.stderr)
            self._bar.__enter__()

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.update(count)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def _progress() -> _TerminalProgress:
    return _TerminalProgress()


# --- versions and symbols -------------------------------------------------------------


@cli.command()
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table")
@pass_context
@reports_errors
def versions(context: Context, output_format: str) -> None:
    """List the indexed versions with their source and counts, and on stderr the
    configured versions that are not indexed."""
    from db import queries

    with context.database() as database:
        rows = queries.list_versions(database)
        missing = context.config.configured_not_indexed(
            database, {(row["repo"], row["version"]) for row in rows})
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
    elif not rows:
        click.echo("No versions indexed yet; run 'annotate index'.")
    else:
        _table(
            ["repo", "version", "source", "sha", "files", "symbols", "indexed at"],
            (
                [r["repo"], r["version"], r["source"], (r["source_id"] or "")[:12],
                 r["file_count"], r["symbol_count"], r["indexed_at"]]
                for r in rows
            ),
        )
    for pin, hint in missing:
        _note(f"Note: {pin} is configured but not indexed; {hint}")


_LINE_BREAKS_JSON_KEEPS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028",
                                         "\u2029": "\\u2029"})


def _json_line(value: object) -> str:
    """``value`` as one line of JSON Lines, non-ASCII text as it is but for the line breaks
    JSON keeps unescaped (U+0085, U+2028, U+2029), which a reader splitting lines as Python's
    ``str.splitlines`` does would take for the end of the line."""
    return json.dumps(value, ensure_ascii=False).translate(_LINE_BREAKS_JSON_KEEPS)


SYMBOL_FIELDS = (
    "path", "qualname", "kind", "start_line", "end_line", "signature",
    "exact", "normalized", "shape",
)


@cli.command()
@click.argument("version_ref", metavar="REPO@VERSION", callback=_not_empty)
@click.option("--path", "path_glob", metavar="GLOB", callback=_not_empty,
              help="Only the symbols of this file, this folder (vllm/config/) or the files "
                   "this glob matches (* crosses folders).")
@click.option("--kind", type=click.Choice([kind.value for kind in SymbolKind]))
@click.option("--format", "output_format", type=click.Choice(["table", "jsonl"]),
              default="table")
@pass_context
@reports_errors
def symbols(
    context: Context, version_ref: str, path_glob: str | None, kind: str | None,
    output_format: str,
) -> None:
    """List the symbols of an indexed version."""
    from annotations.empty_answers import no_file_matches
    from db import queries

    repo, version = split_version(version_ref, "'REPO@VERSION'")
    context.config.repo(repo)
    with context.database() as database:
        version_key = context.config.require_version(database, repo, version)
        unmatched = None if path_glob is None else no_file_matches(
            database, f"{repo}@{version}", version_key, path_glob)
        if unmatched is not None:
            _note(f"Note: {unmatched}")
            return
        found = queries.version_symbols(database, version_key, path_glob, kind)
        first = next(found, None)
        if first is None:
            where = f" in the files --path {path_glob} matches" if path_glob is not None else ""
            _note(f"Note: {repo}@{version} defines no {kind or 'symbol'}{where}")
            return
        rows = itertools.chain((first,), found)
        if output_format == "jsonl":
            for row in rows:
                click.echo(_json_line({name: row[name] for name in SYMBOL_FIELDS}))
        else:
            _table(
                ["path", "line", "kind", "qualname"],
                ([r["path"], f"{r['start_line']}-{r['end_line']}", r["kind"], r["qualname"]]
                 for r in rows),
            )


# --- show, link, links, search ------------------------------------------------------


@cli.command()
@click.argument("ref_text", metavar="REF", callback=_not_empty)
@pass_context
@reports_errors
def show(context: Context, ref_text: str) -> None:
    """Print a symbol's source at its version, with its GitHub permalink.

    REF may also name lines (PATH#Lx-Ly), or a whole file (PATH, or a permalink to it).
    A ref that names no version (PATH::QUALNAME, a name) is shown at vllm's target version.
    """
    from annotations.refs import parse_ref
    from annotations.resolve import Resolver, at_indexed_target_version, linked_lines
    from indexer.config import line_span
    from indexer.literals import split_lines

    with context.database() as database:
        ref = at_indexed_target_version(database, context.config,
                                        parse_ref(ref_text, whole_file=True))
        resolver = Resolver(database, context.config)
        with _unindexed_worded_as_elsewhere():
            resolved = resolver.resolve(resolver.as_shown(ref))
        text = resolver.text_of(resolved)
        others = resolver.other_definitions(resolved)
    repo = context.config.repo(resolved.repo)
    click.echo(f"# {resolved.canonical}")
    url = repo.permalink(resolved.version, resolved.path, resolved.start_line, resolved.end_line)
    if url:
        click.echo(f"# {url}")
    if others:
        where = ", ".join(line_span(other.start_line, other.end_line) for other in others)
        click.echo(f"# defined {len(others) + 1} times in its file; the others: {where} "
                   f"(show {resolved.pin}:{resolved.path}#Lx-Ly for one)")
    linked = linked_lines(ref_text, resolved.start_line, resolved.end_line)
    if linked:
        click.echo(f"# the permalink links {line_span(*linked)} of it, marked >")
    width = len(str(resolved.end_line))
    for number, line in enumerate(split_lines(text), start=resolved.start_line):
        shown = line.rstrip("\r\n")
        mark = ">" if linked and linked[0] <= number <= linked[1] else " "
        click.echo(f"{str(number).rjust(width)}{mark} {shown}")


@contextlib.contextmanager
def _unindexed_worded_as_elsewhere() -> Iterator[None]:
    """An unindexed version worded as every other command words it (``...; run 'annotate
    index ...'``), not as a ref of an annotation file (``... (hint: ...)``)."""
    from annotations.resolve import UnindexedVersion
    from db.errors import MissingIndex

    try:
        yield
    except UnindexedVersion as error:
        raise MissingIndex(error.message, error.hint) from None


def _link(context: Context, database: Any, files: Any) -> Any:
    from annotations.links import link_if_changed

    return link_if_changed(database, context.config, force=True, files=files)


@cli.command()
@pass_context
@reports_errors
def link(context: Context) -> None:
    """Resolve every claim's refs at their pins and store the links."""
    from annotations.links import require_annotation_files

    files = require_annotation_files(context.config)
    with context.database() as database:
        outcome = _link(context, database, files)
    for error in outcome.errors:
        click.echo(f"Error: {error}", err=True)
    for warning in (*outcome.unindexed.values(), *outcome.split):
        click.echo(f"Warning: {warning}", err=True)
    for waived, waiver in outcome.waived:
        click.echo(f"Note: {waived} (waived until {waiver.until.isoformat()}: "
                   f"{waiver.reason})", err=True)
    if outcome.untracked:
        click.echo(f"Note: {_untracked_note(outcome.untracked, context.config.file_name)}",
                   err=True)
    states = outcome.states
    click.echo(
        f"{counted(outcome.articles, 'article')}, {counted(outcome.claims, 'claim')}, "
        f"{counted(outcome.refs, 'ref')}: "
        f"{states['linked']} linked, {states['unindexed']} unindexed, "
        f"{states['broken']} broken"
    )
    if outcome.errors:
        count = len(outcome.errors)
        raise UserError(f"{counted(count, 'problem')} in the annotations "
                        "(see above)")


def _untracked_note(untracked: dict[str, int], config_name: str) -> str:
    repos = ", ".join(f"github.com/{name}" for name in sorted(untracked))
    count = sum(untracked.values())
    return (f"{counted(count, 'permalink')} into repos not configured ({repos}) "
            f"{'is' if count == 1 else 'are'} not checked; add "
            f'{table_in(config_name, "repos.NAME")} with github = "ORG/NAME" to check them')


@cli.command()
@click.argument("symbol", required=False, callback=_not_empty)
@click.option("--article", metavar="PATH", callback=_not_empty,
              help="List what this article cites instead.")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]),
              default="table")
@pass_context
@reports_errors
def links(context: Context, symbol: str | None, article: str | None, output_format: str) -> None:
    """Which claims cite SYMBOL, or what an article cites.

    SYMBOL is a short name, a qualname, PATH::QUALNAME, a dotted name
    (vllm.config.CacheConfig), a ref, or lines: a GitHub permalink or
    REPO@VERSION:PATH#Lx-Ly (the refs into those lines at that version), or a file's
    path (every ref into that file, at each ref's pin).
    A claim whose symbol moved to SYMBOL at the target version cites it too (SYMBOL
    being any of the places of an ambiguous move).
    """
    from annotations.citations import links_citing, links_moved_here
    from annotations.empty_answers import no_claims_of, nothing_cites
    from db import claims as claim_store

    if (symbol is None) == (article is None):
        raise click.UsageError("give either SYMBOL or --article PATH")
    with context.database() as database:
        _note_outdated_links(context, database)
        if article is not None:
            rows = claim_store.links_of_article(database, article) or (
                claim_store.links_of_article(database, _as_displayed(context, article)))
            if not rows:
                raise UserError(no_claims_of(database, context.config, article))
        else:
            rows = links_citing(database, context.config, symbol or "")
    if article is not None:
        rows = _with_current_status(context, rows)
    else:
        with context.database() as database:
            rows += links_moved_here(database, context.config, symbol or "", rows)
            note = None if rows else nothing_cites(database, context.config, symbol or "")
        if note is not None:
            _note(f"Note: {note}")
    _print_links(rows, output_format, by_symbol=article is None)


def _as_displayed(context: Context, path: str) -> str:
    """A file path as the stored claims name it: relative to the project root, no ``./``."""
    from annotations.loader import display_path

    return display_path(Path(path), context.config.root)


def _with_current_status(context: Context, rows: list[dict]) -> list[dict]:
    """Each stored link's check status against its repo's target version (a query: the
    annotation files are not read again)."""
    from annotations.citations import links_with_status

    report = _run_check(context, (), relink=False,
                        source_files=frozenset(row["source_file"] for row in rows))
    return links_with_status(rows, report.results)


def _print_links(rows: list[dict], output_format: str, by_symbol: bool) -> None:
    if output_format == "json":
        click.echo(json.dumps([_link_json(row) for row in rows], indent=2, ensure_ascii=False))
        return
    if not rows:
        click.echo("No claims cite it.")
        return
    if not by_symbol:  # an article's claims may come from several files: then say which
        several = len({r["source_file"] for r in rows}) > 1
        _table(["file:line" if several else "line", "claim", "version", "state", "status",
                "symbol"],
               ([f"{r['source_file']}:{r['line']}" if several else r["line"], r["claim_id"],
                 r["version"] or "-", r["state"], r.get("status") or "-",
                 r["resolved"] or r["written"]]
                for r in rows))
        return
    targets = sorted({_link_target(r) for r in rows})
    for target in targets:
        click.echo(target)
        lines = dict.fromkeys(  # a claim citing the target twice is listed once
            f"  {row['article']}#{row['claim_id']} @{row['version']}{_moved_from(row)}"
            f"{' (not indexed: as written)' if row['state'] == 'unindexed' else ''}"
            f"{_in_uses(row)}: "
            f"{_flat(row['text'])}"
            for row in rows if _link_target(row) == target)
        for line in lines:
            click.echo(line)


def _in_uses(row: dict) -> str:
    return f" (in the uses: of {row['uses_of']})" if row.get("uses_of") else ""


def _moved_from(row: dict) -> str:
    if "moved_to" not in row:
        return ""
    version = row["moved_to"].split(":", 1)[0].rsplit("@", 1)[-1]
    others = len(row.get("moved_among", ()))
    among = f", or to {counted(others, 'other place')}" if others else ""
    return f" (as {_stored_target(row)}, moved here at {version}{among})"


def _link_target(row: dict) -> str:
    if "moved_to" in row:
        return row["moved_to"].split(":", 1)[1]
    return _stored_target(row)


def _stored_target(row: dict) -> str:
    if row["qualname"]:
        return f"{row['path']}::{row['qualname']}"
    from indexer.config import line_span

    return f"{row['path']}#{line_span(row['start_line'], row['end_line'])}"


def _link_json(row: dict) -> dict:
    return {
        "article": row["article"], "claim": row["claim_id"], "text": row["text"],
        "ref": row["written"], "resolved": row["resolved"], "version": row["version"],
        "state": row["state"], "file": row["source_file"], "line": row["line"],
        **({"status": row["status"]} if "status" in row else {}),
        **({"moved_to": row["moved_to"]} if "moved_to" in row else {}),
        **({"moved_among": row["moved_among"]} if "moved_among" in row else {}),
        **({"uses_of": row["uses_of"]} if row.get("uses_of") else {}),
    }


@cli.command()
@click.argument("words", nargs=-1, required=True, metavar="TEXT...", callback=_none_empty)
@click.option("--format", "output_format", type=click.Choice(["table", "json"]),
              default="table")
@click.option("--limit", type=click.IntRange(min=1, max=1_000_000), default=50, show_default=True,
              help="Show at most this many claims.")
@pass_context
@reports_errors
def search(context: Context, words: tuple[str, ...], output_format: str, limit: int) -> None:
    """Full-text search over claim texts, article titles and cited symbols.

    Every word and every "quoted phrase" of TEXT must occur, in any order and case,
    anywhere in the text (kv finds KVCache); OR, AND and NOT are words like any other.
    TEXT may be one argument or several (search kv cache): they are its words.
    """
    from db import claims as claim_store
    from db.errors import BadSearchText

    text = " ".join(words)
    try:  # before the index is opened
        claim_store.check_search_text(text)
    except BadSearchText as error:
        raise click.BadParameter(str(error), param_hint="'TEXT'") from None
    with context.database() as database:
        _note_outdated_links(context, database)
        rows = claim_store.search(database, text, limit + 1)
        if len(rows) > limit:
            rows = rows[:limit]
            first = "claim that matches" if limit == 1 else f"{limit} claims that match"
            _note(f"Note: showing the first {first}; add words, or raise --limit")
        if output_format == "json":
            refs = claim_store.refs_of_claims(
                database, [(row["article"], row["claim_id"]) for row in rows])
            rows = [{**row, "refs": refs.get((row["article"], row["claim_id"]), [])}
                    for row in rows]
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2, ensure_ascii=False))
    elif not rows:
        click.echo("No claims match.")
    else:
        for row in rows:
            click.echo(f"{row['article']}#{row['claim_id']}: {_flat(row['text'])}")


# --- check ---------------------------------------------------------------------------

@cli.command()
@click.option("--against", "against", multiple=True, metavar="REPO@VERSION",
              callback=_none_empty,
              help="Compare with this version instead of the repo's configured target.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="text")
@click.option("--output", "-o", type=click.Path(dir_okay=False), callback=_an_output,
              help="Write the report to this file; '-' (as without it) is standard output.")
@click.option("--exit-zero", is_flag=True,
              help="Exit 0 even when refs fail (an unreadable annotation file, or a target "
                   "not indexed, still exits 2).")
@click.option("--today", type=click.DateTime(["%Y-%m-%d"]), hidden=True,
              help="Pretend today is this date (for waivers).")
@click.option("--workers", type=click.IntRange(1, 64),
              help="Processes that compare refs with their targets, each the refs of its "
                   "pinned versions (default: cores, at most 4).")
@pass_context
@reports_errors
def check(
    context: Context,
    against: tuple[str, ...],
    output_format: str,
    output: Path | None,
    exit_zero: bool,
    today: Any,
    workers: int | None,
) -> None:
    """Check every claim against the target versions; exit 1 when any fails.

    A ref fails when its status is in the config's fail_on (by default every stale
    status, and broken) and no waiver covers it. Exit 2 when an annotation file cannot be
    read or a target is not indexed (the report is still made)."""
    from annotations.links import require_annotation_files
    from annotations.reports import render_chunks

    files = require_annotation_files(context.config)
    _refuse_to_overwrite_inputs(context, output, files)
    report, input_errors = _checked(context, against, today.date() if today else None,
                                    files=files, workers=workers or _cores(4))
    color = output is None and output_format == "text" and sys.stdout.isatty()
    if output_format in ("github", "sarif"):
        report = report.with_files_under(
            folder_in_repository(context.config.root, os.environ.get("GITHUB_WORKSPACE")))
    _write_report(output, render_chunks(report, output_format, color=color))
    errors = [f"{_unreadable_files(input_errors)} (see above)"] if input_errors else []
    errors += [target.error for target in report.unchecked_targets]
    if errors:
        raise UserError("; ".join(errors))
    if report.failing and not exit_zero:
        sys.exit(1)


@cli.command()
@click.option("--bump", multiple=True, metavar="CLAIM", callback=_none_empty,
              help="Move this claim's pin to the target version (ARTICLE#ID, FILE#ID or "
                   "ID); the other rewrites are made too.")
@click.option("--against", "against", multiple=True, metavar="REPO@VERSION",
              callback=_none_empty,
              help="Compare with this version instead of the repo's configured target.")
@click.option("--dry-run", is_flag=True, help="Print the unified diff; change nothing.")
@pass_context
@reports_errors
def fix(context: Context, bump: tuple[str, ...], against: tuple[str, ...], dry_run: bool) -> None:
    """Rewrite refs of unambiguously moved symbols; move claims' pins forward.

    Every run makes every unambiguous rewrite; --bump CLAIM also moves that claim.
    A claim made of a Markdown permalink cannot be bumped: edit the version in its URL.
    """
    from annotations.fix import plan_fixes
    from annotations.links import repo_filter, require_annotation_files
    from annotations.loader import display_path

    files = require_annotation_files(context.config)
    report = _run_check(context, against, files=files)
    root = context.config.root
    markdown = {display_path(path, root) for path in files[1]}
    wanted = [_claim_in_file(context, claim) for claim in bump]
    plan = plan_fixes(root, report, wanted, markdown, repo_filter(context.config),
                      older=context.config.older)
    for note in plan.notes:
        click.echo(f"Note: {note}", err=True)
    if dry_run:
        for name in plan.read_only():
            click.echo(f"Note: {name} is read-only: fix without --dry-run edits no file while "
                       "it is", err=True)
        click.echo(plan.diff(), nl=False)
        edited = [name for name, _ in plan.edited()]
        click.echo(f"Note: --dry-run wrote nothing: fix would make {_edits(plan, edited)}",
                   err=True)
        return
    click.echo(_edits(plan, plan.write()))


def _edits(plan: Any, names: list[str]) -> str:
    """``3 edits in 2 files: a.yml, b.md`` of the files ``names`` of a fix ``plan``."""
    edits = sum(plan.files[name].edits for name in names)
    listed = ": " + ", ".join(names) if names else ""
    return f"{counted(edits, 'edit')} in {counted(len(names), 'file')}{listed}"


def _claim_in_file(context: Context, wanted: str) -> str:
    """``FILE#ID`` with FILE as the report names it (relative to the project's folder),
    when FILE is a file given from the current folder or by its absolute path."""
    where, mark, claim_id = wanted.rpartition("#")
    if not mark or not where or not os.path.isfile(where):  # False for a name too long
        return wanted
    return f"{_as_displayed(context, where)}#{claim_id}"


def _run_check(
    context: Context, against: tuple[str, ...], relink: bool = True,
    source_files: frozenset[str] | None = None, files: Any = None,
) -> Any:
    """The check report (of the refs written in ``source_files``, when given), refused
    when an annotation file does not load: such a file keeps its old links, whose lines
    may no longer be its lines. Compared as ``annotate check`` compares by default."""
    report, input_errors = _checked(context, against, relink=relink,
                                    source_files=source_files, files=files,
                                    workers=_cores(4))
    if input_errors:
        raise UserError(f"{_unreadable_files(input_errors)} (see above); nothing was changed")
    return report


def _checked(
    context: Context, against: tuple[str, ...], today: Any = None, relink: bool = True,
    source_files: frozenset[str] | None = None, files: Any = None, workers: int = 1,
) -> tuple[Any, list[AnnotationError]]:
    """Link (unless ``relink`` is false) ``files`` (default: those the config's globs find,
    refused when none) and check; print, and return, the annotation files' errors beside
    the report."""
    import datetime

    from annotations.check import CheckOptions, check_linked
    from annotations.links import linkable, require_annotation_files

    pairs = [split_version(text, "'--against'") for text in against]
    pins = dict(pairs)
    if len(pins) < len(pairs):
        raise click.BadParameter("give one version per repo", param_hint="'--against'")
    for repo in pins:
        context.config.repo(repo)
    if relink and files is None:
        files = require_annotation_files(context.config)
    options = CheckOptions(pins, today or datetime.date.today(), context.config.fail_on,
                           source_files, workers)
    with context.database() as stored, linkable(
        stored, context.config, relink=relink, notify=lambda note: _note(f"Note: {note}")
    ) as database:
        for pin in pins.items():
            require_indexed(database, context.config, pin, "'--against'")
        checked = check_linked(database, context.config, options, files, relink=relink)
    for error in checked.unreadable:
        click.echo(f"Error: {error}", err=True)
    for warning in checked.split:  # CI runs check, not link
        click.echo(f"Warning: {warning}", err=True)
    return checked.report, checked.unreadable


def _unreadable_files(errors: list[AnnotationError]) -> str:
    files = len({error.file for error in errors})
    return f"{counted(files, 'annotation file')} could not be read"


def _refuse_to_overwrite_inputs(
    context: Context, output: Path | None, files: Any = None, unreadable: Iterable[Path] = ()
) -> None:
    """Refuse ``-o`` when the report would replace an input or be read as one
    (`annotations.links.output_refusal`); ``files``: default those the config's globs find."""
    from annotations.links import annotation_files, output_refusal

    if output is None:
        return
    found = files if files is not None else annotation_files(context.config)
    refusal = output_refusal(output, context.config, found, context.db_path, unreadable)
    if refusal is not None:
        raise click.BadParameter(refusal, param_hint="'--output' / '-o'")


def _write_report(path: Path | None, text: str | Iterable[str]) -> None:
    """``text`` (or its pieces) into the file at ``path``, or to standard output when there
    is none; either way it ends with one line break, so the file holds what standard
    output would."""
    from annotations.report_file import replace_whole, why_unwritable

    pieces = _ending_with_a_line_break((text,) if isinstance(text, str) else text)
    if path is None:
        for piece in pieces:
            click.echo(piece, nl=False)
        return
    try:
        replace_whole(path, (piece.encode("utf-8") for piece in pieces))
    except OSError as error:
        raise UserError(f"cannot write {path}: {why_unwritable(path, error)}") from None


def _ending_with_a_line_break(pieces: Iterable[str]) -> Iterator[str]:
    last = ""
    for piece in pieces:
        if piece:
            last = piece
            yield piece
    if not last.endswith("\n"):
        yield "\n"


# --- xref ----------------------------------------------------------------------------


@cli.command()
@click.argument("name", metavar="NAME|REF", callback=_not_empty)
@click.argument("version_ref", metavar="[REPO@VERSION]", required=False, callback=_not_empty)
@click.option("--imports", "show_imports", is_flag=True,
              help="List the modules that import it instead.")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]),
              default="table")
@pass_context
@reports_errors
def xref(
    context: Context, name: str, version_ref: str | None, show_imports: bool,
    output_format: str,
) -> None:
    """Where NAME is defined and used in one version (default: a ref's own, else vllm's
    target version).

    NAME is a short name, a qualname or a dotted name; REF is PATH::QUALNAME, a ref
    REPO@VERSION:..., or lines within a symbol (a GitHub permalink or
    REPO@VERSION:PATH#Lx-Ly), which name the innermost symbol covering them.
    """
    from annotations.empty_answers import nothing_defines
    from annotations.refs import is_qualname
    from annotations.xref import locate
    from annotations.xref import xref as find_references

    repo, version, name, path = _xref_target(
        context, _symbol_of_lines(context, name, version_ref), version_ref)
    if not is_qualname(name):
        from annotations.errors import one_line

        raise click.BadParameter(f"'{one_line(name)}' is not a name: write identifiers joined "
                                 "by '.'", param_hint="'NAME|REF'")
    with context.database() as database:
        if path is None:
            path, name = locate(database, context.config, repo, version, name)
        else:  # a PATH::QUALNAME that names nothing is an error, as in show
            _resolve(database, context, f"{repo}@{version}:{path}::{name}")
        result = find_references(database, repo, version, name, path,
                                 config_name=context.config.file_name)
        note = None if result.definitions else nothing_defines(
            database, name, repo, version, referenced=bool(result.references),
            config_name=context.config.file_name)
    if note is not None:
        _note(f"Note: {note}")
    if not result.searched:
        _note(f"Note: the uses of {result.name} are not listed: the index records the uses "
              "of ASCII names only")
    if output_format == "json":
        click.echo(json.dumps(_xref_json(result, show_imports), indent=2, ensure_ascii=False))
        return
    if show_imports:
        if not result.importers:
            click.echo(f"No module of {repo}@{version} imports {name}.")
        for row in result.importers:
            imported = f" import {row['name']}" if row["name"] else ""
            click.echo(f"{row['path']}:{row['line']}  from {'.' * row['level']}"
                       f"{row['module']}{imported}")
        return
    _print_xref(result)


def _symbol_of_lines(context: Context, given: str, version_ref: str | None) -> str:
    """``given``, or when it names lines (`lines_named`, at ``version_ref`` when they name
    no version), the ref ``REPO@VERSION:PATH::QUALNAME`` of the innermost symbol covering
    them."""
    from annotations.xref import lines_named, symbol_of_lines

    ref = lines_named(given)
    if ref is None:
        return given
    if version_ref is not None and not ref.pinned:
        ref = ref.with_pin(*_xref_version(context, version_ref))
    with context.database() as database, _unindexed_worded_as_elsewhere():
        return symbol_of_lines(database, context.config, ref)


def _resolve(database: Any, context: Context, ref_text: str) -> Any:
    from annotations.refs import parse_ref
    from annotations.resolve import Resolver

    with _unindexed_worded_as_elsewhere():
        return Resolver(database, context.config).resolve(parse_ref(ref_text))


def _xref_target(
    context: Context, name: str, version_ref: str | None
) -> tuple[str, str, str, str | None]:
    """The repo, version, name and (for ``PATH::QUALNAME``) path that xref looks up."""
    from annotations.resolve import require_indexed_target

    path = None
    if "@" in name or "::" in name:
        from annotations.refs import RefForm, parse_ref

        ref = parse_ref(name)
        symbol = ref.qualname if ref.form is RefForm.SYMBOL else ref.dotted
        path = ref.path if ref.form is RefForm.SYMBOL else None
        if ref.repo and ref.version:
            if version_ref is not None and version_ref != f"{ref.repo}@{ref.version}":
                raise click.UsageError(f"{name} names its version; drop {version_ref}, or "
                                       "the version in the ref")
            return ref.repo, ref.version, symbol or name, path
        name = symbol or name
    if version_ref is not None:
        return (*_xref_version(context, version_ref), name, path)
    default = context.config.repos.get("vllm")
    if default is None or default.target_version is None:
        raise click.UsageError("name the version: annotate xref NAME REPO@VERSION")
    with context.database() as database:
        require_indexed_target(database, context.config,
                               (default.name, default.target_version))
    return default.name, default.target_version, name, path


def _xref_version(context: Context, version_ref: str) -> tuple[str, str]:
    """The indexed version xref's ``REPO@VERSION`` argument names, as (repo, version)."""
    pin = split_version(version_ref, "'REPO@VERSION'")
    context.config.repo(pin[0])
    with context.database() as database:
        require_indexed(database, context.config, pin, "'REPO@VERSION'")
    return pin


def _print_xref(result: Any) -> None:
    click.echo(f"{result.name} at {result.version}")
    click.echo("definitions:")
    for row in result.definitions:
        click.echo(f"  {row['path']}:{row['start_line']}  {row['kind']} {row['qualname']}")
    if not result.definitions:
        click.echo("  (none)")
    current = None
    for ref in result.references:
        if ref.path != current:
            current = ref.path
            click.echo(ref.path)
        target = f" -> {ref.target}" if ref.target else ""
        click.echo(f"  {ref.path}:{ref.line}  {ref.context} in {ref.enclosing or '<module>'}"
                   f"  ({ref.resolution}{target})")
    files = len({ref.path for ref in result.references})
    click.echo(f"{counted(len(result.references), 'reference')} in {counted(files, 'file')}")


def _xref_json(result: Any, show_imports: bool) -> dict:
    from dataclasses import asdict

    if show_imports:
        return {"name": result.name, "version": result.version, "importers": result.importers}
    return {
        "name": result.name,
        "version": result.version,
        "definitions": [
            {key: row[key] for key in ("path", "qualname", "kind", "start_line", "end_line")}
            for row in result.definitions
        ],
        "references": [asdict(ref) for ref in result.references],
    }


# --- diff and history ----------------------------------------------------------------


@cli.command()
@click.argument("version_a", metavar="REPO@A", callback=_not_empty)
@click.argument("version_b", metavar="REPO@B", callback=_not_empty)
@click.option("--annotated", is_flag=True,
              help="Only the symbols claims cite; the articles and claims come first.")
@click.option("--format", "output_format", type=click.Choice(DIFF_FORMATS),
              default="markdown", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), callback=_an_output,
              help="Write the report to this file; '-' (as without it) is standard output.")
@click.option("--max-diffs", type=click.IntRange(min=0), default=100, show_default=True,
              help="HTML: how many side-by-side diffs to show (cited symbols first).")
@click.option("--workers", type=click.IntRange(1, 64),
              help="Processes that match symbols, then find what the changed ones "
                   "started or stopped using (default: cores, at most 4).")
@pass_context
@reports_errors
def diff(
    context: Context, version_a: str, version_b: str, annotated: bool, output_format: str,
    output: Path | None, max_diffs: int, workers: int | None,
) -> None:
    """Every symbol change between two indexed versions of one repo."""
    from annotations.diff_report import diff_report, render_diff
    from annotations.links import readable_annotation_files

    pins = split_version(version_a, "'REPO@A'"), split_version(version_b, "'REPO@B'")
    # the stored links are the diff's; a folder that cannot be read is said in a note
    files, unreadable = readable_annotation_files(context.config) if output else (None, [])
    _refuse_to_overwrite_inputs(context, output, files, unreadable)
    with context.database() as database:
        if pins[0][0] == pins[1][0]:  # else diff_report says they are of different repos
            context.config.repo(pins[0][0])
            for pin, hint in zip(pins, ("'REPO@A'", "'REPO@B'"), strict=True):
                require_indexed(database, context.config, pin, hint)
            if pins[0] == pins[1]:
                _note_compared_with_itself(database, *pins[0])
        _note_outdated_links(context, database, None if unreadable else files)
        report = diff_report(database, context.config, *pins, annotated=annotated,
                             diff_limit=max_diffs if output_format == "html" else 0,
                             workers=workers or _cores(4))
    _write_report(output, render_diff(report, output_format))


def _note_compared_with_itself(database: Any, repo: str, version: str) -> None:
    from db import queries

    others = [other for other in queries.indexed_versions(database, repo) if other != version]
    advice = (f"name another version of {repo} to compare it with (the others indexed: "
              f"{', '.join(others)})" if others else
              f"no other version of {repo} is indexed: index one to compare it with "
              f"('annotate index {repo}@VERSION')")
    _note(f"Note: {repo}@{version} was compared with itself, so nothing changed; {advice}")


@cli.command()
@click.argument("ref_text", metavar="REF", callback=_not_empty)
@click.option("--format", "output_format", type=click.Choice(["table", "json"]),
              default="table", show_default=True)
@pass_context
@reports_errors
def history(context: Context, ref_text: str, output_format: str) -> None:
    """One symbol across every indexed version of its repo, oldest first.

    "introduced" marks the first indexed version that has it (followed back from the
    version asked about), not the release that added it.
    """
    from annotations.diff_report import history_of
    from annotations.diffs.timeline import HEADERS, table_rows, timeline_to_dict
    from annotations.refs import parse_ref
    from annotations.resolve import at_indexed_target_version

    with context.database() as database:
        ref = at_indexed_target_version(database, context.config, parse_ref(ref_text))
        timeline = history_of(database, context.config, ref)
    if output_format == "json":
        click.echo(json.dumps(timeline_to_dict(timeline), indent=2, ensure_ascii=False))
        return
    click.echo(timeline.asked)
    _table(HEADERS, table_rows(timeline))


def _flat(text: str) -> str:
    """A claim's text on one line of a listing (YAML block scalars keep line breaks)."""
    return " ".join(text.split())


def _table(headers: list[str], rows: Iterable[list[Any]]) -> None:
    materialized = [[_flat(str(cell)) for cell in row] for row in rows]
    widths = [
        max([len(header)] + [len(row[i]) for row in materialized])
        for i, header in enumerate(headers)
    ]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in materialized:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    problem = _unusable_invocation(sys.argv[1:])
    if problem is not None:
        click.echo(f"Error: {problem}", err=True)
        sys.exit(2)
    _interrupt_on_termination()
    try:
        cli(prog_name="annotate")
    except OSError as error:  # --help or --version to a full disk: click lets it through
        if error.errno not in _OUTPUT_ERRNOS:
            raise
        _drop_standard_output()
        click.echo(f"Error: cannot write the output: {error.strerror}", err=True)
        sys.exit(2)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is (and exiting 128 + its number)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _unusable_invocation(arguments: list[str]) -> str | None:
    """What makes a run impossible before any command starts, or None."""
    if sys.stdout is None:
        return ("standard output is closed; send it somewhere (> /dev/null to drop it), or "
                "write the report with --output FILE")
    after_path_option = False
    for argument in arguments:
        is_path = after_path_option or argument.startswith(_PATH_OPTIONS) or (
            os.path.lexists(argument))
        after_path_option = argument in _PATH_OPTIONS
        if not is_path and any("\udc80" <= character <= "\udcff" for character in argument):
            shown = argument.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            return (f"the argument '{shown}' is not valid UTF-8 text (in a locale that is not "
                    "UTF-8, set PYTHONUTF8=1)")
    return None


_PATH_OPTIONS = ("--from", "--db", "--config", "--output", "-o")
"""Options whose value is a file name, which may be any bytes."""


def _interrupt_on_termination() -> None:
    """SIGTERM (a CI job cancelled) and SIGHUP stop a run as Ctrl-C does, so that what it
    holds is cleaned up (a read-only index's temporary copy, the parser pool). A forked
    child (a parser, a diff worker) just exits."""
    parent = os.getpid()

    def stop(signum: int, _frame: object) -> None:
        if os.getpid() != parent:
            os._exit(128 + signum)
        raise Terminated(signum)

    for signum in STOPPING_SIGNALS:
        if signum != signal.SIGINT and signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, stop)  # nohup's ignored SIGHUP stays ignored


if __name__ == "__main__":
    main()
