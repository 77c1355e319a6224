"""Chapter 3 (RecSys Arena) laid out: Tables 1-4 beside the paper's, position bias, close pairs, Figure 6, transparency,
figures and takeaways. Captions are the notebook's (each table function takes one, and adds the note on ∞ where a Q
is infinite); headers, labels, figure titles, fixed sentences and the setting table's rows are written here;
``text/arena.yaml`` holds the notes shown only for some runs, the captions chosen by whether a pair exists, the paper's
transparency showcases and the sentences chosen by the run's intervals. Numbers: the runs of
:mod:`recjudge_utils.experiments.arena`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from itertools import groupby, pairwise
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.data import Dataset
from recjudge_utils.experiments.arena import PAPER_NAMES, ArenaRun
from recjudge_utils.experiments.transparency import TRANSPARENCY_MODELS, TransparencyRun
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.reporting import figures
from recjudge_utils.reporting.answer_health import NO_PARSED, health_sentence, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, judge_caveat, stand_in_note
from recjudge_utils.reporting.cells import estimate_cell
from recjudge_utils.reporting.claims import leader, side, sides
from recjudge_utils.reporting.figures import forest_plot, legend_below, palette, titled
from recjudge_utils.reporting.judge_saw import arena_use, judge_saw
from recjudge_utils.reporting.tables import captioned
from recjudge_utils.reporting.text import chapter_text

__all__ = [
    "ORDER_NAMES", "aspect_table", "close_pairs_figure", "close_pairs_table", "figure6", "headline_cells",
    "judge_facts", "judge_saw_note", "notes",
    "paper_cases", "paper_dataset", "paper_r_rounding", "paper_table3", "position_figure", "position_sentence",
    "position_table",
    "q_figure", "relative_table", "run_tag", "separation_table", "setup_table", "table1", "table2",
    "table2_beside_paper", "table2_figure", "table3", "table4", "takeaways_items", "timings_table",
    "transparency_examples", "transparency_figure", "transparency_table", "unparsed_summary",
]  # fmt: skip

T = chapter_text("arena")
#: how tables, figures and captions name the three sources of verdicts (the run's ``source`` values)
ORDER_NAMES = {"x_first": "paper's order", "y_first": "swapped", "adjudicated": "adjudicated"}
_A_SHARE = "'A wins' among verdicts naming a winner"
_INF_NOTE = "∞: only wins (no loss, no tie), so Q's denominator N_lose + N_tie is 0."
_TRANSPARENCY_EXAMPLES_COLUMNS = {"user": "user", "verdict_transparency": "verdict (A = with features)",
                                  "analysis_transparency": "the judge's analysis"}  # fmt: skip
_PAPER_TABLE3_COLUMNS = {"llm": "judge", "dataset": "dataset", "r": "r (printed)", "p": "p (printed)",
                         "r_recomputed": "r from Tables 1-2", "p_recomputed": "p from Tables 1-2"}  # fmt: skip
_UNPARSED_COLUMNS = ["answers", "calls", "unparsed or failed", "unparsed %", "most common reasons",
                     "one raw answer (first 160 characters)"]  # fmt: skip
_PAPER_LLMS = ("GPT-4o", "DeepSeek-V2.5", "Llama3.1-8B")  # the paper's judges, in its tables' order
_CI = "95 % CI"
_PARTS = {"win": "Win %", "tie": "Tie %", "lose": "Lose %"}
_COMPARISON = ("aspect", "kind", "source", "x", "y")  # what names one comparison in the run's outcomes
_HATCHES = ("//", "..", "xx")  # one per Win / Tie / Lose segment or Figure 6 measure: the figures read in grey
_Q_EDGES = (1 / 16, 16.0)  # Q is drawn on a log scale; 0 and ∞ (and anything beyond) at these edges
#: the words chosen by where an interval lies (:func:`~recjudge_utils.reporting.claims.side`): Q against 1, the
#: 'A wins' share against 0.5, the transparency experiment's Q against 1; a separation's difference against 0, grouped
_Q_SIDE = {"above": "takeaways.q_above", "below": "takeaways.q_below", "contains": "takeaways.q_contains",
           "none": "takeaways.q_none"}  # fmt: skip
_POSITION_SIDE = {"above": "takeaways.position_above", "below": "takeaways.position_below",
                  "contains": "takeaways.position_contains", "none": "takeaways.position_none"}  # fmt: skip
_TRANSPARENCY_SIDE = {"above": "takeaways.transparency_above", "below": "takeaways.transparency_below",
                      "contains": "takeaways.transparency_contains", "none": "takeaways.transparency_none"}  # fmt: skip
_SEPARATION_GROUP = {"apart": "takeaways.separation_apart", "together": "takeaways.separation_together",
                     "none": "takeaways.separation_none"}  # fmt: skip


def paper_dataset(run: ArenaRun) -> str:
    """The paper's dataset whose rows fit this run (MIND for MIND, MovieLens otherwise)."""
    return "MIND" if run.dataset_name.lower().startswith("mind") else "MovieLens"


