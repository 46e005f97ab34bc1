"""The command lines of the README and of docs/commands.md against the CLI: every
``annotate ...`` they show parses (its options exist and have their values, a value chosen
among some is one of them, it gives no more arguments than its command takes), the
README's Commands table names every command with every option that command takes, and
the choices it offers as the CLI offers them, and links it to its section of
docs/commands.md, which names every option again.

Nothing runs but the examples of a usage error, which print the error shown: click's own
parser reads each line, so a placeholder (``REPO@VERSION``, ``PATH``) stands for any
value."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from fakeproject import invoke

from annotate_cli import cli

TOP = Path(__file__).resolve().parent.parent
README = (TOP / "README.md").read_text(encoding="utf-8")
COMMANDS_DOC = (TOP / "docs" / "commands.md").read_text(encoding="utf-8")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+(?:\n[^`\n]+)*)`")  # GitHub's: it may run over a line end
NO_COMMAND_LINES = {"fix would make 5 edits in 2 files: ...", "versions = []"}
"""Spans that start with a command's name but are no command line: what annotate prints,
a line of annotate.toml."""
OPTION = re.compile(r"^--?[a-z]")


def code_spans(text: str) -> list[str]:
    """The README's inline code, one line each, ``\\|`` (a ``|`` in a table) as ``|``."""
    prose = FENCE.sub("", text)
    return [" ".join(span.split()).replace("\\|", "|") for span in CODE_SPAN.findall(prose)]


def block_commands(text: str) -> list[str]:
    """The ``annotate`` command lines of the fenced blocks (a workflow's ``run:`` too, a
    console's ``$`` prompt), each ``&&``-joined command apart, without its output
    redirection."""
    commands = []
    for block in FENCE.findall(text):
        for line in block.splitlines():
            line = re.sub(r"^\s*(?:\$\s+)?-?\s*(?:run:\s*)?", "", line.split("  #")[0])
            commands += [re.sub(r"\s*>>?.*$", "", part).strip() for part in line.split("&&")]
    return [command for command in commands if command.startswith("annotate ")]


def is_synopsis(span: str) -> bool:
    return any(mark in span for mark in ("[", "|", "..."))


SPANS = code_spans(README) + code_spans(COMMANDS_DOC)
EXAMPLES = [span for span in SPANS if span.startswith("annotate ") and not is_synopsis(span)]
EXAMPLES += block_commands(README) + block_commands(COMMANDS_DOC)
EXAMPLES = list(dict.fromkeys(part.strip() for example in EXAMPLES
                              for part in example.split("&&")))
SYNOPSES = [span for span in SPANS if span.startswith("annotate ") and is_synopsis(span)]
MENTIONS = [span for span in SPANS
            if span.split()[0] in cli.commands and len(span.split()) > 1
            and span not in NO_COMMAND_LINES]
"""``links vllm/config``, ``diff -o FILE``: a command and some of its words."""


def option_names(command: click.Command) -> dict[str, click.Option]:
    return {name: param for param in command.params if isinstance(param, click.Option)
            for name in (*param.opts, *param.secondary_opts)}


def command_of(words: list[str]) -> tuple[click.Command, list[str]]:
    """The command ``annotate WORDS`` runs and the words after its name, once the
    group's own options before it are parsed (``annotate --version``: the group's)."""
    group = click.Context(cli, info_name="annotate")
    values, rest, _ = cli.make_parser(group).parse_args(list(words))
    if not rest and "version" in values:
        return cli, []
    assert rest, f"no command in 'annotate {shlex.join(words)}'"
    assert rest[0] in cli.commands, f"'{rest[0]}' is no command of annotate"
    return cli.commands[rest[0]], rest[1:]


