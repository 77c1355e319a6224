"""What chapter 3 shows about a RecSys Arena run: Tables 1-4 with the paper's numbers in the same table, position
bias, Figure 6, how well AUC, Q and the absolute score separate the closest pair, figures of Win / Tie / Lose, of
position consistency and of Q beside the paper's, and the sentences (facts, takeaways) computed from the run.

Every number with a CI comes from the run (:mod:`recjudge_utils.experiments.arena`), except the Wilson intervals of the
tie and lose shares, computed here from the run's counts as the run computes the win share's. Display tables are for
people: headers in words, an estimate and its 95 % interval in one cell, no index; the machine-readable numbers stay
in the run's frames (and ``results.json``), untouched by anything here.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from pandas.io.formats.style import Styler

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.experiments.arena import PAPER_NAMES, ArenaRun
from recjudge_utils.experiments.transparency import TRANSPARENCY_MODELS, TransparencyRun
from recjudge_utils.metrics.correlation import pearson, pearson_rounding_range
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.reporting.answer_health import NO_PARSED, AnswerHealth, unanswerable_warning
from recjudge_utils.reporting.callouts import Callout, judge_caveat, stand_in_note
from recjudge_utils.reporting.display import captioned, error_bars, estimate_cell
from recjudge_utils.reporting.figures import forest_plot, palette
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "AUTHORS_CODE",
    "ORDER_LABELS",
    "PAPER_TRANSPARENCY_CASES",
    "aspect_table",
    "close_pairs_figure",
    "close_pairs_table",
    "figure6",
    "headline_cells",
    "judge_facts",
    "notes",
    "paper_cases",
    "paper_dataset",
    "paper_r_rounding",
    "paper_table3",
    "position_figure",
    "position_table",
    "q_figure",
    "relative_table",
    "relative_vs_absolute",
    "separation_table",
    "setup_table",
    "stand_in",
    "table1",
    "table2",
    "table2_beside_paper",
    "table2_figure",
    "table3",
    "table4",
    "takeaways_items",
    "timings_table",
    "transparency_examples",
    "transparency_figure",
    "transparency_table",
    "unparsed_summary",
    "versus_table",
]

#: the repository the paper links (github.com/anonyProjects/RecSys-Arena), file the settings below are read from
AUTHORS_CODE = "anonyProjects/RecSys-Arena, prompt_template_gpt.py"

#: how tables and figures name the three sources of verdicts (the run's ``source`` values)
ORDER_LABELS = {"x_first": "paper's order", "y_first": "swapped", "adjudicated": "adjudicated"}
#: the paper's judges, in the order its tables list them
_PAPER_LLMS = ("GPT-4o", "DeepSeek-V2.5", "Llama3.1-8B")
_CI = "95 % CI"
_INF_NOTE = "∞: only wins (no loss, no tie), so Q's denominator N_lose + N_tie is 0."
#: one hatch per Win / Tie / Lose segment or per series, so the figures read in grey scale
_HATCHES = ("//", "..", "xx", "\\\\", "++", "oo")
#: Q is drawn on a log scale; 0 and ∞ (and anything beyond) are drawn at these edges
_Q_EDGES = (1 / 16, 16.0)


# ----------------------------------------------------------------------------------------------- helpers
def paper_dataset(run: ArenaRun) -> str:
    """The paper's dataset name whose reference rows fit this run (MIND for MIND, MovieLens otherwise)."""
    return "MIND" if run.dataset_name.lower().startswith("mind") else "MovieLens"


def _tag(run: ArenaRun | TransparencyRun) -> str:
    return f"{run.data_label}; judge: {run.judge_name}; {len(run.panel.users)} judged users"


def _title(ax: Axes, head: str, run: ArenaRun | TransparencyRun) -> None:
    """A figure's title: what it shows, then the run it comes from, wrapped to the figure's width."""
    ax.set_title(f"{head}\n{textwrap.fill(_tag(run), 95)}", fontsize=8)


def _legend_below(fig: Figure, rows: int) -> None:
    """Move a forest plot's legend under the axes, so the plot keeps the figure's width."""
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.set_figheight(fig.get_figheight() + 0.25 * rows + 0.4)
    fig.tight_layout()


def _rec_label(key: str) -> str:
    """A recommender's registry key, with the paper's row name when the book substitutes another model."""
    paper = PAPER_NAMES.get(key)
    return f"{key} (paper: {paper})" if paper and paper.lower() != key.lower() else key


def _shares(row: pd.Series) -> dict[str, tuple[float, float, float]]:
    """Win / tie / lose % with 95 % Wilson intervals (the win interval is the run's; tie and lose from counts)."""
    n = int(row["n"]) if pd.notna(row["n"]) else 0
    out = {}
    for part in ("win", "tie", "lose"):
        if not n or pd.isna(row[part]):
            out[part] = (np.nan, np.nan, np.nan)
        elif part == "win":
            out[part] = (row["win"], row["win_lo"], row["win_hi"])
        else:
            lo, hi = wilson(round(row[part] * n / 100), n)
            out[part] = (row[part], 100 * lo, 100 * hi)
    return out


def _judged(row: pd.Series) -> str:
    n, missing = int(row["n"]), int(row.get("n_unjudged", 0) or 0)
    return f"{n}" if not missing else f"{n} of {n + missing}"


def _q_cell(row: pd.Series) -> str:
    if not row.get("n"):
        return NO_PARSED
    return estimate_cell(row["Q"], row.get("Q_lo"), row.get("Q_hi"), digits=2)


def _rank(value: Any) -> str:
    return "-" if value is None or pd.isna(value) else str(int(value))