def _paper(run: ArenaRun, table: int, index: str | list[str]) -> pd.DataFrame:
    paper = paper_table(f"arena_table{table}")
    return paper[paper["dataset"] == paper_dataset(run)].set_index(index)


def run_tag(run: ArenaRun | TransparencyRun) -> str:
    """What a caption or figure title says of the run: its data, judge and number of judged users."""
    return f"{run.data_label}; judge: {run.judge_name}; {len(run.sample.users)} judged users"


def _rec_label(key: str) -> str:
    """The registry key, with the paper's row name where the book substitutes another model."""
    paper = PAPER_NAMES.get(key)
    return f"{key} (paper: {paper})" if paper and paper.lower() != key.lower() else key


def _comparisons(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """One record per comparison of a long outcomes frame (:attr:`ArenaRun.outcomes` or a part of it, in its order):
    which comparison (aspect, kind, source, x, y), ``n``, ``n_unjudged`` and ``rank``, and each measure's
    :class:`Estimate` under the measure's name ("win", "tie", "lose", "Q")."""
    out = []
    for _, group in groupby(frame.to_dict("records"), key=lambda r: tuple(r[c] for c in _COMPARISON)):
        rows = list(group)
        out.append({c: rows[0][c] for c in (*_COMPARISON, "n", "n_unjudged", "rank")}
                   | {r["measure"]: Estimate.of_row(r) for r in rows})  # fmt: skip
    return out


def _q_bounds(frame: pd.DataFrame) -> pd.DataFrame:
    """Q's value and bounds in a long outcomes frame."""
    return frame.loc[frame["measure"] == "Q", ["value", "low", "high"]]


def _q_cell(c: dict[str, Any]) -> str:
    return estimate_cell(c["Q"], digits=2) if c.get("n") else NO_PARSED


def _rank(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else str(int(value))


def _caption(title: str, q: pd.DataFrame | pd.Series) -> str:
    """The title, with the note on ∞ when some Q or bound in ``q`` is infinite."""
    infinite = np.isinf(q.to_numpy(dtype=float)).any()
    return f"{title} {_INF_NOTE}" if infinite else title


def _wtl_frame(comparisons: list[dict[str, Any]], first: str = "", names: Sequence[str] = (), judged: bool = True,
               rank: bool = True) -> pd.DataFrame:  # fmt: skip
    """Column ``first`` (``names``) and the order, judged, Win / Tie / Lose % and Q with their CIs, and rank."""
    rows = []
    for name, c in zip(list(names) if first else [""] * len(comparisons), comparisons, strict=True):
        n, missing = int(c["n"]), int(c.get("n_unjudged", 0) or 0)
        row = {first: name, "order": ORDER_NAMES[c["source"]]} if first else {}
        row |= {"judged": f"{n}" if not missing else f"{n} of {n + missing}"} if judged else {}
        row |= {f"{h} [{_CI}]": estimate_cell(c[p], digits=1) if n else NO_PARSED for p, h in _PARTS.items()}
        rows.append({**row, f"Q [{_CI}]": _q_cell(c), **({"rank": _rank(c.get("rank"))} if rank else {})})
    return pd.DataFrame(rows)


def setup_table(run: ArenaRun, caption: str) -> Styler:
    """The MovieLens setting of the authors' code (the paper's text leaves it open) beside this run's, and why."""
    cfg = run.config
    users, candidates = len(run.sample.users), int(run.offline["n_users"].max()) if len(run.offline) else 0
    orders = (
        "both orders; adjudicated = the agreeing verdict, a tie when the orders disagree (the paper's order is the "
        "authors')"
        if cfg.both_orders
        else "one order, the tested model as A"
    )
    rows = [  # setting, the authors' code, this run, why it differs
        ["users per comparison",
         "1,000: `for u_id in range(1000)`, the first 1,000 user ids of its processed ML-1M; every sheet in "
         "AllResults/ sums to 1,000",
         f"{users}, drawn at random (seed {cfg.seed}) among the {candidates} users with test items",
         "`n_users`: a small demo by default; `--scale paper` asks for 1,000"],
        ["history shown",
         "5 training positives (`label == 1`), the first five rows of the user's training file, introduced as "
         "'recently watched'",
         f"the {cfg.n_history} most recent training items by timestamp",
         "the order of the authors' processed file is not published; the most recent items are what the prompt "
         "calls 'recently watched'"],
        ["profile", "user id, age bracket, occupation, gender",
         "age (ML-1M: its bracket), occupation, gender, where the data has them; no user id",
         "an id says nothing about the user's tastes"],
        ["lists shown", "top 5 of A and of B (titles, genres)", f"top {cfg.top_k} of A and of B (titles, genres)", ""],
        ["orders", "one: the tested model as A, FM as B", orders,
         "shows the position bias one order hides (the position figure below; chapter 5)"],
        ["answer read",
         "free text; a line counts for an aspect when it contains the aspect's name and 'A wins', 'B wins' or 'tie' "
         "(substring match)",
         "one JSON object, exactly one verdict per aspect; anything else is unparsed and counted",
         "a substring match can count a verdict the judge did not give and drops unreadable answers silently"],
        ["judge", "GPT-4o, temperature 0", run.judge_name, "the run's judge profile"],
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=["setting", "authors' code", "this run", "why it differs"])
    return captioned(frame, caption)


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


def timings_table(run: ArenaRun, caption: str) -> Styler:
    frame = pd.DataFrame({"step": list(run.timings), "seconds": [round(v, 1) for v in run.timings.values()]})
    return captioned(frame, caption)


def table1(run: ArenaRun, caption: str) -> Styler:
    """Our AUC / nDCG@k / URD@k beside the paper's Table 1 (the rows of the dataset we ran): ``caption``, then whose
    numbers they are."""
    paper, off, k = _paper(run, 1, "rs"), run.offline, run.config.top_k
    ndcg, paper_rows = next((c for c in off if c.startswith("ndcg@")), f"ndcg@{k}"), off["rs"].map(PAPER_NAMES)
    frame = pd.DataFrame({"recommender": off["rs"].map(_rec_label), "AUC": off["auc"],
                          f"nDCG@{k}": off.get(ndcg, np.nan), f"URD@{k}": off["urd"],
                          "AUC (paper)": paper_rows.map(paper["auc"]),
                          "nDCG@5 (paper)": paper_rows.map(paper["ndcg5"])})  # fmt: skip
    users = int(off["n_users"].max()) if len(off) else 0
    whose = f"Ours: {run.data_label}, all {users} test users; paper: {paper_dataset(run)} (its own protocol: only the "
    return captioned(frame, f"{caption} {whose}ordering compares).", 3)


def table2(run: ArenaRun, caption: str) -> Styler:
    """Each recommender against the baseline in every judged order: Win / Tie / Lose % and Q with 95 % CIs."""
    frame = run.versus_all()
    comparisons = _comparisons(frame)
    names = [c["x"] for c in comparisons]
    return captioned(_wtl_frame(comparisons, "recommender", names), _caption(caption, _q_bounds(frame)))


def _paper_rows(paper: pd.DataFrame, x: str, header: str, urd: str | None = None) -> list[dict[str, str]]:
    """The row of each of the paper's judges for ``x``; ``header`` formats the W/T/L headers, ``urd`` adds URD."""
    return [
        {"recommender": _rec_label(x), "setting": f"paper, {llm}",
         **({urd: estimate_cell(p["urd"], digits=3)} if urd else {}),
         **{header.format(h): estimate_cell(p[c], digits=1) for c, h in _PARTS.items()},
         f"Q [{_CI}]": estimate_cell(p["q"], digits=2), "rank": _rank(p["rank"])}
        for llm in _PAPER_LLMS if (key := (PAPER_NAMES.get(x, ""), llm)) in paper.index for p in [paper.loc[key]]
    ]  # fmt: skip


def table2_beside_paper(run: ArenaRun, caption: str) -> Styler:
    """The paper's Table 2 rows (its three judges, the tested model shown as A) beside ours, per recommender."""
    paper, ours, rows = _paper(run, 2, ["rs", "llm"]), run.versus_all(), []
    comparisons = _comparisons(ours)
    for x in dict.fromkeys(c["x"] for c in comparisons):
        for source in dict.fromkeys(["x_first", run.config.main_source]):
            c = next(c for c in comparisons if c["x"] == x and c["source"] == source)
            rows.append({"recommender": _rec_label(x), "setting": f"this run, {ORDER_NAMES[source]}",
                         **{h: estimate_cell(c[p].value, digits=1) for p, h in _PARTS.items()},
                         f"Q [{_CI}]": _q_cell(c), "rank": _rank(c["rank"])})  # fmt: skip
        rows += _paper_rows(paper, x, "{}")
    return captioned(pd.DataFrame(rows), _caption(caption, _q_bounds(ours)))


def _wtl_bars(comparisons: list[dict[str, Any]], names: Sequence[str], head: str, run: ArenaRun | TransparencyRun
              ) -> Figure:  # fmt: skip
    """Stacked Win / Tie / Lose bars (``name · order``), the win and lose shares' Wilson intervals at their edges."""
    y = np.cumsum([0.0, *(1.6 if a != b else 1.0 for a, b in pairwise(names))])[: len(comparisons)]
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.36 * len(comparisons) + 0.2 * len(set(names))))
    styles = [(palette(8)[i], hatch) for i, hatch in zip((0, 7, 1), _HATCHES, strict=True)]
    figures.stacked_bars(ax, y.tolist(), [[c[p].value for p in _PARTS] for c in comparisons], styles,
                         [*map(str.capitalize, _PARTS)], edgecolor="white")  # fmt: skip
    win, lose = (np.array([[c[p].value, c[p].low, c[p].high] for c in comparisons], dtype=float).reshape(-1, 3).T
                 for p in ("win", "lose"))  # fmt: skip
    for value, low, high in (win, (100 - lose[0], 100 - lose[2], 100 - lose[1])):  # lose: where its segment starts
        ax.errorbar(value, y, xerr=figures.error_bars(value, low, high), fmt="none", ecolor="black", capsize=3,
                    linewidth=1)  # fmt: skip
    ax.set_yticks(y, [f"{n} · {ORDER_NAMES[c['source']]}" for n, c in zip(names, comparisons, strict=True)])
    ax.invert_yaxis()
    ax.set(xlabel="% of judged comparisons", xlim=(0, 100))
    titled(ax, head, run_tag(run))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return figures.done(fig)


