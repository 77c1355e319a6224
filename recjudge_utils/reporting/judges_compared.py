"""What chapter 6 shows: every run present, judge beside judge and beside the papers' multi-LLM tables.

It lays out the :class:`~recjudge_utils.experiments.judges_compared.Comparison` of the runs (every agreement, alpha,
kappa and headline share comes from there); every row of ours names its judge's kind, so a simulated judge never
reads as an LLM. Headers, row labels and figure labels are written here beside the code that fills them, each table's
caption is the notebook's; ``text/judges_compared.yaml`` holds what is said when there is nothing to show, the stand-in
notes and the takeaways, which rank or tell judges apart only where their intervals allow it
(:mod:`~recjudge_utils.reporting.claims`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import combinations
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.experiments.arena import PAPER_NAMES
from recjudge_utils.experiments.judges_compared import Comparison, StoredRun
from recjudge_utils.metrics.estimate import Estimate, estimates
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.protocols.pointwise_score import TEMPLATES
from recjudge_utils.protocols.saer import VERSION_NAMES
from recjudge_utils.recommenders import DISPLAY_NAMES
from recjudge_utils.reporting.callouts import Callout, judge_caveat, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell, usage_cells
from recjudge_utils.reporting.claims import and_join, apart, leader, plural, side, with_name
from recjudge_utils.reporting.figures import done, empty_figure, forest_plot, grouped_bars
from recjudge_utils.reporting.tables import shown
from recjudge_utils.reporting.text import chapter_text

__all__ = ["figure", "frame", "opening", "saer_humans_sentence", "table", "takeaways_items"]

T = chapter_text("judges_compared")
CI = "[95 % CI]"
#: row labels: a judge's kind, a prompt template, a protocol's ranking, each kind of item (<notebook>/<items key>)
_KINDS = {"simulated": "simulated judge", "llm": "LLM", "paper": "paper"}
_TEMPLATES = {"base": "Base", "ls": "LS", "cot": "CoT", "ltm": "LtM"}
_MEASURES = {"serendipity": "serendipity", "arena": "Arena", "saer": "SAER", "precision": "Precision@k"}
_ITEMS = {
    "01_serendipity_prompt_selection/scores": "chapter 1: serendipity scores",
    "02_rs_reevaluation/scores": "chapter 2: serendipity scores of recommended items",
    "03_recsys_arena/pairwise": "chapter 3: pairwise verdicts",
    "04_saer/pointwise": "chapter 4: list labels",
    "04_saer/adversarial": "chapter 4: adversarial pairs",
    "07_your_recommenders/scores": "chapter 7: serendipity scores of your systems' items",
    "07_your_recommenders/saer_labels": "chapter 7: SAER labels of your systems' lists",
}
_SAER_CATEGORIES = ["Good Match", "Partial Match", "Poor Match"]
_SAER_JUDGE = "Claude 4.5 Sonnet (paper)"
_ALPHA = f"Krippendorff's alpha {CI}"


def _words(words: dict[str, str], value: Any) -> str:
    return str(words.get(value, value))


def _stands_in(x: Any) -> str:
    """Our recommender and the paper's model it stands in for (one name when they agree)."""
    ours = DISPLAY_NAMES.get(x, x)
    paper = PAPER_NAMES.get(x, ours)
    return f"{ours}" if paper == ours else f"{ours} (for {paper})"


def _keyed_cell(frame: pd.DataFrame, key: Any, digits: int | None = 3, scale: float = 1.0) -> str:
    """Row ``key`` of a frame indexed by metric, category or evaluator as an estimate cell (digits None: its n)."""
    row = frame.loc[[key]].iloc[0] if key in frame.index else None
    if row is None or (digits is None and pd.isna(row["n"])):
        return "n/a"
    return estimate_cell(Estimate.of_row(row), digits=digits, scale=scale) if digits else f"{int(row['n']):,}"


