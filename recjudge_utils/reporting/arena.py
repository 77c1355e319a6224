"""What notebook 3 shows about a RecSys Arena run: Tables 1-4 beside the paper, position bias, Figure 6, and
how well AUC, Q and the absolute score separate the closest pair."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.experiments.arena import PAPER_NAMES, ArenaRun, TransparencyRun, closest_pairs
from recjudge_utils.metrics.offline import pearson
from recjudge_utils.metrics.pairwise import paired_difference, q_from_codes, wtl_summary
from recjudge_utils.protocols.answers.arena_verdicts import OVERALL
from recjudge_utils.protocols.arena import position_consistency
from recjudge_utils.reporting.paper import paper_table
from recjudge_utils.reporting.results import Result, result

__all__ = [
    "arena_table",
    "aspect_table",
    "close_pairs_table",
    "figure6",
    "judge_facts",
    "paper_r_rounding_lines",
    "paper_table",
    "paper_table2_wide",
    "paper_table3_recomputed",
    "q_auc_correlation",
    "relative_vs_absolute",
    "results",
    "separation",
    "table1",
    "table2",
    "table4",
    "transparency_examples",
    "transparency_table",
    "unparsed_summary",
    "versus_table",
    "wtl_figure",
]


def arena_table(
    outcomes: pd.DataFrame,
    column: str = OVERALL,
    by: Sequence[str] = ("x", "y"),
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per comparison (``by``): n, Win/Tie/Lose %, Q, CIs and the rank of Q (1 = best)."""
    rows = []
    for keys, grp in outcomes.groupby(list(by), sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        vals = [None if pd.isna(v) else v for v in grp[column]]
        rows.append({**dict(zip(by, keys, strict=True)), **wtl_summary(vals, n_boot=n_boot, seed=seed)})
    table = pd.DataFrame(rows)
    if len(table):
        table["rank"] = table["Q"].rank(ascending=False, method="min")
    return table


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


def _outcomes_frame(run: ArenaRun, source: str) -> pd.DataFrame:
    """Outcomes per comparison for one source: ``x_first`` / ``y_first`` raw, or ``adjudicated``."""
    if source == "adjudicated":
        if not run.both_orders:
            raise ValueError("adjudication needs both orders")
        return run.adjudicated
    raw = run.raw[run.raw["order"] == source]
    return raw


def versus_table(
    run: ArenaRun, source: str = "adjudicated", key: str = OVERALL, kind: str = "vs_baseline", seed: int = 0
) -> pd.DataFrame:
    """Win/Tie/Lose % of x against y, Q, CIs and rank (Table 2 for ``kind="vs_baseline"``)."""
    frame = _outcomes_frame(run, source)
    frame = frame[frame["kind"] == kind]
    table = arena_table(frame, column=key, seed=seed)
    table.insert(2, "source", source)
    return table


def table2(run: ArenaRun, seed: int = 0) -> pd.DataFrame:
    """Each RS vs the baseline: raw (x shown first = the paper's setting), raw swapped, adjudicated."""
    sources = ["x_first", "y_first", "adjudicated"] if run.both_orders else ["x_first"]
    return pd.concat([versus_table(run, s, seed=seed) for s in sources], ignore_index=True)


def paper_table2_wide(dataset: str = "MovieLens") -> pd.DataFrame:
    """The paper's Table 2 for one dataset, one row per RS, (win, tie, lose, Q, rank) per LLM."""
    p = paper_table("arena_table2")
    p = p[p["dataset"] == dataset]
    return p.pivot(index="rs", columns="llm", values=["win", "tie", "lose", "q", "rank"])


def aspect_table(run: ArenaRun, source: str = "adjudicated", kind: str = "vs_baseline", seed: int = 0) -> pd.DataFrame:
    """Win/Tie/Lose and Q per aspect (rows: aspect x comparison)."""
    frames = []
    for key in run.aspect_keys:
        t = versus_table(run, source, key=key, kind=kind, seed=seed)
        t.insert(0, "aspect", key)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def table4(run: ArenaRun, source: str = "adjudicated", seed: int = 0) -> pd.DataFrame:
    """Inspiration verdicts vs the baseline beside our URD (the paper's Table 4 layout)."""
    t = versus_table(run, source, key="inspiration", seed=seed)
    urd = dict(zip(run.offline["rs"], run.offline["urd"], strict=True))
    t.insert(2, "urd", t["x"].map(urd))
    return t


def q_auc_correlation(run: ArenaRun, source: str = "adjudicated") -> dict[str, Any]:
    """Pearson r between Q (vs baseline) and AUC over the non-baseline models, with its p-value (Table 3)."""
    t = versus_table(run, source)
    auc = dict(zip(run.offline["rs"], run.offline["auc"], strict=True))
    q = t["Q"].to_numpy(dtype=float)
    a = t["x"].map(auc).to_numpy(dtype=float)
    r, p = pearson(a, q)
    return {"source": source, "n_models": int(np.isfinite(q).sum()), "r": r, "p": p}


def relative_vs_absolute(run: ArenaRun, source: str = "adjudicated", seed: int = 0) -> pd.DataFrame:
    """Figure 6 data: per non-baseline model, AUC, Q vs baseline and mean absolute score, raw and min-max normalised."""
    t = versus_table(run, source).set_index("x")
    auc = run.offline.set_index("rs")["auc"]
    models = list(t.index)
    abs_mean = run.absolute.groupby("model")["score"].mean() if len(run.absolute) else pd.Series(dtype=float)
    out = pd.DataFrame({"model": models})
    out["AUC"] = out["model"].map(auc)
    out["Q"] = out["model"].map(t["Q"])
    out["absolute"] = out["model"].map(abs_mean)
    for col in ("AUC", "Q", "absolute"):
        v = out[col].to_numpy(dtype=float)
        finite = np.isfinite(v)
        span = np.nanmax(v[finite]) - np.nanmin(v[finite]) if finite.any() else np.nan
        out[f"{col} (normalised)"] = (v - np.nanmin(v[finite])) / span if finite.any() and span > 0 else np.nan
    return out


def separation(run: ArenaRun, pair: tuple[str, str], source: str = "adjudicated", seed: int = 0) -> pd.DataFrame:
    """How well AUC, Q and the absolute score separate two models, each as a paired bootstrap over users.

    For each measure: the difference (first minus second), its 95% CI over users, and the standardised gap
    |difference| / bootstrap SE. AUC pairs the models' per-user AUCs (all evaluated users); the absolute score
    pairs the judged users' scores; Q compares each model's outcome against the baseline per judged user.
    """
    x, y = pair
    rows = []
    pu = run.offline_per_user
    merged = pu[x][["user", "auc"]].merge(pu[y][["user", "auc"]], on="user", suffixes=("_x", "_y"))
    d = paired_difference(merged["auc_x"].to_numpy(), merged["auc_y"].to_numpy(), seed=seed)
    rows.append(("AUC (all evaluated users)", d.point, d.low, d.high, d.standardised, len(merged)))
    if len(run.absolute):
        piv = run.absolute.pivot(index="user", columns="model", values="score")
        if x in piv and y in piv:
            d = paired_difference(piv[x].to_numpy(float), piv[y].to_numpy(float), seed=seed)
            n = int(piv[[x, y]].notna().all(axis=1).sum())
            rows.append(("absolute score", d.point, d.low, d.high, d.standardised, n))
    frame = _outcomes_frame(run, source)
    frame = frame[frame["kind"] == "vs_baseline"]
    code = {"win": 1.0, "tie": 0.0, "lose": -1.0}
    per = frame.pivot_table(index="user", columns="x", values=OVERALL, aggfunc="first")
    if x in per and y in per:
        ox = per[x].map(code).to_numpy(dtype=float)
        oy = per[y].map(code).to_numpy(dtype=float)
        d = paired_difference(ox, oy, statistic=q_from_codes, seed=seed)
        rows.append(
            ("Q vs baseline", d.point, d.low, d.high, d.standardised, int((np.isfinite(ox) & np.isfinite(oy)).sum()))
        )
    return pd.DataFrame(rows, columns=["measure", "difference", "low", "high", "standardised_gap", "n_users"])


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


def close_pairs_table(run: ArenaRun, seed: int = 0) -> pd.DataFrame:
    """The closest-AUC pairs compared directly, in each order and adjudicated (Figures 3-4)."""
    sources = ["x_first", "y_first", "adjudicated"] if run.both_orders else ["x_first"]
    return pd.concat([versus_table(run, s, kind="close_pair", seed=seed) for s in sources])


def paper_table3_recomputed() -> pd.DataFrame:
    """The paper's Table 3 beside Pearson r recomputed from its own Tables 1 (AUC) and 2 (Q)."""
    p1, p2 = paper_table("arena_table1"), paper_table("arena_table2")
    recomputed = []
    for (llm, dset), block in p2.groupby(["llm", "dataset"], sort=False):
        auc = block["rs"].map(p1[p1["dataset"] == dset].set_index("rs")["auc"])
        r, p = pearson(auc, block["q"])
        recomputed.append({"llm": llm, "dataset": dset, "r recomputed from Tables 1-2": r, "p recomputed": p})
    return paper_table("arena_table3").merge(pd.DataFrame(recomputed), on=["llm", "dataset"])


def figure6(run: ArenaRun, source: str = "adjudicated", seed: int = 0) -> Figure:
    """AUC, Q and mean absolute score per non-baseline model, min-max normalised as in the paper's Figure 6."""
    fig6 = relative_vs_absolute(run, source=source, seed=seed)
    long = fig6.melt(
        id_vars="model",
        value_vars=["AUC (normalised)", "Q (normalised)", "absolute (normalised)"],
        var_name="measure",
        value_name="normalised value",
    )
    fig, ax = plt.subplots(figsize=(8, 4))
    sns.barplot(data=long, x="model", y="normalised value", hue="measure", ax=ax)
    ax.set_title(
        f"Figure 6 (ours): AUC, Q and absolute score, min-max normalised\n{run.dataset_label}; judge: "
        f"{run.judge_name}; {len(run.users)} users",
        fontsize=9,
    )
    fig.tight_layout()
    plt.close(fig)
    return fig


def closest_pair(run: ArenaRun) -> tuple[str, str]:
    auc = dict(zip(run.offline["rs"], run.offline["auc"], strict=True))
    return closest_pairs(auc, 1, exclude=[run.baseline])[0]


def judge_facts(run: ArenaRun) -> list[str]:
    """The facts about this run's judge the discussion rests on (position bias, consistency, Q)."""
    parsed = run.raw[run.raw["status"] == "parsed"]
    a_share = (parsed["verdict_overall"] == "A wins").mean() if len(parsed) else float("nan")
    pc = position_consistency(run.raw)
    overall = pc[pc["x"] == "all"].iloc[0]
    lines = [
        f"judge: {run.judge_name}",
        f"pair-wise answers: {len(run.raw)}, parsed: {len(parsed)}; share answering 'A wins' overall: {a_share:.2f}",
        f"position consistency (both orders parsed: {int(overall['n_both_parsed'])}): {overall['consistency']:.2f}",
    ]
    if run.both_orders:
        t2 = table2(run)
        adj = t2[t2["source"] == "adjudicated"]
        lines.append(f"adjudicated Q vs {run.baseline}: " + str(dict(zip(adj["x"], adj["Q"].round(3), strict=True))))
    return lines


def results(run: ArenaRun, seed: int = 0) -> tuple[list[Result], dict[str, list[dict[str, object]]]]:
    """Headline numbers (per RS vs the baseline: win %, Q with CIs, per source; Pearson r with AUC; position
    consistency) and every pairwise outcome."""
    out = []
    for _, r in table2(run, seed=seed).iterrows():
        group = {"x": str(r["x"]), "y": str(r["y"]), "source": str(r["source"])}
        out.append(result("win_pct", r["win"], r.get("win_lo"), r.get("win_hi"), r["n"], "95% Wilson", **group))
        out.append(result("Q", r["Q"], r.get("Q_lo"), r.get("Q_hi"), r["n"], "95% percentile bootstrap", **group))
    for source in ["x_first", "adjudicated"] if run.both_orders else ["x_first"]:
        corr = q_auc_correlation(run, source)
        out.append(result("pearson_r_q_auc", corr["r"], n=corr["n_models"], source=source))
        out.append(result("pearson_p_q_auc", corr["p"], n=corr["n_models"], source=source))
    overall = position_consistency(run.raw)
    row = overall[overall["x"] == "all"].iloc[0]
    out.append(
        result(
            "position_consistency",
            row["consistency"],
            row.get("consistency_lo"),
            row.get("consistency_hi"),
            row["n_both_parsed"],
            "95% Wilson",
        )
    )
    out.append(result("a_wins_share", row["a_wins_share"], n=int((run.raw["status"] == "parsed").sum())))
    for _, r in run.offline.iterrows():
        out.append(result("auc", r["auc"], n=r["n_users"], rs=str(r["rs"])))
    items: list[dict[str, object]] = [
        {"user": int(u), "x": str(x), "y": str(y), "order": str(o), "label": None if pd.isna(v) else str(v)}
        for u, x, y, o, v in zip(
            run.raw["user"], run.raw["x"], run.raw["y"], run.raw["order"], run.raw[OVERALL], strict=True
        )
    ]
    return out, {"pairwise": items}


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


def transparency_table(run: TransparencyRun, seed: int = 0) -> pd.DataFrame:
    """Win/Tie/Lose and Q of DeepFM with features against DeepFM with ids only, on Transparency and overall,
    in the paper's order (features model shown as A), the swapped order, and adjudicated."""
    rows = []
    for key in ("transparency", OVERALL):
        frames = {
            "x_first": run.raw[run.raw["order"] == "x_first"],
            "y_first": run.raw[run.raw["order"] == "y_first"],
            "adjudicated": run.adjudicated,
        }
        for source, frame in frames.items():
            t = arena_table(frame, column=key, seed=seed)
            t.insert(0, "aspect", key)
            t.insert(3, "source", source)
            rows.append(t)
    return pd.concat(rows, ignore_index=True)


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
