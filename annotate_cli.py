"""The ``annotate`` command: a thin layer turning library results and errors into output.

Every error a user can cause is one line on stderr (``Error: ...``) and exit code 2.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from db.errors import DatabaseError
from indexer.config import ProjectConfig, load_config
from indexer.errors import IndexerError

F = TypeVar("F", bound=Callable[..., Any])


class UserError(click.ClickException):
    exit_code = 2


def _library_errors() -> tuple[type[Exception], ...]:
    from annotations.errors import AnnotationError

    return (IndexerError, DatabaseError, AnnotationError)


def reports_errors(command: F) -> F:
    """Turn the libraries' named errors into ``Error: ...`` and exit code 2."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except _library_errors() as error:
            raise UserError(str(error)) from None
        except KeyboardInterrupt:
            click.echo("Interrupted; nothing half-written was kept.", err=True)
            sys.exit(130)

    return wrapper  # type: ignore[return-value]


class Context:
    def __init__(self, db_path: str | None, config_path: str | None) -> None:
        self._db_path = db_path
        self._config_path = config_path

    @functools.cached_property
    def config(self) -> ProjectConfig:
        return load_config(config_file=Path(self._config_path) if self._config_path else None)

    @property
    def db_path(self) -> Path:
        return Path(self._db_path) if self._db_path else self.config.db

    def database(self, create: bool = False):  # noqa: ANN201 - db.database.Database
        from db.database import open_database

        return open_database(self.db_path, create=create, notify=_note)


def _note(message: str) -> None:
    click.echo(message, err=True)


pass_context = click.make_pass_decorator(Context)


@click.group()
@click.version_option(package_name="vllm-annotate")
@click.option("--db", "db_path", metavar="PATH", help="Index database (default from config).")
@click.option("--config", "config_path", metavar="FILE", help="Config file (annotate.toml).")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, config_path: str | None) -> None:
    """Index vLLM versions, link article claims to symbols, and flag stale claims."""
    ctx.obj = Context(db_path, config_path)


def split_version(text: str) -> tuple[str, str]:
    repo, at, version = text.partition("@")
    if not at or not repo or not version:
        raise click.BadParameter(f"'{text}' is not REPO@VERSION (for example vllm@v0.20.0)")
    return repo, version


# --- index --------------------------------------------------------------------------


@cli.command()
@click.argument("versions", nargs=-1, metavar="[REPO@VERSION]...")
@click.option("--from", "from_path", type=click.Path(exists=True, path_type=Path),
              help="Read the one version given from this checkout or wheel.")
@click.option("--keep-going", is_flag=True,
              help="Exit 0 even when some versions cannot be fetched (they are reported).")
@click.option("--workers", type=click.IntRange(1, 64), help="Parser processes (default: cores).")
@pass_context
@reports_errors
def index(
    context: Context,
    versions: tuple[str, ...],
    from_path: Path | None,
    keep_going: bool,
    workers: int | None,
) -> None:
    """Index the given versions, or every configured one."""
    wanted = [split_version(text) for text in versions] or [
        (repo.name, version)
        for repo in context.config.repos.values()
        for version in repo.versions
    ]
    if from_path is not None and len(wanted) != 1:
        raise click.UsageError("--from reads one version: name exactly one REPO@VERSION")
    failures = _index_all(context, wanted, from_path, workers)
    if failures and not keep_going:
        raise UserError(f"{failures} of {len(wanted)} versions could not be indexed (see above)")


def _index_all(
    context: Context, wanted: list[tuple[str, str]], from_path: Path | None, workers: int | None
) -> int:
    from indexer.errors import SourceError
    from indexer.pipeline import index_version

    failures = 0
    with context.database(create=True) as database:
        for repo, version in wanted:
            try:
                outcome = index_version(
                    database, context.config, repo, version, from_path=from_path,
                    progress=_progress(), workers=workers,
                )
            except SourceError as error:
                failures += 1
                click.echo(f"Error: {error}", err=True)
                continue
            click.echo(_summary(outcome))
    return failures


def _summary(outcome: Any) -> str:
    name = f"{outcome.repo}@{outcome.version}"
    if outcome.already:
        return f"{name}: already indexed, nothing to do"
    return (
        f"{name}: {outcome.files} files, {outcome.parsed} new blobs parsed, "
        f"{outcome.symbols} new symbols, {outcome.seconds:.2f}s "
        f"({outcome.source} {(outcome.source_id or '')[:12]})"
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
    """List the indexed versions with their source and counts."""
    from db import queries

    with context.database() as database:
        rows = queries.list_versions(database)
    if output_format == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo("No versions indexed yet; run 'annotate index'.")
        return
    _table(
        ["repo", "version", "source", "sha", "files", "symbols", "indexed at"],
        (
            [r["repo"], r["version"], r["source"], (r["source_id"] or "")[:12],
             r["file_count"], r["symbol_count"], r["indexed_at"]]
            for r in rows
        ),
    )


SYMBOL_FIELDS = (
    "path", "qualname", "kind", "start_line", "end_line", "signature",
    "exact", "normalized", "shape",
)


@cli.command()
@click.argument("version_ref", metavar="REPO@VERSION")
@click.option("--path", "path_glob", metavar="GLOB", help="Only files matching this glob.")
@click.option("--kind", type=click.Choice(["class", "function", "method", "attribute"]))
@click.option("--format", "output_format", type=click.Choice(["table", "jsonl"]),
              default="table")
@pass_context
@reports_errors
def symbols(
    context: Context, version_ref: str, path_glob: str | None, kind: str | None,
    output_format: str,
) -> None:
    """List the symbols of an indexed version."""
    from db import queries

    repo, version = split_version(version_ref)
    context.config.repo(repo)
    with context.database() as database:
        version_key = queries.require_version(database, repo, version)
        rows = queries.version_symbols(database, version_key, path_glob, kind)
        if output_format == "jsonl":
            for row in rows:
                click.echo(json.dumps({name: row[name] for name in SYMBOL_FIELDS},
                                      ensure_ascii=False))
            return
        _table(
            ["path", "line", "kind", "qualname"],
            ([r["path"], f"{r['start_line']}-{r['end_line']}", r["kind"], r["qualname"]]
             for r in rows),
        )


def _table(headers: list[str], rows: Iterable[list[Any]]) -> None:
    materialized = [[str(cell) for cell in row] for row in rows]
    widths = [
        max([len(header)] + [len(row[i]) for row in materialized])
        for i, header in enumerate(headers)
    ]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in materialized:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main() -> None:
    cli(prog_name="annotate")


if __name__ == "__main__":
    main()
