"""A sample as a Label Studio project: its labelling configuration (XML) and its tasks (the JSON import file).

The configuration shows the rubric the judge got (the judge's system message, word for word) above the case as the
judge saw it (the last user message: the user's history and the item, the list, or the two lists), and one
single-choice control named after the kind (:attr:`~recjudge_utils.annotation.kinds.Kind.control`) whose choices are
the judge's levels, each exported as its bare label (``alias``). A task's data carries its id
(``recjudge_task``) and kind (``recjudge_kind``), by which :mod:`~recjudge_utils.annotation.read_labels` knows an
export of this project from another's. The judge's answer is never in a task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.sample import AnnotationSample, Task

__all__ = ["CASE_FIELD", "KIND_FIELD", "TASK_FIELD", "labelling_config", "task_data", "write_label_studio"]

TASK_FIELD = "recjudge_task"
KIND_FIELD = "recjudge_kind"
CASE_FIELD = "case"


def labelling_config(kind: str) -> str:
    """The Label Studio labelling configuration of ``kind``: rubric, case, and the rubric's levels as choices."""
    spec = kind_named(kind)
    choices = "\n".join(
        f"    <Choice value={quoteattr(f'{label}: {spec.meanings[label]}')} alias={quoteattr(label)}/>"
        for label in reversed(spec.labels)  # best first, as a rubric reads
    )
    return (
        "<View>\n"
        '  <Header value="The rubric (what the judge was told)"/>\n'
        '  <Text name="rubric" value="$rubric"/>\n'
        '  <Header value="The case (as the judge saw it)"/>\n'
        f'  <Text name="{CASE_FIELD}" value="${CASE_FIELD}"/>\n'
        f'  <Choices name="{spec.control}" toName="{CASE_FIELD}" choice="single-radio" required="true">\n'
        f"{choices}\n"
        "  </Choices>\n"
        "</View>\n"
    )


def task_data(task: Task, kind: str) -> dict[str, Any]:
    """The fields a person sees of ``task`` (and its id and kind), the same in Label Studio and in the sheet."""
    data: dict[str, Any] = {
        TASK_FIELD: task.task_id,
        KIND_FIELD: kind,
        "user": task.user,
        "systems": ", ".join(task.strata),
        "rubric": task.rubric,
        CASE_FIELD: task.case,
    }
    if task.shown:
        data["list_a"], data["list_b"] = task.shown["A"], task.shown["B"]
    return data


def write_label_studio(sample: AnnotationSample, out_dir: str | Path) -> tuple[Path, Path]:
    """(tasks, config): ``<kind>-tasks.json`` (Label Studio's import format: one ``{"data": ...}`` per task) and
    ``<kind>-config.xml`` in ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tasks_path, config_path = out / f"{sample.kind}-tasks.json", out / f"{sample.kind}-config.xml"
    tasks = [{"data": task_data(t, sample.kind)} for t in sample.tasks]
    tasks_path.write_text(json.dumps(tasks, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    config_path.write_text(labelling_config(sample.kind), encoding="utf-8")
    return tasks_path, config_path
