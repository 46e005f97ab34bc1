"""``annotate diff`` keeps its whole-version matches in the index (``diff_cache``) and
reads them back on the next diff of the same versions while what they were made of
stands: the same report, without matching again."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from pathlib import Path

import fakevllm
import pytest
from click.testing import CliRunner
from fakeproject import connected

from annotate_cli import cli
from annotations import comparison, matching
from annotations.links import link_if_changed
from db import diff_cache
from db.database import open_database
from indexer.config import load_config
from indexer.pipeline import index_version

CONFIG = '[repos.vllm]\nversions = ["v0.1.0", "v0.2.0", "v0.3.0"]\n'
CLAIMS = """\
article: notes/engine.md
at: vllm@v0.1.0
claims:
  - id: add-request
    text: "add_request builds the sequence group"
    refs: [vllm/engine/llm_engine.py::LLMEngine.add_request]
  - id: cdiv
    text: "cdiv rounds up"
    refs: [vllm/utils.py::cdiv]
"""
PAIR = ("vllm@v0.1.0", "vllm@v0.2.0")
OUTDATED_LINKS = ("Note: the annotation files, the index or annotate changed since the last "
                  "link; run 'annotate link' (or 'annotate check') to bring the claims shown "
                  "here up to date\n")


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """The fake vLLM tags indexed from snapshots, and one annotation file linked."""
    (tmp_path / "annotate.toml").write_text(CONFIG, encoding="utf-8")
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "engine.yml").write_text(CLAIMS, encoding="utf-8")
    config = load_config(tmp_path)
    with open_database(config.db) as database:
        for tag in fakevllm.TAGS:
            _index(database, config, tag, tag)
        assert link_if_changed(database, config, force=True) is not None
    return tmp_path


def _index(database, config, tag: str, files_of: str) -> None:  # type: ignore[no-untyped-def]
    source = config.root / "src" / f"{tag}-{files_of}"
    fakevllm.write_snapshot(source, fakevllm.VERSIONS[files_of])
    index_version(database, config, "vllm", tag, from_path=source, workers=1)


def diff(project: Path, *options: str, notes: str = "") -> str:
    """The report, and ``notes`` on stderr."""
    result = CliRunner().invoke(
        cli, ["--config", str(project / "annotate.toml"), "diff", *PAIR, *options])
    assert (result.exit_code, result.stderr) == (0, notes), result.output
    return result.stdout


def rows(project: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(project / ".annotate" / "index.db")) as conn:
        return conn.execute("SELECT a, b, identity FROM diff_cache").fetchall()


def execute(project: Path, sql: str, *params: object) -> None:
    with connected(project / ".annotate" / "index.db") as conn:
        conn.execute(sql, params)


def plant_no_change(project: Path) -> None:
    """Replace the stored matches by none at all (every symbol then counts unchanged),
    under the identity the pair has now."""
    config = load_config(project)
    with open_database(config.db) as database:
        (a, b, identity), = rows(project)
        assert identity == diff_cache.pair_identity(database, a, b, comparison.ENGINE)
        assert diff_cache.store_matches(database, a, b, identity, matching.encode_matches([]))


@pytest.mark.parametrize("options", [
    pytest.param(("--format", "json"), id="json"),
    pytest.param(("--format", "markdown"), id="markdown"),
    pytest.param(("--format", "html"), id="html"),
    pytest.param(("--annotated",), id="annotated"),
    pytest.param(("--annotated", "--format", "json", "--workers", "1"), id="annotated-json"),
])
def test_a_diff_from_the_stored_matches_is_the_same_report(
    project: Path, options: tuple[str, ...]
) -> None:
    assert rows(project) == []
    matched = diff(project, *options)
    assert len(rows(project)) == 1
    assert diff(project, *options) == matched
    assert len(rows(project)) == 1


def test_the_second_diff_reads_the_stored_matches(project: Path) -> None:
    matched = diff(project, "--format", "json")
    assert '"changed": 0' not in matched
    plant_no_change(project)
    assert '"changed": 0' in diff(project, "--format", "json")


def test_stored_matches_come_back_as_they_were_made(project: Path) -> None:
    config = load_config(project)
    with open_database(config.db) as database:
        matcher = matching.Matcher(database, 1, 2)
        matcher.pool()
        made = [(key, matching._compact(matcher.match(matcher.a.loaded(key))))
                for keys in matcher._to_match() for key in keys]
    assert any(compact[2] for _key, compact in made)  # with changes to encode
    assert matching.decode_matches(matching.encode_matches(made)) == made


def _extracted_again(project: Path) -> None:
    execute(project, "UPDATE blobs SET extractor = 'extraction 0'")


def _indexed_again(project: Path) -> None:
    """v0.2.0 deleted and indexed again with other files (v0.3.0's)."""
    with connected(project / ".annotate" / "index.db") as conn:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("DELETE FROM versions WHERE version = 'v0.2.0'")
    config = load_config(project)
    with open_database(config.db) as database:
        _index(database, config, "v0.2.0", "v0.3.0")


def _another_engine(project: Path) -> None:
    comparison.ENGINE = "matcher-other"


@pytest.mark.parametrize(("change", "notes"), [
    pytest.param(_extracted_again, "Note: some blobs were indexed by another extractor (an "
                 "older annotate or tree-sitter); run 'annotate index' to parse them again\n",
                 id="blobs-extracted-again"),
    pytest.param(_indexed_again, OUTDATED_LINKS, id="version-indexed-again-with-other-files"),
    pytest.param(_another_engine, OUTDATED_LINKS, id="another-matching-engine"),
])
def test_stored_matches_of_what_changed_since_are_not_read(
    project: Path, change: Callable[[Path], None], notes: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(comparison, "ENGINE", comparison.ENGINE)
    diff(project, "--format", "json")
    plant_no_change(project)
    change(project)
    again = diff(project, "--format", "json", notes=notes)
    assert '"changed": 0' not in again
    execute(project, "DELETE FROM diff_cache")
    assert diff(project, "--format", "json", notes=notes) == again


def test_a_diff_while_another_process_writes_stores_nothing_and_is_right(
    project: Path
) -> None:
    matched = diff(project, "--format", "json")
    execute(project, "DELETE FROM diff_cache")
    with contextlib.closing(sqlite3.connect(project / ".annotate" / "index.db")) as other:
        other.execute("BEGIN IMMEDIATE")  # holds the write lock
        assert diff(project, "--format", "json") == matched
        other.rollback()
    assert rows(project) == []
    assert diff(project, "--format", "json") == matched
    assert len(rows(project)) == 1


def test_the_pairs_stored_last_are_kept_the_older_dropped(project: Path) -> None:
    """Diffs of ever more pairs keep `KEPT_PAIRS` rows, the last stored: a pair stored
    again is the newest, the oldest other goes."""
    config = load_config(project)
    pairs = [(a, b) for a in range(1, 7) for b in range(1, 7) if a != b]
    pairs = pairs[:diff_cache.KEPT_PAIRS + 2]
    with open_database(config.db) as database:
        for a, b in [*pairs[:-1], pairs[1], pairs[-1]]:
            assert diff_cache.store_matches(database, a, b, f"{a}-{b}", b"")
    kept = {(a, b) for a, b, _identity in rows(project)}
    assert kept == {pairs[1], *pairs[3:]}  # pairs[0] then pairs[2], the oldest, went
