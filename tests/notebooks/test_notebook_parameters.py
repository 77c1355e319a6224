"""Every chapter's papermill parameters are its experiment config's fields, by name: ``-p NAME VALUE`` on the
command line sets exactly the config field NAME, and no config field is out of a rerun's reach."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest

from recjudge_utils.experiments.arena import ArenaConfig
from recjudge_utils.experiments.prompt_selection import PromptSelectionConfig
from recjudge_utils.experiments.protocol_detection import DetectionConfig
from recjudge_utils.experiments.reevaluation import ReevaluationConfig
from recjudge_utils.experiments.saer import SaerConfig
from recjudge_utils.paths import project_root

ROOT = project_root()
CONFIGS: dict[str, type] = {
    "01_serendipity_prompt_selection": PromptSelectionConfig,
    "02_rs_reevaluation": ReevaluationConfig,
    "03_recsys_arena": ArenaConfig,
    "04_saer": SaerConfig,
    "05_protocols_detect": DetectionConfig,
}
#: parameters that choose what the experiment runs on, not how: the judge, the run folder, the data
NOT_CONFIG = {"judge", "sim_judge", "run_name", "dataset", "data_dir", "labels"}


def parameters(notebook: str) -> set[str]:
    """The names the notebook's ``parameters`` cell assigns."""
    assert ROOT is not None
    nb = json.loads((ROOT / "notebooks" / f"{notebook}.ipynb").read_text(encoding="utf-8"))
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"{notebook}: {len(cells)} parameters cells"
    tree = ast.parse("".join(cells[0]["source"]))
    return {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}


@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
@pytest.mark.parametrize("notebook", sorted(CONFIGS))
def test_notebook_parameters_are_the_config_fields(notebook: str) -> None:
    fields = {f.name for f in dataclasses.fields(CONFIGS[notebook])}
    params = parameters(notebook) - NOT_CONFIG
    assert params - fields == set(), f"{notebook}: parameters that are no config field"
    assert fields - params == set(), f"{notebook}: config fields a papermill rerun cannot set"


def test_every_chapter_with_an_experiment_is_checked() -> None:
    if ROOT is None:
        pytest.skip("needs a checkout with notebooks/")
    chapters = {p.stem for p in Path(ROOT / "notebooks").glob("0[1-5]_*.ipynb")}
    assert chapters == set(CONFIGS)