def _grid(rows: pd.DataFrame, names: dict[str, tuple[str, Callable[[Any], str]]],
          cells: Sequence[tuple[Any, ...]], index: str = "metric") -> list[dict[str, Any]]:  # fmt: skip
    """Per case and judge: the case (``names``: column -> header, naming), judge, kind, cells, ``_keys`` (the case)."""
    return [
        {**{head: name(k) for (head, name), k in zip(names.values(), keys, strict=False)}, "judge": keys[-1],
         "kind": _words(_KINDS, grp["kind"].iloc[0]),
         **{head: _keyed_cell(grp.set_index(index), key, d, s) for head, key, d, s in cells}, "_keys": keys[:-1]}
        for keys, grp in rows.groupby([*names, "judge"], sort=False)
    ]  # fmt: skip


#: a case in words, by the measure (or column) it is a case of; "x": our recommender and the paper's it stands in for
_CASES: dict[str, Callable[[Any], str]] = {
    "mae": lambda t: _words(_TEMPLATES, t), "acc3": lambda t: _words(_TEMPLATES, t),
    "win_pct": lambda x: DISPLAY_NAMES.get(x, x), "adversarial_correct_pct": str,
    "position_consistency_pct": lambda _: "the swapped pairs", "x": _stands_in,
}  # fmt: skip


def _chapters(notebooks: Iterable[str]) -> str:
    numbers = sorted({str(int(Path(nb).name[:2])) for nb in notebooks if Path(nb).name[:2].isdigit()}, key=int)
    return ", ".join(numbers) or "none"


# ------------------------------------------------------------------------------------------------ the runs
#: a finished run's state and a run's scale, in a cell's words
_STATES = {"ok": "finished", "failed": "failed", "adhoc": "ad hoc: notebooks executed outside the book runner"}
_SCALES = {"demo": "demo (each notebook's defaults)", "paper": "paper (the papers' sizes)"}
_UNKNOWN = "unknown (no manifest)"


def _state(c: Comparison, run: StoredRun, minutes: bool = False) -> str:
    """Where the run stood when this page was made, in words; ``minutes``: its wall time once finished."""
    if minutes and run.status != "running":
        seconds = run.manifest.get("seconds")
        if seconds is None:
            return "not recorded (ad hoc)" if run.status == "adhoc" else "not recorded"
        return f"{seconds / 60:.1f}"
    if run.status == "running":
        running = "still executing when this page was made"
        return f"this run, {running}" if c.is_current(run) else running
    if run.status == "failed" and run.failed:
        return f"finished; chapter {_chapters(run.failed)} failed"
    return _STATES.get(run.status, _UNKNOWN)


def _scale(run: StoredRun) -> str:
    if run.status == "adhoc" or not run.manifest:
        return "each notebook's own parameters cell (no runner)" if run.manifest else _UNKNOWN
    extra = ", ".join(f"{k} = {json.dumps(v)}" for k, v in (run.manifest.get("parameters") or {}).items())
    return f"{_words(_SCALES, str(run.manifest.get('scale', 'unknown')))}; {extra or 'no other parameter set'}"


def _runs(c: Comparison) -> pd.DataFrame:
    return pd.DataFrame(
        [{"run": run.name, "judge": run.short, "judge profile": run.profile, "scale and parameters": _scale(run),
          "state": _state(c, run), **({"left out (made by another judge)": "; ".join(
              f"{nb} ({judge})" for nb, judge in run.foreign.items())} if run.foreign else {})} for run in c.runs]
    )  # fmt: skip


def _runs_data(c: Comparison) -> pd.DataFrame:
    return pd.DataFrame(
        [{"run": run.name, "judge in full": run.judge, "chapters": _chapters(run.results),
          "data": "; ".join(sorted({res["data"] for res in run.results.values()}))} for run in c.runs]
    )  # fmt: skip


def _usage(c: Comparison) -> pd.DataFrame:
    return pd.DataFrame(
        [{"run": run.name, "judge": run.short, **usage_cells(run.usage()), "wall time (minutes)": _state(c, run, True)}
         for run in c.runs]
    )  # fmt: skip