def table2_figure(run: ArenaRun) -> Figure:
    """Win / Tie / Lose of each recommender against the baseline, one bar per order, with 95 % Wilson intervals."""
    comparisons = _comparisons(run.versus_all())
    names = [c["x"] for c in comparisons]
    return _wtl_bars(comparisons, names, f"Each recommender against {run.config.baseline}", run)


def _forest(rows: list[dict[str, Any]], run: ArenaRun, title: str, xlim: tuple[float, float], legend: int,
            log: bool = False, **options: Any) -> Figure:  # fmt: skip
    """A forest plot of ``rows`` by group (Q's log scale when ``log``), titled, its ``legend`` rows below."""
    fig = forest_plot(pd.DataFrame(rows).dropna(subset=["value"]), group="group", width=8.0, **options)
    ax = fig.axes[0]
    if log:
        ax.set_xscale("log", base=2)
        ax.set_xticks([_Q_EDGES[0], 1 / 4, 1, 4, _Q_EDGES[1]], ["0 … 1/16", "1/4", "1", "4", "16 … ∞"])
    ax.set_xlim(*xlim)
    titled(ax, title, run_tag(run))
    legend_below(fig, legend)
    return fig


def q_figure(run: ArenaRun) -> Figure:
    """Q against the baseline with its 95 % CI per order beside the paper's judges' Q, on a log scale."""
    paper, ours, base = _paper(run, 2, ["rs", "llm"])["q"], run.versus_all(), run.config.baseline
    rows = [{"label": _rec_label(r.x), "group": f"this run, {ORDER_NAMES[r.source]}", "value": r.value, "low": r.low,
             "high": r.high} for r in ours[ours["measure"] == "Q"].itertuples(index=False)]  # fmt: skip
    rows += [
        {"label": _rec_label(x), "group": f"paper, {llm}", **dict.fromkeys(("value", "low", "high"), paper[key])}
        for x in dict.fromkeys(ours["x"]) for llm in _PAPER_LLMS if (key := (PAPER_NAMES.get(x, ""), llm)) in paper
    ]  # fmt: skip
    rows = [{**r, **{c: float(np.clip(float(r[c]), *_Q_EDGES)) for c in ("value", "low", "high")}} for r in rows]
    title = "Q with 95 % CIs beside the paper's Q (the paper prints no intervals)"
    return _forest(rows, run, title, (_Q_EDGES[0] / 1.3, _Q_EDGES[1] * 1.3), 3, log=True, reference=1.0,
                   xlabel=f"Q against {base} (95 % CI; log scale)",
                   reference_label=f"Q = 1: as good as {base}")  # fmt: skip


