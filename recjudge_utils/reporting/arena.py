"""Chapter 3 (RecSys Arena) laid out: Tables 1-4 beside the paper's, position bias, close pairs, Figure 6, transparency,
figures and takeaways. Words: ``text/arena.yaml``; numbers: the runs of :mod:`recjudge_utils.experiments.arena`."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import pairwise
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data import Dataset
from recjudge_utils.experiments.arena import PAPER_NAMES, ArenaRun
from recjudge_utils.experiments.transparency import TRANSPARENCY_MODELS, TransparencyRun
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.reporting import figures
from recjudge_utils.reporting.answer_health import NO_PARSED, health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, judge_caveat, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import Estimate, leader, side, sides
from recjudge_utils.reporting.figures import forest_plot, legend_below, palette, titled
from recjudge_utils.reporting.judge_saw import arena_use, judge_saw
from recjudge_utils.reporting.tables import captioned
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "aspect_table", "close_pairs_figure", "close_pairs_table", "figure6", "headline_cells", "judge_facts",
    "judge_saw_note", "notes",
    "paper_cases", "paper_dataset", "paper_r_rounding", "paper_table3", "position_figure", "position_sentence",
    "position_table",
    "q_figure", "relative_table", "separation_table", "setup_table", "table1", "table2", "table2_beside_paper",
    "table2_figure", "table3", "table4", "takeaways_items", "timings_table", "transparency_examples",
    "transparency_figure", "transparency_table", "unparsed_summary",
]  # fmt: skip

T = chapter_text("arena")
_ORDERS: dict[str, str] = T.raw("orders")  # the run's ``source`` values in words
_PAPER_LLMS = ("GPT-4o", "DeepSeek-V2.5", "Llama3.1-8B")  # the paper's judges, in its tables' order
_CI = "95 % CI"
_PARTS = {"win": "Win %", "tie": "Tie %", "lose": "Lose %"}
_HATCHES = ("//", "..", "xx")  # one per Win / Tie / Lose segment or Figure 6 measure: the figures read in grey
_Q_EDGES = (1 / 16, 16.0)  # Q is drawn on a log scale; 0 and ∞ (and anything beyond) at these edges


def paper_dataset(run: ArenaRun) -> str:
    """The paper's dataset whose rows fit this run (MIND for MIND, MovieLens otherwise)."""
    return "MIND" if run.dataset_name.lower().startswith("mind") else "MovieLens"


def _paper(run: ArenaRun, table: int, index: str | list[str]) -> pd.DataFrame:
    paper = paper_table(f"arena_table{table}")
    return paper[paper["dataset"] == paper_dataset(run)].set_index(index)


def _tag(run: ArenaRun | TransparencyRun) -> str:
    return T("tag", data=run.data_label, judge=run.judge_name, users=len(run.panel.users))


def _rec_label(key: str) -> str:
    """The registry key, with the paper's row name where the book substitutes another model."""
    paper = PAPER_NAMES.get(key)
    return f"{key} (paper: {paper})" if paper and paper.lower() != key.lower() else key


def _q_cell(r: Any) -> str:
    return Estimate.of_row(r, "Q").cell(2) if r.get("n") else NO_PARSED


