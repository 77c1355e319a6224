"""``python -m recjudge_utils.book``: run the notebooks of a named run with a judge profile, and build the book.

    python -m recjudge_utils.book                                        # = run: run "default", embedded judge, build
    python -m recjudge_utils.book run --run gpt --judge gpt-4o-mini --scale paper
    python -m recjudge_utils.book run --run x --model gpt-4o-mini --base-url https://api.openai.com/v1 -p n_users 200
    python -m recjudge_utils.book run --only 03 --no-build -p top_k 10   # one notebook, no HTML
    python -m recjudge_utils.book run --force                            # execute even the unchanged notebooks
    python -m recjudge_utils.book run --run gpt --judge gpt-4o-mini --offline   # from the cache: no key, no call
    python -m recjudge_utils.book plan --run gpt --judge gpt-4o-mini --scale paper   # calls, tokens, $, hours
    python -m recjudge_utils.book build --run gpt                        # the HTML book from an existing run
    python -m recjudge_utils.book export gpt                             # runs/gpt.recjudge.jsonl.gz
    python -m recjudge_utils.book replay runs/gpt.recjudge.jsonl.gz      # rebuild that run: no key, no network
    python -m recjudge_utils.book report gpt                             # runs/gpt/report/gpt.html (one file) and .pdf
    python -m recjudge_utils.book list                                   # the judges, every notebook's parameters
    python -m recjudge_utils.book params                                 # notebooks/params/paper/*.yaml
    python -m recjudge_utils.book tune --storage journal:///shared/optuna.log --scale paper   # a tuning worker

``-p NAME VALUE`` (VALUE read as YAML: ``200``, ``0.5``, ``[a, b]``, ``null``) goes to every notebook whose
``parameters`` cell declares NAME. The API key is never a parameter: the profile names the environment
variable that holds it. A bad profile fails before any notebook runs.
``tune`` is a worker for notebook 2's TPE studies (see :mod:`recjudge_utils.book.tune`): start any number, on
any machines, with the same ``--storage``; then run the book with ``-p optuna_storage`` set to that storage.
``replay`` and ``run --offline`` check before any notebook runs that every answer they need is at hand (in the
archive, in the cache), and refuse with the count per notebook when one is not.
Exit codes: 0 done, 1 a notebook (or the book build, or a study, or a report) failed, 2 a usage, profile or
archive error, or answers missing for a replay or an offline run, 3 ``report`` wrote the HTML but no PDF (no
Chromium).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.book.archive import export_run, import_archive
from recjudge_utils.book.build import build_book
from recjudge_utils.book.notebooks import (
    JUDGE_PARAMETER,
    NotebookFailed,
    check_parameter_names,
    check_selection,
    parameter_cell,
    parse_parameter_value,
    resolve_dataset_parameters,
    run_dir,
    select_notebooks,
)
from recjudge_utils.book.planner import check_offline, plan
from recjudge_utils.book.runner import run
from recjudge_utils.book.scales import PAPER_SCALE, PARAMS_COMMAND, PARAMS_DIR, SCALES, paper_parameter_files
from recjudge_utils.book.tune import TuningIncomplete, tune_worker
from recjudge_utils.judge.backends.openai_compatible import ADAPTATIONS_FILE
from recjudge_utils.judge.loading import load_profile, profile_dir
from recjudge_utils.judge.profile import JudgeProfile, ProfileError
from recjudge_utils.paths import DEFAULT_RUN, project_root

__all__ = ["PROG", "main", "profile_from_args"]

#: the command's name in usage lines and messages; ``recjudge book`` passes its own to :func:`main`
PROG = "python -m recjudge_utils.book"
#: the parameter naming the run folder of a notebook executed outside the runner (papermill, JupyterLab)
_RUN_NAME_PARAMETER = "run_name"
_COMMANDS = ("run", "plan", "build", "export", "replay", "report", "list", "params", "tune")
#: flags of the former single-command interface, now subcommands
OLD_FLAGS = {
    "--plan": "plan [--run NAME] [--judge PROFILE] [--scale paper] ...",
    "--export": "export RUN",
    "--replay": "replay ARCHIVE",
    "--build-only": "build --run NAME",
}
_PARAMETER_HELP = (
    "set notebook parameter NAME to VALUE in every notebook that declares it (repeatable). VALUE is read as YAML: "
    "200, 0.5, [a, b], null, text. PREFIX:NAME sets it only in the notebooks whose file name starts with PREFIX "
    "(-p 07:n_users 2). Not 'judge' (use --judge), not 'run_name' (use --run), never an API key. "
    f"'{PROG} list' shows every notebook's parameters"
)


class UsageError(ValueError):
    """The command line asks for something the runner cannot do (exit code 2)."""


def profile_from_args(args: argparse.Namespace) -> JudgeProfile:
    """The ``--judge`` profile, or a profile made from the ``--model``/``--base-url`` shortcuts."""
    if args.judge and (args.model or args.base_url):
        raise UsageError("give either --judge PROFILE or the --model/--base-url shortcuts, not both")
    if args.judge:
        return load_profile(args.judge)
    if args.model in (None, "local") and args.base_url is None:
        return load_profile("embedded")
    model = args.model or "local"
    name = model.replace("/", "_").replace(":", "_")
    return load_profile({"name": name, "model": model, "base_url": args.base_url})


def export_archive(run_name: str) -> Path:
    """Write the portable archive of ``runs/<run_name>/``; its key variable's value is scrubbed from it."""
    folder = run_dir(run_name)
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").exists() else {}
    if manifest.get("adhoc"):  # a replay reruns notebooks with the manifest's parameters, which papermill kept
        raise UsageError(
            f"run {run_name!r} was made outside the book runner: its manifest does not hold the parameters a replay "
            f"needs; rerun it with python -m recjudge_utils.book run --run NAME --judge PROFILE to share it"
        )
    if manifest.get("status") == "running":
        raise UsageError(f"run {run_name!r} is still running (its manifest says so): export it when it has finished")
    return export_run(folder, secret_env=(manifest.get("judge") or {}).get("api_key_env"))