def _comparison(r: Any) -> str:
    return "all comparisons" if r["x"] == "all" else f"{r['x']} vs {r['y']}"


def position_table(run: ArenaRun, caption: str) -> Styler:
    """Per comparison and overall: position consistency, the 'A wins' share (95 % CIs) and the unparsed share."""
    c, a = run.consistency, run.a_wins.set_index(["x", "y"])
    unparsed = c[c["measure"] == "unparsed_rate"].set_index(["x", "y"])["value"]
    rows = []
    for r in c[c["measure"] == "consistency"].to_dict("records"):
        k = (r["x"], r["y"])
        rows.append(
            {"comparison": _comparison(r), "judged in both orders": int(r["n"]),
             f"position consistency [{_CI}]": estimate_cell(Estimate.of_row(r), digits=2),
             f"{_A_SHARE} [{_CI}]": estimate_cell(Estimate.of_row(a.loc[k]), digits=2) if k in a.index else "n/a",
             "unparsed %": estimate_cell(100 * unparsed[k], digits=1)}
        )  # fmt: skip
    return captioned(pd.DataFrame(rows), caption)


def position_figure(run: ArenaRun) -> Figure:
    """Position consistency and the 'A wins' share per comparison, with 95 % Wilson intervals."""
    rows = [
        {"label": _comparison(r), "group": group, "value": e.value, "low": e.low, "high": e.high}
        for frame, group, measure in ((run.consistency, "position consistency", "consistency"),
                                      (run.a_wins, _A_SHARE, "a_share"))
        for r in frame[frame["measure"] == measure].to_dict("records") for e in [Estimate.of_row(r)]
    ]  # fmt: skip
    return _forest(rows, run, "Do the two orders agree?", (-0.02, 1.02), 2, xlabel="share (95 % Wilson interval)",
                   reference=0.5, reference_label="0.5: 'A wins' share of a judge without position bias")  # fmt: skip