def _rank(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else str(int(value))


def _caption(title: str, frame: pd.DataFrame) -> str:
    """The title, with the note on ∞ when some Q or bound in ``frame`` is infinite."""
    infinite = np.isinf(frame[[c for c in ("Q", "Q_lo", "Q_hi") if c in frame]].to_numpy(dtype=float)).any()
    return f"{title} {T('inf_note')}" if infinite else title


def _wtl_frame(frame: pd.DataFrame, first: str = "", names: Sequence[str] = (), judged: bool = True,
               rank: bool = True) -> pd.DataFrame:  # fmt: skip
    """Column ``first`` (``names``) and the order, judged, Win / Tie / Lose % and Q with their CIs, and rank."""
    rows = []
    for name, r in zip(list(names) if first else [""] * len(frame), frame.to_dict("records"), strict=True):
        n, missing = int(r["n"]), int(r.get("n_unjudged", 0) or 0)
        row = {first: name, "order": _ORDERS[r["source"]]} if first else {}
        row |= {"judged": f"{n}" if not missing else f"{n} of {n + missing}"} if judged else {}
        row |= {f"{h} [{_CI}]": Estimate.of_row(r, p).cell(1) if n else NO_PARSED for p, h in _PARTS.items()}
        rows.append({**row, f"Q [{_CI}]": _q_cell(r), **({"rank": _rank(r.get("rank"))} if rank else {})})
    return pd.DataFrame(rows)


def setup_table(run: ArenaRun) -> Styler:
    """The MovieLens setting of the authors' code (the paper's text leaves it open) beside this run's, and why."""
    cfg = run.config
    values = {"users": len(run.panel.users), "seed": cfg.seed, "n_history": cfg.n_history, "top_k": cfg.top_k,
              "candidates": int(run.offline["n_users"].max()) if len(run.offline) else 0, "judge": run.judge_name,
              "orders": T("setup.both_orders" if cfg.both_orders else "setup.one_order")}  # fmt: skip
    rows = [[T(f"setup.rows.{k}.{c}", **values) for c in ("setting", "authors", "ours", "why")]
            for k in T.raw("setup.rows")]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["setting", "authors' code", "this run", "why it differs"])
    return captioned(frame, T("captions.setup", code=T("authors_code")))


def notes(run: ArenaRun) -> list[Callout]:
    """A warning when no pair-wise verdict could be read, the judge caveat, what stands in for the paper's data."""
    health, stand_in = run.unreadable(), None
    warning = unanswerable_warning(T("notes.question"), health) if health else None
    substitute = "minilm-content" in run.config.recommenders  # stands in for the news model NRMS
    if run.dataset_name.lower() not in {"ml-1m", "mind"}:
        detail = T("notes.orderings_only") + (f" {T('notes.nrms')}" if substitute else "")
        stand_in = stand_in_note(run.data_label, T("notes.paper_data"), detail)
    elif substitute:
        stand_in = stand_in_note("minilm-content", T("notes.paper_nrms"), T("notes.nrms"))
    return [c for c in (warning, judge_caveat(run.judge_name), stand_in) if c]


def timings_table(run: ArenaRun) -> Styler:
    frame = pd.DataFrame({"step": list(run.timings), "seconds": [round(v, 1) for v in run.timings.values()]})
    return captioned(frame, T("captions.timings"))


def table1(run: ArenaRun) -> Styler:
    """Our AUC / nDCG@k / URD@k beside the paper's Table 1 (the rows of the dataset we ran)."""
    paper, off, k = _paper(run, 1, "rs"), run.offline, run.config.top_k
    ndcg, paper_rows = next((c for c in off if c.startswith("ndcg@")), f"ndcg@{k}"), off["rs"].map(PAPER_NAMES)
    frame = pd.DataFrame({"recommender": off["rs"].map(_rec_label), "AUC": off["auc"],
                          f"nDCG@{k}": off.get(ndcg, np.nan), f"URD@{k}": off["urd"],
                          "AUC (paper)": paper_rows.map(paper["auc"]),
                          "nDCG@5 (paper)": paper_rows.map(paper["ndcg5"])})  # fmt: skip
    users = int(off["n_users"].max()) if len(off) else 0
    return captioned(frame, T("captions.table1", data=run.data_label, users=users, paper=paper_dataset(run)), 3)


def table2(run: ArenaRun) -> Styler:
    """Each recommender against the baseline in every judged order: Win / Tie / Lose % and Q with 95 % CIs."""
    frame, title = run.versus_all(), T("captions.table2", baseline=run.config.baseline, tag=_tag(run))
    return captioned(_wtl_frame(frame, "recommender", frame["x"]), _caption(title, frame))


def _paper_rows(paper: pd.DataFrame, x: str, header: str, urd: str | None = None) -> list[dict[str, str]]:
    """The row of each of the paper's judges for ``x``; ``header`` formats the W/T/L headers, ``urd`` adds URD."""
    return [
        {"recommender": _rec_label(x), "setting": f"paper, {llm}",
         **({urd: estimate_cell(p["urd"], digits=3)} if urd else {}),
         **{header.format(h): estimate_cell(p[c], digits=1) for c, h in _PARTS.items()},
         f"Q [{_CI}]": estimate_cell(p["q"], digits=2), "rank": _rank(p["rank"])}
        for llm in _PAPER_LLMS if (key := (PAPER_NAMES.get(x, ""), llm)) in paper.index for p in [paper.loc[key]]
    ]  # fmt: skip