def _health(c: Comparison) -> pd.DataFrame:
    h = c.health.assign(chapter=c.health["notebook"].str[:2], cell=[
        f"{r.parsed} of {r.n}" + (" ⚠" if r.flagged else "") for r in c.health.itertuples()])  # fmt: skip
    cells = {run: dict(zip(g["chapter"], g["cell"], strict=True)) for run, g in h.groupby("run", sort=False)}
    table = pd.DataFrame([{"run": run.name, "judge": run.short, **cells.get(run.name, {})} for run in c.runs])
    return table.reindex(columns=["run", "judge", *sorted(k for k in table.columns if k not in ("run", "judge"))])


def opening(c: Comparison) -> list[Callout]:
    """The runs compared in a line, then each judge's caveat and each stand-in's note, once each."""
    runs = f"{plural(len(c.runs), 'run')}: {', '.join(r.label for r in c.runs)}"
    notes: list[Callout | None] = [Callout(runs if c.runs else T("runs.none"))]
    notes += [judge_caveat(run.judge) for run in c.runs] + [
        stand_in_note(label, T.raw("paper_data")[nb], T("stand_in_detail", chapter=int(nb[:2])))
        for nb, labels in c.stand_ins.items() if nb in T.raw("paper_data") for label in labels
    ]  # fmt: skip
    return list({note.text: note for note in notes if note is not None}.values())  # each once, where it came first


# ------------------------------------------------------------------------------------------------ the chapters
def _serendipity(c: Comparison) -> pd.DataFrame:
    if (rows := c.chapter(1)).empty:
        return rows
    cells = [(f"MAE {CI}", "mae", 3, 1), (f"3-class accuracy, % {CI}", "acc3", 1, 100),
             (f"weighted kappa {CI}", "kappa_qw", 3, 1), ("judged pairs", "mae", None, 1)]  # fmt: skip
    ours = _grid(rows, {"template": ("prompt template", lambda t: _words(_TEMPLATES, t))}, cells)
    paper = [{"prompt template": _words(_TEMPLATES, str(r.template)), "judge": f"{r.model} (paper)",
              "kind": "paper", f"MAE {CI}": f"{r.mae:.3f}", f"3-class accuracy, % {CI}": f"{r.accuracy_pct:.1f}",
              f"weighted kappa {CI}": "not reported", "judged pairs": "2,150", "_keys": (str(r.template),)}
             for r in paper_table("serendipity_table1").itertuples()]  # fmt: skip
    order = {t: i for i, t in enumerate(TEMPLATES)}  # a stable sort: ours before the paper's on a tie
    return pd.DataFrame(sorted(ours + paper, key=lambda r: order.get(r["_keys"][0], 99))).drop(columns="_keys")


def _reevaluation(c: Comparison) -> pd.DataFrame:
    if (rows := c.chapter(2)).empty:
        return rows
    heads = {"p_acc": f"P_acc@k, % {CI}", "p_ser": f"P_ser@k, % {CI}", "avg": f"Avg.Score@k {CI}"}
    table = pd.DataFrame(_grid(rows, {"rs": ("recommender", _CASES["win_pct"])},
                               [(h, m, 2, 1) for m, h in heads.items()]))  # fmt: skip
    return table.drop(columns="_keys").sort_values(["recommender", "judge"], kind="stable").reset_index(drop=True)


