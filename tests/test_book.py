"""The book runner: named runs, judge profiles as one parameter, hidden parameter cells, manifests, failures."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from recjudge_utils import book
from recjudge_utils.book import cli
from recjudge_utils.judge.profiles import load_profile


def write_notebook(path: Path, parameters: str, body: list[str]) -> None:
    cells = [nbformat.v4.new_markdown_cell("# A tiny notebook")]
    params = nbformat.v4.new_code_cell(parameters)
    params.metadata["tags"] = ["parameters"]
    cells.append(params)
    cells += [nbformat.v4.new_code_cell(src) for src in body]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    write_notebook(
        tmp_path / "notebooks" / "01_ok.ipynb",
        'judge = "embedded"  # "embedded" = the default profile\nn_users: int = 3',
        [
            "import os\ntotal = n_users * 2\nprint(judge['model'] if isinstance(judge, dict) else judge, total)",
            "print('RUN', os.environ['RECJUDGE_RUN_DIR'])",
        ],
    )
    return tmp_path


def gpt_x() -> object:
    return load_profile({"name": "gpt-x", "model": "gpt-x", "base_url": "http://127.0.0.1:9/v1"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [("200", 200), ("0.5", 0.5), ("[a, b]", ["a", "b"]), ("null", None), ("gpt-4o-mini", "gpt-4o-mini")],
)
def test_parameter_values_are_read_as_yaml(text: str, expected: object) -> None:
    assert book.parse_parameter_value(text) == expected


def test_run_passes_declared_parameters_and_writes_manifest(project: Path, isolated_runs: Path) -> None:
    manifest = book.run(gpt_x(), "first", parameters={"n_users": 7}, build=False, root=project)
    run_folder = isolated_runs / "first"
    executed = run_folder / "executed" / "01_ok.ipynb"
    nb = nbformat.read(executed, as_version=4)
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "gpt-x 14" in outputs
    assert f"RUN {run_folder}" in outputs  # the notebook knows its run folder
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "hide-cell" in injected[0].metadata["tags"]
    params_cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    assert "hide-cell" in params_cell.metadata["tags"]
    saved = json.loads((run_folder / "manifest.json").read_text())
    assert saved["judge"]["model"] == "gpt-x" and saved["run"] == "first"
    assert saved["parameters"] == {"n_users": 7}
    assert saved["notebooks"][0]["status"] == "ok"
    params = manifest.notebooks[0].parameters
    assert params["judge"]["name"] == "gpt-x" and params["n_users"] == 7 and set(params) == {"judge", "n_users"}
    assert "gpt-x" in (run_folder / "run_manifest.md").read_text()


def test_runs_coexist(project: Path, isolated_runs: Path) -> None:
    book.run(gpt_x(), "a", build=False, root=project)
    book.run(load_profile("embedded"), "b", build=False, root=project)
    assert (isolated_runs / "a" / "executed" / "01_ok.ipynb").exists()
    assert json.loads((isolated_runs / "a" / "manifest.json").read_text())["judge"]["name"] == "gpt-x"
    assert json.loads((isolated_runs / "b" / "manifest.json").read_text())["judge"]["name"] == "embedded"


@pytest.mark.parametrize("mode", ["run", "plan"])
def test_unknown_or_secret_parameter_is_an_error(project: Path, isolated_runs: Path, mode: str) -> None:
    def execute(parameters: dict[str, object]) -> object:
        if mode == "plan":
            return book.plan(gpt_x(), parameters=parameters, root=project)
        return book.run(gpt_x(), parameters=parameters, build=False, root=project)

    with pytest.raises(SystemExit, match="n_usres"):
        execute({"n_usres": 7})
    with pytest.raises(SystemExit, match="never a parameter"):
        execute({"OPENAI_API_KEY": "sk-secret"})
    assert not (isolated_runs / "default").exists()  # refused before any folder was made or notebook ran


def test_failing_notebook_names_itself_and_its_cell(project: Path, isolated_runs: Path) -> None:
    write_notebook(
        project / "notebooks" / "02_bad.ipynb",
        "seed = 0",
        ["x = 1", "raise ValueError('judge exploded')"],
    )
    with pytest.raises(book.NotebookFailed) as info:
        book.run(gpt_x(), build=False, root=project)
    message = str(info.value)
    assert "02_bad.ipynb" in message
    assert "judge exploded" in message
    assert "01_ok.ipynb" not in message  # the good notebook still ran and is not blamed
    saved = json.loads((isolated_runs / "default" / "manifest.json").read_text())
    bad = next(n for n in saved["notebooks"] if n["notebook"] == "02_bad.ipynb")
    assert bad["status"] == "failed"
    assert bad["failed_cell"] is not None


def test_api_key_cannot_be_a_parameter() -> None:
    with pytest.raises(SystemExit):
        cli.main(["-p", "api_key", "sk-secret"])


def test_model_and_base_url_are_shortcuts_for_a_profile() -> None:
    args = cli.main.__globals__["argparse"].Namespace(
        judge=None, model="qwen2.5:7b", base_url="http://localhost:11434/v1"
    )
    profile = cli.profile_from_args(args)
    assert profile.model == "qwen2.5:7b" and profile.base_url == "http://localhost:11434/v1"
    assert profile.backend_name == "openai"
    local = cli.profile_from_args(args.__class__(judge=None, model=None, base_url=None))
    assert local.backend_name == "embedded"


def test_check_notebooks_reports_outputs_and_unreadable_parameters(tmp_path: Path) -> None:
    from recjudge_utils.book.check_notebooks import problems

    clean = tmp_path / "clean.ipynb"
    write_notebook(clean, 'judge = "embedded"  # a profile name\nn_users = 3', ["print(n_users)"])
    assert problems(clean) == []
    hidden = tmp_path / "hidden.ipynb"
    write_notebook(hidden, 'judge = "embedded"  # "embedded" = the default profile\nn_users = 3', ["x = 1"])
    assert problems(hidden) == [
        "hidden.ipynb: papermill cannot read parameter 'judge' (is there an '=' in its comment?)"
    ]
    nb = nbformat.read(clean, as_version=4)
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", text="3\n")]
    nb.cells[-1].execution_count = 1
    nbformat.write(nb, clean)
    assert problems(clean) == ["clean.ipynb: cell 3 has outputs", "clean.ipynb: cell 3 has an execution count"]


def test_committed_notebooks_are_clean() -> None:
    from recjudge_utils.book.check_notebooks import problems
    from recjudge_utils.paths import project_root

    root = project_root()
    if root is None:
        pytest.skip("needs a checkout")
    assert [p for nb in sorted((root / "notebooks").glob("*.ipynb")) for p in problems(nb)] == []


# -- bad judge profiles fail before any notebook runs, naming the file and the field -------------------------
def run_cli_with_profile(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Path]:
    path = tmp_path / "judge.yaml"
    path.write_text(text)
    code = cli.main(["--judge", str(path), "--run", "bad", "--no-build"])
    return code, capsys.readouterr().err, path


def test_profile_with_unknown_key_fails_before_running(
    tmp_path: Path, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err, path = run_cli_with_profile(tmp_path, "name: x\nmodle: gpt-4o-mini\n", capsys)
    assert code == 2
    assert str(path) in err and "unknown field 'modle'" in err
    assert not (isolated_runs / "bad").exists()


def test_profile_with_missing_key_variable_fails_before_running(
    tmp_path: Path, isolated_runs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RECJUDGE_TEST_KEY", raising=False)
    code, err, path = run_cli_with_profile(
        tmp_path,
        "name: remote\nmodel: gpt-4o-mini\nbase_url: https://api.example.com/v1\napi_key_env: RECJUDGE_TEST_KEY\n",
        capsys,
    )
    assert code == 2
    assert str(path) in err and "field 'api_key_env'" in err and "RECJUDGE_TEST_KEY is not set" in err
    assert not (isolated_runs / "bad").exists()


def test_profile_whose_endpoint_does_not_answer_fails_before_running(
    tmp_path: Path, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, err, path = run_cli_with_profile(
        tmp_path, f"name: gone\nmodel: m\nbase_url: http://127.0.0.1:{port}/v1\ntimeout: 5\nretries: 0\n", capsys
    )
    assert code == 2
    assert str(path) in err and "field 'base_url'" in err and "did not answer a preflight call" in err
    assert not (isolated_runs / "bad").exists()


def test_profile_naming_a_model_the_endpoint_does_not_list_fails_before_running(
    tmp_path: Path, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer(model="served-model") as server:
        code, err, path = run_cli_with_profile(
            tmp_path, f"name: wrong\nmodel: other-model\nbase_url: {server.base_url}\n", capsys
        )
        asked = list(server.paths)
    assert code == 2
    assert str(path) in err and "field 'model'" in err and "does not list model 'other-model'" in err
    assert "served-model" in err
    assert asked == ["GET /v1/models"]  # the preflight only: no chat call, no notebook
    assert not (isolated_runs / "bad").exists()
