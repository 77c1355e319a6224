"""Tasks out: a run's judgments of one kind -> a stratified sample recorded in the run, a Label Studio import with
its configuration, and a CSV sheet (the command ``python -m recjudge_utils.annotation export``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recjudge_utils.annotation.label_studio import write_label_studio
from recjudge_utils.annotation.sample import (
    AnnotationSample,
    draw_sample,
    load_units,
    read_sample,
    sample_path,
    write_sample,
)
from recjudge_utils.annotation.sheet import write_sheet

__all__ = ["Exported", "export_tasks"]


@dataclass(frozen=True)
class Exported:
    """What :func:`export_tasks` drew and wrote."""

    sample: AnnotationSample
    sample_path: Path
    tasks_path: Path
    config_path: Path
    sheet_path: Path


def export_tasks(
    run_dir: str | Path,
    notebook: str,
    kind: str,
    *,
    per_system: int,
    seed: int,
    out_dir: str | Path,
    template: str | None = None,
    lists_dir: str | Path | None = None,
    top_k: int | None = None,
    replace: bool = False,
) -> Exported:
    """Draw ``per_system`` tasks per system from ``notebook``'s judgments of ``kind`` in the run folder ``run_dir``,
    record the sample in the run and write the Label Studio files and the sheet to ``out_dir``.

    A sample the run already records with other tasks is kept (ValueError) unless ``replace``: people may be
    labelling it, and their labels are read against it."""
    run_dir = Path(run_dir)
    chosen, units = load_units(run_dir, notebook, kind, template=template, lists_dir=lists_dir, top_k=top_k)
    sample = draw_sample(
        units, per_system=per_system, seed=seed, run=run_dir.name, notebook=notebook, kind=kind, template=chosen
    )
    recorded = sample_path(run_dir, notebook, kind)
    if recorded.is_file() and not replace and read_sample(recorded).task_ids != sample.task_ids:
        raise ValueError(
            f"{recorded}: the run already records another sample of {kind} (labels may be under way against it); "
            "replace it only knowingly (--replace)"
        )
    written = write_sample(sample, run_dir)
    tasks_path, config_path = write_label_studio(sample, out_dir)
    return Exported(sample, written, tasks_path, config_path, write_sheet(sample, out_dir))