def _arena(c: Comparison) -> pd.DataFrame:
    if (rows := c.chapter(3)).empty:
        return rows
    names = {"x": ("recommender", _CASES["x"]), "y": ("baseline", _CASES["win_pct"])}
    cells = [(f"Win % {CI}", "win_pct", 1, 1), (f"Q {CI}", "Q", 3, 1), ("judged comparisons", "win_pct", None, 1)]
    ours = _grid(rows[rows["metric"].isin(["win_pct", "Q"]) & (rows["source"] == "adjudicated")], names, cells)
    paper = [{"recommender": p.rs, "baseline": "FM", "judge": f"{p.llm} (paper, {p.dataset})",
              "kind": "paper", f"Win % {CI}": f"{p.win:.1f}", f"Q {CI}": f"{p.q:.4f}",
              "judged comparisons": "1,000 users", "_keys": (p.rs,)}
             for p in c.arena_paper("arena_table2").itertuples()]  # fmt: skip
    by_paper_name = sorted(ours + paper, key=lambda r: str(PAPER_NAMES.get(r["_keys"][0], r["_keys"][0])).lower())
    return pd.DataFrame(by_paper_name).drop(columns="_keys")  # a stable sort: ours before the paper's on a tie


def _arena_correlation(c: Comparison) -> pd.DataFrame:
    if (rows := c.chapter(3)).empty:
        return rows
    head = f"Pearson r(Q, AUC) {CI}"
    ours = [{"judge": judge, "kind": _words(_KINDS, grp["kind"].iloc[0]), "data": grp["data"].iloc[0],
             head: _keyed_cell(r := grp[grp["source"] == "adjudicated"].set_index("metric"), "pearson_r_q_auc"),
             "recommenders": _keyed_cell(r, "pearson_r_q_auc", None)}
            for judge, grp in rows.groupby("judge", sort=False)]  # fmt: skip
    paper = [{"judge": f"{p.llm} (paper)", "kind": "paper", "data": p.dataset, head: f"{p.r:.3f}",
              "recommenders": "4"}
             for p in c.arena_paper("arena_table3").itertuples()]  # fmt: skip
    return pd.DataFrame(ours + paper)


def _saer_labels(c: Comparison) -> pd.DataFrame:
    rows = c.chapter(4)
    if (labels := rows[rows["metric"] == "label_pct"] if not rows.empty else rows).empty:
        return labels
    cells = [(f"{k}, % {CI}", k, 1, 1) for k in _SAER_CATEGORIES]
    ours = _grid(labels, {"algorithm": ("lists from", str)}, cells, "category")
    paper = [{"lists from": algorithm, "judge": _SAER_JUDGE, "kind": "paper",
              **{head: f"{grp.set_index('category').loc[k, 'saer_pct']:.1f}" for head, k, _, _ in cells}}
             for algorithm, grp in paper_table("saer_table1").groupby("algorithm", sort=False)]  # fmt: skip
    table = pd.DataFrame(ours + paper).drop(columns="_keys")
    return table.sort_values("lists from", kind="stable").reset_index(drop=True)


def _saer_detection(c: Comparison) -> pd.DataFrame:
    if (rows := c.chapter(4)).empty:
        return rows
    consistency, versions = f"position consistency, % {CI}", [f"{n} prompt ({v})" for v, n in VERSION_NAMES.items()]
    key = rows.get("evaluator", pd.Series(np.nan, index=rows.index)).fillna(rows["metric"])  # a prompt, or the metric
    cells = [(consistency, "position_consistency_pct", 1, 1), *((f"detected, {v}, %", v, 1, 1) for v in versions)]
    metrics, table3 = paper_table("saer_metrics").set_index("metric")["value"], paper_table("saer_table3")
    paper = {"judge": _SAER_JUDGE, "kind": "paper", consistency: f"{metrics['pairwise_position_consistency']:.1f}",
             **{f"detected, {VERSION_NAMES[v]} prompt ({v}), %": f"{pct:.1f}" for v, pct in
                table3[["prompt_version", "correct_pct"]].dropna().itertuples(index=False)}}  # fmt: skip
    return pd.DataFrame([*_grid(rows.assign(key=key), {}, cells, "key"), paper]).drop(columns="_keys").fillna("n/a")


