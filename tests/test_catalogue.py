"""The annotated catalogue in articles/: every file loads through the project's own parser,
and every ref names a repo and version that annotate.toml configures (no network: resolving
against real vLLM is the main job's part, see the README)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotations.links import annotation_files
from annotations.loader import load_file
from annotations.model import Article
from annotations.refs import RefForm, parse_ref
from indexer.config import load_config

ROOT = Path(__file__).resolve().parent.parent
CONFIG = load_config(config_file=ROOT / "annotate.toml")
YAML_FILES, MARKDOWN_FILES = annotation_files(CONFIG)
LOADED = [load_file(path, CONFIG.root, markdown=path in MARKDOWN_FILES)
          for path in YAML_FILES + MARKDOWN_FILES]  # each file as `link` loads it
ERRORS = [error for result in LOADED for error in result.errors]
LOADED_ARTICLES = [article for result in LOADED for article in result.articles]
ARTICLES = {article.source_file: article for article in LOADED_ARTICLES}
SECTIONS = ("module_analysis", "routing")


def test_every_file_loads_without_error() -> None:
    assert [str(error) for error in ERRORS] == []
    assert MARKDOWN_FILES == []  # articles/README.md describes the catalogue; it is no article
    assert len(YAML_FILES) == len(LOADED_ARTICLES) == 16


def test_files_sit_under_the_catalogue_sections() -> None:
    for article in LOADED_ARTICLES:
        section = Path(article.source_file).parts[1]
        assert section in SECTIONS, article.source_file
        assert article.path.startswith(section + "/"), article.path


@pytest.mark.parametrize("article", LOADED_ARTICLES, ids=lambda article: article.source_file)
def test_article_has_a_title_and_unique_claim_ids(article: Article) -> None:
    assert article.title
    ids = [claim.claim_id for claim in article.claims]
    assert ids and len(ids) == len(set(ids))


@pytest.mark.parametrize("article", LOADED_ARTICLES, ids=lambda article: article.source_file)
def test_every_ref_names_a_configured_repo_and_version(article: Article) -> None:
    for claim in article.claims:
        for entry in claim.refs:
            ref = entry.ref
            assert ref.form is RefForm.SYMBOL, f"{claim.claim_id}: {entry.text}"
            repo = CONFIG.repo(ref.repo or "")
            assert ref.version in repo.versions, f"{claim.claim_id}: {entry.text}"
            assert parse_ref(str(ref)) == ref
            for used in entry.uses:
                assert parse_ref(used).repo in CONFIG.repos


def test_pins_follow_the_catalogue() -> None:
    pins = {
        article.path: {entry.ref.version for claim in article.claims for entry in claim.refs}
        for article in LOADED_ARTICLES
    }
    assert pins["module_analysis/pagedattention-retirement.md"] == {"v0.23.1rc0", "v0.25.0"}
    mla_repos = {
        entry.ref.repo
        for article in LOADED_ARTICLES if article.path == "module_analysis/mla-tp-sharding.md"
        for claim in article.claims for entry in claim.refs
    }
    assert mla_repos == {"vllm", "lmcache"}


def test_value_claims_carry_a_quote() -> None:
    quoted = [entry for article in LOADED_ARTICLES for claim in article.claims
              for entry in claim.refs if entry.quote]
    assert len(quoted) > 100
    defaults = [entry for entry in quoted if "gpu_memory_utilization" in entry.text]
    assert any("0.92" in (entry.quote or "") for entry in defaults)


@pytest.mark.parametrize("name", ["new-article.yml", "new-article.yaml"])
def test_an_authors_annotation_file_of_either_yaml_extension_is_read(
    tmp_path: Path, name: str
) -> None:
    """As the README's default globs read both: a .yaml file left out would be no error, no
    warning, its claims never checked."""
    (tmp_path / "annotate.toml").write_bytes((ROOT / "annotate.toml").read_bytes())
    written = tmp_path / "articles" / "module_analysis" / name
    written.parent.mkdir(parents=True)
    written.write_text("article: module_analysis/new-article.md\nclaims: []\n")
    yaml_files, _ = annotation_files(load_config(config_file=tmp_path / "annotate.toml"))
    assert yaml_files == [written]