def headline_cells(run: ArenaRun) -> dict[str, str]:
    """The cells the chapter's prose quotes: ``consistency`` and ``a_share`` with their 95 % CIs ("n/a": none)."""
    c, a = run.overall()
    consistency = "n/a" if c is None else estimate_cell(Estimate.of_row(c), digits=2)
    return {"consistency": consistency, "a_share": estimate_cell(Estimate.of_row(a), digits=2)}


def position_sentence(run: ArenaRun) -> str:
    """How often this run's two orders agreed, and named A, with their 95 % CIs (the position-bias section)."""
    cells = headline_cells(run)
    return (
        f"In this run the two orders agreed on {cells['consistency']} of the comparisons judged in both, and "
        f"{cells['a_share']} of the verdicts naming a winner named A."
    )


def close_pairs_table(run: ArenaRun, caption: str) -> Styler:
    """The closest-AUC pairs compared directly, in each order and adjudicated (the paper's Figures 3-4)."""
    frame = run.versus_all(kind="close_pair")
    comparisons = _comparisons(frame)
    pairs = [*map(_comparison, comparisons)]
    return captioned(_wtl_frame(comparisons, "comparison", pairs, rank=False), _caption(caption, _q_bounds(frame)))


def close_pairs_figure(run: ArenaRun) -> Figure:
    """Win / Tie / Lose of the closest-AUC pairs in each order, with 95 % Wilson intervals (Figures 3-4)."""
    comparisons = _comparisons(run.versus_all(kind="close_pair"))
    return _wtl_bars(comparisons, [*map(_comparison, comparisons)], "The closest-AUC pairs", run)


