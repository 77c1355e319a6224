"""The chapter "Judges compared": every run present, judge beside judge, and beside the papers' multi-LLM tables.

It reads each run's ``manifest.json`` and its notebooks' ``results.json`` (:mod:`recjudge_utils.reporting.results`).
A run's judge is the one its manifest names (the runner's, written before its first notebook, or an ad-hoc run's,
written when a notebook executed outside the runner opens its judge); a notebook whose ``results.json`` names another
judge is left out of the run and said so, and a run folder without a manifest is shown as "unknown (no manifest)"
rather than guessed from its files. The runs table takes each run's scale and parameters from that manifest, so a run
still executing (this chapter's own, under the runner) is described in words beside the finished ones.

Tables are for people: headers in words, an estimate and its interval in one cell, our judges and the papers' in one
table where they compare, a simulated judge named as such. Agreement between judges is computed on the items both
judged: raw agreement and Cohen's quadratic weighted kappa, each with its percentile-bootstrap CI, and kappa's
bootstrap standard error (:func:`~recjudge_utils.metrics.agreement.agreement`, as chapter 4 computes it), and
Fleiss' kappa (:func:`~recjudge_utils.metrics.agreement.fleiss_kappa`) for three or more judges. The takeaways
say what the intervals allow: two judges are ranked or told apart only where their intervals do not overlap.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.arena import PAPER_NAMES
from recjudge_utils.judge.records import UNUSABLE_SHARE_FLAG
from recjudge_utils.metrics import agreement as labelers
from recjudge_utils.paths import MANIFEST_FILE, RUN_DIR_ENV, runs_dir
from recjudge_utils.protocols.saer import VERSION_NAMES
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.callouts import Callout, judge_caveat, stand_in_note
from recjudge_utils.reporting.display import captioned, error_bars, estimate_cell, usage_cells
from recjudge_utils.reporting.figures import MARKERS, forest_plot, palette
from recjudge_utils.reporting.paper import paper_table
from recjudge_utils.reporting.results import RESULTS_FILE, USAGE_FILE, read_results

__all__ = [
    "Run",
    "agreement_display",
    "agreement_figure",
    "agreement_table",
    "arena_correlation_table",
    "arena_paper_datasets",
    "arena_table",
    "fleiss_display",
    "fleiss_table",
    "headline_figure",
    "headline_rows",
    "health_table",
    "judge_callouts",
    "judges_table",
    "load_runs",
    "reevaluation_table",
    "runs_data_table",
    "runs_sentence",
    "saer_detection_table",
    "saer_humans_sentence",
    "saer_labels_figure",
    "saer_labels_table",
    "serendipity_figure",
    "serendipity_table",
    "shown",
    "state_in_words",
    "takeaways_items",
    "this_run_folder",
    "usage_table",
]

#: how a run folder without a manifest names its judge: its files do not say who made all of them
UNKNOWN_JUDGE = "unknown (no manifest)"

#: ordinal label orders per kind of item (for weighted kappa)
ORDERS: dict[str, list[Any]] = {
    "01_serendipity_prompt_selection/scores": [1, 2, 3, 4, 5],
    "02_rs_reevaluation/scores": [1, 2, 3, 4, 5],
    "03_recsys_arena/pairwise": ["lose", "tie", "win"],
    "04_saer/pointwise": ["Poor Match", "Partial Match", "Good Match"],
    "04_saer/adversarial": ["wrong", "tie", "correct"],
    "07_your_recommenders/scores": [1, 2, 3, 4, 5],
    "07_your_recommenders/saer_labels": ["Poor Match", "Partial Match", "Good Match"],
}

#: each kind of item in words, for the agreement tables
ITEM_WORDS: dict[str, str] = {
    "01_serendipity_prompt_selection/scores": "chapter 1: serendipity scores",
    "02_rs_reevaluation/scores": "chapter 2: serendipity scores of recommended items",
    "03_recsys_arena/pairwise": "chapter 3: pairwise verdicts",
    "04_saer/pointwise": "chapter 4: list labels",
    "04_saer/adversarial": "chapter 4: adversarial pairs",
    "07_your_recommenders/scores": "chapter 7: serendipity scores of your systems' items",
    "07_your_recommenders/saer_labels": "chapter 7: SAER labels of your systems' lists",
}

#: the serendipity paper's prompt strategies by the names its Table 1 uses
TEMPLATE_NAMES = {"base": "Base", "ls": "LS", "cot": "CoT", "ltm": "LtM"}

#: the data each notebook stands in for when its data label says it is a stand-in
PAPER_DATA = {
    "01_serendipity_prompt_selection": "the Serendipity-2018 survey's labelled pairs {cite:p}`kotkov2018serendipity`",
    "04_saer": "SAER's Amazon Beauty & Personal Care logs {cite:p}`liu2026saer`",
}

SCALE_WORDS = {"demo": "demo (each notebook's defaults)", "paper": "paper (the papers' sizes)"}

#: a run still executing when chapter 6 read it: this chapter's own run, or another one
THIS_RUN_EXECUTING = "this run, still executing when this page was made"
OTHER_RUN_EXECUTING = "still executing when this page was made"

CI = "[95 % CI]"


@dataclass
class Run:
    """One run folder: its manifest and the results of its notebooks made by the manifest's judge."""

    name: str
    manifest: dict[str, Any]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    folder: Path | None = None
    #: how tables and legends name this run: the judge, plus the run's name when several runs share that judge
    shown_as: str = ""
    #: notebook -> judge of a ``results.json`` made by another judge than the manifest's (left out of the tables)
    foreign: dict[str, str] = field(default_factory=dict)

    @property
    def judge_profile(self) -> dict[str, Any] | None:
        """The judge profile the manifest records (None without a manifest or a judge in it)."""
        judge = self.manifest.get("judge")
        return judge if isinstance(judge, dict) and judge.get("name") else None

    @property
    def judge(self) -> str:
        """The judge's model as its results describe it (its profile's model before any result is written)."""
        profile = self.judge_profile
        if profile is None:
            return UNKNOWN_JUDGE
        for res in self.results.values():  # every result left is the manifest judge's
            return str(res["judge"]["model_name"])
        return str(profile.get("model") or profile["name"])

    @property
    def profile(self) -> str:
        """The name of the judge profile the manifest records."""
        profile = self.judge_profile
        return str(profile["name"]) if profile else UNKNOWN_JUDGE

    @property
    def kind(self) -> str:
        """``simulated`` or ``llm``."""
        for res in self.results.values():
            return str(res["judge"]["kind"])
        return "simulated" if (self.judge_profile or {}).get("backend") == "sim" else "llm"

    @property
    def status(self) -> str:
        """``running``, ``ok``, ``failed``, ``adhoc`` (a notebook run outside the runner) or ``no manifest``."""
        if not self.manifest:
            return "no manifest"
        if self.manifest.get("adhoc"):
            return "adhoc"
        if "status" in self.manifest:
            return str(self.manifest["status"])
        # written by a runner before manifests had a status: only at the end of the run
        failed = any(nb.get("status") == "failed" for nb in self.manifest.get("notebooks", []))
        return "failed" if failed else "ok"

    @property
    def label(self) -> str:
        """The run and its judge's short name, as agreement tables name a judge."""
        return f"{self.name}: {short_judge_name(self.judge)}"