def table2_beside_paper(run: ArenaRun) -> Styler:
    """The paper's Table 2 rows (its three judges, the tested model shown as A) beside ours, per recommender."""
    paper, ours, rows = _paper(run, 2, ["rs", "llm"]), run.versus_all(), []
    for x in dict.fromkeys(ours["x"]):
        for source in dict.fromkeys(["x_first", run.config.main_source]):
            r = ours[(ours["x"] == x) & (ours["source"] == source)].iloc[0]
            rows.append({"recommender": _rec_label(x), "setting": f"this run, {_ORDERS[source]}",
                         **{h: estimate_cell(r[p], digits=1) for p, h in _PARTS.items()},
                         f"Q [{_CI}]": _q_cell(r), "rank": _rank(r["rank"])})  # fmt: skip
        rows += _paper_rows(paper, x, "{}")
    title = T("captions.table2_paper", paper=paper_dataset(run), baseline=run.config.baseline)
    return captioned(pd.DataFrame(rows), _caption(title, ours))


def _wtl_bars(frame: pd.DataFrame, names: Sequence[str], head: str, run: ArenaRun | TransparencyRun) -> Figure:
    """Stacked Win / Tie / Lose bars (``name · order``), the win and lose shares' Wilson intervals at their edges."""
    y = np.cumsum([0.0, *(1.6 if a != b else 1.0 for a, b in pairwise(names))])[: len(frame)]
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.36 * len(frame) + 0.2 * len(set(names))))
    styles = [(palette(8)[i], hatch) for i, hatch in zip((0, 7, 1), _HATCHES, strict=True)]
    figures.stacked_bars(ax, y.tolist(), frame[list(_PARTS)].to_numpy(dtype=float).tolist(), styles,
                         [*map(str.capitalize, _PARTS)], edgecolor="white")  # fmt: skip
    win, lose = (frame[[p, f"{p}_lo", f"{p}_hi"]].to_numpy(dtype=float).T for p in ("win", "lose"))
    for value, low, high in (win, (100 - lose[0], 100 - lose[2], 100 - lose[1])):  # lose: where its segment starts
        ax.errorbar(value, y, xerr=figures.error_bars(value, low, high), fmt="none", ecolor="black", capsize=3,
                    linewidth=1)  # fmt: skip
    ax.set_yticks(y, [f"{n} · {_ORDERS[s]}" for n, s in zip(names, frame["source"], strict=True)])
    ax.invert_yaxis()
    ax.set(xlabel=T("figures.wtl_x"), xlim=(0, 100))
    titled(ax, head, _tag(run))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return figures.done(fig)


def table2_figure(run: ArenaRun) -> Figure:
    """Win / Tie / Lose of each recommender against the baseline, one bar per order, with 95 % Wilson intervals."""
    frame = run.versus_all()
    return _wtl_bars(frame, list(frame["x"]), T("figures.against", baseline=run.config.baseline), run)


def _forest(rows: list[dict[str, Any]], run: ArenaRun, key: str, xlim: tuple[float, float], legend: int,
            log: bool = False, **options: Any) -> Figure:  # fmt: skip
    """A forest plot of ``rows`` by group (Q's log scale when ``log``), titled, its ``legend`` rows below."""
    fig = forest_plot(pd.DataFrame(rows).dropna(subset=["value"]), group="group", width=8.0, **options)
    ax = fig.axes[0]
    if log:
        ax.set_xscale("log", base=2)
        ax.set_xticks([_Q_EDGES[0], 1 / 4, 1, 4, _Q_EDGES[1]], ["0 … 1/16", "1/4", "1", "4", "16 … ∞"])
    ax.set_xlim(*xlim)
    titled(ax, T(f"figures.{key}_head"), _tag(run))
    legend_below(fig, legend)
    return fig