def _wtl_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Judged, Win %, Tie %, Lose % (each with its interval), Q [CI] and rank for rows of :func:`versus_table`."""
    rows = []
    for _, r in frame.iterrows():
        s = _shares(r)
        cells = {"judged": _judged(r)}
        for part, header in (("win", "Win %"), ("tie", "Tie %"), ("lose", "Lose %")):
            value, lo, hi = s[part]
            cells[f"{header} [{_CI}]"] = estimate_cell(value, lo, hi, digits=1) if r["n"] else NO_PARSED
        cells[f"Q [{_CI}]"] = _q_cell(r)
        cells["rank"] = _rank(r.get("rank"))
        rows.append(cells)
    return pd.DataFrame(rows)


def _has_inf(frame: pd.DataFrame) -> bool:
    cols = [c for c in ("Q", "Q_lo", "Q_hi") if c in frame]
    return bool(np.isinf(frame[cols].to_numpy(dtype=float)).any()) if cols else False


def _caption(title: str, frame: pd.DataFrame) -> str:
    return f"{title} {_INF_NOTE}" if _has_inf(frame) else title


def _ordered(frame: pd.DataFrame, run: ArenaRun) -> pd.DataFrame:
    """Rows by recommender (the config's order), then source (paper's order, swapped, adjudicated)."""
    rec = {m: i for i, m in enumerate(run.config.recommenders)}
    src = {s: i for i, s in enumerate(ORDER_LABELS)}
    key = frame["x"].map(rec).fillna(len(rec)) * 10 + frame["source"].map(src).fillna(len(src))
    return frame.assign(_key=key.to_numpy()).sort_values("_key", kind="stable").drop(columns="_key")


def versus_table(
    run: ArenaRun, source: str = "adjudicated", key: str = OVERALL, kind: str = "vs_baseline"
) -> pd.DataFrame:
    """The run's Win/Tie/Lose %, Q, CIs and rank of x against y for one source (machine columns: tables and figures
    below lay it out)."""
    if source not in run.config.sources:
        raise ValueError(f"source {source!r} was not judged; this run has {run.config.sources}")
    return run.versus(source, key, kind)


def _all_sources(run: ArenaRun, key: str = OVERALL, kind: str = "vs_baseline") -> pd.DataFrame:
    return _ordered(pd.concat([versus_table(run, s, key, kind) for s in run.config.sources], ignore_index=True), run)


# ----------------------------------------------------------------------------------------------- the setting
def setup_table(run: ArenaRun) -> Styler:
    """The MovieLens setting of the authors' code (:data:`AUTHORS_CODE`; the paper's text leaves these open) beside
    this run's, each with why the book differs where it does."""
    cfg = run.config
    n_candidates = int(run.offline["n_users"].max()) if len(run.offline) else 0
    orders = (
        "both orders; adjudicated = the agreeing verdict, a tie when the orders disagree (the paper's order is the "
        "authors')"
        if cfg.both_orders
        else "one order, the tested model as A"
    )
    rows = [
        (
            "users per comparison",
            "1,000: `for u_id in range(1000)`, the first 1,000 user ids of its processed ML-1M; every sheet in "
            "AllResults/ sums to 1,000",
            f"{len(run.panel.users)}, drawn at random (seed {cfg.seed}) among the {n_candidates} users with test items",
            "`n_users`: a small demo by default; `--scale paper` asks for 1,000",
        ),
        (
            "history shown",
            "5 training positives (`label == 1`), the first five rows of the user's training file, introduced as "
            "'recently watched'",
            f"the {cfg.n_history} most recent training items by timestamp",
            "the order of the authors' processed file is not published; the most recent items are what the prompt "
            "calls 'recently watched'",
        ),
        (
            "profile",
            "user id, age bracket, occupation, gender",
            "age (ML-1M: its bracket), occupation, gender, where the data has them; no user id",
            "an id says nothing about the user's tastes",
        ),
        ("lists shown", "top 5 of A and of B (titles, genres)", f"top {cfg.top_k} of A and of B (titles, genres)", ""),
        (
            "orders",
            "one: the tested model as A, FM as B",
            orders,
            "shows the position bias one order hides (the position figure below; chapter 5)",
        ),
        (
            "answer read",
            "free text; a line counts for an aspect when it contains the aspect's name and 'A wins', 'B wins' or "
            "'tie' (substring match)",
            "one JSON object, exactly one verdict per aspect; anything else is unparsed and counted",
            "a substring match can count a verdict the judge did not give and drops unreadable answers silently",
        ),
        ("judge", "GPT-4o, temperature 0", run.judge_name, "the run's judge profile"),
    ]
    frame = pd.DataFrame(rows, columns=["setting", "authors' code", "this run", "why it differs"])
    return captioned(frame, f"The setting of the authors' code ({AUTHORS_CODE}) beside this run's")


def stand_in(run: ArenaRun) -> Callout | None:
    """The note on what stands in for the paper's data and models in this run (None when nothing does)."""
    nrms = (
        "NRMS {cite:p}`wu2019nrms` is a news model: on movies the book runs a named substitute, *minilm-content* "
        "(title and genres embedded with all-MiniLM-L6-v2 {cite:p}`reimers2019sbert`; a user is the mean of their "
        "history's embeddings), shown in the paper's NRMS rows."
    )
    substitute = "minilm-content" in run.config.recommenders
    if run.dataset_name.lower() not in {"ml-1m", "mind"}:
        detail = "Only the orderings of the paper's numbers can be set beside this run's." + (
            f" {nrms}" if substitute else ""
        )
        return stand_in_note(run.data_label, "the paper's MovieLens-1M and MIND", detail)
    if substitute:
        return stand_in_note("minilm-content", "the paper's NRMS", nrms)
    return None


def _health(run: ArenaRun) -> AnswerHealth:
    return AnswerHealth.of_frames(run.raw, run.absolute)


def _verdicts_health(run: ArenaRun) -> AnswerHealth:
    return AnswerHealth.of_frames(run.raw)


def notes(run: ArenaRun) -> list[Callout]:
    """The admonitions to show beside the run's numbers: the judge caveat (or the simulated judge's note), what
    stands in for the paper's data and models, and a warning when no pair-wise verdict could be read."""
    health = _verdicts_health(run)
    warning = (
        unanswerable_warning("how the recommenders compare with the baseline", _health(run))
        if health.n and health.nothing_usable
        else None
    )
    return [c for c in (warning, judge_caveat(run.judge_name), stand_in(run)) if c is not None]


def timings_table(run: ArenaRun) -> Styler:
    """Seconds per step of the run (training, offline metrics, judging)."""
    frame = pd.DataFrame({"step": list(run.timings), "seconds": [round(v, 1) for v in run.timings.values()]})
    return captioned(frame, "Time per step (a stored model loads in about no time)")


