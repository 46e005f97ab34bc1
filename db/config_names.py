"""How hints name the config and its tables: the names the user writes them under, which
differ in pyproject.toml (``[tool.annotate]``); here, below indexer.config, for the hints
of db.queries too."""

from __future__ import annotations

PYPROJECT_CONFIG = "[tool.annotate] of pyproject.toml"
"""`ProjectConfig.file_name` of the [tool.annotate] table of a pyproject.toml."""


def table_in(config_name: str, table: str) -> str:
    """The config's table ``table`` (``repos.vllm``) as the user writes it in the config
    ``config_name`` names (`ProjectConfig.file_name`), and that file: ``[repos.vllm] in
    annotate.toml``, ``[tool.annotate.repos.vllm] in pyproject.toml``."""
    file = "pyproject.toml" if config_name == PYPROJECT_CONFIG else config_name
    return f"{table_header(config_name, table)} in {file}"


def table_header(config_name: str, table: str) -> str:
    """`table_in` without the file, for a message that names it already; empty for the
    top of annotate.toml, which is no table."""
    parts = ["tool.annotate"] if config_name == PYPROJECT_CONFIG else []
    parts += [table] if table else []
    return f"[{'.'.join(parts)}]" if parts else ""


def keys_at(path: str, config_name: str, table: str = "") -> str:
    """Where the keys of the config's table ``table`` (its top, by default) are, as an error
    about one of them starts: the file ``path`` and the table as the user writes it there:
    ``/p/annotate.toml``, ``/p/annotate.toml [repos.vllm]``, ``/p/pyproject.toml
    [tool.annotate]``, ``/p/pyproject.toml [tool.annotate.repos.vllm]``."""
    header = table_header(config_name, table)
    return f"{path} {header}" if header else path