def saer_humans_sentence() -> Callout:
    """What the paper's human annotators detected on the adversarial pairs (they used no prompt version)."""
    humans = paper_table("saer_table3")
    shares = [f"{r.correct_pct:.1f} % ({r.evaluator})" for r in humans[humans["prompt_version"].isna()].itertuples()]
    return Callout(f"The paper's human annotators, who used no prompt, picked the genuine list of {and_join(shares)} "
                   "of the adversarial pairs {cite:p}`liu2026saer`.")  # fmt: skip


def _alpha_cell(value: Any, low: Any, high: Any, dropped: Any = 0, n_boot: Any = 0) -> str:
    """An alpha with its CI ("undefined" when one label was all there was), and the resamples where alpha was
    undefined when there were any: left out of the interval, so the reader is told how many."""
    if pd.isna(value):
        return "undefined"
    cell = estimate_cell(value, low, high)
    if pd.notna(dropped) and dropped:
        cell += f" ({int(dropped):,} of {int(n_boot):,} resamples undefined, left out)"
    return cell


def _agreement(c: Comparison, kind: str) -> pd.DataFrame:
    if (a := c.of_kind("agreement", kind)).empty:
        return a
    alpha = a.reindex(columns=["alpha", "low", "high", "dropped", "n_boot"])
    raw = a.reindex(columns=["raw_agreement", "raw_low", "raw_high"])
    return pd.DataFrame(
        {"items": a["items"].map(lambda kind: _words(_ITEMS, kind)), "judges": a["judge A"] + "  vs  " + a["judge B"],
         "items both labelled": a["n both labelled"].map(lambda n: f"{int(n):,}"),
         _ALPHA: [_alpha_cell(*k) for k in alpha.values], "metric": a["metric"],
         "SE": [estimate_cell(se) for se in a.reindex(columns=["se"])["se"]],
         f"raw agreement, % {CI}": [estimate_cell(v, lo, hi, digits=1, scale=100) for v, lo, hi in raw.values]}
    )  # fmt: skip


def _all_judges(c: Comparison, kind: str) -> pd.DataFrame:
    if (f := c.of_kind("all_judges", kind)).empty:
        return f
    return pd.DataFrame(
        {"items": f["items"].map(lambda kind: _words(_ITEMS, kind)), "judges": f["judges"],
         "items labelled by two or more": f["n labelled twice"].map(lambda n: f"{int(n):,}"),
         _ALPHA: [_alpha_cell(*k) for k in f[["alpha", "low", "high", "dropped", "n_boot"]].values],
         "metric": f["metric"]}
    )  # fmt: skip


def _panel(c: Comparison, kind: str) -> pd.DataFrame:
    if (m := c.of_kind("members", kind)).empty:
        return m
    # itertuples keeps each column's type (a row read with .loc would turn the counts into floats: "40.0")
    alphas = {a.run: a for a in c.of_kind("panel_agreement", kind).itertuples(index=False)}

    def agreement(run: str) -> str:  # the members' agreement, on the panel's row only
        a = alphas[run]
        alpha = _alpha_cell(a.alpha, a.low, a.high, a.dropped, a.n_boot)
        return f"{alpha} on {a.n:,} scores of {a.units:,} (user, item) pairs"

    columns = ["panel", "judge", "scores given", "weighted kappa with g [95 % CI]", "tokens (× a member's)",
               "members' agreement: ordinal Krippendorff's alpha [95 % CI]"]  # fmt: skip
    return pd.DataFrame([[r.judge, r.labeler or "the panel's verdict", f"{r.n:,}",
                          estimate_cell(r.kappa, r.low, r.high), f"{r.tokens:,.0f} ({r.tokens_x:.1f} ×)",
                          agreement(r.run) if r.panel else "-"]
                         for r in m.itertuples()], columns=columns)  # fmt: skip