def replay(path: Path, args: argparse.Namespace, root: Path) -> int:
    """Import the archive, rerun its notebooks offline (no key, no network, no model call), compare the results.

    Before anything is imported or run, the archive must hold every answer its run received (or this machine's cache
    must): otherwise it is refused with the count per notebook (:func:`~recjudge_utils.book.archive.answer_check`)."""
    archive = import_archive(path, accept_version_mismatch=args.accept_version_mismatch, unchecked=args.unchecked)
    manifest = archive.header["manifest"]
    profile = load_profile(manifest["judge"])
    if archive.checked:
        answered = sum(c.answered for c in archive.checked)
        print(f"checked: the archive (with this machine's cache) holds all {answered} answers its run received")
    for c in archive.checked:
        if c.failed:  # not missing: the run never had these answers, and its results were computed without them
            print(f"  {c.notebook}: {c.failed} requests failed in the archived run too; replayed as errors, as then")
    run_name = args.run or manifest["run"]
    only = sorted({Path(nb["notebook"]).stem[:2] for nb in manifest["notebooks"]})
    if manifest.get("endpoint_adaptations"):  # the requests were sent adapted: replay them under the same keys
        folder = run_dir(run_name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / ADAPTATIONS_FILE).write_text(json.dumps(manifest["endpoint_adaptations"], indent=1) + "\n")
    print(f"imported {len(archive.answers)} answers of run {manifest['run']!r} ({profile.name}); replaying offline")
    run(
        profile,
        run_name,
        manifest.get("parameters") or {},
        only,
        not args.no_build,
        args.log_output,
        root,
        manifest.get("scale", "demo"),
        offline=True,
        force=True,  # a replay recomputes every notebook from the archive's answers: that is what it checks
    )
    differing = []
    for notebook, archived in archive.results.items():
        path_new = run_dir(run_name) / notebook / "results.json"
        if not path_new.exists() or json.loads(path_new.read_text()) != archived:
            differing.append(notebook)
    if differing:
        print(f"error: replayed results differ from the archive for {', '.join(differing)}", file=sys.stderr)
        return 1
    print(f"replayed {len(archive.results)} notebooks: every results.json equals the archived one")
    return 0