def aspect_table(run: ArenaRun, caption: str, source: str = "adjudicated") -> Styler:
    """Q [95 % CI] against the baseline per aspect (rows) and recommender (columns)."""
    tables = {key: run.versus(source, key=key) for key in run.aspect_keys}
    rows = [{"aspect": k.replace("_", " ").capitalize(), **{c["x"]: _q_cell(c) for c in _comparisons(t)}}
            for k, t in tables.items()]  # fmt: skip
    return captioned(pd.DataFrame(rows), _caption(caption, _q_bounds(pd.concat(tables.values()))))


def table4(run: ArenaRun, caption: str, source: str = "adjudicated") -> Styler:
    """Inspiration verdicts against the baseline beside URD, ours and the paper's Table 4 rows in one table."""
    ours, k, paper = run.versus(source, key="inspiration"), run.config.top_k, paper_table("arena_table4")
    urd, rows = dict(zip(run.offline["rs"], run.offline["urd"], strict=True)), []
    comparisons = _comparisons(ours)
    xs = [c["x"] for c in comparisons]
    for x, cells in zip(xs, _wtl_frame(comparisons, judged=False).to_dict("records"), strict=True):
        rows.append({"recommender": _rec_label(x), "setting": f"this run, {ORDER_NAMES[source]}",
                     f"URD@{k}": estimate_cell(urd.get(x), digits=3), **cells})  # fmt: skip
        rows += _paper_rows(paper.set_index(["rs", "llm"]), x, f"{{}} [{_CI}]", urd=f"URD@{k}")
    return captioned(pd.DataFrame(rows), _caption(caption, _q_bounds(ours)))


def paper_cases() -> str:
    """The paper's two transparency showcases as Markdown quotes."""
    return "\n\n".join(T("paper_case", **case) for case in T.raw("paper_cases"))


def transparency_table(run: TransparencyRun, caption: str) -> Styler:
    """Win / Tie / Lose and Q of DeepFM with features against ids only, on Transparency and overall, per order."""
    comparisons = _comparisons(run.outcomes)  # Transparency, then overall; each order, then adjudicated
    names = [c["aspect"].replace("_", " ").capitalize() for c in comparisons]
    return captioned(_wtl_frame(comparisons, "aspect", names, rank=False), _caption(caption, _q_bounds(run.outcomes)))


def transparency_figure(run: TransparencyRun) -> Figure:
    """Win / Tie / Lose of the features model on Transparency and overall, per order, with 95 % Wilson intervals."""
    comparisons, (x, y) = _comparisons(run.outcomes), TRANSPARENCY_MODELS
    names = [c["aspect"].replace("_", " ").capitalize() for c in comparisons]
    return _wtl_bars(comparisons, names, f"{x} against {y}", run)


def transparency_examples(run: TransparencyRun, caption: str, n: int = 2) -> Styler:
    """The judge's own Transparency analyses for the first ``n`` users (paper order: the features model as A)."""
    shown = run.raw[(run.raw["order"] == "x_first") & (run.raw["status"] == "parsed")].head(n)
    names = _TRANSPARENCY_EXAMPLES_COLUMNS
    return captioned(shown[[c for c in names if c in shown]].rename(columns=names), caption)


def table3(run: ArenaRun, caption: str) -> Styler:
    """Pearson r (and p) between each recommender's Q against the baseline and its AUC, per source."""
    c = run.correlation
    frame = pd.DataFrame({"order": c["source"].map(ORDER_NAMES), "recommenders with a finite Q": c["n_models"],
                          "Pearson r": c["r"].map(partial(estimate_cell, digits=3)),
                          "p": c["p"].map(partial(estimate_cell, digits=3))})  # fmt: skip
    return captioned(frame, caption)