def parse(words: list[str]) -> None:
    """Parse ``annotate WORDS`` as click would before running it."""
    command, rest = command_of(words)
    context = click.Context(command, info_name=command.name)
    values, extra, _ = command.make_parser(context).parse_args(rest)
    assert not extra, f"{command.name} takes no more arguments: {extra}"
    for param in command.params:
        value = values.get(param.name or "")
        if isinstance(param.type, click.Choice) and isinstance(value, str):
            assert value in param.type.choices, f"{param.opts[0]} {value}: not a choice"


def test_the_readme_is_read_whole() -> None:
    """The lines below are found where they stand (a fenced block, a workflow's run:, a
    console's prompt, a span over a line end, a table cell, docs/commands.md), or the
    tests of each would pass on nothing."""
    assert {"annotate index --keep-going", "annotate check --exit-zero",
            "annotate check --format github", "annotate check --format markdown --exit-zero",
            "annotate diff vllm@vOLD vllm@vNEW --annotated",
            "annotate links envs.py"} <= set(EXAMPLES)
    assert "annotate check [--against REPO@VERSION] [--format text|json|github|sarif|markdown] " \
           "[-o FILE] [--exit-zero] [--workers N]" in SYNOPSES
    assert {"diff -o FILE", "links vllm/config"} <= set(MENTIONS)
    assert "annotate search TEXT... [--limit N] [--format table|json]" in SYNOPSES
    assert set(command_sections(COMMANDS_DOC)) >= {"index", "xref"}
    assert "annotate search '\"unclosed'" in {command for command, _ in USAGE_ERRORS}


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_command_line_the_readme_shows_parses(example: str) -> None:
    try:
        parse(shlex.split(example)[1:])
    except click.UsageError as error:
        pytest.fail(f"README or docs/commands.md: '{example}': {error.format_message()}")


def options_and_choices(words: list[str]) -> Iterator[tuple[str, set[str] | None]]:
    """Each option a synopsis or a mention names, with the choices written after it
    (``--format table|json``), None when it shows a placeholder or nothing."""
    words = [word.strip("[]()") for word in words]
    for word, after in zip(words, [*words[1:], ""], strict=True):
        if OPTION.match(word):
            choices = set(after.split("|")) if "|" in after and not OPTION.match(after) else None
            yield word, choices


@pytest.mark.parametrize("span", SYNOPSES + MENTIONS)
def test_every_option_the_readme_names_is_its_commands(span: str) -> None:
    words = span.split()
    command, rest = command_of(words[1:] if words[0] == "annotate" else words)
    options = option_names(command)
    for name, choices in options_and_choices(rest):
        assert name in options, f"'{span}': {command.name} has no option {name}"
        if choices is not None:
            offered = set(getattr(options[name].type, "choices", ()))
            assert choices == offered, f"'{span}': the CLI offers {sorted(offered)}"


@pytest.mark.parametrize("synopsis", SYNOPSES)
def test_a_synopsis_names_each_text_value_as_help_does(synopsis: str) -> None:
    """``--from PATH`` in the docs is ``--from PATH`` in ``index --help``, not ``--from
    TEXT``: an option that takes text (a path, a ref, a glob) shows the docs' placeholder;
    one that takes a number shows click's range instead of ``N``."""
    command, rest = command_of(synopsis.split()[1:])
    options = option_names(command)
    context = click.Context(command, info_name=command.name)
    words = [word.strip("[]()") for word in rest]
    for word, after in zip(words, [*words[1:], ""], strict=True):
        option = options.get(word)
        if option is None or option.is_flag or not re.fullmatch(r"[A-Z@]+", after):
            continue
        shown = (option.get_help_record(context) or ("", ""))[0]
        if isinstance(option.type, (click.types.StringParamType, click.Path)):
            assert shown.endswith(f" {after}"), f"'{synopsis}': {command.name} --help shows {shown}"


