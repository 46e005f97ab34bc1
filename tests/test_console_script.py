"""The ``annotate`` console script (`annotate_start`) ends a finished run without the
interpreter's teardown: what the run printed and its exit status must be those of the
usual exit (``python -m annotate_cli``, which has the teardown), and exit handlers that
were registered before it started still run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakeproject import isolated_env, run_annotate


def _console_script() -> list[str]:
    script = Path(sys.executable).with_name("annotate")
    return [str(script)] if script.exists() else [shutil.which("annotate") or "annotate"]


def _run_script(root: Path, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
    env = {**isolated_env(os.environ, root / "xdg-cache"), **extra_env}
    return subprocess.run([*_console_script(), *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(("versions",), id="versions"),
        pytest.param(("symbols", "vllm@v0.3.0", "--format", "jsonl"), id="a-long-listing"),
        pytest.param(("show", "vllm@v0.3.0:vllm/nowhere.py::Nothing"), id="an-error-exits-2"),
        pytest.param(("symbols", "--kind"), id="a-usage-error-exits-2"),
        pytest.param(("index", "vllm@v0.3.0"), id="a-no-op-index"),
    ],
)
def test_the_console_script_prints_and_exits_as_the_module_does(
    indexed_fakes: Path, args: tuple[str, ...]
) -> None:
    script = _run_script(indexed_fakes, *args)
    module = run_annotate(indexed_fakes, *args)
    assert (script.returncode, script.stdout, script.stderr) == (
        module.returncode, module.stdout, module.stderr)
    assert script.stdout or script.stderr


def test_exit_handlers_registered_before_the_script_still_run(
    indexed_fakes: Path, tmp_path: Path
) -> None:
    """A ``sitecustomize`` (coverage.py's subprocess hook is one) registers its handler
    before `annotate_start.main` runs: the run then ends with the usual teardown."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    ran = tmp_path / "handler-ran"
    (hooks / "sitecustomize.py").write_text(
        "import atexit, pathlib\n"
        f"atexit.register(pathlib.Path({str(ran)!r}).write_text, 'yes')\n"
    )
    done = _run_script(indexed_fakes, "versions", PYTHONPATH=str(hooks))
    assert done.returncode == 0, done.stderr
    assert ran.read_text() == "yes"