def q_figure(run: ArenaRun) -> Figure:
    """Q against the baseline with its 95 % CI per order beside the paper's judges' Q, on a log scale."""
    paper, ours, base = _paper(run, 2, ["rs", "llm"])["q"], run.versus_all(), run.config.baseline
    rows = [{"label": _rec_label(r.x), "group": f"this run, {_ORDERS[r.source]}", "value": r.Q, "low": r.Q_lo,
             "high": r.Q_hi} for r in ours.itertuples(index=False)]  # fmt: skip
    rows += [
        {"label": _rec_label(x), "group": f"paper, {llm}", **dict.fromkeys(("value", "low", "high"), paper[key])}
        for x in dict.fromkeys(ours["x"]) for llm in _PAPER_LLMS if (key := (PAPER_NAMES.get(x, ""), llm)) in paper
    ]  # fmt: skip
    rows = [{**r, **{c: float(np.clip(float(r[c]), *_Q_EDGES)) for c in ("value", "low", "high")}} for r in rows]
    return _forest(rows, run, "q", (_Q_EDGES[0] / 1.3, _Q_EDGES[1] * 1.3), 3, log=True, reference=1.0,
                   xlabel=T("figures.q_x", baseline=base),
                   reference_label=T("figures.q_reference", baseline=base))  # fmt: skip


def _comparison(r: Any) -> str:
    return "all comparisons" if r["x"] == "all" else f"{r['x']} vs {r['y']}"


def position_table(run: ArenaRun) -> Styler:
    """Per comparison and overall: position consistency, the 'A wins' share (95 % CIs) and the unparsed share."""
    a = run.a_wins.set_index(["x", "y"])
    rows = [
        {"comparison": _comparison(r), "judged in both orders": int(r["n_both_parsed"]),
         f"position consistency [{_CI}]": Estimate.of_row(r, "consistency").cell(2),
         f"{T('a_share')} [{_CI}]":
             Estimate.of_row(a.loc[k], "share").cell(2) if (k := (r["x"], r["y"])) in a.index else "n/a",
         "unparsed %": estimate_cell(100 * r["unparsed_rate"], digits=1)}
        for r in run.consistency.to_dict("records")
    ]  # fmt: skip
    return captioned(pd.DataFrame(rows), T("captions.position", tag=_tag(run)))


def position_figure(run: ArenaRun) -> Figure:
    """Position consistency and the 'A wins' share per comparison, with 95 % Wilson intervals."""
    rows = [
        {"label": _comparison(r), "group": group, "value": e.value, "low": e.low, "high": e.high}
        for frame, group, col in ((run.consistency, "position consistency", "consistency"),
                                  (run.a_wins, T("a_share"), "share"))
        for r in frame.to_dict("records") for e in [Estimate.of_row(r, col)]
    ]  # fmt: skip
    return _forest(rows, run, "position", (-0.02, 1.02), 2, xlabel=T("figures.position_x"), reference=0.5,
                   reference_label=T("figures.position_reference"))  # fmt: skip


def headline_cells(run: ArenaRun) -> dict[str, str]:
    """The cells the chapter's prose quotes: ``consistency`` and ``a_share`` with their 95 % CIs ("n/a": none)."""
    c, a = run.overall()
    consistency = "n/a" if c is None else Estimate.of_row(c, "consistency").cell(2)
    return {"consistency": consistency, "a_share": Estimate.of_row(a, "share").cell(2)}


def position_sentence(run: ArenaRun) -> str:
    """How often this run's two orders agreed, and named A, with their 95 % CIs (the position-bias section)."""
    return T("position_sentence", **headline_cells(run))


def close_pairs_table(run: ArenaRun) -> Styler:
    """The closest-AUC pairs compared directly, in each order and adjudicated (the paper's Figures 3-4)."""
    frame, title = run.versus_all(kind="close_pair"), T("captions.close_pairs", tag=_tag(run))
    pairs = [*map(_comparison, frame.to_dict("records"))]
    return captioned(_wtl_frame(frame, "comparison", pairs, rank=False), _caption(title, frame))


def close_pairs_figure(run: ArenaRun) -> Figure:
    """Win / Tie / Lose of the closest-AUC pairs in each order, with 95 % Wilson intervals (Figures 3-4)."""
    frame = run.versus_all(kind="close_pair")
    return _wtl_bars(frame, [*map(_comparison, frame.to_dict("records"))], T("figures.close_pairs"), run)


def aspect_table(run: ArenaRun, source: str = "adjudicated") -> Styler:
    """Q [95 % CI] against the baseline per aspect (rows) and recommender (columns)."""
    tables = {key: run.versus(source, key=key) for key in run.aspect_keys}
    rows = [{"aspect": k.replace("_", " ").capitalize(), **{r["x"]: _q_cell(r) for r in t.to_dict("records")}}
            for k, t in tables.items()]  # fmt: skip
    title = T("captions.aspects", baseline=run.config.baseline, order=_ORDERS[source], tag=_tag(run))
    return captioned(pd.DataFrame(rows), _caption(title, pd.concat(tables.values())))


