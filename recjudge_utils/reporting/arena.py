"""What notebook 3 shows about a RecSys Arena run: Tables 1-4 beside the paper, position bias, Figure 6, and
how well AUC, Q and the absolute score separate the closest pair. Every number with a CI comes from the run
(:mod:`recjudge_utils.experiments.arena`); this module selects, lays out and draws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.experiments.arena import PAPER_NAMES, ArenaRun
from recjudge_utils.experiments.transparency import TransparencyRun
from recjudge_utils.metrics.offline import pearson
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "AUTHORS_CODE",
    "PAPER_TRANSPARENCY_CASES",
    "aspect_table",
    "close_pairs_table",
    "figure6",
    "judge_facts",
    "paper_dataset",
    "paper_r_rounding_lines",
    "paper_table",
    "paper_table2_wide",
    "paper_table3_recomputed",
    "relative_vs_absolute",
    "setup_table",
    "table1",
    "table2",
    "table4",
    "transparency_examples",
    "transparency_table",
    "unparsed_summary",
    "versus_table",
    "wtl_figure",
]

#: the repository the paper links (github.com/anonyProjects/RecSys-Arena), file the settings below are read from
AUTHORS_CODE = "anonyProjects/RecSys-Arena, prompt_template_gpt.py"

#: the columns of one comparison's outcomes, in the order the tables show them
_WTL = ["x", "y", "source", "n", "n_unjudged", "win", "tie", "lose", "Q", "win_lo", "win_hi", "Q_lo", "Q_hi", "rank"]


def table1(run: ArenaRun) -> pd.DataFrame:
    """Our AUC / nDCG@k / URD beside the paper's Table 1 (the rows of the dataset we ran)."""
    paper = paper_table("arena_table1")
    paper = paper[paper["dataset"] == paper_dataset(run)].set_index("rs")
    out = run.offline.copy()
    out.insert(1, "paper_row", out["rs"].map(PAPER_NAMES))
    out["paper_auc"] = out["paper_row"].map(paper["auc"])
    out["paper_ndcg@5"] = out["paper_row"].map(paper["ndcg5"])
    return out


def paper_dataset(run: ArenaRun) -> str:
    """The paper's dataset name whose reference rows fit this run (MIND for MIND, MovieLens otherwise)."""
    return "MIND" if run.dataset_name.lower().startswith("mind") else "MovieLens"


def versus_table(
    run: ArenaRun, source: str = "adjudicated", key: str = OVERALL, kind: str = "vs_baseline"
) -> pd.DataFrame:
    """Win/Tie/Lose % of x against y, Q, CIs and rank (Table 2 for ``kind="vs_baseline"``)."""
    if source not in run.config.sources:
        raise ValueError(f"source {source!r} was not judged; this run has {run.config.sources}")
    table = run.versus(source, key, kind)
    return table[[c for c in _WTL if c in table]]


def table2(run: ArenaRun) -> pd.DataFrame:
    """Each RS vs the baseline: raw (x shown first = the paper's setting), raw swapped, adjudicated."""
    return pd.concat([versus_table(run, s) for s in run.config.sources], ignore_index=True)


def paper_table2_wide(dataset: str = "MovieLens") -> pd.DataFrame:
    """The paper's Table 2 for one dataset, one row per RS, (win, tie, lose, Q, rank) per LLM."""
    p = paper_table("arena_table2")
    p = p[p["dataset"] == dataset]
    return p.pivot(index="rs", columns="llm", values=["win", "tie", "lose", "q", "rank"])


def aspect_table(run: ArenaRun, source: str = "adjudicated", kind: str = "vs_baseline") -> pd.DataFrame:
    """Win/Tie/Lose and Q per aspect (rows: aspect x comparison)."""
    frames = []
    for key in run.aspect_keys:
        t = versus_table(run, source, key=key, kind=kind)
        t.insert(0, "aspect", key)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def table4(run: ArenaRun, source: str = "adjudicated") -> pd.DataFrame:
    """Inspiration verdicts vs the baseline beside our URD (the paper's Table 4 layout)."""
    t = versus_table(run, source, key="inspiration")
    urd = dict(zip(run.offline["rs"], run.offline["urd"], strict=True))
    t.insert(2, "urd", t["x"].map(urd))
    return t