# ----------------------------------------------------------------------------------------------- Table 1
def table1(run: ArenaRun) -> Styler:
    """Our AUC / nDCG@k / URD@k beside the paper's Table 1 (the rows of the dataset we ran)."""
    paper = paper_table("arena_table1")
    paper = paper[paper["dataset"] == paper_dataset(run)].set_index("rs")
    off = run.offline
    k = run.config.top_k
    ndcg = next((c for c in off if c.startswith("ndcg@")), f"ndcg@{k}")
    frame = pd.DataFrame(
        {
            "recommender": off["rs"].map(_rec_label),
            "AUC": off["auc"],
            f"nDCG@{k}": off.get(ndcg, np.nan),
            f"URD@{k}": off["urd"],
            "AUC (paper)": off["rs"].map(PAPER_NAMES).map(paper["auc"]),
            "nDCG@5 (paper)": off["rs"].map(PAPER_NAMES).map(paper["ndcg5"]),
        }
    )
    n_users = int(off["n_users"].max()) if len(off) else 0
    return captioned(
        frame,
        f"Table 1: offline accuracy and diversity (nDCG gain 2^p - 1 as the paper defines it, p the held-out "
        f"item's rating, 1 for a click without one). Ours: {run.data_label}, all {n_users} test users; "
        f"paper: {paper_dataset(run)} (its own protocol: only the ordering compares).",
        precision=3,
    )


# ----------------------------------------------------------------------------------------------- Table 2
def table2(run: ArenaRun) -> Styler:
    """Each recommender against the baseline in every judged order: Win / Tie / Lose % and Q with 95 % CIs."""
    frame = _all_sources(run)
    body = pd.concat(
        [
            pd.DataFrame({"recommender": frame["x"].to_numpy(), "order": frame["source"].map(ORDER_LABELS).to_numpy()}),
            _wtl_cells(frame),
        ],
        axis=1,
    )
    title = (
        f"Table 2 (ours): each recommender against {run.config.baseline} ({_tag(run)}). Win / Tie / Lose: % of "
        f"judged comparisons with 95 % Wilson intervals; Q with a 95 % percentile-bootstrap interval over users; "
        f"rank within each order."
    )
    return captioned(body, _caption(title, frame))


def _paper_rows(paper: pd.DataFrame, x: str, wtl_header: str) -> list[tuple[pd.Series, dict[str, Any]]]:
    """The paper's row of each of its judges for recommender ``x`` (``paper`` indexed by rs and llm), beside the
    display row built from it; ``wtl_header`` formats the Win/Tie/Lose headers ("{}" or "{} [95 % CI]")."""
    out = []
    for llm in _PAPER_LLMS:
        key = (PAPER_NAMES.get(x, ""), llm)
        if key not in paper.index:
            continue
        p = paper.loc[key]
        row = {
            "recommender": _rec_label(x),
            "setting": f"paper, {llm}",
            **{
                wtl_header.format(h): estimate_cell(p[c], digits=1)
                for c, h in (("win", "Win %"), ("tie", "Tie %"), ("lose", "Lose %"))
            },
            f"Q [{_CI}]": estimate_cell(p["q"], digits=2),
            "rank": _rank(p["rank"]),
        }
        out.append((p, row))
    return out


def table2_beside_paper(run: ArenaRun) -> Styler:
    """The paper's Table 2 rows (its three judges, the tested model shown as A) beside ours, per recommender."""
    paper = paper_table("arena_table2")
    paper = paper[paper["dataset"] == paper_dataset(run)].set_index(["rs", "llm"])
    ours_sources = list(dict.fromkeys(["x_first", run.config.main_source]))
    ours = _all_sources(run)
    rows = []
    for x in dict.fromkeys(ours["x"]):
        for source in ours_sources:
            r = ours[(ours["x"] == x) & (ours["source"] == source)].iloc[0]
            rows.append(
                {
                    "recommender": _rec_label(x),
                    "setting": f"this run, {ORDER_LABELS[source]}",
                    **{
                        h: estimate_cell(r[p], digits=1)
                        for p, h in (("win", "Win %"), ("tie", "Tie %"), ("lose", "Lose %"))
                    },
                    f"Q [{_CI}]": _q_cell(r),
                    "rank": _rank(r["rank"]),
                }
            )
        rows += [row for _, row in _paper_rows(paper, x, "{}")]
    title = (
        f"Table 2 beside the paper ({paper_dataset(run)}, 1,000 users per comparison, one order: the tested model "
        f"as A, {run.config.baseline} as B). The paper prints no intervals; ours are in the table above."
    )
    return captioned(pd.DataFrame(rows), _caption(title, ours))


def _wtl_bars(
    frame: pd.DataFrame, labels: Sequence[str], groups: Sequence[object], head: str, run: ArenaRun | TransparencyRun
) -> Figure:
    """Stacked Win / Tie / Lose bars, one per row, with the 95 % Wilson interval of the win share at the win/tie
    boundary and of the lose share at the tie/lose boundary; a gap between groups."""
    colours = palette(8)
    fill = {"win": colours[0], "tie": colours[7], "lose": colours[1]}
    y, pos, last = [], 0.0, None
    for g in groups:
        if last is not None and g != last:
            pos += 0.6
        y.append(pos)
        pos += 1.0
        last = g
    yv = np.array(y)
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.36 * len(frame) + 0.2 * len(set(groups))))
    shares = [_shares(r) for _, r in frame.iterrows()]
    left = np.zeros(len(frame))
    for k, part in enumerate(("win", "tie", "lose")):
        values = np.nan_to_num(np.array([s[part][0] for s in shares], dtype=float))
        ax.barh(yv, values, left=left, color=fill[part], hatch=_HATCHES[k], edgecolor="white", label=part.capitalize())
        left += values
    win, win_lo, win_hi = (pd.Series([s["win"][i] for s in shares], dtype=float) for i in range(3))
    lose, lose_lo, lose_hi = (pd.Series([s["lose"][i] for s in shares], dtype=float) for i in range(3))
    # the lose share's interval, drawn where the lose segment starts (100 - lose)
    for value, low, high in ((win, win_lo, win_hi), (100 - lose, 100 - lose_hi, 100 - lose_lo)):
        ax.errorbar(value, yv, xerr=error_bars(value, low, high), fmt="none", ecolor="black", capsize=3, linewidth=1)
    ax.set_yticks(yv, labels)
    ax.invert_yaxis()
    ax.set(xlabel="% of judged comparisons", xlim=(0, 100))
    _title(ax, head, run)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def table2_figure(run: ArenaRun) -> Figure:
    """Win / Tie / Lose of each recommender against the baseline, one bar per order, with 95 % Wilson intervals."""
    frame = _all_sources(run)
    labels = [f"{x} · {ORDER_LABELS[s]}" for x, s in zip(frame["x"], frame["source"], strict=True)]
    return _wtl_bars(frame, labels, list(frame["x"]), f"Each recommender against {run.config.baseline}", run)


