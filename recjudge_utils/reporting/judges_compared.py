"""The chapter "Judges compared": every run present, judge beside judge, and beside the papers' multi-LLM tables.

It reads each run's ``manifest.json`` and its notebooks' ``results.json`` (:mod:`recjudge_utils.reporting.results`).
A run's judge is the one its manifest names (the runner's, written before its first notebook, or an ad-hoc run's,
written when a notebook executed outside the runner opens its judge); a notebook whose ``results.json`` names another
judge is left out of the run and said so, and a run folder without a manifest is shown as "unknown (no manifest)"
rather than guessed from its files. Tables say which judge is a simulated one (``kind``) and name it so; agreement
between judges is computed on the items both judged: Cohen's quadratic weighted kappa with its bootstrap standard
error and percentile CI (:func:`~recjudge_utils.metrics.agreement.weighted_kappa_ci`, the kappa of every chapter), and
Fleiss' kappa (statsmodels) for three or more judges.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from recjudge_utils.metrics.agreement import weighted_kappa_ci
from recjudge_utils.paths import MANIFEST_FILE, runs_dir
from recjudge_utils.protocols.saer import VERSION_NAMES
from recjudge_utils.reporting.display import error_bars, estimate_cell
from recjudge_utils.reporting.paper import paper_table
from recjudge_utils.reporting.results import RESULTS_FILE, USAGE_FILE, read_results

__all__ = [
    "Run",
    "agreement_display",
    "agreement_table",
    "arena_paper_datasets",
    "arena_table",
    "fleiss_table",
    "judges_table",
    "load_runs",
    "reevaluation_table",
    "saer_table",
    "serendipity_figure",
    "serendipity_table",
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
}


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


def judges_table(runs: list[Run]) -> pd.DataFrame:
    """The judges present: run, profile, model, kind, scale and status from each run's manifest, and the data each
    notebook ran on (plus the notebooks left out because another judge made them, when there are any)."""
    rows = []
    for run in runs:
        data = sorted({res["data"] for res in run.results.values()})
        scale = "adhoc (its notebooks' parameters)" if run.status == "adhoc" else run.manifest.get("scale", "unknown")
        row = {
            "run": run.name,
            "profile": run.profile,
            "judge": run.judge,
            "kind": "simulated judge" if run.kind == "simulated" else "LLM",
            "scale": scale,
            "status": run.status,
            "notebooks": len(run.results),
            "data": "; ".join(data),
        }
        if run.foreign:
            row["left out (another judge)"] = "; ".join(f"{nb} ({judge})" for nb, judge in run.foreign.items())
        rows.append(row)
    return pd.DataFrame(rows)


def usage_table(runs: list[Run]) -> pd.DataFrame:
    """Calls, tokens, cost and time per judge: the sum of the run's notebooks' ``usage.json`` (what their last
    execution cost; a run still executing shows what its finished notebooks cost)."""
    rows = []
    for run in runs:
        usage = [
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((run.folder or runs_dir() / run.name).glob(f"*/{USAGE_FILE}"))
            if p.parent.name in run.results
        ]

        def total(key: str, usage: list[dict[str, Any]] = usage) -> Any:
            values = [u.get(key) for u in usage if u.get(key) is not None]
            return sum(values) if values else None

        seconds = run.manifest.get("seconds")
        if run.status == "running":
            minutes: Any = "running"
        elif seconds is None:
            minutes = "n/a (adhoc)" if run.status == "adhoc" else "n/a"
        else:
            minutes = round(seconds / 60, 1)
        rows.append(
            {
                "run": run.name,
                "judge": run.shown_as or run.judge,
                "judgments": total("calls"),
                "paid": total("api_calls"),
                "cached": total("cache_hits"),
                "unparsed": total("unparsed"),
                "errors": total("errors"),
                "tokens in/out": f"{total('prompt_tokens') or 0:,} / {total('completion_tokens') or 0:,}",
                "USD": total("cost_usd"),
                "minutes": minutes,
            }
        )
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------ notebook 1
def serendipity_table(runs: list[Run]) -> pd.DataFrame:
    """Table 1 per judge: MAE and three-class accuracy with CIs, beside the paper's GPT-4o-mini and Llama-3.1-70B."""
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
                "template": template,
                "judge": label,
                "kind": grp["kind"].iloc[0],
                "MAE [95% CI]": estimate_cell(cell("mae", "value"), cell("mae", "low"), cell("mae", "high")),
                "3-class acc % [95% CI]": estimate_cell(
                    cell("acc3", "value"), cell("acc3", "low"), cell("acc3", "high"), digits=1, scale=100
                ),
                "kappa [95% CI]": estimate_cell(
                    cell("kappa_qw", "value"), cell("kappa_qw", "low"), cell("kappa_qw", "high")
                ),
                "n": None if cell("mae", "n") is None else int(cell("mae", "n")),
            }
        )
    paper = paper_table("serendipity_table1")
    for r in paper.itertuples():
        out.append(
            {
                "template": r.template,
                "judge": f"{r.model} (paper)",
                "kind": "paper",
                "MAE [95% CI]": f"{r.mae:.3f}",
                "3-class acc % [95% CI]": f"{r.accuracy_pct:.2f}",
                "kappa [95% CI]": "-",
                "n": 2150,
            }
        )
    return pd.DataFrame(out).sort_values(["template", "kind", "judge"], kind="stable").reset_index(drop=True)