def table4(run: ArenaRun, source: str = "adjudicated") -> Styler:
    """Inspiration verdicts against the baseline beside URD, ours and the paper's Table 4 rows in one table."""
    ours, k, paper = run.versus(source, key="inspiration"), run.config.top_k, paper_table("arena_table4")
    urd, rows = dict(zip(run.offline["rs"], run.offline["urd"], strict=True)), []
    for x, cells in zip(ours["x"], _wtl_frame(ours, judged=False).to_dict("records"), strict=True):
        rows.append({"recommender": _rec_label(x), "setting": f"this run, {_ORDERS[source]}",
                     f"URD@{k}": estimate_cell(urd.get(x), digits=3), **cells})  # fmt: skip
        rows += _paper_rows(paper.set_index(["rs", "llm"]), x, f"{{}} [{_CI}]", urd=f"URD@{k}")
    title = T("captions.table4", baseline=run.config.baseline, tag=_tag(run))
    return captioned(pd.DataFrame(rows), _caption(title, ours))


def paper_cases() -> str:
    """The paper's two transparency showcases as Markdown quotes."""
    return "\n\n".join(T("paper_case", **case) for case in T.raw("paper_cases"))


def transparency_table(run: TransparencyRun) -> Styler:
    """Win / Tie / Lose and Q of DeepFM with features against ids only, on Transparency and overall, per order."""
    frame, (x, y) = run.outcomes, TRANSPARENCY_MODELS  # Transparency, then overall; each order, then adjudicated
    body = _wtl_frame(frame, "aspect", frame["aspect"].str.replace("_", " ").str.capitalize(), rank=False)
    return captioned(body, _caption(T("captions.transparency", x=x, y=y, tag=_tag(run)), frame))


def transparency_figure(run: TransparencyRun) -> Figure:
    """Win / Tie / Lose of the features model on Transparency and overall, per order, with 95 % Wilson intervals."""
    frame, (x, y) = run.outcomes, TRANSPARENCY_MODELS
    names = [*frame["aspect"].str.replace("_", " ").str.capitalize()]
    return _wtl_bars(frame, names, T("figures.transparency", x=x, y=y), run)


def transparency_examples(run: TransparencyRun, n: int = 2) -> Styler:
    """The judge's own Transparency analyses for the first ``n`` users (paper order: the features model as A)."""
    shown = run.raw[(run.raw["order"] == "x_first") & (run.raw["status"] == "parsed")].head(n)
    names: dict[str, str] = T.raw("columns.transparency_examples")
    frame = shown[[c for c in names if c in shown]].rename(columns=names)
    return captioned(frame, T("captions.transparency_examples"))


def table3(run: ArenaRun) -> Styler:
    """Pearson r (and p) between each recommender's Q against the baseline and its AUC, per source."""
    c = run.correlation
    frame = pd.DataFrame({"order": c["source"].map(_ORDERS), "recommenders with a finite Q": c["n_models"],
                          "Pearson r": c["r"].map(partial(estimate_cell, digits=3)),
                          "p": c["p"].map(partial(estimate_cell, digits=3))})  # fmt: skip
    return captioned(frame, T("captions.table3", tag=_tag(run)))


def paper_table3(run: ArenaRun) -> Styler:
    """The paper's Table 3 beside Pearson r recomputed from its own Tables 1 (AUC) and 2 (Q)."""
    names: dict[str, str] = T.raw("columns.table3_paper")
    return captioned(run.paper_correlation[list(names)].rename(columns=names), T("captions.table3_paper"), 4)


def paper_r_rounding(run: ArenaRun) -> str:
    """Per judge and dataset, a bullet: does rounding of Tables 1-2 explain the printed r?"""
    return "\n".join(
        T("rounding", llm=r["llm"], dataset=r["dataset"], printed=f"{r['r']:.4f}", low=f"{r['r_low']:.4f}",
          high=f"{r['r_high']:.4f}", verdict="inside" if r["r_low"] <= r["r"] <= r["r_high"] else "outside")
        for r in run.paper_correlation.to_dict("records")
    )  # fmt: skip