def q_figure(run: ArenaRun) -> Figure:
    """Q against the baseline with its 95 % CI in every judged order, beside the paper's Q of its three judges, on
    a log scale (Q = 1: as good as the baseline; 0 and ∞ at the axis' edges)."""
    paper = paper_table("arena_table2")
    paper = paper[paper["dataset"] == paper_dataset(run)].set_index(["rs", "llm"])["q"]
    ours = _all_sources(run)
    rows = [
        {
            "label": _rec_label(r.x),
            "group": f"this run, {ORDER_LABELS[r.source]}",
            "value": r.Q,
            "low": r.Q_lo,
            "high": r.Q_hi,
        }
        for r in ours.itertuples(index=False)
    ]
    for x in dict.fromkeys(ours["x"]):
        for llm in _PAPER_LLMS:
            key = (PAPER_NAMES.get(x, ""), llm)
            if key in paper.index:
                q = float(paper.loc[key])
                rows.append({"label": _rec_label(x), "group": f"paper, {llm}", "value": q, "low": q, "high": q})
    frame = pd.DataFrame(rows)
    lo, hi = _Q_EDGES
    for col in ("value", "low", "high"):
        frame[col] = frame[col].astype(float).clip(lo, hi)
    fig = forest_plot(
        frame.dropna(subset=["value"]),
        group="group",
        xlabel=f"Q against {run.config.baseline} (95 % CI; log scale)",
        reference=1.0,
        reference_label=f"Q = 1: as good as {run.config.baseline}",
        width=8.0,
    )
    ax = fig.axes[0]
    ax.set_xscale("log", base=2)
    ticks = [lo, 1 / 4, 1, 4, hi]
    ax.set_xticks(ticks, ["0 … 1/16", "1/4", "1", "4", "16 … ∞"])
    ax.set_xlim(lo / 1.3, hi * 1.3)
    _title(ax, "Q with 95 % CIs beside the paper's Q (the paper prints no intervals)", run)
    _legend_below(fig, 3)
    return fig


# ----------------------------------------------------------------------------------------------- position bias
#: what the position figure and table call the share of 'A wins' among the verdicts that name a winner
_A_SHARE = "'A wins' among verdicts naming a winner"