def serendipity_figure(runs: list[Run]) -> Figure | None:
    """MAE per template per judge (95% CIs) beside the paper's, or None without results."""
    rows = _rows(runs, "01_serendipity_prompt_selection")
    if rows.empty:
        return None
    mae = rows[rows["metric"] == "mae"].copy()
    paper = paper_table("serendipity_table1").rename(columns={"model": "judge"})
    fig, ax = plt.subplots(figsize=(9, 4))
    judges = list(dict.fromkeys(mae["judge"]))
    templates = list(dict.fromkeys(mae["template"]))
    width = 0.8 / (len(judges) + paper["judge"].nunique())
    for k, judge in enumerate(judges):
        g = mae[mae["judge"] == judge].set_index("template").reindex(templates)
        x = np.arange(len(templates)) + k * width
        ax.errorbar(x, g["value"], yerr=error_bars(g["value"], g["low"], g["high"]), fmt="o", capsize=3, label=judge)
    for k, (judge, g) in enumerate(paper.groupby("judge", sort=False)):
        g = g.set_index("template").reindex(templates)
        x = np.arange(len(templates)) + (len(judges) + k) * width
        ax.plot(x, g["mae"], "D", label=f"{judge} (paper)")
    ax.set_xticks(np.arange(len(templates)) + 0.4 - width / 2, templates)
    ax.set(ylabel="MAE against g (lower is better)", title="Table 1 across judges: MAE per template (95% CI)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    plt.close(fig)
    return fig


# ------------------------------------------------------------------------------------------------ notebook 2
def reevaluation_table(runs: list[Run]) -> pd.DataFrame:
    """Table 3 headline metrics per judge and RS (accuracy does not depend on the judge; serendipity does)."""
    rows = _rows(runs, "02_rs_reevaluation")
    if rows.empty:
        return rows
    out = []
    for (judge, rs), grp in rows.groupby(["judge", "rs"], sort=False):
        m = grp.set_index("metric")
        row = {"rs": rs, "judge": judge, "kind": grp["kind"].iloc[0]}
        for metric, label in (("p_acc", "P_acc@k %"), ("p_ser", "P_ser@k %"), ("avg", "Avg.Score@k")):
            row[label] = estimate_cell(m.loc[metric, "value"], m.loc[metric, "low"], m.loc[metric, "high"], digits=2)
        out.append(row)
    return pd.DataFrame(out).sort_values(["rs", "judge"], kind="stable").reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ notebook 3
def arena_table(runs: list[Run], source: str = "adjudicated") -> pd.DataFrame:
    """Win %, Q (with CIs) per judge and RS vs the baseline, and Pearson r with AUC, beside the paper's three LLMs."""
    rows = _rows(runs, "03_recsys_arena")
    if rows.empty:
        return rows
    out = []
    for judge, grp in rows.groupby("judge", sort=False):
        r = grp[(grp["metric"] == "pearson_r_q_auc") & (grp["source"] == source)]
        pearson = float(r["value"].iloc[0]) if len(r) and r["value"].iloc[0] is not None else np.nan
        wins = grp[(grp["metric"] == "win_pct") & (grp["source"] == source)]
        qs = grp[(grp["metric"] == "Q") & (grp["source"] == source)].set_index("x")
        for w in wins.itertuples():
            q = qs.loc[w.x]
            out.append(
                {"x": w.x, "vs": w.y, "judge": judge, "kind": w.kind, "source": source,
                 "win % [95% CI]": estimate_cell(w.value, w.low, w.high, digits=1),
                 "Q [95% CI]": estimate_cell(q["value"], q["low"], q["high"]), "n": None if w.n is None else int(w.n),
                 "Pearson r(Q, AUC)": estimate_cell(pearson, None, None, digits=4)}
            )  # fmt: skip
    paper = paper_table("arena_table2")
    corr = paper_table("arena_table3").set_index(["llm", "dataset"])["r"]
    for p in paper[paper["dataset"].isin(arena_paper_datasets(rows["data"]))].itertuples():
        out.append(
            {"x": p.rs, "vs": "FM", "judge": f"{p.llm} (paper)", "kind": "paper", "source": "x_first",
             "win % [95% CI]": f"{p.win:.1f}", "Q [95% CI]": f"{p.q:.4f}", "n": None,
             "Pearson r(Q, AUC)": estimate_cell(corr.get((p.llm, p.dataset), np.nan), None, None, digits=4)}
        )  # fmt: skip
    return pd.DataFrame(out).astype({"n": "Int64"})


def arena_paper_datasets(data_labels: Iterable[str]) -> list[str]:
    """The Arena paper's datasets (Table 2) the runs' data labels name: MIND for a MIND run, else MovieLens.

    Only MovieLens and MIND have paper rows; a run on any other data (or a stand-in of either) compares with the
    MovieLens rows, the closer domain for ratings data."""
    found = {"MIND" if "MIND" in str(label) else "MovieLens" for label in data_labels}
    return sorted(found) or ["MovieLens"]


# ------------------------------------------------------------------------------------------------ notebook 4
def saer_table(runs: list[Run]) -> pd.DataFrame:
    """Label distribution (main prompt), position consistency and adversarial detection per judge, beside SAER."""
    rows = _rows(runs, "04_saer")
    if rows.empty:
        return rows
    out = []
    for judge, grp in rows.groupby("judge", sort=False):
        row: dict[str, Any] = {"judge": judge, "kind": grp["kind"].iloc[0]}
        labels = grp[grp["metric"] == "label_pct"]
        for lab in labels.itertuples():
            row[f"{lab.algorithm}: {lab.category} %"] = estimate_cell(lab.value, lab.low, lab.high, digits=1)
        cons = grp[grp["metric"] == "position_consistency_pct"]
        row["position consistency %"] = (
            estimate_cell(cons["value"].iloc[0], cons["low"].iloc[0], cons["high"].iloc[0], digits=1)
            if len(cons)
            else "n/a"
        )
        for adv in grp[grp["metric"] == "adversarial_correct_pct"].itertuples():
            row[f"adversarial correct %, {adv.evaluator}"] = estimate_cell(adv.value, adv.low, adv.high, digits=1)
        out.append(row)
    t1 = paper_table("saer_table1")
    paper: dict[str, Any] = {"judge": "Claude 4.5 Sonnet (paper, Beauty & Personal Care logs)", "kind": "paper"}
    for r in t1.itertuples():
        paper[f"{r.algorithm}: {r.category} %"] = f"{r.saer_pct:.1f}"
    metrics = paper_table("saer_metrics").set_index("metric")["value"]
    paper["position consistency %"] = f"{metrics['pairwise_position_consistency']:.1f}"
    for r in paper_table("saer_table3").itertuples():
        # the paper's prompt versions sit in the rows of ours; its human annotators get rows of their own
        version = r.prompt_version if isinstance(r.prompt_version, str) else None
        evaluator = f"{VERSION_NAMES[version]} prompt ({version})" if version else f"{r.evaluator} (paper only)"
        paper[f"adversarial correct %, {evaluator}"] = f"{r.correct_pct:.1f}"
    out.append(paper)
    table = pd.DataFrame(out).set_index("judge").T.fillna("n/a")
    return table.reset_index().rename(columns={"index": "measure"}).rename_axis(columns=None)


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
    """Weighted kappa (quadratic, with its bootstrap SE and 95% percentile CI: :func:`~recjudge_utils.metrics.
    agreement.weighted_kappa_ci`) between every two judges on the items both judged and labelled, per kind of item."""
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
                res = weighted_kappa_ci(both["a"].tolist(), both["b"].tolist(), order)
                row.update(
                    kappa=res.value,
                    se=res.se,
                    low=res.low,
                    high=res.high,
                    raw_agreement=float((both["a"] == both["b"]).mean()),
                )
            rows.append(row)
    return pd.DataFrame(rows)


def fleiss_table(runs: list[Run]) -> pd.DataFrame:
    """Fleiss' kappa (statsmodels) over every judge, on the items all of them labelled (three or more judges)."""
    rows = []
    for kind, by_judge in _items(runs).items():
        order = ORDERS.get(kind)
        if order is None or len(by_judge) < 3:
            continue
        frame = pd.concat(by_judge, axis=1, join="inner").dropna()
        frame = frame[frame.isin(order).all(axis=1)]
        if len(frame) < 2:
            continue
        code_of = {v: i for i, v in enumerate(order)}
        codes = frame.apply(lambda col, code_of=code_of: col.map(code_of)).to_numpy()
        counts, _ = aggregate_raters(codes, n_cat=len(order))
        rows.append(
            {
                "items": kind,
                "judges": len(by_judge),
                "n all labelled": len(frame),
                "fleiss_kappa": float(fleiss_kappa(counts)),
            }
        )
    return pd.DataFrame(rows)


def agreement_display(agreement: pd.DataFrame) -> pd.DataFrame:
    """The agreement table as a reader reads it: one kappa cell with its CI, the SE and the raw agreement in %."""
    if agreement.empty:
        return agreement
    out = pd.DataFrame(
        {
            "items": agreement["items"],
            "judges": agreement["judge A"] + "  vs  " + agreement["judge B"],
            "n": agreement["n both labelled"],
        }
    )
    has = "kappa" in agreement
    out["kappa [95% CI]"] = [
        estimate_cell(r.kappa, r.low, r.high) if has and not pd.isna(r.kappa) else "n/a"
        for r in agreement.reindex(columns=["kappa", "low", "high"]).itertuples()
    ]
    out["SE"] = agreement["se"].round(3) if "se" in agreement else np.nan
    out["raw agreement %"] = (100 * agreement["raw_agreement"]).round(1) if "raw_agreement" in agreement else np.nan
    return out


def agreement_figure(agreement: pd.DataFrame) -> Figure | None:
    """Every pair of judges' kappa with its CI, or None when no kappa is defined."""
    data = agreement.dropna(subset=["kappa"]) if "kappa" in agreement else agreement.iloc[0:0]
    if data.empty:
        return None
    data = data.assign(pair=data["judge A"].str.split(":").str[0] + " vs " + data["judge B"].str.split(":").str[0])
    fig, ax = plt.subplots(figsize=(9, 0.5 + 0.45 * len(data)))
    y = np.arange(len(data))
    ax.errorbar(data["kappa"], y, xerr=error_bars(data["kappa"], data["low"], data["high"]), fmt="o", capsize=3)
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(y, [f"{p} | {i}" for p, i in zip(data["pair"], data["items"], strict=True)], fontsize=8)
    ax.set(xlabel="quadratic weighted kappa (95% CI)", title="Agreement between judges on the items both judged")
    fig.tight_layout()
    plt.close(fig)
    return fig


def saer_labels_figure(runs: list[Run]) -> Figure | None:
    """SAER label shares per judge beside the paper's, or None without results."""
    rows = _rows(runs, "04_saer")
    if rows.empty:
        return None
    labels = rows[rows["metric"] == "label_pct"].copy()
    paper = paper_table("saer_table1").rename(columns={"saer_pct": "value"}).assign(judge="Claude 4.5 Sonnet (paper)")
    data = pd.concat(
        [labels[["judge", "algorithm", "category", "value"]], paper[["judge", "algorithm", "category", "value"]]]
    )
    g = sns.catplot(
        data=data,
        x="category",
        y="value",
        hue="judge",
        col="algorithm",
        kind="bar",
        height=3.2,
        aspect=1.3,
        order=["Good Match", "Partial Match", "Poor Match"],
    )
    g.set_axis_labels("", "% of lists")
    g.figure.suptitle("SAER pointwise labels across judges", y=1.04, fontsize=10)
    plt.close(g.figure)
    return g.figure