def relative_table(run: ArenaRun, source: str = "adjudicated") -> Styler:
    """The numbers behind Figure 6, with headers in words."""
    data = run.relative_vs_absolute(source)
    frame = pd.DataFrame({"recommender": data["model"], "AUC": data["AUC"].map(partial(estimate_cell, digits=3)),
                          f"Q against {run.config.baseline}": data["Q"].map(partial(estimate_cell, digits=2)),
                          "mean absolute score": data["absolute"].map(partial(estimate_cell, digits=3))})  # fmt: skip
    return captioned(frame, _caption(T("captions.relative", order=_ORDERS[source], tag=_tag(run)), data))


def figure6(run: ArenaRun, source: str = "adjudicated") -> Figure:
    """Figure 6: AUC, Q and mean absolute score per non-baseline model, min-max normalised; a hatch per measure."""
    data, names = run.relative_vs_absolute(source), {"AUC": "AUC", "Q": "Q", "absolute": "absolute score"}
    fig, ax = plt.subplots(figsize=(8, 4))
    figures.grouped_bars(ax, data["model"], {names[m]: data[f"{m} (normalised)"] for m in names}, hatches=_HATCHES)
    ax.set(ylabel=T("figures.relative_y"), ylim=(0, 1.05))
    titled(ax, T("figures.relative_head"), _tag(run))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return figures.done(fig)


def separation_table(run: ArenaRun) -> Styler:
    """How well AUC, the absolute score and Q separate the closest-AUC pair: paired differences with 95 % CIs."""
    if run.closest_pair is None or not len(run.separation):
        # one recommender besides the baseline (a dataset that left the others out, or a small run): no pair
        frame = pd.DataFrame({"measure": [], "difference": [], "users": []})
        return captioned(frame, T("captions.separation_none", baseline=run.config.baseline, tag=_tag(run)))
    s, (x, y) = run.separation, run.closest_pair
    differences = [Estimate.of(*v).cell(3) for v in s[["difference", "low", "high"]].to_numpy()]
    frame = pd.DataFrame({"measure": s["measure"], f"difference [{_CI}]": differences,
                          "standardised gap": s["standardised_gap"].map(partial(estimate_cell, digits=2)),
                          "users": s["n_users"]})  # fmt: skip
    return captioned(frame, T("captions.separation", x=x, y=y, tag=_tag(run)))


def unparsed_summary(run: ArenaRun) -> Styler:
    """Calls and unparsed answers per judge (pair-wise, absolute), with the most common reasons."""
    rows = [[r["answers"], r["calls"], r["unusable"], estimate_cell(r["pct"], digits=1),
             "; ".join(f"{why} ({k})" for why, k in r["reasons"]) or "-", r["example"][:160].replace("\n", " ")]
            for r in run.unparsed().fillna({"example": "-"}).to_dict("records")]  # fmt: skip
    return captioned(pd.DataFrame(rows, columns=T.raw("columns.unparsed")), T("captions.unparsed", tag=_tag(run)))


def judge_facts(run: ArenaRun) -> str:
    """The facts about this run's judge the discussion rests on, as Markdown bullets."""
    c, a = run.overall()
    lines = [T("facts.judge", judge=run.judge_name),
             T("facts.answers", n=len(run.raw), parsed=int((run.raw["status"] == "parsed").sum()),
               a_share=T("a_share"), share=Estimate.of_row(a, "share").cell(2), named=int(a["n_named"]))]  # fmt: skip
    if c is not None:
        cells = ", ".join(f"{r['x']} {_q_cell(r)}" for r in run.versus("adjudicated").to_dict("records"))
        lines += [T("facts.consistency", n=int(c["n_both_parsed"]), cell=Estimate.of_row(c, "consistency").cell(2)),
                  T("facts.q", baseline=run.config.baseline, cells=cells)]  # fmt: skip
    return "\n".join(lines)