def plan_text(summary: dict[str, Any]) -> str:
    """The plan as a table for the terminal."""
    table = pd.DataFrame(summary["notebooks"])
    lines = [
        f"plan for judge {summary['judge']['name']} ({summary['judge']['model']}), scale {summary['scale']}",
        f"latency: {summary['latency_s']:.2f} s per call ({summary['latency_source']}); "
        f"prices per 1M tokens: input {summary['prices_per_million'][0]}, output {summary['prices_per_million'][1]}",
        f"prompt tokens: {summary.get('prompt_token_rule', 'characters / 4')}",
        f"completion tokens: {summary.get('completion_token_rule', 'characters / 4')}",
        "'estimated_calls' counts chained requests whose prompts depend on earlier answers; 'requests' says whether "
        "they were rendered from stored recommenders (exact) or from stand-in lists built without training",
        table.to_string(index=False, float_format=lambda v: f"{v:,.4f}"),
    ]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ list, params
def _columns(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _judges_text() -> list[str]:
    """Every profile under ``judges/``: backend, model, endpoint (and the key's variable name)."""
    folder = profile_dir()
    rows = [["profile", "backend", "model", "endpoint"]]
    for path in sorted(folder.glob("*.yaml")) if folder else []:
        try:
            p = load_profile(path)
        except ProfileError as exc:
            rows.append([path.stem, "?", "?", f"invalid: {exc}"])
            continue
        if p.backend_name == "embedded":
            endpoint = "embedded llama.cpp server (no key, offline)"
        elif p.backend_name == "sim":
            endpoint = "simulated judge (no model, no key)"
        elif p.backend_name == "panel":
            endpoint = "panel of " + ", ".join(m["name"] for m in p.to_dict()["members"])
        else:  # the fields of a remote profile (read from its dict: the profile classes differ per backend)
            fields = p.to_dict()
            endpoint = fields.get("base_url") or "https://api.openai.com/v1"
            endpoint += f" (key from ${fields['api_key_env']})" if fields.get("api_key_env") else ""
        rows.append([path.stem, p.backend_name, p.model, endpoint])
    return ["judges (--judge NAME, or a YAML path; files under judges/):", *_columns(rows)]


def _notebooks_text(root: Path) -> list[str]:
    """Each notebook's parameters: default (as declared) and paper-scale value with its paper section."""
    lines = [
        "",
        "notebook parameters (-p NAME VALUE; 'paper' is the value of --scale paper and of "
        f"{PARAMS_DIR}/<notebook>.yaml):",
    ]
    for nb in select_notebooks(root / "notebooks", None):
        paper = {v.parameter: v for v in PAPER_SCALE if nb.stem.startswith(v.notebook)}
        rows = [["parameter", "default", "paper", "source of the paper value"]]
        for p in parameter_cell(nb):
            default = repr(p.value) if p.literal else p.source or "(no default)"
            if p.name == JUDGE_PARAMETER:
                rows.append([p.name, default, "--judge", "the run's judge profile"])
            elif p.name == _RUN_NAME_PARAMETER:
                rows.append([p.name, default, "--run", "papermill only: the run folder (the runner sets it)"])
            elif p.name in paper:
                rows.append([p.name, default, repr(paper[p.name].value), paper[p.name].source])
            else:
                rows.append([p.name, default, "", ""])
        lines += ["", nb.stem, *_columns(rows)]
    return lines


def _write_parameter_files(root: Path, check: bool) -> int:
    """Write (or, ``check``, compare) ``notebooks/params/paper/*.yaml`` with what :data:`PAPER_SCALE` says now."""
    notebooks = select_notebooks(root / "notebooks", None)
    declared = {nb.stem: {p.name for p in parameter_cell(nb)} for nb in notebooks}
    for v in PAPER_SCALE:  # a stale table would write a parameter papermill injects as an unknown one
        owners = [stem for stem in declared if stem.startswith(v.notebook)]
        if not owners or not all(v.parameter in declared[stem] for stem in owners):
            raise UsageError(f"PAPER_SCALE: notebook {v.notebook} declares no parameter {v.parameter!r}")
    wanted = paper_parameter_files(nb.name for nb in notebooks)
    folder = root / PARAMS_DIR
    present = {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))} if folder.exists() else {}
    stale = sorted(name for name in set(wanted) | set(present) if wanted.get(name) != present.get(name))
    if check:
        if stale:
            print(f"error: {', '.join(stale)} in {PARAMS_DIR} differ from PAPER_SCALE: run {PARAMS_COMMAND}")
            return 1
        print(f"{PARAMS_DIR}: {len(wanted)} files agree with PAPER_SCALE")
        return 0
    folder.mkdir(parents=True, exist_ok=True)
    for name in stale:
        if name in wanted:
            (folder / name).write_text(wanted[name], encoding="utf-8")
        else:
            (folder / name).unlink()  # a notebook no longer in PAPER_SCALE
    print(f"{PARAMS_DIR}: {len(wanted)} files, {len(stale)} written or removed")
    return 0