def _a_wins(run: ArenaRun) -> pd.DataFrame:
    """Per comparison and overall: of the parsed verdicts naming a winner, the share naming A, with a 95 % Wilson
    interval. With both orders judged each list is A as often as B, so a judge without position bias names A in
    half of them (in expectation); ties are left out because they name no position."""
    parsed = run.raw[run.raw["status"] == "parsed"]
    groups = [("all", "all", parsed)] + [(x, y, g) for (x, y), g in parsed.groupby(["x", "y"], sort=False)]
    rows = []
    for x, y, g in groups:
        verdicts = g[f"verdict_{OVERALL}"]
        k, n = int((verdicts == "A wins").sum()), int(verdicts.isin(["A wins", "B wins"]).sum())
        lo, hi = wilson(k, n)
        rows.append({"x": x, "y": y, "n_named": n, "share": k / n if n else np.nan, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def _comparison(x: str, y: str) -> str:
    return "all comparisons" if x == "all" else f"{x} vs {y}"


def position_table(run: ArenaRun) -> Styler:
    """Per comparison and overall: position consistency and the share of 'A wins' among verdicts naming a winner,
    each with a 95 % Wilson interval, and the unparsed share."""
    cons = run.consistency
    a = _a_wins(run).set_index(["x", "y"])
    rows = []
    for r in cons.itertuples(index=False):
        s = a.loc[(r.x, r.y)] if (r.x, r.y) in a.index else None
        rows.append(
            {
                "comparison": _comparison(r.x, r.y),
                "judged in both orders": int(r.n_both_parsed),
                f"position consistency [{_CI}]": estimate_cell(
                    r.consistency, getattr(r, "consistency_lo", None), getattr(r, "consistency_hi", None), digits=2
                ),
                f"{_A_SHARE} [{_CI}]": "n/a" if s is None else estimate_cell(s["share"], s["lo"], s["hi"], digits=2),
                "unparsed %": estimate_cell(100 * r.unparsed_rate, digits=1),
            }
        )
    return captioned(
        pd.DataFrame(rows),
        f"Position bias ({_tag(run)}): consistency over comparisons whose two orders both parsed; 'A wins' over the "
        "parsed verdicts of both orders that name a winner (0.5 without position bias); 95 % Wilson intervals.",
    )


def position_figure(run: ArenaRun) -> Figure:
    """Position consistency and the share of 'A wins' among verdicts naming a winner, per comparison, with 95 %
    Wilson intervals."""
    cons = run.consistency
    rows = [
        {
            "label": _comparison(r.x, r.y),
            "group": "position consistency",
            "value": r.consistency,
            "low": getattr(r, "consistency_lo", np.nan),
            "high": getattr(r, "consistency_hi", np.nan),
        }
        for r in cons.itertuples(index=False)
    ]
    rows += [
        {
            "label": _comparison(r.x, r.y),
            "group": _A_SHARE,
            "value": r.share,
            "low": r.lo,
            "high": r.hi,
        }
        for r in _a_wins(run).itertuples(index=False)
    ]
    frame = pd.DataFrame(rows).dropna(subset=["value"])
    fig = forest_plot(
        frame,
        group="group",
        xlabel="share (95 % Wilson interval)",
        reference=0.5,
        reference_label="0.5: 'A wins' share of a judge without position bias",
        width=8.0,
    )
    ax = fig.axes[0]
    ax.set_xlim(-0.02, 1.02)
    _title(ax, "Do the two orders agree?", run)
    _legend_below(fig, 2)
    return fig


# ----------------------------------------------------------------------------------------------- close pairs
def close_pairs_table(run: ArenaRun) -> Styler:
    """The closest-AUC pairs compared directly, in each order and adjudicated (the paper's Figures 3-4)."""
    frame = _all_sources(run, kind="close_pair")
    body = pd.concat(
        [
            pd.DataFrame(
                {
                    "comparison": [f"{x} vs {y}" for x, y in zip(frame["x"], frame["y"], strict=True)],
                    "order": frame["source"].map(ORDER_LABELS).to_numpy(),
                }
            ),
            _wtl_cells(frame).drop(columns="rank"),
        ],
        axis=1,
    )
    title = (
        f"Close pairs ({_tag(run)}): the first-named model has the higher AUC; 95 % Wilson intervals, Q with a "
        "percentile-bootstrap interval."
    )
    return captioned(body, _caption(title, frame))


def close_pairs_figure(run: ArenaRun) -> Figure:
    """Win / Tie / Lose of the closest-AUC pairs in each order, with 95 % Wilson intervals (Figures 3-4)."""
    frame = _all_sources(run, kind="close_pair")
    pairs = [f"{x} vs {y}" for x, y in zip(frame["x"], frame["y"], strict=True)]
    labels = [f"{p} · {ORDER_LABELS[s]}" for p, s in zip(pairs, frame["source"], strict=True)]
    return _wtl_bars(frame, labels, pairs, "The closest-AUC pairs", run)


# ----------------------------------------------------------------------------------------------- aspects, Table 4
def _aspect_name(key: str) -> str:
    return key.replace("_", " ").capitalize()


def aspect_table(run: ArenaRun, source: str = "adjudicated") -> Styler:
    """Q [95 % CI] against the baseline per aspect (rows) and recommender (columns)."""
    rows = []
    for key in run.aspect_keys:
        t = versus_table(run, source, key=key)
        rows.append({"aspect": _aspect_name(key), **{r["x"]: _q_cell(r) for _, r in t.iterrows()}})
    frame = pd.concat([versus_table(run, source, key=k) for k in run.aspect_keys])
    title = f"Q [{_CI}] against {run.config.baseline} per aspect ({ORDER_LABELS[source]}; {_tag(run)})."
    return captioned(pd.DataFrame(rows), _caption(title, frame))


def table4(run: ArenaRun, source: str = "adjudicated") -> Styler:
    """Inspiration verdicts against the baseline beside URD, ours and the paper's Table 4 rows in one table."""
    ours = versus_table(run, source, key="inspiration")
    urd = dict(zip(run.offline["rs"], run.offline["urd"], strict=True))
    paper = paper_table("arena_table4").set_index(["rs", "llm"])
    k = run.config.top_k
    rows = []
    cells = _wtl_cells(ours).drop(columns="judged")
    for i, x in enumerate(ours["x"]):
        ours_row = {"recommender": _rec_label(x), "setting": f"this run, {ORDER_LABELS[source]}"}
        rows.append({**ours_row, f"URD@{k}": estimate_cell(urd.get(x), digits=3), **cells.iloc[i].to_dict()})
        for p, row in _paper_rows(paper, x, f"{{}} [{_CI}]"):
            rows.append({"recommender": row.pop("recommender"), "setting": row.pop("setting"),
                         f"URD@{k}": estimate_cell(p["urd"], digits=3), **row})  # fmt: skip
    title = (
        f"Table 4: the Inspiration verdicts against {run.config.baseline} beside URD ({_tag(run)}). The paper's rows "
        "carry no intervals, and its URD (about 0.2 for every model; its dataset is not stated) is its own data's."
    )
    return captioned(pd.DataFrame(rows), _caption(title, ours))


# ----------------------------------------------------------------------------------------------- transparency
#: the paper's two transparency showcases (Fig. 5), GPT-4o's verdict on the Transparency aspect, quoted
PAPER_TRANSPARENCY_CASES = (
    (
        "Case 1 (user aged 45-49)",
        "'A wins' - Recommender system A seems to be more transparent as it is associated with one of the user's "
        "personal information (age) and it is clear which feature it is.",
    ),
    (
        "Case 2 (user aged 25-34, writer, female)",
        "'A wins' - Recommender system A seems to be more transparent as it is associated with the user's personal "
        "information (age, gender, etc.).",
    ),
)


def paper_cases() -> str:
    """The paper's two transparency showcases as Markdown quotes."""
    return "\n\n".join(f"**Paper, {case}:**\n\n> {quote}" for case, quote in PAPER_TRANSPARENCY_CASES)


def _transparency_frame(run: TransparencyRun) -> pd.DataFrame:
    src = {s: i for i, s in enumerate(ORDER_LABELS)}
    o = run.outcomes
    return o.assign(_key=o["source"].map(src)).sort_values(["aspect", "_key"], kind="stable", ascending=[False, True])


def transparency_table(run: TransparencyRun) -> Styler:
    """Win / Tie / Lose and Q of DeepFM with features against DeepFM with ids only, on Transparency and overall, in
    the paper's order (features model as A), swapped, and adjudicated."""
    frame = _transparency_frame(run)
    body = pd.concat(
        [
            pd.DataFrame(
                {
                    "aspect": frame["aspect"].map(_aspect_name).to_numpy(),
                    "order": frame["source"].map(ORDER_LABELS).to_numpy(),
                }
            ),
            _wtl_cells(frame).drop(columns="rank"),
        ],
        axis=1,
    )
    x, y = TRANSPARENCY_MODELS
    title = f"Transparency experiment: {x} (user and item features) against {y} (ids only); {_tag(run)}."
    return captioned(body, _caption(title, frame))


def transparency_figure(run: TransparencyRun) -> Figure:
    """Win / Tie / Lose of the features model on Transparency and overall, per order, with 95 % Wilson intervals."""
    frame = _transparency_frame(run)
    aspects = [_aspect_name(a) for a in frame["aspect"]]
    labels = [f"{a} · {ORDER_LABELS[s]}" for a, s in zip(aspects, frame["source"], strict=True)]
    x, y = TRANSPARENCY_MODELS
    return _wtl_bars(frame, labels, aspects, f"{x} against {y}", run)


def transparency_examples(run: TransparencyRun, n: int = 2) -> Styler:
    """The judge's own Transparency analyses for the first ``n`` users (paper order: the features model as A)."""
    shown = run.raw[(run.raw["order"] == "x_first") & (run.raw["status"] == "parsed")].head(n)
    cols = ["user", "verdict_transparency", "analysis_transparency"]
    frame = shown[[c for c in cols if c in shown]].rename(
        columns={"verdict_transparency": "verdict (A = with features)", "analysis_transparency": "the judge's analysis"}
    )
    return captioned(frame, "The judge's Transparency analyses, paper's order (A: the model with features)")


# ----------------------------------------------------------------------------------------------- Table 3
def table3(run: ArenaRun) -> Styler:
    """Pearson r (and p) between each recommender's Q against the baseline and its AUC, per source."""
    c = run.correlation
    frame = pd.DataFrame(
        {
            "order": c["source"].map(ORDER_LABELS),
            "recommenders with a finite Q": c["n_models"],
            "Pearson r": c["r"].map(lambda v: estimate_cell(v, digits=3)),
            "p": c["p"].map(lambda v: estimate_cell(v, digits=3)),
        }
    )
    return captioned(frame, f"Table 3 (ours): does Q follow AUC? ({_tag(run)})")


def paper_table3() -> Styler:
    """The paper's Table 3 beside Pearson r recomputed from its own Tables 1 (AUC) and 2 (Q)."""
    p1, p2 = paper_table("arena_table1"), paper_table("arena_table2")
    recomputed = []
    for (llm, dset), block in p2.groupby(["llm", "dataset"], sort=False):
        auc = block["rs"].map(p1[p1["dataset"] == dset].set_index("rs")["auc"])
        r, p = pearson(auc, block["q"])
        recomputed.append({"llm": llm, "dataset": dset, "r from Tables 1-2": r, "p from Tables 1-2": p})
    frame = paper_table("arena_table3").merge(pd.DataFrame(recomputed), on=["llm", "dataset"])
    frame = frame.rename(columns={"llm": "judge", "r": "r (printed)", "p": "p (printed)"})
    return captioned(frame, "Table 3 (paper) beside r recomputed from the paper's Tables 1 and 2", precision=4)


def paper_r_rounding(draws: int = 2000, seed: int = 0) -> str:
    """Can rounding of the paper's printed AUC (Table 1) and Q (Table 2) explain the gap between its printed r
    (Table 3) and r recomputed from them? Each value is moved uniformly within its last printed digit
    (:func:`~recjudge_utils.metrics.correlation.pearson_rounding_range`); one Markdown bullet per judge and dataset."""
    p1, p2, p3 = paper_table("arena_table1"), paper_table("arena_table2"), paper_table("arena_table3")
    printed = p3.set_index(["llm", "dataset"])["r"]
    rng = np.random.default_rng(seed)  # one stream over every judge and dataset
    lines = []
    for (llm, dset), block in p2.groupby(["llm", "dataset"], sort=False):
        auc = block["rs"].map(p1[p1["dataset"] == dset].set_index("rs")["auc"]).to_numpy(float)
        lo, hi = pearson_rounding_range(auc, block["q"].to_numpy(float), half_unit=5e-5, draws=draws, seed=rng)
        r_printed = float(printed[(llm, dset)])
        verdict = "inside" if lo <= r_printed <= hi else "outside"
        lines.append(
            f"- {llm}, {dset}: printed r {r_printed:.4f}; r from the printed Tables 1-2 is {lo:.4f} to {hi:.4f} when "
            f"every value moves within its rounding; the printed r is **{verdict}** that range."
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- Figure 6
def relative_vs_absolute(run: ArenaRun, source: str = "adjudicated") -> pd.DataFrame:
    """Figure 6 data: per non-baseline model, AUC, Q vs baseline and mean absolute score, raw and min-max normalised
    over the finite values (the book's normalisation: the paper shows "normalized results" without saying how)."""
    t = versus_table(run, source).set_index("x")
    auc = run.offline.set_index("rs")["auc"]
    abs_mean = run.absolute.groupby("model")["score"].mean() if len(run.absolute) else pd.Series(dtype=float)
    out = pd.DataFrame({"model": list(t.index)})
    out["AUC"] = out["model"].map(auc)
    out["Q"] = out["model"].map(t["Q"])
    out["absolute"] = out["model"].map(abs_mean)
    for col in ("AUC", "Q", "absolute"):
        v = out[col].to_numpy(dtype=float)
        finite = np.isfinite(v)
        span = np.max(v[finite]) - np.min(v[finite]) if finite.any() else np.nan
        scaled = (v - np.min(v[finite])) / span if finite.any() and span > 0 else np.full(len(v), np.nan)
        out[f"{col} (normalised)"] = np.where(finite, scaled, np.nan)
    return out


def relative_table(run: ArenaRun, source: str = "adjudicated") -> Styler:
    """The numbers behind Figure 6, with headers in words."""
    data = relative_vs_absolute(run, source)
    frame = pd.DataFrame(
        {
            "recommender": data["model"],
            "AUC": data["AUC"].map(lambda v: estimate_cell(v, digits=3)),
            f"Q against {run.config.baseline}": data["Q"].map(lambda v: estimate_cell(v, digits=2)),
            "mean absolute score": data["absolute"].map(lambda v: estimate_cell(v, digits=3)),
        }
    )
    title = f"Relative against absolute evaluation ({ORDER_LABELS[source]}; {_tag(run)})."
    return captioned(frame, _caption(title, data))


def figure6(run: ArenaRun, source: str = "adjudicated") -> Figure:
    """AUC, Q and mean absolute score per non-baseline model, min-max normalised (the book's choice: the paper's
    Figure 6 shows "normalized results" without saying how); a hatch per measure."""
    data = relative_vs_absolute(run, source=source)
    measures = ["AUC", "Q", "absolute"]
    colours = palette(len(measures))
    fig, ax = plt.subplots(figsize=(8, 4))
    x = np.arange(len(data))
    width = 0.8 / len(measures)
    for i, m in enumerate(measures):
        ax.bar(x + (i - 1) * width, data[f"{m} (normalised)"].fillna(0).to_numpy(), width, color=colours[i],
               hatch=_HATCHES[i], edgecolor="white", label="absolute score" if m == "absolute" else m)  # fmt: skip
    ax.set_xticks(x, data["model"])
    ax.set(ylabel="min-max normalised value", ylim=(0, 1.05))
    _title(ax, "AUC, Q and absolute score, min-max normalised", run)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def separation_table(run: ArenaRun) -> Styler:
    """How well AUC, the absolute score and Q separate the closest-AUC pair: paired differences with 95 % CIs."""
    s = run.separation
    frame = pd.DataFrame(
        {
            "measure": s["measure"],
            f"difference [{_CI}]": [
                estimate_cell(d, lo, hi, digits=3)
                for d, lo, hi in zip(s["difference"], s["low"], s["high"], strict=True)
            ],
            "standardised gap": s["standardised_gap"].map(lambda v: estimate_cell(v, digits=2)),
            "users": s["n_users"],
        }
    )
    x, y = run.closest_pair or ("?", "?")
    return captioned(
        frame,
        f"Separation of the closest-AUC pair, {x} minus {y} ({_tag(run)}): paired percentile-bootstrap intervals "
        "over users; standardised gap = |difference| / bootstrap SE.",
    )


# ----------------------------------------------------------------------------------------------- the judge
def unparsed_summary(run: ArenaRun) -> Styler:
    """Calls and unparsed answers per judge (pair-wise, absolute), with the most common reasons."""
    rows = []
    for name, frame in (("pair-wise", run.raw), ("absolute", run.absolute)):
        if not len(frame):
            continue
        bad = frame[frame["status"] != "parsed"]
        reasons = bad["reason"].astype(str).str.slice(0, 60).value_counts().head(3)
        raw = bad["raw_text"].dropna().astype(str) if "raw_text" in bad else pd.Series(dtype=str)
        rows.append(
            {
                "answers": name,
                "calls": len(frame),
                "unparsed or failed": len(bad),
                "unparsed %": estimate_cell(100 * len(bad) / len(frame), digits=1),
                "most common reasons": "; ".join(f"{r} ({c})" for r, c in reasons.items()) or "-",
                "one raw answer (first 160 characters)": raw.iloc[0][:160].replace("\n", " ") if len(raw) else "-",
            }
        )
    return captioned(pd.DataFrame(rows), f"Unparsed answers ({_tag(run)})")


def judge_facts(run: ArenaRun) -> str:
    """The facts about this run's judge the discussion rests on, as Markdown bullets."""
    n_parsed = int((run.raw["status"] == "parsed").sum())
    a = _a_wins(run).iloc[0]
    lines = [
        f"- Judge: {run.judge_name}.",
        f"- Pair-wise answers: {len(run.raw)}, parsed: {n_parsed}; {_A_SHARE} (both orders, 0.5 without position "
        f"bias): {estimate_cell(a['share'], a['lo'], a['hi'], digits=2)} of {int(a['n_named'])}.",
    ]
    overall = run.consistency[run.consistency["x"] == "all"]
    if run.config.both_orders and len(overall):
        c = overall.iloc[0]
        lines.append(
            f"- Position consistency over {int(c['n_both_parsed'])} comparisons judged in both orders: "
            f"{estimate_cell(c['consistency'], c.get('consistency_lo'), c.get('consistency_hi'), digits=2)}."
        )
        adj = versus_table(run, "adjudicated")
        qs = ", ".join(f"{r['x']} {_q_cell(r)}" for _, r in adj.iterrows())
        lines.append(f"- Adjudicated Q against {run.config.baseline} [{_CI}]: {qs}.")
    return "\n".join(lines)


def headline_cells(run: ArenaRun) -> dict[str, str]:
    """The numbers the chapter's prose quotes, as cells: ``consistency`` (position consistency [95 % CI]) and
    ``a_share`` ('A wins' among verdicts naming a winner [95 % CI]); "n/a" where the run has none."""
    a = _a_wins(run).iloc[0]
    overall = run.consistency[run.consistency["x"] == "all"]
    consistency = "n/a"
    if run.config.both_orders and len(overall):
        c = overall.iloc[0]
        consistency = estimate_cell(c["consistency"], c.get("consistency_lo"), c.get("consistency_hi"), digits=2)
    return {"consistency": consistency, "a_share": estimate_cell(a["share"], a["lo"], a["hi"], digits=2)}


# ----------------------------------------------------------------------------------------------- takeaways
def _side_of_one(low: float, high: float) -> str:
    """'above', 'below' or 'contains' (1 inside the interval), 'none' without an interval."""
    if pd.isna(low) or pd.isna(high):
        return "none"
    return "above" if low > 1 else "below" if high < 1 else "contains"


def _q_takeaways(run: ArenaRun) -> list[str]:
    src, base = run.config.main_source, run.config.baseline
    t = versus_table(run, src)
    side = {r["x"]: _side_of_one(r["Q_lo"], r["Q_hi"]) for r in t.to_dict("records")}
    cell = {r["x"]: f"{r['x']} {_q_cell(pd.Series(r))}" for r in t.to_dict("records")}
    groups = {k: [cell[x] for x in side if side[x] == k] for k in ("above", "below", "contains", "none")}
    parts = []
    if groups["above"]:
        parts.append(f"{', '.join(groups['above'])}: each interval lies above 1, so the judge preferred these lists")
    if groups["below"]:
        parts.append(f"{', '.join(groups['below'])}: each interval lies below 1, so the judge preferred {base}'s lists")
    if groups["contains"]:
        parts.append(
            f"{', '.join(groups['contains'])}: each interval contains 1, so this run cannot tell these from {base}"
        )
    if groups["none"]:
        parts.append(f"{', '.join(groups['none'])}: no interval (too few judged comparisons)")
    out = [f"{{term}}`Q` against {base} ({ORDER_LABELS[src]}, 95 % CI): " + "; ".join(parts) + "."]
    ranked = t.dropna(subset=["Q_lo", "Q_hi"]).sort_values("Q", ascending=False)
    if len(ranked) >= 2:
        top = ranked.iloc[0]
        overlap = [r["x"] for r in ranked.iloc[1:].to_dict("records") if r["Q_hi"] >= top["Q_lo"]]
        if overlap:
            out.append(
                f"Ranking: {top['x']}'s interval overlaps those of {', '.join(overlap)}, so this run cannot tell "
                "which of them ranks first (overlapping intervals do not show they are equal either)."
            )
        else:
            out.append(f"Ranking: {top['x']}'s interval lies above every other recommender's: it ranks first here.")
    return out


def _position_takeaway(run: ArenaRun) -> str:
    if not run.config.both_orders:
        return (
            "Only the paper's order was judged: {term}`position bias` cannot be measured, and every Q mixes the "
            "judge's preference with its preference for the list shown first."
        )
    a = _a_wins(run).iloc[0]
    c = run.consistency[run.consistency["x"] == "all"].iloc[0]
    if not int(c["n_both_parsed"]) and not int(a["n_named"]):
        return (
            "{term}`Position bias` cannot be measured here: no comparison was parsed in both orders and no parsed "
            "verdict named a winner."
        )
    share = estimate_cell(a["share"], a["lo"], a["hi"], digits=2)
    cons = estimate_cell(c["consistency"], c.get("consistency_lo"), c.get("consistency_hi"), digits=2)
    head = (
        f"The two orders agreed on {cons} of {int(c['n_both_parsed'])} comparisons ({{term}}`position consistency`); "
        f"of the {int(a['n_named'])} verdicts naming a winner, {share} named A."
    )
    if pd.notna(a["lo"]) and a["lo"] > 0.5:
        return (
            f"{head} Without {{term}}`position bias` that share is 0.5; its interval lies above 0.5, so the judge "
            "prefers the list shown first, and the paper's single order credits that preference to the tested model."
        )
    if pd.notna(a["hi"]) and a["hi"] < 0.5:
        return (
            f"{head} Without {{term}}`position bias` that share is 0.5; its interval lies below 0.5, so the judge "
            "prefers the list shown second, and the paper's single order credits that preference to the baseline."
        )
    return (
        f"{head} The interval contains 0.5, the share without {{term}}`position bias`: this run cannot show a "
        "preference for either position (which does not prove there is none)."
    )


def _correlation_takeaway(run: ArenaRun) -> str:
    c = run.correlation[run.correlation["source"] == run.config.main_source]
    if not len(c) or int(c.iloc[0]["n_models"]) < 3:
        return "Q and AUC: fewer than three recommenders have a finite Q, so no correlation can be computed."
    r = c.iloc[0]
    n = int(r["n_models"])
    if pd.isna(r["r"]):
        return f"Q and AUC: Q (or AUC) is the same for all {n} recommenders, so their correlation is undefined."
    if r["p"] < 0.05:
        tail = f"significant at the 5 % level, but it rests on {n} recommenders only."
    else:
        tail = f"with {n} recommenders a correlation of this size is compatible with none at the 5 % level."
    return (
        f"Q against AUC ({ORDER_LABELS[run.config.main_source]}): Pearson r = {r['r']:.2f} (p = {r['p']:.3f}); {tail}"
    )


def _separation_takeaway(run: ArenaRun) -> str | None:
    s = run.separation
    if run.closest_pair is None or not len(s):
        return None
    x, y = run.closest_pair
    apart: list[str] = []
    together: list[str] = []
    missing: list[str] = []
    for m, d, lo, hi, n in zip(s["measure"], s["difference"], s["low"], s["high"], s["n_users"], strict=True):
        users = f"{n} user" + ("" if n == 1 else "s")
        cell = f"{m} {estimate_cell(d, lo, hi, digits=3)} ({users})"
        if pd.isna(lo) or pd.isna(hi):
            missing.append(f"{m} ({users})")
        else:
            (apart if lo > 0 or hi < 0 else together).append(cell)
    parts = []
    if apart:
        parts.append(f"{'; '.join(apart)}: the interval excludes 0, so this measure separates them")
    if together:
        parts.append(f"{'; '.join(together)}: the interval includes 0, so this measure does not separate them here")
    if missing:
        parts.append(f"{'; '.join(missing)}: no interval (too few users)")
    return f"The closest-AUC pair, {x} minus {y}: " + "; ".join(parts) + "."


def _transparency_takeaway(run: TransparencyRun) -> str:
    o = run.outcomes
    rows = o[(o["aspect"] == "transparency") & (o["source"] == run.config.main_source)]
    x, y = TRANSPARENCY_MODELS
    if not len(rows):
        return "Transparency: no verdicts were judged."
    r = rows.iloc[0]
    side = _side_of_one(r["Q_lo"], r["Q_hi"])
    what = {
        "above": f"its Transparency verdicts favoured {x}",
        "below": f"its Transparency verdicts favoured {y}",
        "contains": "the interval contains 1: this run cannot tell whether the judge sees which model used features",
        "none": "no interval (too few judged comparisons)",
    }[side]
    return (
        f"Transparency, {x} against {y} ({ORDER_LABELS[run.config.main_source]}): Q {_q_cell(r)}; {what}. The judge "
        "sees the two lists only, never the models' inputs."
    )


def takeaways_items(run: ArenaRun, transparency: TransparencyRun | None = None) -> list[str]:
    """The chapter's key takeaways, computed from the run: each claim about a number says what its 95 % CI allows.
    With no pair-wise verdict read, what the judge returned instead of the verdict-based claims."""
    health = _verdicts_health(run)
    if health.n and health.nothing_usable:
        items = [
            "No pair-wise verdict could be read, so Q, position consistency, the per-aspect verdicts and Q's "
            f"correlation with AUC cannot be computed: {_health(run).sentence()}"
        ]
    else:
        items = [*_q_takeaways(run), _position_takeaway(run), _correlation_takeaway(run)]
    separation = _separation_takeaway(run)
    if separation:
        items.append(separation)
    if transparency is not None:
        items.append(_transparency_takeaway(transparency))
    return items