def _protocols(c: Comparison) -> pd.DataFrame:
    rows, words = c.chapter(7), _MEASURES
    if rows.empty or "a" not in rows:
        return pd.DataFrame()
    taus = rows[(rows["metric"] == "kendall_tau") & rows["a"].isin(words) & rows["b"].isin(words)]
    return pd.DataFrame(
        [{"judge": r.judge, "kind": _words(_KINDS, r.kind), "rankings": f"{words[r.a]} vs {words[r.b]}",
          f"Kendall tau {CI}": estimate_cell(r.value, r.low, r.high, digits=2),
          "users": "-" if pd.isna(r.n) else f"{int(r.n):,}"} for r in taus.itertuples(index=False)]
    )  # fmt: skip


_FRAMES: dict[str, Callable[[Comparison], pd.DataFrame]] = {"runs": _runs, "runs_data": _runs_data, "usage": _usage,
    "health": _health, "serendipity": _serendipity, "reevaluation": _reevaluation, "arena": _arena,
    "arena_correlation": _arena_correlation, "saer_labels": _saer_labels, "saer_detection": _saer_detection,
    "protocols": _protocols} | {f"{n}{s}": partial(f, kind=k) for n, f in (("agreement", _agreement),
    ("all_judges", _all_judges), ("panel", _panel)) for s, k in (("", "llm"), ("_simulated", "simulated"))}  # fmt: skip


#: what a table says when empty where that is not the default "no run has results for this table yet" (text keys)
_EMPTY = {"health": "empty.health", "agreement": "empty.agreement", "agreement_simulated": "empty.agreement_simulated",
          "all_judges": "empty.all_judges", "all_judges_simulated": "empty.all_judges_simulated",
          "panel": "empty.panel", "panel_simulated": "empty.panel_simulated"}  # fmt: skip


def frame(c: Comparison, name: str) -> pd.DataFrame:
    """Table ``name``'s frame for people: headers in words, an estimate and its interval in one cell."""
    return _FRAMES[name](c)


def table(c: Comparison, name: str, caption: str) -> Styler | Callout:
    """Table ``name`` under the notebook's ``caption``, or the caption and why the table is empty."""
    rows = frame(c, name)
    return shown(rows, caption, T(_EMPTY[name])) if name in _EMPTY else shown(rows, caption)


# ------------------------------------------------------------------------------------------------ figures
def _headline(r: dict[str, Any]) -> str:
    """A headline share's row in the forest plot: its chapter, its measure and its case."""
    metric, case = r["metric"], _CASES[r["metric"]](r["case"])
    if metric == "acc3":
        return f"ch. 1: 3-class accuracy, {case}"
    if metric == "win_pct":
        return f"ch. 3: Win %, {case} vs {_CASES['win_pct'](r['baseline'])}"
    if metric == "position_consistency_pct":
        return "ch. 4: position consistency"
    return f"ch. 4: adversarial pairs detected, prompt {r['prompt']}"


def _headlines_figure(c: Comparison) -> Figure:
    if (h := c.headlines).empty:
        return empty_figure(T("figures.none_headlines"), width=6.0)
    measure = [_headline(r) for r in h.to_dict("records")]
    return forest_plot(h.assign(measure=measure), "measure", group="judge", xlabel="% (95 % CI)", width=8.0)


def _mae_figure(c: Comparison) -> Figure:
    rows = c.chapter(1)
    if (mae := rows[rows["metric"] == "mae"] if not rows.empty else rows).empty:
        return empty_figure(T("figures.none_mae"), width=6.0)
    paper = paper_table("serendipity_table1").rename(columns={"mae": "value"})
    paper = paper[paper["template"].isin(mae["template"])]
    data = pd.concat([mae, paper.assign(judge=[f"{m} (paper)" for m in paper["model"]])], ignore_index=True)
    rank = {t: i for i, t in enumerate(TEMPLATES)}  # the paper's order, then any other template by name
    data = data.sort_values("template", key=lambda s: s.map(lambda t: (rank.get(t, len(rank)), t)), kind="stable")
    fig = forest_plot(data.assign(what=data["template"].map(lambda t: _words(_TEMPLATES, t))), "what", group="judge",
                      xlabel="MAE against g (lower is better)", width=8.0)  # fmt: skip
    fig.axes[0].set_ylabel("prompt template")
    return fig