def paper_table3(run: ArenaRun, caption: str) -> Styler:
    """The paper's Table 3 beside Pearson r recomputed from its own Tables 1 (AUC) and 2 (Q)."""
    names = _PAPER_TABLE3_COLUMNS
    return captioned(run.paper_correlation[list(names)].rename(columns=names), caption, 4)


def paper_r_rounding(run: ArenaRun) -> str:
    """Per judge and dataset, a bullet: does rounding of Tables 1-2 explain the printed r?"""
    return "\n".join(
        f"- {r['llm']}, {r['dataset']}: printed r {r['r']:.4f}; r from the printed Tables 1-2 is {r['r_low']:.4f} to "
        f"{r['r_high']:.4f} when every value moves within its rounding; the printed r is "
        f"**{'inside' if r['r_low'] <= r['r'] <= r['r_high'] else 'outside'}** that range."
        for r in run.paper_correlation.to_dict("records")
    )


def relative_table(run: ArenaRun, caption: str, source: str = "adjudicated") -> Styler:
    """The numbers behind Figure 6, with headers in words."""
    data = run.relative_vs_absolute(source)
    frame = pd.DataFrame({"recommender": data["model"], "AUC": data["AUC"].map(partial(estimate_cell, digits=3)),
                          f"Q against {run.config.baseline}": data["Q"].map(partial(estimate_cell, digits=2)),
                          "mean absolute score": data["absolute"].map(partial(estimate_cell, digits=3))})  # fmt: skip
    return captioned(frame, _caption(caption, data["Q"]))


def figure6(run: ArenaRun, source: str = "adjudicated") -> Figure:
    """Figure 6: AUC, Q and mean absolute score per non-baseline model, min-max normalised; a hatch per measure."""
    data, names = run.relative_vs_absolute(source), {"AUC": "AUC", "Q": "Q", "absolute": "absolute score"}
    fig, ax = plt.subplots(figsize=(8, 4))
    figures.grouped_bars(ax, data["model"], {names[m]: data[f"{m} (normalised)"] for m in names}, hatches=_HATCHES)
    ax.set(ylabel="min-max normalised value", ylim=(0, 1.05))
    titled(ax, "AUC, Q and absolute score, min-max normalised", run_tag(run))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    return figures.done(fig)


def separation_table(run: ArenaRun) -> Styler:
    """How well AUC, the absolute score and Q separate the closest-AUC pair: paired differences with 95 % CIs."""
    if run.closest_pair is None or not len(run.separation):
        # one recommender besides the baseline (a dataset that left the others out, or a small run): no pair
        frame = pd.DataFrame({"measure": [], "difference": [], "users": []})
        return captioned(frame, T("captions.separation_none", baseline=run.config.baseline, tag=run_tag(run)))
    s, (x, y) = run.separation, run.closest_pair
    differences = [estimate_cell(Estimate.of(*v), digits=3) for v in s[["difference", "low", "high"]].to_numpy()]
    frame = pd.DataFrame({"measure": s["measure"], f"difference [{_CI}]": differences,
                          "standardised gap": s["standardised_gap"].map(partial(estimate_cell, digits=2)),
                          "users": s["n_users"]})  # fmt: skip
    return captioned(frame, T("captions.separation", x=x, y=y, tag=run_tag(run)))


def unparsed_summary(run: ArenaRun, caption: str) -> Styler:
    """Calls and unparsed answers per judge (pair-wise, absolute), with the most common reasons."""
    rows = [[r["answers"], r["calls"], r["unusable"], estimate_cell(r["pct"], digits=1),
             "; ".join(f"{why} ({k})" for why, k in r["reasons"]) or "-", r["example"][:160].replace("\n", " ")]
            for r in run.unparsed().fillna({"example": "-"}).to_dict("records")]  # fmt: skip
    return captioned(pd.DataFrame(rows, columns=_UNPARSED_COLUMNS), caption)


def judge_facts(run: ArenaRun) -> str:
    """The facts about this run's judge the discussion rests on, as Markdown bullets."""
    c, a = run.overall()
    parsed, share = int((run.raw["status"] == "parsed").sum()), estimate_cell(Estimate.of_row(a), digits=2)
    lines = [
        f"- Judge: {run.judge_name}.",
        f"- Pair-wise answers: {len(run.raw)}, parsed: {parsed}; {_A_SHARE} (both orders, 0.5 without position "
        f"bias): {share} of {int(a['n'])}.",
    ]
    if c is not None:
        cells = ", ".join(f"{q['x']} {_q_cell(q)}" for q in _comparisons(run.versus("adjudicated")))
        consistency = estimate_cell(Estimate.of_row(c), digits=2)
        lines += [
            f"- Position consistency over {int(c['n'])} comparisons judged in both orders: {consistency}.",
            f"- Adjudicated Q against {run.config.baseline} [95 % CI]: {cells}.",
        ]
    return "\n".join(lines)


