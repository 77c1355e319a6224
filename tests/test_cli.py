"""``recjudge`` (recjudge_utils.cli): one command whose subcommands are the library's ``python -m`` front doors.

Each subcommand is the same command as its ``python -m`` form: the same options (its help, read without the name in
the usage line), the same output, the same exit code for a bad argument and for a refused one. In-process through
``main([...])``; one test runs the script pip installed.
"""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from locations import ROOT

from recjudge_utils import cli

#: subcommand -> the ``python -m`` module of the same command
MODULE_FORMS = {
    "book": "recjudge_utils.book",
    "data": "recjudge_utils.data",
    "labels": "recjudge_utils.annotation",
    "profiles": "recjudge_utils.judge.profiles_cli",
    "build-judge": "recjudge_utils.judge.llama_build",
}
#: every command line whose help is compared: a subcommand, then the words before --help
HELP_CASES = [
    *(("book", [c]) for c in ("run", "plan", "build", "export", "replay", "report", "list", "params", "tune")),
    ("book", []),
    *(("data", [c]) for c in ("list", "fetch", "info", "export-split", "check", "example")),
    ("data", []),
    ("labels", []),
    ("labels", ["export"]),
    ("profiles", []),
    ("build-judge", []),
]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # no command here may find (or leave) a run, a dataset or a build of this machine
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RECJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")


def _module_main(subcommand: str) -> Callable[..., int]:
    """The ``python -m`` form's main, the function its ``__main__`` calls."""
    main: Callable[..., int] = importlib.import_module(cli.SUBCOMMANDS[subcommand].module).main
    return main


def _run(command: Callable[[list[str]], int], argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple:
    """(exit code, stdout, stderr) of an in-process command, whether it returns or argparse exits."""
    try:
        code = command(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _as_typed(text: str, prog: str) -> str:
    """The text with the command's name taken out, and without white space: the name's length moves argparse's line
    breaks, and its text wrapper breaks a line after a hyphen too ("export-" "split")."""
    return "".join(text.replace(prog, "PROG").split())


def test_help_lists_every_subcommand_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(cli.main, ["--help"], capsys)
    assert code == 0
    assert out.startswith("usage: recjudge [-h] [--version] COMMAND ...\n")
    for name, subcommand in cli.SUBCOMMANDS.items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(subcommand.help)}$", out, re.M), name
    assert set(cli.SUBCOMMANDS) == set(MODULE_FORMS)


@pytest.mark.parametrize(("argv", "message"), [([], "required: COMMAND"), (["boook"], "invalid choice: 'boook'")])
def test_a_missing_or_unknown_subcommand_is_a_usage_error(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(cli.main, argv, capsys)
    assert (code, out) == (2, "")
    assert err.startswith("usage: recjudge") and message in err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from recjudge_utils import __version__

    assert _run(cli.main, ["--version"], capsys)[:2] == (0, f"recjudge {__version__}\n")


@pytest.mark.parametrize(("subcommand", "words"), HELP_CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_subcommands_help_is_its_python_m_forms(
    subcommand: str, words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, typed, _ = _run(cli.main, [subcommand, *words, "--help"], capsys)
    module_code, module_form, _ = _run(_module_main(subcommand), [*words, "--help"], capsys)
    assert code == module_code == 0
    assert f"usage: recjudge {subcommand}" in typed
    assert f"usage: python -m {MODULE_FORMS[subcommand]}" in module_form
    assert _as_typed(typed, f"recjudge {subcommand}") == _as_typed(module_form, f"python -m {MODULE_FORMS[subcommand]}")


@pytest.mark.parametrize(
    ("subcommand", "words"),
    [
        ("book", ["list"]),
        ("data", ["list"]),
        ("profiles", ["--check", str(ROOT / "judges" / "sim.yaml")]),
        ("build-judge", ["--check"]),  # nothing built in the empty cache: exit 1, and says how to build
        ("data", ["check", "nowhere"]),  # refused by the library: exit 2
        ("labels", ["export", "nowhere", "--notebook", "07", "--kind", "scores", "--per-system", "1", "--out", "x"]),
    ],
)
def test_a_subcommand_runs_its_python_m_forms_code(
    subcommand: str, words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    typed = _run(cli.main, [subcommand, *words], capsys)
    module_form = _run(_module_main(subcommand), words, capsys)
    assert typed == module_form
    assert typed[1] or typed[2]  # each says something


@pytest.mark.parametrize(
    ("subcommand", "words", "message"),
    [
        ("book", ["run", "--scale", "huge"], "argument --scale: invalid choice: 'huge'"),
        ("book", ["--plan"], "--plan is now a subcommand: PROG plan"),
        ("data", ["fetch", "nope"], "argument name: invalid choice: 'nope'"),
        ("labels", ["export", "r"], "the following arguments are required: --notebook, --kind"),
        ("profiles", ["--chek"], "unrecognized arguments: --chek"),
        ("build-judge", ["--forse"], "unrecognized arguments: --forse"),
    ],
)
def test_a_bad_argument_exits_2_with_the_python_m_forms_message(
    subcommand: str, words: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(cli.main, [subcommand, *words], capsys)
    module_code, module_out, module_err = _run(_module_main(subcommand), words, capsys)
    assert code == module_code == 2 and out == module_out == ""
    typed = _as_typed(err, f"recjudge {subcommand}")
    assert typed == _as_typed(module_err, f"python -m {MODULE_FORMS[subcommand]}")
    assert "".join(message.split()) in typed


def test_the_command_imports_a_subcommands_module_only_when_it_is_chosen() -> None:
    # `recjudge data` in a base install must not reach the book's modules (and their extra) on the way
    code = "import json, sys, recjudge_utils.cli\nprint(json.dumps(sorted(m for m in sys.modules if 'recjudge_' in m)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    # (an editable install adds its finder, __editable___recjudge_utils_..._finder)
    assert [m for m in json.loads(done.stdout) if not m.startswith("__editable__")] == [
        "recjudge_utils",
        "recjudge_utils._startup",  # what a command's process does first (a module of the standard library only)
        "recjudge_utils.cli",
    ]


def test_the_installed_script_is_the_command(tmp_path: Path) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts == {"recjudge": "recjudge_utils.cli:main"}
    script = Path(sys.executable).parent / "recjudge"
    assert script.is_file(), f"{script} is missing: reinstall the package (pip install -e . or make install)"
    args = ["data", "--data-dir", str(tmp_path), "list"]
    typed = subprocess.run([str(script), *args], capture_output=True, text=True, cwd=ROOT)
    module_form = subprocess.run(
        [sys.executable, "-m", "recjudge_utils.data", *args[1:]], capture_output=True, text=True, cwd=ROOT
    )
    assert (typed.returncode, typed.stdout, typed.stderr) == (module_form.returncode, module_form.stdout, "")
    assert f"{tmp_path}/ml-100k" in typed.stdout
