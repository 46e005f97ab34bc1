"""Cross-references: recording names and imports at index time, resolving them per version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakeproject import write_tree

from annotate_cli import cli
from annotations.errors import RefSyntaxError
from annotations.modules import VersionModules
from annotations.resolve import Resolved, ResolveError
from annotations.used_instead import user_files
from annotations.xref import lines_named, symbol_of_lines, xref
from db.database import open_database
from db.queries import require_version
from db.references import importing_files
from indexer.config import load_config
from indexer.pipeline import index_version
from indexer.symbols import parse_blob

LINEAR = '''\
class ReplicatedLinear:
    def forward(self, x):
        return x


class ColumnParallelLinear(ReplicatedLinear):
    pass
'''

LAYERS_INIT = "from .linear import ReplicatedLinear\n"

TREE = {
    "vllm/mac.py": "import os\r\r\rdef helper():\r    return os.sep\r\r\rclass K:\r"
                   "    def run(self):\r        return helper()\r",
    "vllm/__init__.py": "",
    "vllm/layers/__init__.py": LAYERS_INIT,
    "vllm/layers/linear.py": LINEAR,
    "vllm/layers/mla.py": (
        "from .linear import ReplicatedLinear\n"
        "\n"
        "class MLA:\n"
        "    def __init__(self):\n"
        "        self.proj = ReplicatedLinear()\n"
    ),
    "vllm/models/alias.py": (
        "from vllm.layers.linear import ReplicatedLinear as RL\n"
        "\n"
        "def build():\n"
        "    return RL()\n"
    ),
    "vllm/models/reexport.py": (
        "from vllm.layers import (\n"
        "    ReplicatedLinear,\n"
        ")\n"
        "\n"
        "def build(x: ReplicatedLinear) -> ReplicatedLinear:\n"
        "    return x.forward(1)\n"
    ),
    "vllm/models/shadow.py": (
        "class ReplicatedLinear:\n"
        "    pass\n"
        "\n"
        "LAYER = ReplicatedLinear\n"
    ),
    "vllm/models/subclass.py": (
        "from vllm.layers.linear import ReplicatedLinear\n"
        "from vllm.replicatedlinear import helper\n"
        "\n"
        "\n"
        "class Mine(ReplicatedLinear):\n"
        "    pass\n"
    ),
    "vllm/models/text_only.py": (
        '"""ReplicatedLinear is only named in this docstring."""\n'
        "# ReplicatedLinear in a comment\n"
        "NAME = 'ReplicatedLinear'\n"
    ),
    "vllm/models/uses_module.py": (
        "import vllm.layers.linear as linear\n"
        "\n"
        "LAYER = linear.ReplicatedLinear\n"
    ),
    "vllm/star/__init__.py": "from .impl import *\n",
    "vllm/star/impl.py": "def starred():\n    return 1\n",
    "vllm/star_user.py": "import vllm.star as star\n\n\ndef use():\n    return star.starred()\n",
    "vllm/config/__init__.py": "from .cache import CacheConfig\n",
    "vllm/config/cache.py": "class CacheConfig:\n    block_size: int = 16\n",
    "vllm/ext.py": (
        "from external.ops import launch\n"
        "\n"
        "\n"
        "def run():\n"
        "    return launch()\n"
        "\n"
        "\n"
        "class Op:\n"
        "    def __init__(self):\n"
        "        self.launch = None\n"
        "\n"
        "    def go(self):\n"
        "        return self.launch()\n"
    ),
    "vllm/policies.py": (
        "from vllm.config.cache import CacheConfig\n"
        "\n"
        'POLICIES = {"cache": CacheConfig}\n'
        "make = lambda: CacheConfig\n"
        "\n"
        "def pick(config: CacheConfig,\n"
        "         table: dict[str, int]) -> CacheConfig:\n"
        "    return table[CacheConfig]\n"
    ),
    "vllm/engine/args.py": (
        "from vllm.config import CacheConfig\n"
        "\n"
        "\n"
        "class EngineArgs:\n"
        "    block_size: int = CacheConfig.block_size\n"
        "\n"
        "    def size(self, other):\n"
        "        mine = self.block_size\n"
        "        return mine + other.block_size\n"
    ),
    "vllm/kernels.py": "def launch(block_size):\n    return block_size\n",
    "vllm/adapter.py": "class Adapter:\n    pass\n",  # a vendored copy of the external one
    "vllm/getter.py": "def fetch_one():\n    return 1\n",
    "vllm/ext_member.py": (
        "from external import store\n"
        "\n"
        "\n"
        "def go():\n"
        "    return store.fetch_one()\n"
    ),
    "vllm/lazy.py": (
        "def make():\n"
        "    from external.adapter import (\n"
        "        Adapter as ExternalAdapter,\n"
        "    )\n"
        "    return ExternalAdapter()\n"
    ),
    "vllm/builders.py": (
        "class Metadata:\n"
        "    block_size: int = 16\n"
        "\n"
        "\n"
        "class Builder:\n"
        "    def build(self):\n"
        "        return self.block_size\n"
        "\n"
        "    def sized(self, block_size):\n"
        "        return block_size\n"
    ),
    "vllm/deep/shared.py": "class Depth:\n    pass\n",
    "vllm/deep/inner/user.py": "from ..shared import Depth\n\nLAYER = Depth\n",
    "vllm/fast.py": "class Kernel:\n    pass\n",
    "vllm/slow.py": "class Kernel:\n    pass\n",
    "vllm/fallback.py": (
        "try:\n"
        "    from vllm.fast import Kernel\n"
        "except ImportError:\n"
        "    from vllm.slow import Kernel\n"
    ),
    "vllm/interleaved.py": (
        "from vllm.getter import fetch_one as fetch\n"
        "from vllm.getter import fetch_one\n"
        "\n"
        "a = fetch()\n"
        "b = fetch_one()\n"
        "c = fetch()\n"
    ),
    "vllm/scopes.py": (
        "def outer():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner()\n"
        "\n"
        "\n"
        "class Sizes:\n"
        "    size = 4\n"
        "    double = size * 2\n"
        "\n"
        "    def twice(self):\n"
        "        return size\n"
    ),
}


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    source = write_tree(tmp_path / "src", TREE)
    db_path = tmp_path / "index.db"
    with open_database(db_path) as database:
        index_version(database, load_config(tmp_path), "vllm", "v1", from_path=source)
    return db_path


def references(db_path: Path, name: str) -> dict[tuple[str, int], tuple[str, str, str | None]]:
    with open_database(db_path) as database:
        result = xref(database, "vllm", "v1", name, config_name="annotate.toml")
    return {(r.path, r.line): (r.context, r.resolution, r.target) for r in result.references}


TARGET = "vllm/layers/linear.py::ReplicatedLinear"
GH = "https://github.com/vllm-project/vllm/blob"


RL = "ReplicatedLinear"
BLOCK = "CacheConfig.block_size"
BLOCK_SIZE = "vllm/config/cache.py::CacheConfig.block_size"


@pytest.mark.parametrize(("name", "where", "expected"), [
    pytest.param(RL, ("vllm/layers/mla.py", 5), ("name", "import", TARGET),
                 id="relative-import"),
    pytest.param(RL, ("vllm/layers/__init__.py", 1), ("import", "import", TARGET),
                 id="package-reexport-line"),
    pytest.param(RL, ("vllm/models/reexport.py", 2), ("import", "import", TARGET),
                 id="multi-line-import-through-reexport"),
    pytest.param(RL, ("vllm/models/reexport.py", 5), ("annotation", "import", TARGET),
                 id="annotation-through-reexport"),
    pytest.param(RL, ("vllm/models/shadow.py", 4),
                 ("name", "local", "vllm/models/shadow.py::ReplicatedLinear"),
                 id="shadowed-by-local-definition"),
    pytest.param(RL, ("vllm/models/uses_module.py", 3), ("attribute", "import", TARGET),
                 id="attribute-of-an-imported-module"),
    pytest.param(RL, ("vllm/layers/linear.py", 6), ("base", "local", TARGET),
                 id="base-class-same-module"),
    pytest.param(RL, ("vllm/models/subclass.py", 5), ("base", "import", TARGET),
                 id="base-class-after-imports"),
    pytest.param(BLOCK, ("vllm/engine/args.py", 5), ("attribute", "import", BLOCK_SIZE),
                 id="member-of-an-imported-class-not-the-local-namesake"),
    pytest.param(BLOCK, ("vllm/engine/args.py", 8),
                 ("attribute", "local", "vllm/engine/args.py::EngineArgs.block_size"),
                 id="self-member"),
    pytest.param(BLOCK, ("vllm/engine/args.py", 9), ("attribute", "unresolved", None),
                 id="member-of-an-unknown-owner-two-definitions"),
    pytest.param(BLOCK, ("vllm/kernels.py", 2), ("name", "unresolved", None),
                 id="parameter-no-guess-from-the-qualifier"),
    pytest.param(BLOCK, ("vllm/builders.py", 7), ("attribute", "unresolved", None),
                 id="self-member-not-of-another-class-of-the-file"),
    pytest.param(BLOCK, ("vllm/builders.py", 10), ("name", "unresolved", None),
                 id="parameter-not-a-class-attribute-of-the-file"),
    *(pytest.param("CacheConfig", ("vllm/policies.py", line),
                   (context, "import", "vllm/config/cache.py::CacheConfig"), id=name)
      for line, context, name in ((3, "name", "dict-value-after-a-string-key"),
                                  (4, "name", "lambda-body"),
                                  (6, "annotation", "parameter-annotation"),
                                  (7, "annotation", "return-annotation"),
                                  (8, "name", "index"))),
    pytest.param("launch", ("vllm/ext.py", 5), ("name", "unresolved", None),
                 id="imported-from-a-module-outside-the-version-not-a-guess"),
    pytest.param("launch", ("vllm/ext.py", 13), ("attribute", "unresolved", None),
                 id="instance-attribute-not-a-guess"),
    pytest.param("Depth", ("vllm/deep/inner/user.py", 3),
                 ("name", "import", "vllm/deep/shared.py::Depth"), id="parent-relative-import"),
    pytest.param("Kernel", ("vllm/fallback.py", 4), ("import", "import", "vllm/slow.py::Kernel"),
                 id="import-line-of-a-name-imported-twice-is-its-own"),
    pytest.param("inner", ("vllm/scopes.py", 4),
                 ("name", "local", "vllm/scopes.py::outer.<locals>.inner"), id="nested-function"),
    pytest.param("size", ("vllm/scopes.py", 9), ("name", "local", "vllm/scopes.py::Sizes.size"),
                 id="class-body-sees-its-names"),
    pytest.param("size", ("vllm/scopes.py", 12), ("name", "unresolved", None),
                 id="method-body-does-not"),
])
def test_reference_resolution(
    indexed: Path, name: str, where: tuple[str, int], expected: tuple
) -> None:
    assert references(indexed, name)[where] == expected


def test_strings_comments_and_definitions_are_not_references(indexed: Path) -> None:
    found = references(indexed, "ReplicatedLinear")
    assert not [key for key in found if key[0] == "vllm/models/text_only.py"]
    assert ("vllm/layers/linear.py", 1) not in found  # the class statement itself
    assert ("vllm/models/shadow.py", 1) not in found
    attributes = references(indexed, "block_size")
    assert ("vllm/config/cache.py", 2) not in attributes  # block_size: int = 16
    assert attributes[("vllm/engine/args.py", 5)][0] == "attribute"  # = CacheConfig.block_size


def test_lines_and_scopes_of_a_file_with_lone_carriage_returns(indexed: Path) -> None:
    """Lines end at a lone CR, as the symbols count them: the call stands in ``K.run``."""
    with open_database(indexed) as database:
        result = xref(database, "vllm", "v1", "helper", config_name="annotate.toml")
    assert [(d["path"], d["start_line"]) for d in result.definitions] == [("vllm/mac.py", 4)]
    found = [(r.line, r.context, r.enclosing) for r in result.references
             if r.path == "vllm/mac.py"]
    assert found == [(10, "name", "K.run")]


def test_alias_resolves_to_the_imported_definition(indexed: Path) -> None:
    assert references(indexed, "RL")[("vllm/models/alias.py", 4)] == ("name", "import", TARGET)
    by_original = references(indexed, "ReplicatedLinear")
    assert by_original[("vllm/models/alias.py", 1)] == ("import", "import", TARGET)
    assert by_original[("vllm/models/alias.py", 4)] == ("name", "import", TARGET)


def test_uses_of_a_name_and_its_alias_come_in_line_order(indexed: Path) -> None:
    with open_database(indexed) as database:
        result = xref(database, "vllm", "v1", "fetch_one", config_name="annotate.toml")
    found = [(r.line, r.context) for r in result.references if r.path == "vllm/interleaved.py"]
    assert found == [(1, "import"), (2, "import"), (4, "name"), (5, "name"), (6, "name")]


def test_a_lazy_aliased_import_from_outside_is_unresolved_once_per_place(indexed: Path) -> None:
    """The import binds the external class, not the version's copy of that name, and the
    alias it binds is no reference of its own."""
    with open_database(indexed) as database:
        result = xref(database, "vllm", "v1", "Adapter", config_name="annotate.toml")
    found = [(r.line, r.context, r.resolution) for r in result.references
             if r.path == "vllm/lazy.py"]
    assert found == [(3, "import", "unresolved"), (5, "name", "unresolved")]


def test_a_member_of_an_external_import_is_unresolved(indexed: Path) -> None:
    """``store.fetch_one()`` with ``store`` from outside the version: not the version's own
    ``fetch_one`` (this crashed xref of such names with a KeyError)."""
    found = references(indexed, "fetch_one")
    assert found[("vllm/ext_member.py", 5)] == ("attribute", "unresolved", None)


def test_unique_name_is_a_guess(indexed: Path) -> None:
    found = references(indexed, "forward")
    assert found[("vllm/models/reexport.py", 6)] == (
        "attribute", "guess", "vllm/layers/linear.py::ReplicatedLinear.forward"
    )


def test_a_modules_imports_are_told_from_its_lazy_ones_once(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``follow`` and the matcher's base lookups ask for a module's imports again and again
    (629 times at vLLM v0.20.0 -> v0.25.0), each time weighing every import of the file
    against each of its defs and classes: once per file is enough."""
    path = "vllm/models/reexport.py"
    with open_database(indexed) as database:
        version = require_version(database, "vllm", "v1", config_name="annotate.toml")
        modules = VersionModules(database, version)
        first, found = modules.module_imports(path), modules.follow(path, "ReplicatedLinear")
        asked: list[str] = []
        read = modules.imports
        monkeypatch.setattr(modules, "imports", lambda path: asked.append(path) or read(path))
        assert modules.module_imports(path) == first
        assert modules.follow(path, "ReplicatedLinear") == found == TARGET
    assert first and asked == []