def load_runs(root: Path | None = None) -> list[Run]:
    """Every run folder under ``runs/`` with at least one ``results.json`` (sorted by name).

    Each run's judge comes from its manifest, which the runner writes before its first notebook: the run being
    executed (this chapter's own) is named like the finished ones. A ``results.json`` naming another judge than
    the manifest (a notebook rerun into the folder with another judge) is left out and listed in ``foreign``."""
    root = root or runs_dir()
    out = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        results = {p.parent.name: read_results(p) for p in sorted(folder.glob(f"*/{RESULTS_FILE}"))}
        if not results:
            continue
        manifest_path = folder / MANIFEST_FILE
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
        run = Run(folder.name, manifest, {}, folder)
        for notebook, res in results.items():
            made_by = res["judge"].get("name")
            if run.judge_profile is not None and made_by != run.profile:
                run.foreign[notebook] = str(made_by)
            else:
                run.results[notebook] = res
        if run.results:
            out.append(run)
    runs_per_name: dict[str, int] = {}
    for run in out:
        runs_per_name[short_judge_name(run.judge)] = runs_per_name.get(short_judge_name(run.judge), 0) + 1
    for run in out:
        short = short_judge_name(run.judge)
        run.shown_as = short if runs_per_name[short] == 1 else f"{short} [run {run.name}]"
    return out


def short_judge_name(description: str) -> str:
    """The judge's name without its details in parentheses ("SmolLM2-135M-Instruct (Q4_1 GGUF, ...)" ->
    "SmolLM2-135M-Instruct"); the judges table keeps the full description."""
    return description.split(" (", 1)[0].strip() or description


def _rows(runs: list[Run], notebook: str) -> pd.DataFrame:
    frames = []
    for run in runs:
        res = run.results.get(notebook)
        if res is None:
            continue
        for r in res["results"]:
            frames.append(
                {
                    "run": run.name,
                    "judge": run.shown_as or run.judge,
                    "kind": run.kind,
                    "data": res["data"],
                    **r,
                    **r["group"],
                }
            )
    return pd.DataFrame(frames)


def this_run_folder() -> Path | None:
    """The run folder of the process executing this chapter (the book runner's ``RECJUDGE_RUN_DIR``), else None."""
    folder = os.environ.get(RUN_DIR_ENV)
    return Path(folder) if folder else None


def _is(run: Run, folder: Path | None) -> bool:
    return folder is not None and run.folder is not None and run.folder.resolve() == folder.resolve()


def _chapters(notebooks: Iterable[str]) -> str:
    numbers = sorted({str(int(Path(nb).name[:2])) for nb in notebooks if Path(nb).name[:2].isdigit()}, key=int)
    return ", ".join(numbers) or "none"


def state_in_words(run: Run, current: Path | None = None) -> str:
    """Where the run stood when this page was made, in words; ``current`` is the folder of the run executing this
    chapter (:func:`this_run_folder`), which the page calls "this run"."""
    status = run.status
    if status == "running":
        return THIS_RUN_EXECUTING if _is(run, current) else OTHER_RUN_EXECUTING
    if status == "ok":
        return "finished"
    if status == "failed":
        failed = [nb["notebook"] for nb in run.manifest.get("notebooks", []) if nb.get("status") == "failed"]
        return f"finished; chapter {_chapters(failed)} failed" if failed else "failed"
    if status == "adhoc":
        return "ad hoc: notebooks executed outside the book runner"
    return UNKNOWN_JUDGE


def _scale_and_parameters(run: Run) -> str:
    if run.status == "adhoc":
        return "each notebook's own parameters cell (no runner)"
    if not run.manifest:
        return "unknown (no manifest)"
    scale = str(run.manifest.get("scale", "unknown"))
    words = SCALE_WORDS.get(scale, scale)
    extra = run.manifest.get("parameters") or {}
    if not extra:
        return f"{words}; no other parameter set"
    return f"{words}; " + ", ".join(f"{name} = {json.dumps(value)}" for name, value in extra.items())


def runs_sentence(runs: list[Run]) -> Callout:
    """One line naming the runs compared: ``3 runs: default: SmolLM2-135M-Instruct, ...``."""
    if not runs:
        return Callout("No run under `runs/` has results yet: run a chapter with any judge profile, then rebuild.")
    return Callout(f"{len(runs)} run{'s' if len(runs) != 1 else ''}: " + ", ".join(r.label for r in runs))


def _indexed_cell(frame: pd.DataFrame, key: Any, digits: int) -> str:
    """``estimate_cell`` of the row ``key`` of a results frame indexed by metric, category or evaluator ("n/a" when
    the run has no such row)."""
    if key not in frame.index:
        return "n/a"
    return estimate_cell(frame.loc[key, "value"], frame.loc[key, "low"], frame.loc[key, "high"], digits=digits)