def _q_takeaways(run: ArenaRun) -> list[str]:
    src, base = run.config.main_source, run.config.baseline
    comparisons = _comparisons(run.versus(src))
    cell = {c["x"]: f"{c['x']} {_q_cell(c)}" for c in comparisons}
    q = [replace(c["Q"], name=str(c["x"])) for c in comparisons]
    parts = [T(_Q_SIDE[k], cells=", ".join(cell[e.name] for e in es), baseline=base)
             for k, es in sides(q, 1.0).items() if es]  # fmt: skip
    out = [T("takeaways.q", baseline=base, order=ORDER_NAMES[src], parts="; ".join(parts))]
    ranked = leader([e for e in q if e.has_ci])  # only estimates with an interval can be ranked
    if ranked is not None and not ranked.alone:
        others = ", ".join(e.name for e in ranked.overlapping or ())
        ranking = "takeaways.ranking_overlap" if others else "takeaways.ranking_clear"
        out.append(T(ranking, top=ranked.top.name, others=others))
    return out


def _position_takeaway(run: ArenaRun) -> str:
    c, a = run.overall()
    if c is None:  # one order judged (with both, the overall row is always there)
        return T("takeaways.one_order")
    if not int(c["n"]) and not int(a["n"]):
        return T("takeaways.position_nothing")
    share = Estimate.of_row(a)
    head = T("takeaways.position_head", consistency=estimate_cell(Estimate.of_row(c), digits=2),
             n=int(c["n"]), named=int(a["n"]), share=estimate_cell(share, digits=2))  # fmt: skip
    return T(_POSITION_SIDE[side(share, 0.5)], head=head)


def _correlation_takeaway(run: ArenaRun) -> str:
    src = run.config.main_source
    r = next(iter(run.correlation[run.correlation["source"] == src].to_dict("records")), {"n_models": 0})
    if (n := int(r["n_models"])) < 3:
        return T("takeaways.correlation_few")
    if pd.isna(r["r"]):
        return T("takeaways.correlation_undefined", n=n)
    tail = T("takeaways.correlation_significant" if r["p"] < 0.05 else "takeaways.correlation_compatible", n=n)
    return T("takeaways.correlation", order=ORDER_NAMES[src], r=f"{r['r']:.2f}", p=f"{r['p']:.3f}", tail=tail)


def _separation_takeaway(run: ArenaRun) -> list[str]:
    if run.closest_pair is None or not len(run.separation):
        return []
    groups: dict[str, list[str]] = {"apart": [], "together": [], "none": []}
    for r in run.separation.to_dict("records"):
        e, users = Estimate.of(r["difference"], r["low"], r["high"]), f"{r['n_users']} user{'s' * (r['n_users'] != 1)}"
        where = {"above": "apart", "below": "apart", "contains": "together", "none": "none"}[side(e, 0.0)]
        cell = "" if where == "none" else f"{estimate_cell(e, digits=3)} "
        groups[where].append(f"{r['measure']} {cell}({users})")
    parts = [T(_SEPARATION_GROUP[k], cells="; ".join(v)) for k, v in groups.items() if v]
    return [T("takeaways.separation", x=run.closest_pair[0], y=run.closest_pair[1], parts="; ".join(parts))]


def _transparency_takeaway(run: TransparencyRun) -> str:
    o, (x, y) = run.outcomes, TRANSPARENCY_MODELS
    comparisons = _comparisons(o[(o["aspect"] == "transparency") & (o["source"] == run.config.main_source)])
    if not comparisons:
        return T("takeaways.transparency_unjudged")
    what = T(_TRANSPARENCY_SIDE[side(comparisons[0]["Q"], 1.0)], x=x, y=y)
    order, q = ORDER_NAMES[run.config.main_source], _q_cell(comparisons[0])
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