def _saer_figure(c: Comparison) -> Figure:
    rows = c.chapter(4)
    if (labels := rows[rows["metric"] == "label_pct"] if not rows.empty else rows).empty:
        return empty_figure(T("figures.none_saer"), width=6.0)
    paper = paper_table("saer_table1").rename(columns={"saer_pct": "value"}).assign(judge=_SAER_JUDGE)
    data = pd.concat([labels[["judge", "algorithm", "category", "value", "low", "high"]], paper], ignore_index=True)
    judges, algorithms = (list(dict.fromkeys(data[k])) for k in ("judge", "algorithm"))
    categories = _SAER_CATEGORIES
    fig, axes = plt.subplots(1, len(algorithms), figsize=(4 * len(algorithms) + 1.5, 3.6), sharey=True, squeeze=False)
    for ax, algorithm in zip(axes[0], algorithms, strict=True):
        part = data[data["algorithm"] == algorithm]
        g = {j: part[part["judge"] == j].set_index("category").reindex(categories) for j in judges}
        bounds = {j: (s["low"].fillna(s["value"]), s["high"].fillna(s["value"])) for j, s in g.items()}
        grouped_bars(ax, categories, {j: s["value"] for j, s in g.items()}, edgecolor="0.2", intervals=bounds)
        ax.set(title=f"lists from {algorithm}", xlabel="")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("% of lists (95 % CI)")
    axes[0][-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return done(fig)


def _agreement_figure(c: Comparison) -> Figure:
    if (data := c.of_kind("agreement", "llm").dropna(subset=["alpha"])).empty:  # the simulated judges': Table 6.10b
        return empty_figure(T("figures.none_agreement"), width=6.0)
    data = data.assign(pair=data["judge A"].str.split(":").str[0] + " vs " + data["judge B"].str.split(":").str[0],
                       what=data["items"].map(lambda kind: _words(_ITEMS, kind)))  # fmt: skip
    fig = forest_plot(data, label="what", value="alpha", group="pair", width=9.0,
                      xlabel="Krippendorff's alpha (95 % CI)", reference=0.0,
                      reference_label="chance agreement")  # fmt: skip
    low = min(-1.05, float(data["low"].min()) - 0.05) if data["low"].notna().any() else -1.05
    fig.axes[0].set_xlim(low, 1.05)  # -1 to 1 at least, so that two figures compare at a glance (alpha can go below -1)
    return fig


def figure(c: Comparison, name: str) -> Figure:
    """The chapter's figure ``name`` (headlines, mae, saer_labels, agreement); one that says why when empty."""
    return {"headlines": _headlines_figure, "mae": _mae_figure, "saer_labels": _saer_figure,
            "agreement": _agreement_figure}[name](c)  # fmt: skip


# ------------------------------------------------------------------------------------------------ takeaways
#: the comparisons the takeaways make: measure -> its title, which is better (None: the judges can only differ), digits
_CONTESTS: dict[str, tuple[str, str | None, int]] = {
    "mae": ("Chapter 1, MAE against g (lower is better)", "lower", 3),
    "win_pct": ("Chapter 3, Win % against the baseline", None, 1),
    "position_consistency_pct": ("Chapter 4, position consistency %", "higher", 1),
    "adversarial_correct_pct": ("Chapter 4, adversarial pairs detected %", "higher", 1),
}
#: where an alpha's interval lies against chance (0): the clause of the agreement takeaway (text keys)
_ALPHA_SIDES = {"above": "takeaways.alpha_sides.above", "contains": "takeaways.alpha_sides.contains",
                "below": "takeaways.alpha_sides.below", "none": "takeaways.alpha_sides.none"}  # fmt: skip


def _contest(c: Comparison, metric: str) -> str | None:
    """Per case, whether the intervals rank the judges (the best one first only where its interval lies apart from
    every other judge's) or tell them apart (every two intervals apart), and the cases where they cannot."""
    (title, better, digits), name = _CONTESTS[metric], _CASES[metric]
    separated, overlap = dict[str, str](), list[str]()
    for case, grp in c.measures.query("metric == @metric and kind == 'llm'").groupby("case", sort=False):  # LLMs only
        cells = [e for e in estimates(grp.to_dict("records"), "value", "low", "high", "judge") if e.has_ci]
        if len(cells) < 2:
            continue
        top = cells[0] if better is None else leader(cells, higher=better == "higher").top  # type: ignore[union-attr]
        others = [e for e in cells if e is not top]
        if all(apart(a, b) for a, b in (combinations(cells, 2) if better is None else ((top, e) for e in others))):
            others_named = ", ".join(with_name(e, digits) for e in others)
            separated[name(case)] = f"{name(case)}: {with_name(top, digits)} vs {others_named}"
        else:
            overlap.append(name(case))
    if better is None:
        apart_key, overlap_key, best = "takeaways.apart_differ", "takeaways.overlap_differ", ""
    else:
        best = {"lower": "lowest", "higher": "highest"}[better]
        apart_key, overlap_key = "takeaways.apart_rank", "takeaways.overlap_rank"
    parts = [T(apart_key, cases=and_join(list(separated)), superlative=best)] if separated else []
    parts += [T(overlap_key, cases=and_join(overlap))] if overlap else []
    details = f" ({'; '.join(separated.values())})" if separated else ""
    return f"{title}: {'; '.join(parts)}{details}." if parts else None


def _agreement_takeaways(agreement: pd.DataFrame) -> list[str]:
    out = []
    for (a, b), grp in agreement.dropna(subset=["alpha"]).groupby(["judge A", "judge B"], sort=False):
        named = grp.assign(words=grp["items"].map(lambda kind: _words(_ITEMS, kind))).to_dict("records")
        found = estimates(named, "alpha", "low", "high", "words")
        alphas = [(side(e, 0.0), f"{e.name} ({estimate_cell(e)})") for e in found]
        parts = [T(key, items=", ".join(k for where, k in alphas if where == s))
                 for s, key in _ALPHA_SIDES.items() if any(where == s for where, _ in alphas)]  # fmt: skip
        out.append(T("takeaways.agreement", a=a, b=b, parts="; ".join(parts)))
    return out


def _health_takeaway(c: Comparison) -> str | None:
    flagged = c.health[c.health["flagged"]].assign(chapter=lambda h: h["notebook"].str[:2].astype(int))
    runs = [f"{run} ({'; '.join(f'chapter {r.chapter}: {r.parsed} of {r.n}' for r in g.itertuples())} readable)"
            for run, g in flagged.groupby("run", sort=False)]  # fmt: skip
    return T("takeaways.health", runs="; ".join(runs)) if runs else None


def takeaways_items(c: Comparison) -> list[str]:
    """Who was compared, where the intervals rank or separate the judges, alpha against chance, the stand-ins."""
    if not c.runs:
        return [T("takeaways.none")]
    simulated = [r.name for r in c.runs if r.kind == "simulated"]
    stand_ins = sorted({int(nb[:2]) for nb in c.stand_ins})
    items = [
        T("takeaways.compared_simulated" if simulated else "takeaways.compared", runs=plural(len(c.runs), "run"),
          labels=", ".join(r.label for r in c.runs), simulated=and_join(simulated),
          word="runs" if len(simulated) > 1 else "run"),
        T("takeaways.one_run") if len(c.runs) < 2 else None,
        _health_takeaway(c),
        *(_contest(c, metric) for metric in _CONTESTS),
        *(_agreement_takeaways(c.agreement) if "alpha" in c.agreement else []),
        T("takeaways.stand_in", chapters=and_join([str(n) for n in stand_ins]), s="s" if len(stand_ins) > 1 else "")
        if stand_ins else None,
    ]  # fmt: skip
    return [item for item in items if item]