def judges_table(runs: list[Run], current: Path | None = None) -> pd.DataFrame:
    """The runs compared: run, judge, judge profile, scale and parameters (from the manifest the runner writes before
    its first notebook) and the run's state in words (:func:`state_in_words`); a column of the notebooks left out
    because another judge made them, when there are any."""
    rows = []
    for run in runs:
        row = {
            "run": run.name,
            "judge": run.shown_as or short_judge_name(run.judge),
            "judge profile": run.profile,
            "scale and parameters": _scale_and_parameters(run),
            "state": state_in_words(run, current),
        }
        if run.foreign:
            row["left out (made by another judge)"] = "; ".join(f"{nb} ({judge})" for nb, judge in run.foreign.items())
        rows.append(row)
    return pd.DataFrame(rows)


def runs_data_table(runs: list[Run]) -> pd.DataFrame:
    """Each run's judge in full (model, quantisation, error model), the chapters it judged and the data they ran on."""
    return pd.DataFrame(
        [
            {
                "run": run.name,
                "judge in full": run.judge,
                "chapters": _chapters(run.results),
                "data": "; ".join(sorted({res["data"] for res in run.results.values()})),
            }
            for run in runs
        ]
    )


def judge_callouts(runs: list[Run]) -> list[Callout]:
    """The judge caveat of every judge that has one (a small model's warning, the simulated judge's note), once
    per judge, then a stand-in note for every chapter whose data is a stand-in."""
    out: dict[str, Callout] = {}
    for run in runs:
        caveat = judge_caveat(run.judge)
        if caveat is not None:
            out.setdefault(caveat.text, caveat)
    for notebook, paper_data in PAPER_DATA.items():
        labels = sorted({run.results[notebook]["data"] for run in runs if notebook in run.results})
        for label in labels:
            if "stand-in" in label.lower():
                note = stand_in_note(label, paper_data, f"Chapter {int(notebook[:2])}'s rows below ran on it.")
                out.setdefault(note.text, note)
    return list(out.values())


def usage_table(runs: list[Run], current: Path | None = None) -> pd.DataFrame:
    """Judgments, paid calls, failures, tokens, cost and wall time per run: the sum of its notebooks' ``usage.json``
    (what their last execution cost; a run still executing shows what its finished notebooks cost, and its state in
    words instead of a time)."""
    rows = []
    for run in runs:
        usage = [
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((run.folder or runs_dir() / run.name).glob(f"*/{USAGE_FILE}"))
            if p.parent.name in run.results
        ]
        keys = {key for u in usage for key in u}
        totals = {key: sum(u[key] for u in usage if u.get(key) is not None) for key in keys}
        if "cost_usd" in totals and not any(u.get("cost_usd") is not None for u in usage):
            totals["cost_usd"] = None
        seconds = run.manifest.get("seconds")
        if run.status == "running":
            minutes = state_in_words(run, current)
        elif seconds is None:
            minutes = "not recorded (ad hoc)" if run.status == "adhoc" else "not recorded"
        else:
            minutes = f"{seconds / 60:.1f}"
        rows.append(
            {"run": run.name, "judge": run.shown_as or short_judge_name(run.judge), **usage_cells(totals),
             "wall time (minutes)": minutes}
        )  # fmt: skip
    return pd.DataFrame(rows)


def health_table(runs: list[Run]) -> pd.DataFrame:
    """Per run, each judging notebook's readable answers out of all it asked (``results.json``'s ``judgments``),
    flagged where more than a fifth could not be used: a judge that fails shows here before its numbers are read."""
    rows = []
    for run in runs:
        row: dict[str, str] = {"run": run.name, "judge": run.shown_as or short_judge_name(run.judge)}
        for notebook, res in sorted(run.results.items()):
            counts = res.get("judgments") or {}
            n = int(counts.get("n") or 0)
            if not n:
                continue
            parsed = int(counts.get("parsed") or 0)
            flag = " ⚠" if (n - parsed) > UNUSABLE_SHARE_FLAG * n else ""  # as the run manifest flags it
            row[notebook[:2]] = f"{parsed} of {n}{flag}"
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.reindex(columns=["run", "judge", *sorted(c for c in frame.columns if c not in ("run", "judge"))])


def _health_takeaway(runs: list[Run]) -> str | None:
    """The runs whose judge left more than a fifth of a chapter's answers unusable, with the counts (None if none)."""
    table = health_table(runs)
    flagged = []
    for row in table.to_dict("records"):
        chapters = [f"chapter {int(c)}: {v.removesuffix(' ⚠')}" for c, v in row.items() if str(v).endswith("⚠")]
        if chapters:
            flagged.append(f"{row['run']} ({'; '.join(chapters)} readable)")
    if not flagged:
        return None
    return (
        f"More than a fifth of the answers could not be read in {'; '.join(flagged)}: those rows rest on the "
        "readable answers only (Table 6.3b), and a chapter with none shows no number for that judge."
    )


def shown(frame: pd.DataFrame, title: str, empty: str = "no run has results for this table yet") -> Styler | Callout:
    """A table for the page: captioned, no index; a sentence saying why when there is nothing to show."""
    if frame.empty:
        return Callout(f"*{title}*: {empty}.")
    return captioned(frame, title)


def _kind(kind: str) -> str:
    return {"simulated": "simulated judge", "llm": "LLM", "paper": "paper"}.get(kind, kind)