# ------------------------------------------------------------------------------------------------ arguments
def _selection_options(parser: argparse.ArgumentParser, parameter_help: str) -> None:
    parser.add_argument("--run", default=DEFAULT_RUN, help="name of the run folder under runs/ (default: default)")
    parser.add_argument("--judge", help="judge profile: a name under judges/ or a YAML path (default: embedded)")
    parser.add_argument("--model", help="shortcut instead of --judge: the model ('local' = the embedded SmolLM2)")
    parser.add_argument("--base-url", help="with --model: an OpenAI-compatible endpoint (key from OPENAI_API_KEY)")
    parser.add_argument("--scale", choices=SCALES, default="demo", help="demo (defaults) or paper (the papers' sizes)")
    parser.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help=parameter_help
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="PREFIX",
        help="run only the notebooks whose file name starts with one of these (e.g. 03)",
    )
    parser.add_argument("--log-output", action="store_true", help="stream notebook output to this terminal")
    parser.add_argument(
        "--force",
        action="store_true",
        help="execute (or plan, or build) even what is unchanged since it was last made; without it a notebook is "
        "executed again only when its file, its parameters, the judge profile, the scale, the package or the data "
        "changed (the key is in the run's manifest.json)",
    )


def _build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The command line named ``prog``: one subcommand per action (a bare command line means ``run``)."""
    # the examples and the help name the command as it was typed; under PROG the text is unchanged
    parser = argparse.ArgumentParser(
        prog=prog, description=(__doc__ or "").replace(PROG, prog), formatter_class=argparse.RawTextHelpFormatter
    )
    parameter_help = _PARAMETER_HELP.replace(PROG, prog)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run_p = sub.add_parser("run", help="execute the notebooks into runs/NAME/ and build the book (the default)")
    _selection_options(run_p, parameter_help)
    run_p.add_argument("--no-build", action="store_true", help="execute the notebooks but do not build the HTML")
    run_p.add_argument(
        "--offline",
        action="store_true",
        help="answer every request from the cache (runs/cache.sqlite): no key, no network, no model call. A plan "
        "first checks that the cache answers every request the run will make, and refuses with the count per "
        "notebook when it does not",
    )
    plan_p = sub.add_parser("plan", help="render every request, call no model, print calls, tokens, cost, hours")
    _selection_options(plan_p, parameter_help)
    build_p = sub.add_parser("build", help="build the HTML book from an existing run, execute nothing")
    build_p.add_argument("--run", default=DEFAULT_RUN, help="the run to build from (default: default)")
    build_p.add_argument("--force", action="store_true", help="build even when the book and the run are unchanged")
    export_p = sub.add_parser("export", help="write the portable archive of a run (runs/RUN.recjudge.jsonl.gz)")
    export_p.add_argument("run_name", metavar="RUN", help="the run folder under runs/")
    replay_p = sub.add_parser("replay", help="import an archive and rebuild its run offline: no key, no network")
    replay_p.add_argument("archive", metavar="ARCHIVE", help="a .recjudge.jsonl.gz file")
    replay_p.add_argument("--run", help="the run folder to rebuild into (default: the archived run's name)")
    replay_p.add_argument("--no-build", action="store_true", help="rerun the notebooks but do not build the HTML")
    replay_p.add_argument("--log-output", action="store_true", help="stream notebook output to this terminal")
    replay_p.add_argument("--accept-version-mismatch", action="store_true", help="replay an archive of another version")
    replay_p.add_argument(
        "--unchecked",
        action="store_true",
        help="replay even when the archive lacks answers its run received, or does not list them (an archive exported "
        "by an earlier version): a missing answer becomes an error in its notebook",
    )
    report_p = sub.add_parser(
        "report", help="one self-contained HTML file of a run (manifest first, no code) and its PDF (headless Chromium)"
    )
    report_p.add_argument("run_name", metavar="RUN", help="the run folder under runs/")
    report_p.add_argument("--out", metavar="DIR", help="folder for RUN.html and RUN.pdf (default: runs/RUN/report)")
    sub.add_parser("list", help="the judge profiles, and every notebook's parameters with demo and paper values")
    params_p = sub.add_parser("params", help=f"write the papermill parameter files {PARAMS_DIR}/*.yaml")
    params_p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    tune_p = sub.add_parser(
        "tune", help="a worker tuning notebook 2's studies in a shared Optuna storage (start any number of them)"
    )
    tune_p.add_argument(
        "--storage",
        required=True,
        help="shared Optuna storage: journal:///PATH/optuna.log (or PATH.log; one machine or a shared file system) "
        "or an RDB URL such as postgresql://USER@HOST/DB (several machines; the password from PGPASSWORD or ~/.pgpass)",
    )
    tune_p.add_argument("--dataset", help="notebook 2's dataset (default: its parameter, ml-100k)")
    tune_p.add_argument("--scale", choices=SCALES, default="demo", help="demo (defaults) or paper (the papers' sizes)")
    tune_p.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"), help=parameter_help
    )
    tune_p.add_argument(
        "--folds", nargs="+", type=int, metavar="FOLD", help="tune only these folds (0-based; default: every fold)"
    )
    return parser


def _arguments(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if flag in OLD_FLAGS:
            parser.error(f"{flag} is now a subcommand: {parser.prog} {OLD_FLAGS[flag]}")
    if not argv or (argv[0] not in _COMMANDS and argv[0] not in ("-h", "--help")):
        argv = ["run", *argv]  # the bare command line of the Makefile and of earlier versions
    return parser.parse_args(argv)


def _dispatch(args: argparse.Namespace, root: Path) -> int:
    if args.command == "list":
        print("\n".join([*_judges_text(), *_notebooks_text(root)]))
        return 0
    if args.command == "params":
        return _write_parameter_files(root, args.check)
    if args.command == "build":
        build_book(root, args.run, args.force)
        return 0
    if args.command == "export":
        print(f"archive written: {export_archive(args.run_name)}")
        return 0
    if args.command == "replay":
        return replay(Path(args.archive), args, root)
    if args.command == "report":
        from recjudge_utils.book.report import report_command  # needs the book extra (Sphinx, bs4): only here

        return report_command(run_dir(args.run_name), root / "book", Path(args.out) if args.out else None)
    if args.command == "tune":
        check_parameter_names(name for name, _ in args.parameter)
        parameters = {name: parse_parameter_value(value) for name, value in args.parameter}
        report = tune_worker(
            root, args.storage, scale=args.scale, parameters=parameters, dataset=args.dataset, folds=args.folds
        )
        print(report.text())
        return 0
    check_parameter_names(name for name, _ in args.parameter)  # before any profile is checked or notebook runs
    parameters = {name: parse_parameter_value(value) for name, value in args.parameter}
    # a folder dataset is read and checked once here: a bad one is refused before any notebook runs
    parameters = resolve_dataset_parameters(parameters, check=True)
    run_dir(args.run)
    check_selection(args.only, parameters, root)
    profile = profile_from_args(args)
    if args.command == "plan":  # a plan calls nothing: it needs neither the key nor the endpoint
        summary = plan(profile, args.run, parameters, args.only, root, args.scale, args.log_output, args.force)
        print(plan_text(summary))
        return 0
    if args.offline:  # no key and no endpoint needed; the cache must answer everything instead
        check_offline(profile, args.run, parameters, args.only, root, args.scale, args.log_output)
    else:
        profile.check(preflight=True)  # fails before any notebook runs
    run(
        profile,
        args.run,
        parameters,
        args.only,
        not args.no_build,
        args.log_output,
        root,
        args.scale,
        args.offline,
        args.force,
    )
    return 0


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command line; library errors become ``error: ...`` on stderr and an exit code (see the module doc)."""
    parser = _build_parser(prog)
    args = _arguments(parser, list(sys.argv[1:] if argv is None else argv))
    root = project_root()
    if root is None:
        parser.error("needs a checkout of the recjudge repository (notebooks/ and book/)")
    try:
        return _dispatch(args, root)
    except ProfileError as exc:
        print(f"error: judge profile: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # usage, archive, scale, run name, parameters: what the library refuses
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except TuningIncomplete as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"error: the book build failed (exit {exc.returncode}); see the Sphinx output above", file=sys.stderr)
        return 1