def _q_takeaways(run: ArenaRun) -> list[str]:
    src, base = run.config.main_source, run.config.baseline
    records = run.versus(src).to_dict("records")
    cell = {r["x"]: f"{r['x']} {_q_cell(r)}" for r in records}
    q = [Estimate.of_row(r, "Q", name=r["x"]) for r in records]
    parts = [T(f"takeaways.q_{k}", cells=", ".join(cell[e.name] for e in es), baseline=base)
             for k, es in sides(q, 1.0).items() if es]  # fmt: skip
    out = [T("takeaways.q", baseline=base, order=_ORDERS[src], parts="; ".join(parts))]
    ranked = leader([e for e in q if e.has_ci])  # only estimates with an interval can be ranked
    if ranked is not None and not ranked.alone:
        others = ", ".join(e.name for e in ranked.overlapping or ())
        out.append(T(f"takeaways.ranking_{'overlap' if others else 'clear'}", top=ranked.top.name, others=others))
    return out


def _position_takeaway(run: ArenaRun) -> str:
    c, a = run.overall()
    if c is None:  # one order judged (with both, the overall row is always there)
        return T("takeaways.one_order")
    if not int(c["n_both_parsed"]) and not int(a["n_named"]):
        return T("takeaways.position_nothing")
    share = Estimate.of_row(a, "share")
    head = T("takeaways.position_head", consistency=Estimate.of_row(c, "consistency").cell(2),
             n=int(c["n_both_parsed"]), named=int(a["n_named"]), share=share.cell(2))  # fmt: skip
    return T(f"takeaways.position_{side(share, 0.5)}", head=head)


def _correlation_takeaway(run: ArenaRun) -> str:
    src = run.config.main_source
    r = next(iter(run.correlation[run.correlation["source"] == src].to_dict("records")), {"n_models": 0})
    if (n := int(r["n_models"])) < 3:
        return T("takeaways.correlation_few")
    if pd.isna(r["r"]):
        return T("takeaways.correlation_undefined", n=n)
    tail = T(f"takeaways.correlation_{'significant' if r['p'] < 0.05 else 'compatible'}", n=n)
    return T("takeaways.correlation", order=_ORDERS[src], r=f"{r['r']:.2f}", p=f"{r['p']:.3f}", tail=tail)


def _separation_takeaway(run: ArenaRun) -> list[str]:
    if run.closest_pair is None or not len(run.separation):
        return []
    groups: dict[str, list[str]] = {"apart": [], "together": [], "none": []}
    for r in run.separation.to_dict("records"):
        e, users = Estimate.of(r["difference"], r["low"], r["high"]), f"{r['n_users']} user{'s' * (r['n_users'] != 1)}"
        where = {"above": "apart", "below": "apart", "contains": "together", "none": "none"}[side(e, 0.0)]
        groups[where].append(f"{r['measure']} " + ("" if where == "none" else f"{e.cell(3)} ") + f"({users})")
    parts = [T(f"takeaways.separation_{k}", cells="; ".join(v)) for k, v in groups.items() if v]
    return [T("takeaways.separation", x=run.closest_pair[0], y=run.closest_pair[1], parts="; ".join(parts))]


def _transparency_takeaway(run: TransparencyRun) -> str:
    o, (x, y) = run.outcomes, TRANSPARENCY_MODELS
    rows = o[(o["aspect"] == "transparency") & (o["source"] == run.config.main_source)].to_dict("records")
    if not rows:
        return T("takeaways.transparency_unjudged")
    what = T(f"takeaways.transparency_{side(Estimate.of_row(rows[0], 'Q'), 1.0)}", x=x, y=y)
    order, q = _ORDERS[run.config.main_source], _q_cell(rows[0])
    return T("takeaways.transparency", x=x, y=y, order=order, q=q, what=what)


def takeaways_items(run: ArenaRun, transparency: TransparencyRun | None = None) -> list[str]:
    """The key takeaways, each claim saying what its 95 % CI allows (what the judge returned, with no verdict read)."""
    health = run.unreadable()
    items = [T("takeaways.unreadable", sentence=health_sentence(health))] if health else [
        *_q_takeaways(run), _position_takeaway(run), _correlation_takeaway(run)]  # fmt: skip
    return items + _separation_takeaway(run) + ([_transparency_takeaway(transparency)] if transparency else [])


def judge_saw_note(run: ArenaRun, dataset: Dataset) -> Callout:
    """What the judge saw: the pairwise prompt (and the absolute one when lists were scored too), the dataset's
    domain words and its items' fields."""
    return judge_saw([arena_use(dataset.items, dataset, absolute=run.config.absolute)], dataset.domain)