# ------------------------------------------------------------------------------------------------ chapter 1
def serendipity_table(runs: list[Run]) -> pd.DataFrame:
    """Table 1 per judge: MAE, three-class accuracy and weighted kappa with their CIs, beside the paper's GPT-4o-mini
    and Llama-3.1-70B (point estimates), grouped by prompt template."""
    rows = _rows(runs, "01_serendipity_prompt_selection")
    if rows.empty:
        return rows
    out = []
    for (label, template), grp in rows.groupby(["judge", "template"], sort=False):
        m = grp.set_index("metric")

        def cell(metric: str, column: str, m: pd.DataFrame = m) -> Any:
            return m.loc[metric, column] if metric in m.index else None

        out.append(
            {
                "prompt template": TEMPLATE_NAMES.get(template, template),
                "judge": label,
                "kind": _kind(grp["kind"].iloc[0]),
                f"MAE {CI}": estimate_cell(cell("mae", "value"), cell("mae", "low"), cell("mae", "high")),
                f"3-class accuracy, % {CI}": estimate_cell(
                    cell("acc3", "value"), cell("acc3", "low"), cell("acc3", "high"), digits=1, scale=100
                ),
                f"weighted kappa {CI}": estimate_cell(
                    cell("kappa_qw", "value"), cell("kappa_qw", "low"), cell("kappa_qw", "high")
                ),
                "judged pairs": "n/a" if cell("mae", "n") is None else f"{int(cell('mae', 'n')):,}",
                "_order": (template, 0),
            }
        )
    for r in paper_table("serendipity_table1").itertuples():
        out.append(
            {
                "prompt template": TEMPLATE_NAMES.get(str(r.template), str(r.template)),
                "judge": f"{r.model} (paper)",
                "kind": "paper",
                f"MAE {CI}": f"{r.mae:.3f}",
                f"3-class accuracy, % {CI}": f"{r.accuracy_pct:.1f}",
                f"weighted kappa {CI}": "not reported",
                "judged pairs": "2,150",
                "_order": (str(r.template), 1),
            }
        )
    table = pd.DataFrame(out)
    order = {t: i for i, t in enumerate(TEMPLATE_NAMES)}
    table = table.sort_values("_order", key=lambda s: s.map(lambda o: (order.get(o[0], 99), o[1])), kind="stable")
    return table.drop(columns="_order").reset_index(drop=True)


