"""``python -m recjudge_utils.book``: run the notebooks of a named run with a judge profile, and build the book.

    python -m recjudge_utils.book                                     # run "default", embedded judge, build
    python -m recjudge_utils.book --run gpt --judge judges/gpt-4o-mini.yaml --scale paper
    python -m recjudge_utils.book --run gpt --model gpt-4o-mini --base-url https://api.openai.com/v1 -p n_users 200
    python -m recjudge_utils.book --only 03 --no-build -p top_k 10      # one notebook, no HTML
    python -m recjudge_utils.book --build-only --run gpt                # the HTML book from an existing run
    python -m recjudge_utils.book --plan --run gpt --judge gpt-4o-mini --scale paper   # calls, tokens, $ and hours
    python -m recjudge_utils.book --export gpt                          # runs/gpt.recjudge.jsonl.gz
    python -m recjudge_utils.book --replay runs/gpt.recjudge.jsonl.gz   # rebuild that run: no key, no network

``-p NAME VALUE`` (VALUE read as YAML: ``200``, ``0.5``, ``[a, b]``, ``null``) goes to every notebook whose
``parameters`` cell declares NAME. The API key is never a parameter: the profile names the environment
variable that holds it. A bad profile fails before any notebook runs.
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

from recjudge_utils.book.archive import ArchiveError, export_run, import_archive
from recjudge_utils.book.runner import (
    SECRET_PARAMETER_MESSAGE,
    SECRET_PARAMETERS,
    NotebookFailed,
    build_book,
    parse_parameter_value,
    plan,
    run,
    run_dir,
)
from recjudge_utils.book.scales import SCALES
from recjudge_utils.judge.profiles import JudgeProfile, ProfileError, load_profile
from recjudge_utils.paths import DEFAULT_RUN, project_root

__all__ = ["main", "profile_from_args"]


def profile_from_args(args: argparse.Namespace) -> JudgeProfile:
    """The ``--judge`` profile, or a profile made from the ``--model``/``--base-url`` shortcuts."""
    if args.judge and (args.model or args.base_url):
        raise SystemExit("give either --judge PROFILE or the --model/--base-url shortcuts, not both")
    if args.judge:
        return load_profile(args.judge)
    if args.model in (None, "local") and args.base_url is None:
        return load_profile("embedded")
    model = args.model or "local"
    name = model.replace("/", "_").replace(":", "_")
    return load_profile({"name": name, "model": model, "base_url": args.base_url})


def export_archive(run_name: str) -> Path:
    folder = run_dir(run_name)
    manifest = json.loads((folder / "manifest.json").read_text()) if (folder / "manifest.json").exists() else {}
    return export_run(folder, secret_env=(manifest.get("judge") or {}).get("api_key_env"))


def replay(path: Path, args: argparse.Namespace, root: Path) -> int:
    """Import the archive, rerun its notebooks offline (no key, no network, no model call), compare the results."""
    archive = import_archive(path, accept_version_mismatch=args.accept_version_mismatch)
    manifest = archive.header["manifest"]
    profile = load_profile(manifest["judge"])
    run_name = args.run if args.run != DEFAULT_RUN else manifest["run"]
    only = sorted({Path(nb["notebook"]).stem[:2] for nb in manifest["notebooks"]})
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
        "tokens are estimated as characters / 4 (measured 1.2-1.5x below SmolLM2's tokenizer; check your judge's); "
        "'estimated_calls' counts chained requests whose prompts depend on earlier answers",
        table.to_string(index=False, float_format=lambda v: f"{v:,.4f}"),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m recjudge_utils.book", description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--run", default=DEFAULT_RUN, help="name of the run folder under runs/ (default: default)")
    parser.add_argument("--judge", help="judge profile: a name under judges/ or a YAML path")
    parser.add_argument("--model", help="shortcut: judge model ('local' = the embedded SmolLM2 server)")
    parser.add_argument("--base-url", help="shortcut: OpenAI-compatible endpoint (key from OPENAI_API_KEY)")
    parser.add_argument("--scale", choices=SCALES, default="demo", help="demo (defaults) or paper (the papers' sizes)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    parser.add_argument("--only", nargs="+", help="run only notebooks whose file name starts with these prefixes")
    parser.add_argument("--no-build", action="store_true", help="execute the notebooks but do not build the HTML")
    parser.add_argument("--build-only", action="store_true", help="build the HTML book from the run, execute nothing")
    parser.add_argument("--log-output", action="store_true", help="stream notebook output to this terminal")
    parser.add_argument("--plan", action="store_true", help="render every request, call no model, print the cost plan")
    parser.add_argument("--export", metavar="RUN", help="write the portable archive of a run and stop")
    parser.add_argument("--replay", metavar="ARCHIVE", help="import an archive and rebuild its run offline")
    parser.add_argument("--accept-version-mismatch", action="store_true", help="replay an archive of another version")
    args = parser.parse_args(argv)
    root = project_root()
    if root is None:
        parser.error("needs a checkout of the recjudge repository (notebooks/ and book/)")
    if SECRET_PARAMETERS & {name.lower() for name, _ in args.parameter}:
        parser.error(SECRET_PARAMETER_MESSAGE)  # before any profile is checked or notebook runs
    parameters = {name: parse_parameter_value(value) for name, value in args.parameter}
    try:
        if args.build_only:
            build_book(root, args.run)
            return 0
        if args.export:
            print(f"archive written: {export_archive(args.export)}")
            return 0
        if args.replay:
            return replay(Path(args.replay), args, root)
        profile = profile_from_args(args)
        if args.plan:
            profile.check()  # the key variable must exist, but the plan calls nothing
            summary = plan(profile, args.run, parameters, args.only, root, args.scale, args.log_output)
            print(plan_text(summary))
            return 0
        profile.check(preflight=True)  # fails before any notebook runs
        run(profile, args.run, parameters, args.only, not args.no_build, args.log_output, root, args.scale)
    except ArchiveError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except ProfileError as exc:
        print(f"error: judge profile: {exc}", file=sys.stderr)
        return 2
    except NotebookFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"error: the book build failed (exit {exc.returncode}); see the Sphinx output above", file=sys.stderr)
        return 1
    return 0