def table_rows(text: str) -> dict[str, str]:
    """The Commands table's rows, by the command they describe (a row may describe two)."""
    section = text.split("## Commands\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        first_cell = line.split(" | ")[0]
        for name in re.findall(r"`annotate (\w+)", first_cell):
            rows[name] = rows.get(name, "") + line
    return rows


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_the_commands_table_names_every_option(name: str) -> None:
    """A newcomer reads the table, not each --help: every command is a row, and every
    option of it (but the --db that goes before it) is in its row."""
    row = table_rows(README).get(name)
    assert row is not None, f"the README's Commands table has no row for 'annotate {name}'"
    named = {word.strip("[]()") for span in code_spans(row) for word in span.split()}
    for param in option_names(cli.commands[name]).values():
        if param.hidden or param.opts == ["--db"]:
            continue
        assert named & {*param.opts, *param.secondary_opts}, (
            f"the README's row for 'annotate {name}' does not name {param.opts[0]}")


def command_sections(text: str) -> dict[str, str]:
    """docs/commands.md's sections, by the command each is headed with."""
    parts = re.split(r"^## annotate (\w+)\n", text, flags=re.MULTILINE)
    return {name: body.split("\n## ", 1)[0]
            for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def options_named(text: str) -> set[str]:
    return {word.strip("[](),;:") for span in code_spans(text) for word in span.split()}


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_each_command_links_to_its_section_naming_every_option(name: str) -> None:
    """The table's row links to the command's section of docs/commands.md (GitHub's anchor
    of its heading), and the section names every option of it but the --db before it."""
    row = table_rows(README).get(name, "")
    assert f"](docs/commands.md#annotate-{name})" in row, (
        f"the README's row for 'annotate {name}' does not link to its section")
    section = command_sections(COMMANDS_DOC).get(name)
    assert section is not None, f"docs/commands.md has no section '## annotate {name}'"
    named = options_named(section)
    for param in option_names(cli.commands[name]).values():
        if param.hidden or param.opts == ["--db"]:
            continue
        assert named & {*param.opts, *param.secondary_opts}, (
            f"docs/commands.md's section on 'annotate {name}' does not name {param.opts[0]}")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lowercase, punctuation but ``-`` dropped, each
    space a ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {github_anchor(heading) for heading in re.findall(r"^#+ (.+)$", FENCE.sub("", text),
                                                             flags=re.MULTILINE)}


DOCS = {"README.md": README, "docs/commands.md": COMMANDS_DOC}
LINKS = sorted({(source, (Path(source).parent / target).as_posix().replace("docs/../", "")
                 if target else source, anchor)
                for source, text in DOCS.items()
                for target, anchor in re.findall(r"\]\(((?:\.\./)?[\w/]+\.md)?#([\w-]+)\)", text)})
"""Each link with an anchor, as (file it is in, file it leads to, anchor)."""


@pytest.mark.parametrize(("source", "target", "anchor"), LINKS,
                         ids=[f"{source}->{target}#{anchor}" for source, target, anchor in LINKS])
def test_every_link_between_the_readme_and_the_commands_lands_on_a_heading(
        source: str, target: str, anchor: str) -> None:
    assert anchor in anchors(DOCS[target]), (
        f"{source}: the link to {target}#{anchor} lands on no heading")


def usage_error_examples(text: str) -> list[tuple[str, str]]:
    """The console examples whose output is a usage error ('Error: Invalid value for'),
    as (the command line, the error line)."""
    return [(command, error) for block in FENCE.findall(text)
            for command, error in re.findall(r"^\$ (annotate .+)\n(Error: Invalid value .+)$",
                                             block, flags=re.MULTILINE)]


USAGE_ERRORS = usage_error_examples(README) + usage_error_examples(COMMANDS_DOC)


@pytest.mark.parametrize(("command", "error"), USAGE_ERRORS,
                         ids=[command for command, _ in USAGE_ERRORS])
def test_a_usage_error_example_is_what_annotate_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, error: str) -> None:
    """A usage error is refused before anything is read: run in an empty folder, the
    example prints the line the docs show."""
    monkeypatch.chdir(tmp_path)
    result = invoke(*shlex.split(command)[1:])
    assert (result.exit_code, result.stderr) == (2, error + "\n")