def serendipity_figure(runs: list[Run]) -> Figure:
    """MAE per template per judge (95% CIs) beside the paper's (diamonds, no interval)."""
    rows = _rows(runs, "01_serendipity_prompt_selection")
    if rows.empty:
        return _nothing_figure("No run has chapter 1 results.")
    mae = rows[rows["metric"] == "mae"].copy()
    paper = paper_table("serendipity_table1").rename(columns={"model": "judge"})
    judges = list(dict.fromkeys(mae["judge"]))
    paper_judges = list(dict.fromkeys(paper["judge"]))
    templates = [t for t in TEMPLATE_NAMES if t in set(mae["template"])] + sorted(
        set(mae["template"]) - set(TEMPLATE_NAMES)
    )
    colours = palette(len(judges) + len(paper_judges))
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / (len(judges) + len(paper_judges))
    for k, judge in enumerate(judges):
        g = mae[mae["judge"] == judge].set_index("template").reindex(templates)
        x = np.arange(len(templates)) + k * width
        ax.errorbar(
            x, g["value"], yerr=error_bars(g["value"], g["low"], g["high"]), fmt=MARKERS[k % len(MARKERS)],
            color=colours[k], capsize=3, label=judge,
        )  # fmt: skip
    for k, judge in enumerate(paper_judges):
        g = paper[paper["judge"] == judge].set_index("template").reindex(templates)
        x = np.arange(len(templates)) + (len(judges) + k) * width
        j = len(judges) + k
        ax.plot(x, g["mae"], MARKERS[j % len(MARKERS)], color=colours[j], mfc="none", label=f"{judge} (paper)")
    ax.set_xticks(np.arange(len(templates)) + 0.4 - width / 2, [TEMPLATE_NAMES.get(t, str(t)) for t in templates])
    ax.set(xlabel="prompt template", ylabel="MAE against g (lower is better)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    plt.close(fig)
    return fig


def _nothing_figure(message: str) -> Figure:
    """A small figure that says there is nothing to draw, so a glued figure name always exists."""
    fig, ax = plt.subplots(figsize=(6, 1))
    ax.text(0.5, 0.5, message, ha="center", va="center")
    ax.set_axis_off()
    plt.close(fig)
    return fig


# ------------------------------------------------------------------------------------------------ chapter 2
def reevaluation_table(runs: list[Run]) -> pd.DataFrame:
    """Table 3's headline metrics per recommender and judge (accuracy does not depend on the judge; serendipity
    does)."""
    rows = _rows(runs, "02_rs_reevaluation")
    if rows.empty:
        return rows
    out = []
    for (judge, rs), grp in rows.groupby(["judge", "rs"], sort=False):
        m = grp.set_index("metric")
        row = {"recommender": DISPLAY_NAMES.get(rs, rs), "judge": judge, "kind": _kind(grp["kind"].iloc[0])}
        for metric, header in (
            ("p_acc", f"P_acc@k, % {CI}"), ("p_ser", f"P_ser@k, % {CI}"), ("avg", f"Avg.Score@k {CI}")
        ):  # fmt: skip
            row[header] = _indexed_cell(m, metric, digits=2)
        out.append(row)
    return pd.DataFrame(out).sort_values(["recommender", "judge"], kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ chapter 7
#: the measures of chapter 7's Kendall taus in words
_MEASURE_WORDS = {"serendipity": "serendipity", "arena": "Arena", "saer": "SAER", "precision": "Precision@k"}


def protocol_agreement_table(runs: list[Run]) -> pd.DataFrame:
    """Chapter 7 per judge: Kendall's tau (95% bootstrap CI over users) between every two protocols' system rankings
    and between each protocol and Precision@k."""
    rows = _rows(runs, "07_your_recommenders")
    if rows.empty or "a" not in rows:
        return pd.DataFrame()
    taus = rows[(rows["metric"] == "kendall_tau") & rows["a"].isin(_MEASURE_WORDS) & rows["b"].isin(_MEASURE_WORDS)]
    out = []
    for r in taus.itertuples(index=False):
        out.append(
            {
                "judge": r.judge,
                "kind": _kind(r.kind),
                "rankings": f"{_MEASURE_WORDS[r.a]} vs {_MEASURE_WORDS[r.b]}",
                f"Kendall tau {CI}": estimate_cell(r.value, r.low, r.high, digits=2),
                "users": "-" if pd.isna(r.n) else f"{int(r.n):,}",
            }
        )
    return pd.DataFrame(out)


# ------------------------------------------------------------------------------------------------ chapter 3
def _arena_name(x: str) -> str:
    """Our recommender's display name, saying which paper model it stands in for when the names differ."""
    ours, paper = DISPLAY_NAMES.get(x, x), PAPER_NAMES.get(x)
    return ours if paper is None or paper == ours else f"{ours} (for {paper})"


def arena_table(runs: list[Run], source: str = "adjudicated") -> pd.DataFrame:
    """Win % and Q (with CIs) per recommender against the baseline, per judge, beside the paper's three LLMs' rows
    (point estimates, the tested model shown as A only); the paper's rows are those of the datasets the runs ran on
    (:func:`arena_paper_datasets`)."""
    rows = _rows(runs, "03_recsys_arena")
    if rows.empty:
        return rows
    out = []
    for judge, grp in rows.groupby("judge", sort=False):
        wins = grp[(grp["metric"] == "win_pct") & (grp["source"] == source)]
        qs = grp[(grp["metric"] == "Q") & (grp["source"] == source)].set_index("x")
        for w in wins.itertuples():
            q = qs.loc[w.x]
            out.append(
                {"recommender": _arena_name(w.x), "baseline": DISPLAY_NAMES.get(w.y, w.y), "judge": judge,
                 "kind": _kind(w.kind), f"Win % {CI}": estimate_cell(w.value, w.low, w.high, digits=1),
                 f"Q {CI}": estimate_cell(q["value"], q["low"], q["high"]),
                 "judged comparisons": "n/a" if w.n is None or pd.isna(w.n) else f"{int(w.n):,}",
                 "_order": (PAPER_NAMES.get(w.x, w.x), 0)}
            )  # fmt: skip
    paper = paper_table("arena_table2")
    for p in paper[paper["dataset"].isin(arena_paper_datasets(rows["data"]))].itertuples():
        out.append(
            {"recommender": p.rs, "baseline": "FM", "judge": f"{p.llm} (paper, {p.dataset})", "kind": "paper",
             f"Win % {CI}": f"{p.win:.1f}", f"Q {CI}": f"{p.q:.4f}", "judged comparisons": "1,000 users",
             "_order": (p.rs, 1)}
        )  # fmt: skip
    table = pd.DataFrame(out)
    table = table.sort_values("_order", key=lambda s: s.map(lambda o: (o[0].lower(), o[1])), kind="stable")
    return table.drop(columns="_order").reset_index(drop=True)


def arena_correlation_table(runs: list[Run], source: str = "adjudicated") -> pd.DataFrame:
    """Pearson r between Q and the recommenders' offline AUC per judge (with its CI when the run has one), beside
    the paper's Table 3 for the same datasets."""
    rows = _rows(runs, "03_recsys_arena")
    if rows.empty:
        return rows
    out = []
    for judge, grp in rows.groupby("judge", sort=False):
        r = grp[(grp["metric"] == "pearson_r_q_auc") & (grp["source"] == source)]
        first = r.iloc[0] if len(r) else None
        out.append(
            {
                "judge": judge,
                "kind": _kind(grp["kind"].iloc[0]),
                "data": grp["data"].iloc[0],
                f"Pearson r(Q, AUC) {CI}": "n/a"
                if first is None
                else estimate_cell(first["value"], first.get("low"), first.get("high"), digits=3),
                "recommenders": "n/a" if first is None or pd.isna(first["n"]) else f"{int(first['n'])}",
            }
        )
    corr = paper_table("arena_table3")
    for c in corr[corr["dataset"].isin(arena_paper_datasets(rows["data"]))].itertuples():
        out.append(
            {"judge": f"{c.llm} (paper)", "kind": "paper", "data": c.dataset,
             f"Pearson r(Q, AUC) {CI}": f"{c.r:.3f}", "recommenders": "4"}
        )  # fmt: skip
    return pd.DataFrame(out)


def arena_paper_datasets(data_labels: Iterable[str]) -> list[str]:
    """The Arena paper's datasets (Table 2) the runs' data labels name: MIND for a MIND run, else MovieLens.

    Only MovieLens and MIND have paper rows; a run on any other data (or a stand-in of either) compares with the
    MovieLens rows, the closer domain for ratings data."""
    found = {"MIND" if "MIND" in str(label) else "MovieLens" for label in data_labels}
    return sorted(found) or ["MovieLens"]


# ------------------------------------------------------------------------------------------------ chapter 4
PAPER_SAER = "Claude 4.5 Sonnet (paper)"


def saer_labels_table(runs: list[Run]) -> pd.DataFrame:
    """SAER's pointwise labels per candidate-list source and judge (shares with Wilson CIs), beside the paper's."""
    rows = _rows(runs, "04_saer")
    labels = rows[rows["metric"] == "label_pct"] if not rows.empty else rows
    if labels.empty:
        return labels
    categories = ["Good Match", "Partial Match", "Poor Match"]
    out = []
    for (judge, algorithm), grp in labels.groupby(["judge", "algorithm"], sort=False):
        cats = grp.set_index("category")
        row = {"lists from": algorithm, "judge": judge, "kind": _kind(grp["kind"].iloc[0])}
        for cat in categories:
            row[f"{cat}, % {CI}"] = _indexed_cell(cats, cat, digits=1)
        out.append(row)
    for algorithm, grp in paper_table("saer_table1").groupby("algorithm", sort=False):
        cats = grp.set_index("category")["saer_pct"]
        out.append(
            {"lists from": algorithm, "judge": PAPER_SAER, "kind": "paper",
             **{f"{cat}, % {CI}": f"{cats[cat]:.1f}" for cat in categories}}
        )  # fmt: skip
    return pd.DataFrame(out).sort_values("lists from", kind="stable").reset_index(drop=True)


def saer_detection_table(runs: list[Run]) -> pd.DataFrame:
    """Position consistency and the share of adversarial pairs detected per prompt version, per judge, beside the
    paper's LLM (its human annotators: :func:`saer_humans_sentence`)."""
    rows = _rows(runs, "04_saer")
    if rows.empty:
        return rows
    versions = [f"{name} prompt ({v})" for v, name in VERSION_NAMES.items()]
    out = []
    for judge, grp in rows.groupby("judge", sort=False):
        row: dict[str, Any] = {"judge": judge, "kind": _kind(grp["kind"].iloc[0])}
        cons = grp[grp["metric"] == "position_consistency_pct"]
        row[f"position consistency, % {CI}"] = (
            estimate_cell(cons["value"].iloc[0], cons["low"].iloc[0], cons["high"].iloc[0], digits=1)
            if len(cons)
            else "n/a"
        )
        adv = grp[grp["metric"] == "adversarial_correct_pct"].set_index("evaluator")
        for version in versions:
            row[f"detected, {version}, %"] = _indexed_cell(adv, version, digits=1)
        out.append(row)
    metrics = paper_table("saer_metrics").set_index("metric")["value"]
    paper: dict[str, Any] = {
        "judge": PAPER_SAER,
        "kind": "paper",
        f"position consistency, % {CI}": f"{metrics['pairwise_position_consistency']:.1f}",
    }
    for r in paper_table("saer_table3").dropna(subset=["prompt_version"]).itertuples():
        paper[f"detected, {VERSION_NAMES[str(r.prompt_version)]} prompt ({r.prompt_version}), %"] = (
            f"{r.correct_pct:.1f}"
        )
    out.append(paper)
    return pd.DataFrame(out).fillna("n/a")


def saer_humans_sentence() -> Callout:
    """What the paper's human annotators detected on the adversarial pairs (they used no prompt version)."""
    humans = paper_table("saer_table3")
    humans = humans[humans["prompt_version"].isna()]
    parts = [f"{r.correct_pct:.1f} % ({r.evaluator})" for r in humans.itertuples()]
    return Callout(
        "The paper's human annotators, who used no prompt, picked the genuine list of "
        + _and(parts)
        + " of the adversarial pairs {cite:p}`liu2026saer`."
    )


def saer_labels_figure(runs: list[Run]) -> Figure:
    """SAER label shares per judge beside the paper's: bars with Wilson intervals, colour and hatch per judge."""
    rows = _rows(runs, "04_saer")
    labels = rows[rows["metric"] == "label_pct"] if not rows.empty else rows
    if labels.empty:
        return _nothing_figure("No run has chapter 4 results.")
    paper = paper_table("saer_table1").rename(columns={"saer_pct": "value"}).assign(judge=PAPER_SAER)
    data = pd.concat([labels[["judge", "algorithm", "category", "value", "low", "high"]], paper], ignore_index=True)
    judges = list(dict.fromkeys(data["judge"]))
    algorithms = list(dict.fromkeys(data["algorithm"]))
    categories = ["Good Match", "Partial Match", "Poor Match"]
    colours, hatches = palette(len(judges)), ["", "//", "..", "xx", "\\\\", "++"]
    fig, axes = plt.subplots(1, len(algorithms), figsize=(4 * len(algorithms) + 1.5, 3.6), sharey=True, squeeze=False)
    width = 0.8 / len(judges)
    for ax, algorithm in zip(axes[0], algorithms, strict=True):
        for k, judge in enumerate(judges):
            g = data[(data["judge"] == judge) & (data["algorithm"] == algorithm)].set_index("category")
            g = g.reindex(categories)
            x = np.arange(len(categories)) + (k - (len(judges) - 1) / 2) * width
            ax.bar(
                x, g["value"], width, color=colours[k], hatch=hatches[k % len(hatches)], edgecolor="0.2",
                label=judge, yerr=error_bars(g["value"], g["low"].fillna(g["value"]), g["high"].fillna(g["value"])),
                capsize=2,
            )  # fmt: skip
        ax.set_xticks(range(len(categories)), categories)
        ax.set(title=f"lists from {algorithm}", xlabel="")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("% of lists (95 % CI)")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    plt.close(fig)
    return fig


# ------------------------------------------------------------------------------------------------ agreement
def _items(runs: list[Run]) -> dict[str, dict[str, pd.Series]]:
    """kind of item -> judge -> labels indexed by the item's identity."""
    out: dict[str, dict[str, pd.Series]] = {}
    for run in runs:
        for notebook, res in run.results.items():
            for kind, items in res.get("items", {}).items():
                if not items:
                    continue
                frame = pd.DataFrame(items)
                ids = [c for c in frame.columns if c not in ("label", "truth")]
                series = frame.set_index(ids)["label"]
                out.setdefault(f"{notebook}/{kind}", {})[run.label] = series[~series.index.duplicated()]
    return out


def agreement_table(runs: list[Run]) -> pd.DataFrame:
    """Weighted kappa (quadratic, with its bootstrap SE and 95% percentile CI) and raw agreement (with its 95%
    percentile CI) between every two judges on the items both judged and labelled, per kind of item
    (:func:`~recjudge_utils.metrics.agreement.agreement`, chapter 4's)."""
    rows = []
    for kind, by_judge in _items(runs).items():
        order = ORDERS.get(kind)
        if order is None:
            continue
        for a, b in combinations(by_judge, 2):
            both = pd.concat([by_judge[a], by_judge[b]], axis=1, keys=["a", "b"], join="inner").dropna()
            both = both[both["a"].isin(order) & both["b"].isin(order)]
            row = {"items": kind, "judge A": a, "judge B": b, "n both labelled": len(both)}
            if len(both) >= 2:
                # 2000 resamples, seed 0: kappa's CI as it always was here; raw agreement resamples the same items
                res = labelers.agreement(both["a"].tolist(), both["b"].tolist(), order, n_boot=2000, seed=0)
                row.update(
                    kappa=res.kappa,
                    se=res.kappa_se,
                    low=res.kappa_ci[0],
                    high=res.kappa_ci[1],
                    raw_agreement=res.raw,
                    raw_low=res.raw_ci[0],
                    raw_high=res.raw_ci[1],
                )
            rows.append(row)
    return pd.DataFrame(rows)


def fleiss_table(runs: list[Run]) -> pd.DataFrame:
    """Fleiss' kappa (:func:`~recjudge_utils.metrics.agreement.fleiss_kappa`) over every judge, on the items all of
    them labelled (three or more judges)."""
    rows = []
    for kind, by_judge in _items(runs).items():
        order = ORDERS.get(kind)
        if order is None or len(by_judge) < 3:
            continue
        frame = pd.concat(by_judge, axis=1, join="inner").dropna()
        frame = frame[frame.isin(order).all(axis=1)]
        if len(frame) < 2:
            continue
        rows.append(
            {
                "items": kind,
                "judges": len(by_judge),
                "n all labelled": len(frame),
                "fleiss_kappa": labelers.fleiss_kappa([frame[judge].tolist() for judge in frame.columns], order),
            }
        )
    return pd.DataFrame(rows)


def agreement_display(agreement: pd.DataFrame) -> pd.DataFrame:
    """The agreement table as a reader reads it: the items in words, one kappa cell with its CI, the SE and the raw
    agreement in % with its CI."""
    if agreement.empty:
        return agreement
    has = "kappa" in agreement
    return pd.DataFrame(
        {
            "items": agreement["items"].map(lambda kind: ITEM_WORDS.get(kind, kind)),
            "judges": agreement["judge A"] + "  vs  " + agreement["judge B"],
            "items both labelled": agreement["n both labelled"].map(lambda n: f"{int(n):,}"),
            f"weighted kappa {CI}": [
                estimate_cell(r.kappa, r.low, r.high) if has and not pd.isna(r.kappa) else "undefined"
                for r in agreement.reindex(columns=["kappa", "low", "high"]).itertuples()
            ],
            "SE": [estimate_cell(se) for se in agreement.reindex(columns=["se"])["se"]],
            f"raw agreement, % {CI}": [
                estimate_cell(r.raw_agreement, r.raw_low, r.raw_high, digits=1, scale=100)
                for r in agreement.reindex(columns=["raw_agreement", "raw_low", "raw_high"]).itertuples()
            ],
        }
    )


def fleiss_display(runs: list[Run]) -> pd.DataFrame:
    """Fleiss' kappa (:func:`fleiss_table`) with the items in words."""
    table = fleiss_table(runs)
    if table.empty:
        return table
    return pd.DataFrame(
        {
            "items": table["items"].map(lambda kind: ITEM_WORDS.get(kind, kind)),
            "judges": table["judges"],
            "items all labelled": table["n all labelled"].map(lambda n: f"{int(n):,}"),
            "Fleiss' kappa": table["fleiss_kappa"].map(estimate_cell),
        }
    )


def agreement_figure(agreement: pd.DataFrame) -> Figure:
    """Every pair of judges' weighted kappa with its CI, per kind of item, against 0 (chance)."""
    data = agreement.dropna(subset=["kappa"]) if "kappa" in agreement else agreement.iloc[0:0]
    if data.empty:
        return _nothing_figure("No two judges labelled the same items: no kappa to draw.")
    data = data.assign(
        pair=data["judge A"].str.split(":").str[0] + " vs " + data["judge B"].str.split(":").str[0],
        what=data["items"].map(lambda kind: ITEM_WORDS.get(kind, kind)),
    )
    fig = forest_plot(
        data, label="what", value="kappa", group="pair", width=9.0,
        xlabel="quadratic weighted kappa (95 % CI)", reference=0.0, reference_label="chance agreement",
    )  # fmt: skip
    fig.axes[0].set_xlim(-1.05, 1.05)  # kappa's whole range, so that two figures compare at a glance
    return fig


# ------------------------------------------------------------------------------------------------ headlines
def headline_rows(runs: list[Run]) -> pd.DataFrame:
    """The chapters' headline shares, in %, per judge: three-class accuracy per template (chapter 1), Win % of each
    recommender against the baseline (chapter 3, adjudicated), position consistency and adversarial pairs detected
    per prompt version (chapter 4), in that order; columns ``measure``, ``judge``, ``value``, ``low``, ``high``."""
    out: list[tuple[tuple[int, str], str, Any, Any, Any, Any, float]] = []  # (order, measure, judge, v, lo, hi, scale)
    ch1 = _rows(runs, "01_serendipity_prompt_selection")
    if not ch1.empty:
        templates = list(TEMPLATE_NAMES)
        for r in ch1[ch1["metric"] == "acc3"].itertuples():
            name = TEMPLATE_NAMES.get(r.template, r.template)
            order = (1, f"{templates.index(r.template) if r.template in templates else 9}")
            out.append((order, f"ch. 1: 3-class accuracy, {name}", r.judge, r.value, r.low, r.high, 100))
    ch3 = _rows(runs, "03_recsys_arena")
    if not ch3.empty:
        for r in ch3[(ch3["metric"] == "win_pct") & (ch3["source"] == "adjudicated")].itertuples():
            name = f"{DISPLAY_NAMES.get(r.x, r.x)} vs {DISPLAY_NAMES.get(r.y, r.y)}"
            out.append(((3, ""), f"ch. 3: Win %, {name}", r.judge, r.value, r.low, r.high, 1))
    ch4 = _rows(runs, "04_saer")
    if not ch4.empty:
        for r in ch4[ch4["metric"] == "position_consistency_pct"].itertuples():
            out.append(((4, ""), "ch. 4: position consistency", r.judge, r.value, r.low, r.high, 1))
        for r in ch4[ch4["metric"] == "adversarial_correct_pct"].itertuples():
            version = str(r.evaluator).rsplit("(", 1)[-1].rstrip(")")  # "generic prompt (v1)" -> "v1"
            measure = f"ch. 4: adversarial pairs detected, prompt {version}"
            out.append(((4, version), measure, r.judge, r.value, r.low, r.high, 1))
    out.sort(key=lambda row: row[0])  # stable: within an order key, rows keep the order the runs gave them
    rows = [
        {"measure": m, "judge": j, "value": _number(v) * s, "low": _number(lo) * s, "high": _number(hi) * s}
        for _, m, j, v, lo, hi, s in out
    ]
    frame = pd.DataFrame(rows, columns=["measure", "judge", "value", "low", "high"])
    return frame.dropna(subset=["value"]).reset_index(drop=True)


def _number(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return float("nan")


def headline_figure(runs: list[Run]) -> Figure:
    """A forest plot of :func:`headline_rows`: one row per measure, one marker and colour per judge."""
    rows = headline_rows(runs)
    if rows.empty:
        return _nothing_figure("No run has results for chapters 1, 3 or 4.")
    return forest_plot(rows, label="measure", group="judge", xlabel="% (95 % CI)", width=8.0)


# ------------------------------------------------------------------------------------------------ takeaways
@dataclass(frozen=True)
class _Cell:
    judge: str
    value: float
    low: float
    high: float

    def text(self, digits: int) -> str:
        return f"{self.judge} {estimate_cell(self.value, self.low, self.high, digits=digits)}"


def _apart(a: _Cell, b: _Cell) -> bool:
    return a.high < b.low or b.high < a.low


def _cells(frame: pd.DataFrame, scale: float = 1.0) -> list[_Cell]:
    cells = [
        _Cell(str(r.judge), _number(r.value) * scale, _number(r.low) * scale, _number(r.high) * scale)
        for r in frame.itertuples()
    ]
    return [c for c in cells if not any(np.isnan([c.value, c.low, c.high]))]


def _and(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _comparison(title: str, cases: Mapping[str, list[_Cell]], better: str | None, digits: int) -> str | None:
    """One takeaway over the cases (templates, recommenders) on which the judges were measured: where the intervals
    separate them and where they overlap. ``better`` is ``lower`` or ``higher`` (the best judge is ranked first only
    where its interval lies apart from every other judge's), or None (nothing is better: the judges can only differ,
    where every two intervals lie apart); None when no case has two judges with intervals."""
    apart: dict[str, str] = {}
    overlap: list[str] = []
    superlative = {"lower": "lowest", "higher": "highest"}.get(better or "", "")
    for case, cells in cases.items():
        if len(cells) < 2:
            continue
        if better is None:
            first, others = cells[0], cells[1:]
            separated = all(_apart(a, b) for a, b in combinations(cells, 2))
        else:
            first = (min if better == "lower" else max)(cells, key=lambda c: c.value)
            others = [c for c in cells if c is not first]
            separated = all(_apart(first, c) for c in others)
        if separated:
            apart[case] = f"{case}: {first.text(digits)} vs " + ", ".join(c.text(digits) for c in others)
        else:
            overlap.append(case)
    if not apart and not overlap:
        return None
    parts = []
    if apart:
        where = "on " + _and(list(apart)) + " "
        if better is None:
            parts.append(where + "every two judges' intervals lie apart, so the judges disagree there")
        else:
            parts.append(
                where + f"the {superlative} value's interval lies apart from every other judge's, so this run "
                "ranks that judge first there"
            )
    if overlap:
        parts.append(
            "on " + _and(overlap) + " the intervals overlap, so this run cannot "
            + ("tell the judges apart" if better is None else "rank the judges") + " there"
        )  # fmt: skip
    details = f" ({'; '.join(apart.values())})" if apart else ""
    return f"{title}: " + "; ".join(parts) + details + "."


def _agreement_takeaway(agreement: pd.DataFrame) -> list[str]:
    out: list[str] = []
    if agreement.empty or "kappa" not in agreement:
        return out
    for (a, b), grp in agreement.dropna(subset=["kappa"]).groupby(["judge A", "judge B"], sort=False):
        above: list[str] = []
        chance: list[str] = []
        below: list[str] = []
        for r in grp.itertuples():
            what = f"{ITEM_WORDS.get(r.items, r.items)} ({estimate_cell(r.kappa, r.low, r.high)})"
            (above if r.low > 0 else below if r.high < 0 else chance).append(what)
        parts = []
        if above:
            parts.append("above chance on " + ", ".join(above))
        if chance:
            parts.append("not distinguishable from chance on " + ", ".join(chance) + " (the intervals hold 0)")
        if below:
            parts.append("below chance on " + ", ".join(below))
        out.append(f"Agreement of {a} with {b} (weighted kappa, 95 % CI): " + "; ".join(parts) + ".")
    return out


def takeaways_items(runs: list[Run], agreement: pd.DataFrame | None = None) -> list[str]:
    """The chapter's key takeaways, computed from the runs compared: who was compared, where the intervals rank or
    separate the judges (chapter 1's MAE, chapter 3's Win %, chapter 4's consistency and detection) and where they
    cannot, how far the judges agree beyond chance, and which rows ran on stand-in data."""
    if not runs:
        return ["No run has results yet: nothing to compare. Run a chapter with any judge profile and rebuild."]
    simulated = [r.name for r in runs if r.kind == "simulated"]
    items: list[str | None] = [
        f"{len(runs)} run{'s' if len(runs) != 1 else ''} compared ("
        + ", ".join(r.label for r in runs)
        + ")"
        + (
            f"; {'runs' if len(simulated) > 1 else 'run'} {_and(simulated)} used the {{term}}`simulated judge`, "
            "whose numbers show what the tables detect, not what an LLM thinks."
            if simulated
            else "."
        )
    ]
    if len(runs) < 2:
        items.append("With one run there is nothing to compare: add a run with another judge profile and rebuild.")
    items.append(_health_takeaway(runs))
    ch1 = _rows(runs, "01_serendipity_prompt_selection")
    if not ch1.empty:
        mae = ch1[ch1["metric"] == "mae"]
        cases = {TEMPLATE_NAMES.get(t, t): _cells(g) for t, g in mae.groupby("template", sort=False)}
        items.append(_comparison("Chapter 1, MAE against g (lower is better)", cases, "lower", 3))
    ch3 = _rows(runs, "03_recsys_arena")
    if not ch3.empty:
        wins = ch3[(ch3["metric"] == "win_pct") & (ch3["source"] == "adjudicated")]
        cases = {DISPLAY_NAMES.get(x, x): _cells(g) for x, g in wins.groupby("x", sort=False)}
        items.append(_comparison("Chapter 3, Win % against the baseline", cases, None, 1))
    ch4 = _rows(runs, "04_saer")
    if not ch4.empty:
        cons = ch4[ch4["metric"] == "position_consistency_pct"]
        items.append(_comparison("Chapter 4, position consistency %", {"the swapped pairs": _cells(cons)}, "higher", 1))
        adv = ch4[ch4["metric"] == "adversarial_correct_pct"]
        cases = {str(e): _cells(g) for e, g in adv.groupby("evaluator", sort=False)}
        items.append(_comparison("Chapter 4, adversarial pairs detected %", cases, "higher", 1))
    items += _agreement_takeaway(agreement_table(runs) if agreement is None else agreement)
    stand_ins = sorted(
        {int(nb[:2]) for r in runs for nb, res in r.results.items() if "stand-in" in res["data"].lower()}
    )
    if stand_ins:
        items.append(
            f"Chapter{'s' if len(stand_ins) > 1 else ''} {_and([str(n) for n in stand_ins])} ran on "
            "{term}`stand-in data`: compare their rows with the papers' for direction, not cell by cell."
        )
    return [item for item in items if item]
