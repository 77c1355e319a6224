"""The book runner: named runs, judge profiles as one parameter, hidden parameter cells, manifests, failures."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from recjudge_utils import book
from recjudge_utils.book import cli
from recjudge_utils.judge.loading import load_profile


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


@pytest.mark.slow
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


@pytest.mark.slow
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

    with pytest.raises(ValueError, match=r"'n_usres' \(did you mean 'n_users'\?\)"):
        execute({"n_usres": 7})
    with pytest.raises(ValueError, match="never a parameter"):
        execute({"OPENAI_API_KEY": "sk-secret"})
    with pytest.raises(ValueError, match="use --judge PROFILE"):
        execute({"judge": "gpt-4o-mini"})  # the manifest records the run's profile: -p cannot replace it
    with pytest.raises(ValueError, match="use --run NAME"):
        execute({"run_name": "elsewhere"})
    assert not (isolated_runs / "default").exists()  # refused before any folder was made or notebook ran


@pytest.mark.slow
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


def test_api_key_cannot_be_a_parameter(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["-p", "api_key", "sk-secret"]) == 2
    assert "never a parameter" in capsys.readouterr().err


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
    from tools.check_notebooks import problems

    clean = tmp_path / "clean.ipynb"
    write_notebook(clean, 'judge = "embedded"  # a profile name\nn_users = 3', ["print(n_users)"])
    assert problems(clean) == []
    hidden = tmp_path / "hidden.ipynb"
    write_notebook(hidden, 'judge = "embedded"  # "embedded" = the default profile\nn_users = 3', ["x = 1"])
    (problem,) = problems(hidden)  # the file, the parameter and the cause
    assert problem.startswith("hidden.ipynb: ") and "parameter 'judge'" in problem and "'='" in problem
    nb = nbformat.read(clean, as_version=4)
    nb.cells[-1].outputs = [nbformat.v4.new_output("stream", text="3\n")]
    nb.cells[-1].execution_count = 1
    nbformat.write(nb, clean)
    assert problems(clean) == ["clean.ipynb: cell 3 has outputs", "clean.ipynb: cell 3 has an execution count"]


def test_committed_notebooks_are_clean() -> None:
    from recjudge_utils.paths import project_root
    from tools.check_notebooks import problems

    root = project_root()
    if root is None:
        pytest.skip("needs a checkout")
    assert [p for nb in sorted((root / "notebooks").glob("*.ipynb")) for p in problems(nb)] == []


# -- bad judge profiles fail before any notebook runs, naming the file and the field -------------------------
def run_cli_with_profile(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, Path]:
    path = tmp_path / "judge.yaml"
    path.write_text(text)
    code = cli.main(["run", "--judge", str(path), "--run", "bad", "--no-build"])
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


# -- the manifest names the run's judge from the start ---------------------------------------------------------
@pytest.mark.slow
def test_the_manifest_is_written_before_the_first_notebook(project: Path, isolated_runs: Path) -> None:
    write_notebook(
        project / "notebooks" / "00_reads_manifest.ipynb",
        "seed = 0",
        [
            "import json, os, pathlib\n"
            "m = json.loads((pathlib.Path(os.environ['RECJUDGE_RUN_DIR']) / 'manifest.json').read_text())\n"
            "print('SEEN', m['status'], m['judge']['name'], m['scale'], [n['status'] for n in m['notebooks']])"
        ],
    )
    (isolated_runs / "first").mkdir()
    stale_plan = {"judge": {"name": "embedded", "model": "local"}, "scale": "demo", "notebooks": []}
    (isolated_runs / "first" / "plan.json").write_text(json.dumps(stale_plan))
    manifest = book.run(gpt_x(), "first", build=False, root=project)
    nb = nbformat.read(isolated_runs / "first" / "executed" / "00_reads_manifest.ipynb", as_version=4)
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "SEEN running gpt-x demo ['pending', 'pending']" in outputs
    saved = json.loads((isolated_runs / "first" / "manifest.json").read_text())
    assert saved["status"] == "ok" == manifest.status
    assert [n["status"] for n in saved["notebooks"]] == ["ok", "ok"]
    assert saved["plan"] is None  # a plan of another judge is not shown beside this run's usage


# -- the command line: subcommands -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "pointer"),
    [
        (["--plan", "--run", "gpt"], "python -m recjudge_utils.book plan"),
        (["--export", "gpt"], "python -m recjudge_utils.book export RUN"),
        (["--replay=runs/x.recjudge.jsonl.gz"], "python -m recjudge_utils.book replay ARCHIVE"),
        (["--run", "gpt", "--build-only"], "python -m recjudge_utils.book build"),
    ],
)
def test_old_flags_point_to_their_subcommand(argv: list[str], pointer: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "is now a subcommand" in err and pointer in err


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "gpt", "--judge", "sim"],  # export takes a run, nothing else
        ["build", "--run", "gpt", "--scale", "paper"],
        ["plan", "--no-build"],
        ["list", "--run", "gpt"],
        ["run", "--scale", "huge"],
    ],
)
def test_a_subcommand_refuses_options_it_does_not_use(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2 and "error:" in capsys.readouterr().err


def test_judge_and_model_shortcuts_are_exclusive(isolated_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["run", "--judge", "sim", "--model", "gpt-4o-mini", "--no-build"]) == 2
    assert "not both" in capsys.readouterr().err
    assert not (isolated_runs / "default").exists()


@pytest.mark.parametrize(
    ("name", "pointer"), [("judge", "use --judge PROFILE"), ("run_name", "use --run NAME"), ("API_KEY", "never")]
)
def test_parameters_the_runner_sets_are_refused(
    name: str, pointer: str, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "-p", name, "x", "--no-build"]) == 2
    assert pointer in capsys.readouterr().err
    assert not (isolated_runs / "default").exists()


def test_unknown_parameter_is_answered_with_the_closest_declared_ones(
    isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--only", "03", "-p", "n_usres", "5", "--no-build"]) == 2
    err = capsys.readouterr().err
    suggestion = "(did you mean 'n_users' or 'n_test'?)"
    assert f"error: parameter 'n_usres' {suggestion} is declared by none of 03_recsys_arena.ipynb" in err
    assert not (isolated_runs / "default").exists()  # before the profile check and any notebook


@pytest.mark.slow
def test_plan_needs_no_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RECJUDGE_TEST_KEY", raising=False)
    profile = tmp_path / "remote.yaml"
    profile.write_text("name: remote\nmodel: m\nbase_url: https://api.example.com/v1\napi_key_env: RECJUDGE_TEST_KEY\n")
    asked: dict[str, object] = {}

    def fake_plan(profile: object, run_name: str, parameters: dict[str, object], *args: object) -> dict[str, object]:
        asked.update(profile=profile, run=run_name, parameters=parameters)
        return {
            "judge": {"name": "remote", "model": "m"},
            "scale": "demo",
            "latency_s": 1.0,
            "latency_source": "profile",
            "prices_per_million": [0.1, 0.2],
            "notebooks": [{"notebook": "03_recsys_arena", "calls": 3}],
        }

    monkeypatch.setattr(cli, "plan", fake_plan)
    assert cli.main(["plan", "--run", "p", "--judge", str(profile), "--only", "03", "-p", "n_users", "4"]) == 0
    assert asked["run"] == "p" and asked["parameters"] == {"n_users": 4}
    assert "plan for judge remote (m)" in capsys.readouterr().out


def test_list_shows_judges_and_each_notebooks_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    gpt = next(line for line in lines if line.split()[:1] == ["gpt-4o-mini"])
    assert "openai" in gpt and "https://api.openai.com/v1" in gpt and "$OPENAI_API_KEY" in gpt
    arena = lines.index("03_recsys_arena")
    n_users = next(line for line in lines[arena:] if line.split()[:1] == ["n_users"])
    assert n_users.split()[1:3] == ["2", "1000"]  # default, then the paper-scale value, then its source
    assert "RecSys Arena authors' code" in n_users
    assert any(line.split()[:3] == ["recommenders", "['fm',", "'minilm-content',"] for line in lines[arena:])


def test_paper_parameter_files_are_generated_from_paper_scale(capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    from recjudge_utils.book.scales import PAPER_SCALE, PARAMS_DIR, paper_parameter_files
    from recjudge_utils.paths import project_root

    root = project_root()
    if root is None:
        pytest.skip("needs a checkout")
    notebooks = sorted(p.name for p in (root / "notebooks").glob("*.ipynb"))
    wanted = paper_parameter_files(notebooks)
    committed = {p.name: p.read_text(encoding="utf-8") for p in sorted((root / PARAMS_DIR).glob("*.yaml"))}
    assert committed == wanted, f"run: python -m recjudge_utils.book params (then commit {PARAMS_DIR})"
    for name, text in committed.items():
        expected = {v.parameter: v.value for v in PAPER_SCALE if name.startswith(v.notebook)}
        assert yaml.safe_load(text) == expected
        assert "Generated from PAPER_SCALE" in text and "python -m recjudge_utils.book params" in text
    assert {name[:2] for name in committed} == {v.notebook for v in PAPER_SCALE}
    assert cli.main(["params", "--check"]) == 0
    assert "agree with PAPER_SCALE" in capsys.readouterr().out


def test_params_check_fails_on_a_hand_edited_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from recjudge_utils.book.scales import PARAMS_DIR
    from recjudge_utils.paths import project_root

    real = project_root()
    if real is None:
        pytest.skip("needs a checkout")
    shutil.copytree(real / "notebooks", tmp_path / "notebooks", ignore=shutil.ignore_patterns("params"))
    monkeypatch.setattr(cli, "project_root", lambda: tmp_path)
    assert cli.main(["params"]) == 0
    edited = tmp_path / PARAMS_DIR / "03_recsys_arena.yaml"
    edited.write_text(edited.read_text().replace("n_users: 1000", "n_users: 5"))
    assert cli.main(["params", "--check"]) == 1
    assert "03_recsys_arena.yaml" in capsys.readouterr().out
    assert cli.main(["params"]) == 0 and cli.main(["params", "--check"]) == 0


def test_scale_errors_are_exceptions_not_exits() -> None:
    from recjudge_utils.book.scales import scale_parameters

    with pytest.raises(ValueError, match="unknown scale 'huge'"):
        scale_parameters("huge", "03_recsys_arena.ipynb")
    assert scale_parameters("paper", "03_recsys_arena.ipynb")["n_users"] == 1000


@pytest.mark.parametrize(
    ("manifest", "reason"),
    [
        ({"run": "x", "adhoc": True, "judge": {"name": "sim"}, "notebooks": ["03_recsys_arena"]}, "outside the book"),
        ({"run": "x", "judge": {"name": "sim"}, "status": "running", "notebooks": []}, "still running"),
    ],
)
def test_export_refuses_adhoc_and_running_runs(
    manifest: dict[str, object], reason: str, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (isolated_runs / "x").mkdir()
    (isolated_runs / "x" / "manifest.json").write_text(json.dumps(manifest))
    assert cli.main(["export", "x"]) == 2
    assert reason in capsys.readouterr().err
    assert not list(isolated_runs.glob("*.gz"))


@pytest.mark.slow
def test_a_parameter_scoped_to_a_notebook_reaches_that_notebook_only(project: Path, isolated_runs: Path) -> None:
    write_notebook(project / "notebooks" / "02_other.ipynb", "n_users: int = 3", ["print('other', n_users * 2)"])
    manifest = book.run(gpt_x(), "scoped", parameters={"02:n_users": 5}, build=False, root=project)
    params = {Path(nb.notebook).stem: nb.parameters for nb in manifest.notebooks}
    assert "n_users" not in params["01_ok"] and params["02_other"]["n_users"] == 5
    both = book.run(gpt_x(), "both", parameters={"n_users": 4, "02:n_users": 6}, build=False, root=project)
    assert [nb.parameters["n_users"] for nb in both.notebooks] == [4, 6]  # the scoped value wins in its notebook


def test_a_scoped_parameter_is_refused_when_its_notebook_or_name_is_unknown(project: Path) -> None:
    with pytest.raises(ValueError, match="no selected notebook starts with '09'"):
        book.run(gpt_x(), parameters={"09:n_users": 5}, build=False, root=project)
    with pytest.raises(ValueError, match=r"'01:n_usres' \(did you mean 'n_users'\?\)"):
        book.run(gpt_x(), parameters={"01:n_usres": 5}, build=False, root=project)
    with pytest.raises(ValueError, match="never a parameter"):
        book.run(gpt_x(), parameters={"01:api_key": "sk-secret"}, build=False, root=project)
    with pytest.raises(ValueError, match="use --judge PROFILE"):
        book.run(gpt_x(), parameters={"01:judge": "gpt-4o-mini"}, build=False, root=project)