def test_names_and_imports_are_recorded_in_the_parse() -> None:
    parsed = parse_blob("b", TREE["vllm/models/reexport.py"].encode() + b"# Hidden\ns = 'Quoted'\n")
    assert "ReplicatedLinear" in parsed.names.split()
    assert "Hidden" not in parsed.names.split()
    assert "Quoted" not in parsed.names.split()
    assert "def" not in parsed.names.split()
    assert parsed.imports == ((1, "vllm.layers", "ReplicatedLinear", None, 0),)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("import a.b as c\n", ((1, "a.b", None, "c", 0),), id="import-as"),
        pytest.param("import os, sys\n", ((1, "os", None, None, 0), (1, "sys", None, None, 0)),
                     id="import-several"),
        pytest.param("from ..x import Y as Z\n", ((1, "x", "Y", "Z", 2),), id="relative-as"),
        pytest.param("from . import q\n", ((1, "", "q", None, 1),), id="from-dot"),
        pytest.param("from m import *\n", ((1, "m", "*", None, 0),), id="wildcard"),
    ],
)
def test_import_rows(source: str, expected: tuple) -> None:
    assert parse_blob("b", source.encode()).imports == expected


def test_cli_xref_lists_files_and_imports(indexed: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["--db", str(indexed), "xref", "ReplicatedLinear", "vllm@v1",
                                "--format", "json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert [d["path"] for d in data["definitions"]] == [
        "vllm/layers/linear.py", "vllm/models/shadow.py"
    ]
    assert {r["path"] for r in data["references"]} == {
        "vllm/layers/__init__.py", "vllm/layers/linear.py", "vllm/layers/mla.py",
        "vllm/models/alias.py", "vllm/models/reexport.py", "vllm/models/shadow.py",
        "vllm/models/subclass.py", "vllm/models/uses_module.py",
    }
    imports = runner.invoke(cli, ["--db", str(indexed), "xref", "ReplicatedLinear", "vllm@v1",
                                  "--imports"])
    assert imports.exit_code == 0
    assert imports.output.splitlines() == [
        "vllm/layers/__init__.py:1  from .linear import ReplicatedLinear",
        "vllm/layers/mla.py:1  from .linear import ReplicatedLinear",
        "vllm/models/alias.py:1  from vllm.layers.linear import ReplicatedLinear",
        "vllm/models/reexport.py:1  from vllm.layers import ReplicatedLinear",
        "vllm/models/subclass.py:1  from vllm.layers.linear import ReplicatedLinear",
    ]


@pytest.mark.parametrize(("name", "stderr"), [
    pytest.param(BLOCK, "", id="defined-and-imported-by-none"),
    pytest.param("ReplicatedLiner", "Note: nothing named 'ReplicatedLiner' is defined at vllm@v1 "
                 "(closest: ReplicatedLinear)\n", id="defined-nowhere"),
])
def test_cli_xref_imports_of_a_name_no_module_imports_says_so(
    indexed: Path, name: str, stderr: str
) -> None:
    """Not an empty output, which reads as a command that did nothing."""
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", name, "vllm@v1", "--imports"])
    assert (result.exit_code, result.stdout, result.stderr) == (
        0, f"No module of vllm@v1 imports {name}.\n", stderr)


@pytest.mark.parametrize(("query", "definitions"), [
    pytest.param(["ReplicatedLinear", "vllm@v1"],
                 ["vllm/layers/linear.py", "vllm/models/shadow.py"], id="short-name-all"),
    pytest.param([f"vllm@v1:{TARGET}"], ["vllm/layers/linear.py"], id="path-and-qualname"),
    pytest.param(["vllm.layers.linear.ReplicatedLinear", "vllm@v1"], ["vllm/layers/linear.py"],
                 id="dotted-name"),
    pytest.param(["vllm@v1:vllm.layers.ReplicatedLinear"], ["vllm/layers/linear.py"],
                 id="dotted-name-through-the-package-import"),
    pytest.param(["vllm@v1:vllm/layers/linear.py#L1-L3"], ["vllm/layers/linear.py"],
                 id="lines-within-it"),
    pytest.param(["vllm/layers/linear.py#L1-L3", "vllm@v1"], ["vllm/layers/linear.py"],
                 id="lines-at-the-version-given"),
    pytest.param([f"{GH}/v1/vllm/layers/linear.py#L1C3-L2C9"], ["vllm/layers/linear.py"],
                 id="permalink-within-it"),
])
def test_cli_xref_of_a_ref_lists_the_definition_it_names(
    indexed: Path, query: list[str], definitions: list[str]
) -> None:
    """The references are those of the short name, whichever way it is written."""
    def xref_json(*args: str) -> dict:
        shown = CliRunner().invoke(cli, ["--db", str(indexed), "xref", *args, "--format", "json"])
        assert shown.exit_code == 0, shown.output
        return json.loads(shown.output)

    data = xref_json(*query)
    assert [d["path"] for d in data["definitions"]] == definitions
    assert data["references"] == xref_json("ReplicatedLinear", "vllm@v1")["references"]


@pytest.mark.parametrize(("given", "symbol"), [
    pytest.param("vllm@v1:vllm/layers/linear.py#L2",
                 f"vllm@v1:{TARGET}.forward", id="a-line-of-a-method"),
    pytest.param("vllm@v1:vllm/layers/linear.py#L1-L3", f"vllm@v1:{TARGET}",
                 id="lines-of-a-class"),
    pytest.param(f"{GH}/v1/vllm/layers/linear.py#L1C3-L2C9", f"vllm@v1:{TARGET}",
                 id="permalink"),
])
def test_the_symbol_of_lines_is_the_innermost_symbol_covering_them(
    indexed: Path, given: str, symbol: str
) -> None:
    ref = lines_named(given)
    assert ref is not None
    with open_database(indexed) as database:
        assert symbol_of_lines(database, load_config(indexed.parent), ref) == symbol


@pytest.mark.parametrize("given", [RL, TARGET, f"vllm@v1:{TARGET}", "vllm.layers.linear.X"],
                         ids=["short-name", "path-and-qualname", "a-ref", "dotted-name"])
def test_names_and_symbols_name_no_lines(given: str) -> None:
    assert lines_named(given) is None


@pytest.mark.parametrize(("given", "message"), [
    pytest.param("foo#bar", "invalid line anchor '#bar' after path 'foo': expected '#Lx' or "
                 "'#Lx-Ly'", id="a-bad-anchor"),
    pytest.param("https://example.com/x.py", "unsupported URL 'https://example.com/x.py': only "
                 "GitHub permalinks are supported (hint: "
                 "https://github.com/ORG/NAME/blob/REF/PATH#Lx-Ly)", id="a-url-not-a-permalink"),
])
def test_text_written_as_lines_that_names_none_is_a_syntax_error(given: str, message: str
                                                                  ) -> None:
    with pytest.raises(RefSyntaxError) as caught:
        lines_named(given)
    assert str(caught.value) == message


@pytest.mark.parametrize(("given", "what"), [
    pytest.param("vllm@v1:vllm/layers/linear.py#L1-L6", "lines that no symbol covers",
                 id="lines-across-two-symbols"),
    pytest.param(f"{GH}/v1/vllm/layers/linear.py", "a whole file, not a symbol",
                 id="permalink-to-a-file"),
])
def test_lines_that_no_symbol_covers_have_no_symbol(indexed: Path, given: str, what: str) -> None:
    ref = lines_named(given)
    assert ref is not None
    with open_database(indexed) as database, pytest.raises(ResolveError) as caught:
        symbol_of_lines(database, load_config(indexed.parent), ref)
    assert caught.value.message == f"'{given}' names {what}"


def test_cli_xref_of_a_name_nothing_defines_says_so(indexed: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", "ReplicatedLiner", "vllm@v1"])
    assert result.exit_code == 0
    assert result.stdout.endswith("0 references in 0 files\n")
    assert result.stderr == ("Note: nothing named 'ReplicatedLiner' is defined at vllm@v1 "
                             "(closest: ReplicatedLinear)\n")
    empty = CliRunner().invoke(cli, ["--db", str(indexed), "xref", " ", "vllm@v1"],
                               prog_name="annotate")
    assert (empty.exit_code, empty.stderr) == (
        2, "Error: Invalid value for 'NAME|REF': it is empty (see 'annotate xref --help')\n")


@pytest.mark.parametrize(("name", "note"), [
    pytest.param("setup.py", "Note: no indexed version has a file 'setup.py'\n",
                 id="a-top-level-file-not-indexed"),
    pytest.param("linear.py", "Note: no indexed version has a file 'linear.py' (closest: "
                 "vllm/layers/linear.py)\n", id="a-file-name-without-its-folder"),
])
def test_cli_xref_of_a_file_name_says_no_version_has_that_file(
    indexed: Path, tmp_path: Path, name: str, note: str
) -> None:
    """As links says (test_links_to_a_name_nothing_defines_says_so): read as a dotted name,
    setup.py is an attribute 'py', which other code uses; the uses alone are no answer."""
    source = write_tree(tmp_path / "v2", {**TREE, "vllm/paths.py": "def where(p):\n"
                                          "    return p.py\n"})
    with open_database(indexed) as database:
        index_version(database, load_config(tmp_path), "vllm", "v2", from_path=source)
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", name, "vllm@v2"])
    assert (result.exit_code, result.stderr) == (0, note)
    assert result.stdout.endswith("1 reference in 1 file\n")


@pytest.mark.parametrize(("query", "note"), [
    pytest.param(["CacheEngine", "vllm@v1"], "Note: nothing named 'CacheEngine' is defined at "
                 "vllm@v1; it is defined at lmcache@v1: 'annotate xref CacheEngine lmcache@v1' "
                 "lists it there\n", id="another-repos-name"),
    pytest.param(["CacheEngine.store", "vllm@v1"], "Note: nothing named 'CacheEngine.store' is "
                 "defined at vllm@v1; it is defined at lmcache@v1: 'annotate xref "
                 "CacheEngine.store lmcache@v1' lists it there\n", id="a-qualname"),
    pytest.param(["CacheEngine", "lmcache@v1"], "", id="defined-there"),
])
def test_cli_xref_of_a_name_another_version_defines_says_where(
    indexed: Path, tmp_path: Path, query: list[str], note: str
) -> None:
    """vllm's target is the default version: a name of LMCache's is defined nowhere there,
    and its uses in vLLM resolve to nothing; the note names where it is defined."""
    source = write_tree(tmp_path / "lmcache", {"lmcache/engine.py": (
        "class CacheEngine:\n    def store(self):\n        pass\n")})
    with open_database(indexed) as database:
        index_version(database, load_config(tmp_path), "lmcache", "v1", from_path=source)
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", *query])
    assert (result.exit_code, result.stderr) == (0, note)


@pytest.mark.parametrize(("ref", "error"), [
    pytest.param("vllm@v1:vllm/layers/linear2.py::ReplicatedLinear",
                 "Error: path 'vllm/layers/linear2.py' does not exist at vllm@v1 (hint: did you "
                 "mean 'vllm/layers/linear.py', 'vllm/layers/mla.py' or "
                 "'vllm/layers/__init__.py'?)\n", id="no-such-path"),
    pytest.param("vllm@v1:vllm/layers/mla.py::ReplicatedLinear",
                 "Error: no symbol 'ReplicatedLinear'", id="not-defined-in-that-file"),
])
def test_cli_xref_of_a_ref_that_names_nothing_is_an_error(
    indexed: Path, ref: str, error: str
) -> None:
    """As ``show`` says: the references of another file's symbol are not the ones asked."""
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", ref])
    assert result.exit_code == 2
    assert result.output.startswith(error)


@pytest.mark.parametrize(("args", "error"), [
    pytest.param(["a..b", "vllm@v1"], "Invalid value for 'NAME|REF': 'a..b' is not a name: write "
                 "identifiers joined by '.'", id="empty-part"),
    pytest.param([".", "vllm@v1"], "Invalid value for 'NAME|REF': '.' is not a name: write "
                 "identifiers joined by '.'", id="a-dot"),
    pytest.param(["a²", "vllm@v1"], "Invalid value for 'NAME|REF': 'a²' is not a name: write "
                 "identifiers joined by '.'", id="a-superscript-digit"),
    pytest.param(["MLA.<locals>", "vllm@v1"], "Invalid value for 'NAME|REF': 'MLA.<locals>' is "
                 "not a name: write identifiers joined by '.'", id="locals-last"),
    pytest.param(["f.<locals>.<locals>.g", "vllm@v1"], "Invalid value for 'NAME|REF': "
                 "'f.<locals>.<locals>.g' is not a name: write identifiers joined by '.'",
                 id="locals-twice"),
    pytest.param([f"vllm@v1:{TARGET}", "vllm@v2"], f"vllm@v1:{TARGET} names its version; drop "
                 "vllm@v2, or the version in the ref", id="two-versions"),
])
def test_cli_xref_refuses_what_names_nothing(indexed: Path, args: list[str], error: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", *args], prog_name="annotate")
    assert (result.exit_code, result.stderr) == (
        2, f"Error: {error} (see 'annotate xref --help')\n")


NOT_ASCII = {"vllm/中文.py": "def 缓存():\n    pass\n\n\n缓存()\n",
             "vllm/units.py": "\u03bc = 1e-6\nSECOND = \u03bc * 1e6\n"}  # Greek mu


@pytest.mark.parametrize(("query", "definition"), [
    pytest.param("缓存", "vllm/中文.py:1  function 缓存", id="a-name"),
    pytest.param("vllm@v2:vllm/中文.py::缓存", "vllm/中文.py:1  function 缓存", id="a-ref"),
    pytest.param("\u00b5", "vllm/units.py:1  attribute \u03bc", id="micro-sign-is-mu"),
    pytest.param("vllm.units.\u00b5", "vllm/units.py:1  attribute \u03bc",
                 id="micro-sign-in-a-dotted-name"),
])
def test_cli_xref_takes_a_name_python_takes(
    indexed: Path, tmp_path: Path, query: str, definition: str
) -> None:
    """An identifier need not be ASCII (PEP 3131): xref takes the names a ref may hold, read
    as Python reads them (NFKC), and finds their definitions; it says that it did not look
    for their uses, which the index does not record."""
    source = write_tree(tmp_path / "v2", {**TREE, **NOT_ASCII})
    with open_database(indexed) as database:
        index_version(database, load_config(tmp_path), "vllm", "v2", from_path=source)
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", query, "vllm@v2"])
    name = definition.rsplit(" ", 1)[-1]
    assert (result.exit_code, result.stderr) == (
        0, f"Note: the uses of {name} are not listed: the index records the uses of ASCII "
           "names only\n")
    assert result.stdout == (f"{name} at vllm@v2\ndefinitions:\n  {definition}\n"
                             "0 references in 0 files\n")


@pytest.mark.parametrize(("ref", "error"), [
    pytest.param("vllm@v1:vllm/layers/linear.py#L1-L6",
                 "'vllm@v1:vllm/layers/linear.py#L1-L6' names lines that no symbol covers",
                 id="lines-across-two-symbols"),
    pytest.param(f"{GH}/v1/vllm/layers/linear.py",
                 f"'{GH}/v1/vllm/layers/linear.py' names a whole file, not a symbol",
                 id="permalink-to-a-file"),
])
def test_cli_xref_refuses_lines_that_are_no_symbol(indexed: Path, ref: str, error: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", ref])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"Error: {error} (hint: write a symbol: PATH::QUALNAME, a dotted name, or a permalink "
        "or REPO@VERSION:PATH#Lx-Ly to lines within one)\n")


@pytest.mark.parametrize("name", ["X", "vllm/layers/linear.py#L1-L6"], ids=["name", "lines"])
def test_cli_xref_unindexed_version_is_one_line(indexed: Path, name: str) -> None:
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", name, "vllm@v9"],
                                prog_name="annotate")
    assert result.exit_code == 2
    assert result.output == (
        "Error: Invalid value for 'REPO@VERSION': vllm@v9 is neither indexed nor configured "
        "(vllm has v0.20.0, v0.23.1rc0, v0.25.0, v1); fix the version, or run 'annotate index "
        "vllm@v9' to index it (see 'annotate xref --help')\n")


@pytest.mark.parametrize("ref", [
    pytest.param("vllm@v0.20.0:vllm/layers/linear.py#L2", id="lines"),
    pytest.param(f"{GH}/v0.20.0/vllm/layers/linear.py#L2", id="permalink"),
])
def test_cli_xref_of_lines_at_a_version_not_indexed_says_to_index_it(
    indexed: Path, ref: str
) -> None:
    """Worded as show and history word it, not as a ref of an annotation file (hint: ...)."""
    result = CliRunner().invoke(cli, ["--db", str(indexed), "xref", ref])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        "Error: vllm@v0.20.0 is not indexed; run 'annotate index vllm@v0.20.0'\n")


RELATION_ANNOTATION = """\
article: module_analysis/mla.md
at: vllm@v1
claims:
  - id: mla-uses-replicated
    text: "MLA projects with ReplicatedLinear"
    refs:
      - ref: vllm/layers/mla.py::MLA.__init__
        uses: [vllm/layers/linear.py::ReplicatedLinear]
"""

MLA_WITHOUT_RELATION = TREE["vllm/layers/mla.py"].replace(
    "self.proj = ReplicatedLinear()", "self.proj = None"
)


@pytest.mark.parametrize(
    ("mla_at_v2", "status", "exit_code"),
    [
        pytest.param(TREE["vllm/layers/mla.py"] + "\n# a comment\n", "fresh", 0,
                     id="relation-holds"),
        pytest.param(MLA_WITHOUT_RELATION, "relation-missing", 1, id="relation-gone"),
    ],
)
def test_check_reports_relation_missing(
    tmp_path: Path, mla_at_v2: str, status: str, exit_code: int
) -> None:
    (tmp_path / "annotate.toml").write_text('[repos.vllm]\nversions = ["v1", "v2"]\n')
    write_tree(tmp_path / "articles", {"mla.yml": RELATION_ANNOTATION})
    v1 = write_tree(tmp_path / "v1", TREE)
    v2 = write_tree(tmp_path / "v2", {**TREE, "vllm/layers/mla.py": mla_at_v2})
    runner = CliRunner()
    for version, source in (("v1", v1), ("v2", v2)):
        indexed = runner.invoke(cli, ["index", f"vllm@{version}", "--from", str(source)])
        assert indexed.exit_code == 0, indexed.output
    checked = runner.invoke(cli, ["check", "--format", "json"])
    assert checked.exit_code == exit_code, checked.output
    [result] = json.loads(checked.output)["results"]
    assert result["status"] == status
    if status == "relation-missing":
        assert result["message"] == (
            "vllm@v2:vllm/layers/mla.py::MLA.__init__ no longer refers to "
            "vllm@v1:vllm/layers/linear.py::ReplicatedLinear"
        )


def test_xref_help_says_what_imports_lists_and_which_version_it_reads() -> None:
    """As the README says: --imports lists the modules that import it, not the imports
    it makes; a ref, or a permalink, is read at its own version, not at vllm's target."""
    shown = " ".join(CliRunner().invoke(cli, ["xref", "--help"]).output.split())
    assert "--imports List the modules that import it instead." in shown
    assert "in one version (default: a ref's own, else vllm's target version)." in shown


def test_the_imports_of_a_name_are_looked_up_not_scanned(tmp_path: Path) -> None:
    """The files that import a removed symbol's name, or its module whole, are found
    through the indexes of ``imports``: the first check of the big collection scanned
    every import of the version once per removed symbol (2.4 s of 246 symbols). The
    lookup takes fewer SQLite steps than the version has import rows."""
    tree = {f"vllm/other_{number:03d}.py": f"import os\nfrom json import dumps\n# {number}\n"
            for number in range(450)}  # distinct files, two imports each
    tree |= {"vllm/user.py": "from vllm.layers.linear import ReplicatedLinear as RL\n",
             "vllm/whole.py": "import vllm.layers.linear\n"}
    source = write_tree(tmp_path / "src", tree)
    with open_database(tmp_path / "index.db") as database:
        index_version(database, load_config(tmp_path), "vllm", "v1", from_path=source)
        key = require_version(database, "vllm", "v1", config_name="annotate.toml")
        rows = database.conn.execute("SELECT count(*) FROM imports").fetchone()[0]
        steps: list[int] = []
        database.conn.set_progress_handler(lambda: steps.append(1), 1)
        found = importing_files(database, key, ["RL", "ReplicatedLinear"],
                                ["vllm.layers.linear"])
        database.conn.set_progress_handler(None, 1)
    assert sorted(path for path, _blob, _row in found) == ["vllm/user.py", "vllm/whole.py"]
    assert rows == 902 and len(steps) < rows


def test_the_files_searched_for_users_of_a_symbol_hold_all_that_xref_finds(
    indexed: Path
) -> None:
    """check's hint looks for the users of a removed module-level symbol in a few files
    (`user_files`), not in every file that names it as xref does: for each module-level
    definition, they hold every file where xref resolves a use of it by import or in its
    module: by its name, an alias, its module imported whole, a package's re-export or
    ``*``."""
    found = set()
    with open_database(indexed) as database:
        key = require_version(database, "vllm", "v1", config_name="annotate.toml")
        rows = database.conn.execute(
            "SELECT DISTINCT path, qualname FROM version_symbols WHERE version = 'v1'"
            " AND qualname NOT LIKE '%.%'").fetchall()
        for path, qualname in rows:
            target = f"{path}::{qualname}"
            users = {found.path for found in xref(database, "vllm", "v1", qualname,
                                                   config_name="annotate.toml").references
                     if found.target == target and found.resolution in ("import", "local")}
            pinned = Resolved("vllm", "v1", key, path, "", 1, 1, "", "", qualname)
            searched = {path for path, _blob in user_files(database, pinned)}
            assert users <= searched, target
            found |= {(qualname, user) for user in users - {path}}
    assert {("ReplicatedLinear", "vllm/models/uses_module.py"),
            ("ReplicatedLinear", "vllm/models/reexport.py"),
            ("ReplicatedLinear", "vllm/models/alias.py"),
            ("starred", "vllm/star_user.py")} <= found
