"""``python -m recjudge_utils.annotation export RUN --notebook NB --kind KIND --per-system N --seed S --out DIR``:
a stratified sample of a run's judgments as a Label Studio project and a CSV sheet (the sample recorded in the run).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from recjudge_utils.annotation.export import export_tasks
from recjudge_utils.annotation.kinds import KINDS
from recjudge_utils.paths import runs_dir

#: the command's name in usage lines; ``recjudge labels`` passes its own to :func:`main`
PROG = "python -m recjudge_utils.annotation"


def _run_folder(run: str) -> Path:
    """A run name under runs/, or a folder given as a path."""
    path = Path(run)
    return path if path.is_dir() and (len(path.parts) > 1 or not (runs_dir() / run).is_dir()) else runs_dir() / run


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The labels command named ``prog``; returns its exit code."""
    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").replace(PROG, prog))
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="write a sample of a run's judgments for people to label")
    export.add_argument("run", help="a run name under runs/ or a run folder")
    export.add_argument(
        "--notebook", required=True, help="the chapter whose judgments to sample, e.g. 07_your_recommenders"
    )
    export.add_argument("--kind", required=True, choices=sorted(KINDS))
    export.add_argument("--per-system", type=int, required=True, help="tasks drawn per system (per pair for duels)")
    export.add_argument("--seed", type=int, default=0)
    export.add_argument("--out", required=True, type=Path, help="folder for the Label Studio files and the sheet")
    export.add_argument("--template", help="the judge template, when the chapter judged the kind with several")
    export.add_argument("--lists", type=Path, help="scores: the lists folder the chapter judged (default: the run's)")
    export.add_argument("--top-k", type=int, help="scores: the lists' cut (default: the chapter's)")
    export.add_argument("--replace", action="store_true", help="replace a sample the run already records")
    args = parser.parse_args(argv)
    run_dir = _run_folder(args.run)
    try:
        done = export_tasks(
            run_dir,
            args.notebook,
            args.kind,
            per_system=args.per_system,
            seed=args.seed,
            out_dir=args.out,
            template=args.template,
            lists_dir=args.lists,
            top_k=args.top_k,
            replace=args.replace,
        )
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    strata = done.sample.strata
    print(f"{len(done.sample.tasks)} tasks from {len(strata)} strata ({done.sample.template}, seed {args.seed})")
    for name, s in strata.items():
        print(
            f"  {name}: {s['sampled']:.0f} of {s['population']:.0f}"
            f" (inclusion probability {s['inclusion_probability']:.3f})"
        )
    for path in (done.sample_path, done.tasks_path, done.config_path, done.sheet_path):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