def setup_table(run: ArenaRun) -> pd.DataFrame:
    """The MovieLens setting of the authors' code (:data:`AUTHORS_CODE`; the paper's text leaves these open) beside
    this run's, each with why the book differs where it does."""
    cfg = run.config
    n_candidates = int(run.offline["n_users"].max()) if len(run.offline) else 0
    orders = (
        "both orders; adjudicated = the agreeing verdict, a tie when the orders disagree (x_first is the authors' "
        "order)"
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
            "shows the position bias one order hides (the position table below; chapter 5)",
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
    return pd.DataFrame(rows, columns=["setting", f"authors' code ({AUTHORS_CODE})", "this run", "why it differs"])


def relative_vs_absolute(run: ArenaRun, source: str = "adjudicated") -> pd.DataFrame:
    """Figure 6 data: per non-baseline model, AUC, Q vs baseline and mean absolute score, raw and min-max normalised
    (the book's normalisation: the paper shows "normalized results" without saying how)."""
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
        span = np.nanmax(v[finite]) - np.nanmin(v[finite]) if finite.any() else np.nan
        out[f"{col} (normalised)"] = (v - np.nanmin(v[finite])) / span if finite.any() and span > 0 else np.nan
    return out


def unparsed_summary(run: ArenaRun) -> pd.DataFrame:
    """Calls and unparsed answers per judge (pair-wise, absolute), with the most common reasons."""
    rows = []
    for name, frame in (("pairwise", run.raw), ("absolute", run.absolute)):
        if not len(frame):
            continue
        bad = frame[frame["status"] != "parsed"]
        reasons = bad["reason"].astype(str).str.slice(0, 60).value_counts().head(3)
        rows.append(
            {
                "judge": name,
                "calls": len(frame),
                "unparsed_or_error": len(bad),
                "rate": len(bad) / len(frame),
                "top_reasons": "; ".join(f"{r} ({c})" for r, c in reasons.items()),
            }
        )
    return pd.DataFrame(rows)


def close_pairs_table(run: ArenaRun) -> pd.DataFrame:
    """The closest-AUC pairs compared directly, in each order and adjudicated (Figures 3-4)."""
    return pd.concat([versus_table(run, s, kind="close_pair") for s in run.config.sources])


def paper_table3_recomputed() -> pd.DataFrame:
    """The paper's Table 3 beside Pearson r recomputed from its own Tables 1 (AUC) and 2 (Q)."""
    p1, p2 = paper_table("arena_table1"), paper_table("arena_table2")
    recomputed = []
    for (llm, dset), block in p2.groupby(["llm", "dataset"], sort=False):
        auc = block["rs"].map(p1[p1["dataset"] == dset].set_index("rs")["auc"])
        r, p = pearson(auc, block["q"])
        recomputed.append({"llm": llm, "dataset": dset, "r recomputed from Tables 1-2": r, "p recomputed": p})
    return paper_table("arena_table3").merge(pd.DataFrame(recomputed), on=["llm", "dataset"])


def figure6(run: ArenaRun, source: str = "adjudicated") -> Figure:
    """AUC, Q and mean absolute score per non-baseline model, min-max normalised (the book's choice: the paper's
    Figure 6 shows "normalized results" without saying how)."""
    long = relative_vs_absolute(run, source=source).melt(
        id_vars="model",
        value_vars=["AUC (normalised)", "Q (normalised)", "absolute (normalised)"],
        var_name="measure",
        value_name="normalised value",
    )
    fig, ax = plt.subplots(figsize=(8, 4))
    sns.barplot(data=long, x="model", y="normalised value", hue="measure", ax=ax)
    ax.set_title(
        f"Figure 6 (ours): AUC, Q and absolute score, min-max normalised\n{run.data_label}; judge: "
        f"{run.judge_name}; {len(run.panel.users)} users",
        fontsize=9,
    )
    fig.tight_layout()
    plt.close(fig)
    return fig


def judge_facts(run: ArenaRun) -> list[str]:
    """The facts about this run's judge the discussion rests on (position bias, consistency, Q)."""
    overall = run.consistency[run.consistency["x"] == "all"].iloc[0]
    n_parsed = int((run.raw["status"] == "parsed").sum())
    lines = [
        f"judge: {run.judge_name}",
        f"pair-wise answers: {len(run.raw)}, parsed: {n_parsed}; share answering 'A wins' overall: "
        f"{overall['a_wins_share']:.2f}",
        f"position consistency (both orders parsed: {int(overall['n_both_parsed'])}): {overall['consistency']:.2f}",
    ]
    if run.config.both_orders:
        adj = versus_table(run, "adjudicated")
        lines.append(
            f"adjudicated Q vs {run.config.baseline}: " + str(dict(zip(adj["x"], adj["Q"].round(3), strict=True)))
        )
    return lines


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


def transparency_table(run: TransparencyRun) -> pd.DataFrame:
    """Win/Tie/Lose and Q of DeepFM with features against DeepFM with ids only, on Transparency and overall,
    in the paper's order (features model shown as A), the swapped order, and adjudicated."""
    return run.outcomes.drop(columns="kind")


def transparency_examples(run: TransparencyRun, n: int = 2) -> pd.DataFrame:
    """The judge's own Transparency analyses for the first ``n`` users (paper order: the features model as A)."""
    shown = run.raw[(run.raw["order"] == "x_first") & (run.raw["status"] == "parsed")].head(n)
    cols = ["user", "verdict_transparency", "analysis_transparency"]
    return shown[[c for c in cols if c in shown]].rename(
        columns={"verdict_transparency": "verdict (A = with features)", "analysis_transparency": "the judge's analysis"}
    )


def wtl_figure(table: pd.DataFrame, title: str) -> Figure:
    """Stacked Win / Tie / Lose bars, one per (comparison, source), as the paper's Figures 3-4 draw them."""
    data = table.assign(
        label=table["x"].astype(str) + " vs " + table["y"].astype(str) + " (" + table["source"].astype(str) + ")"
    )
    fig, ax = plt.subplots(figsize=(9, 0.6 + 0.45 * len(data)))
    left = np.zeros(len(data))
    for part, colour in (("win", "C2"), ("tie", "C7"), ("lose", "C3")):
        values = data[part].fillna(0).to_numpy()
        ax.barh(data["label"], values, left=left, color=colour, label=part)
        left += values
    ax.set(xlabel="% of judged comparisons", xlim=(0, 100))
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.invert_yaxis()
    fig.tight_layout()
    plt.close(fig)
    return fig


def _pearson_r(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson r alone, for finite data: scipy's pearsonr (with its p-value) made 12,000 draws cost seconds."""
    xm, ym = x - x.mean(), y - y.mean()
    return float(xm @ ym / np.sqrt((xm @ xm) * (ym @ ym)))


def paper_r_rounding_lines(draws: int = 2000, seed: int = 0) -> list[str]:
    """Can rounding of the paper's printed AUC (Table 1) and Q (Table 2) explain the gap between its printed r
    (Table 3) and r recomputed from them? Each value is moved uniformly within its last printed digit."""
    p1, p2, p3 = paper_table("arena_table1"), paper_table("arena_table2"), paper_table("arena_table3")
    printed = p3.set_index(["llm", "dataset"])["r"]
    rng = np.random.default_rng(seed)
    lines = []
    for (llm, dset), block in p2.groupby(["llm", "dataset"], sort=False):
        auc = block["rs"].map(p1[p1["dataset"] == dset].set_index("rs")["auc"]).to_numpy(float)
        q = block["q"].to_numpy(float)
        rs = [
            _pearson_r(auc + rng.uniform(-5e-5, 5e-5, len(auc)), q + rng.uniform(-5e-5, 5e-5, len(q)))
            for _ in range(draws)
        ]
        lo, hi = float(np.min(rs)), float(np.max(rs))
        r_printed = float(printed[(llm, dset)])
        verdict = "inside" if lo <= r_printed <= hi else "outside"
        lines.append(
            f"{llm}, {dset}: printed r {r_printed:.4f}; r from the printed Tables 1-2 is {lo:.4f}..{hi:.4f} when every "
            f"value moves within its rounding; the printed r is {verdict} that range"
        )
    return lines
