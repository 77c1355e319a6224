"""What notebook 4 shows about a SAER run: Tables 1-3 beside the paper, agreement between labelers, time and
cost, and statements computed from the run's frames."""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from itertools import combinations
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.experiments.saer import ALGORITHMS, PAPER_CALLS, SaerRun
from recjudge_utils.metrics.agreement import agreement, pairwise_order
from recjudge_utils.metrics.intervals import wilson
from recjudge_utils.metrics.pairwise import TIE, conservative, position_consistency
from recjudge_utils.protocols.adversarial import OUTCOMES
from recjudge_utils.protocols.answers.saer_fields import CATEGORIES
from recjudge_utils.protocols.context.saer import SUBSTITUTIONS
from recjudge_utils.protocols.saer import VERSION_NAMES, few_shot_answers, load_template
from recjudge_utils.reporting.paper import paper_table
from recjudge_utils.reporting.results import Result, result

__all__ = [
    "adjudicated_pairs",
    "agreement_table",
    "copied_from_examples",
    "example_lists",
    "flagged_summary",
    "observations",
    "plot_table1",
    "results",
    "substitutions_table",
    "table1",
    "table2",
    "table3",
    "time_cost",
    "unparsed_summary",
]


def _share_ci(indicator: np.ndarray) -> tuple[float, float, float]:
    """A share in percent with its 95% Wilson interval (a bootstrap interval of a share collapses to a point
    when every label agrees, the Wilson one does not)."""
    indicator = np.asarray(indicator, dtype=bool)
    if len(indicator) == 0:
        return float("nan"), float("nan"), float("nan")
    lo, hi = wilson(int(indicator.sum()), len(indicator))
    return 100 * float(indicator.mean()), 100 * lo, 100 * hi


def _fmt(pt: float, lo: float, hi: float) -> str:
    if np.isnan(pt):
        return "n/a"
    return f"{pt:.1f} [{lo:.1f}, {hi:.1f}]"


def table1(run: SaerRun, version: str | None = None) -> pd.DataFrame:
    """Pointwise label distribution per algorithm (percent of parsed lists, 95% CI) beside the paper."""
    version = version or run.config.main_version
    pw = run.pointwise.loc[run.pointwise["prompt_version"] == version]
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        parsed = sub.loc[sub["status"] == "parsed", "category"].to_numpy()
        for cat in CATEGORIES:
            pt, lo, hi = _share_ci(parsed == cat)
            ref = paper.loc[(alg, cat)]
            rows.append(
                {
                    "algorithm": alg,
                    "category": cat,
                    "ours_%": pt,
                    "ours_95%_CI": _fmt(pt, lo, hi),
                    "n_parsed": len(parsed),
                    "n_unparsed": int((sub["status"] != "parsed").sum()),
                    "paper_SAER_%": ref["saer_pct"],
                    "paper_human_A_%": ref["human_a_pct"],
                    "paper_human_B_%": ref["human_b_pct"],
                }
            )
    return pd.DataFrame(rows)


def flagged_summary(run: SaerRun, version: str | None = None, top: int = 3) -> pd.DataFrame:
    """Per algorithm: how many items the judge flagged per parsed list, and the most-flagged titles."""
    version = version or run.config.main_version
    pw = run.pointwise.loc[(run.pointwise["prompt_version"] == version) & (run.pointwise["status"] == "parsed")]
    rows = []
    for alg in ALGORITHMS:
        sub = pw.loc[pw["algorithm"] == alg]
        counts: dict[int, int] = {}
        for u, flagged in zip(sub["user"], sub["flagged"], strict=True):
            for k in flagged:
                item = run.lists[alg][int(u)][k - 1]
                counts[item] = counts.get(item, 0) + 1
        most = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        rows.append(
            {
                "algorithm": alg,
                "n_parsed": len(sub),
                "mean_flagged_per_list": float(sub["n_flagged"].mean()) if len(sub) else float("nan"),
                "lists_with_flags_%": 100 * float((sub["n_flagged"] > 0).mean()) if len(sub) else float("nan"),
                "most_flagged": "; ".join(f"{run.catalogue.title(i)} (x{c})" for i, c in most) or "-",
            }
        )
    return pd.DataFrame(rows)


def adjudicated_pairs(run: SaerRun) -> pd.DataFrame:
    """One row per customer: the mapped-back winner in each order and the swap adjudication."""
    a, b = ALGORITHMS
    pw = run.pairwise.set_index(["user", "order"])
    rows = []
    for u in run.customers["user"]:
        w_a = pw.loc[(u, f"{a} first"), "winner"]
        w_b = pw.loc[(u, f"{b} first"), "winner"]
        w_a = None if pd.isna(w_a) else w_a
        w_b = None if pd.isna(w_b) else w_b
        rows.append(
            {
                "user": int(u),
                f"winner_{a}_first": w_a,
                f"winner_{b}_first": w_b,
                "adjudicated": conservative([w_a], [w_b])[0],
                "consistent": None if w_a is None or w_b is None else w_a == w_b,
            }
        )
    return pd.DataFrame(rows)


def table2(run: SaerRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(win/tie table beside the paper, consistency metrics). Rates are over parsed answers."""
    a, b = ALGORITHMS
    raw = run.pairwise.loc[run.pairwise["status"] == "parsed", "winner"].to_numpy()
    adj_df = adjudicated_pairs(run)
    adj = adj_df["adjudicated"].dropna().to_numpy()
    paper = paper_table("saer_table2").set_index("scope")

    def row(scope: str, values: np.ndarray, n_total: int, paper_scope: str) -> dict:
        out: dict[str, Any] = {"scope": scope, "n_parsed": len(values), "n_unparsed": n_total - len(values)}
        for label, key in ((a, "cooccurrence_win"), (b, "embedding_win"), (TIE, "tie")):
            pt, lo, hi = _share_ci(values == label)
            out[f"{key}_%"] = pt
            out[f"{key}_95%_CI"] = _fmt(pt, lo, hi)
        ref = paper.loc[paper_scope]
        out["paper_cooccurrence_win_%"] = ref["cooccurrence_win_pct"]
        out["paper_embedding_win_%"] = ref["embedding_win_pct"]
        out["paper_tie_%"] = ref["tie_pct"]
        return out

    table = pd.DataFrame(
        [
            row(f"ours raw ({len(run.pairwise)} calls)", raw, len(run.pairwise), "SAER Raw"),
            row(f"ours adjudicated ({len(adj_df)} pairs)", adj, len(adj_df), "SAER Adjudicated"),
        ]
    )
    consistent, n = position_consistency(adj_df[f"winner_{a}_first"].tolist(), adj_df[f"winner_{b}_first"].tolist())
    flags = adj_df["consistent"].dropna().to_numpy(dtype=float)
    c_pt, c_lo, c_hi = _share_ci(flags)
    verdicts = run.pairwise.loc[run.pairwise["status"] == "parsed", "verdict"].to_numpy()
    s1 = _share_ci(verdicts == "Set 1")
    metrics = pd.DataFrame(
        [
            {
                "metric": "position consistency (both orders agree)",
                "ours": f"{consistent}/{n} = " + _fmt(c_pt, c_lo, c_hi) + " %",
                "paper": "176/200 = 88.0 %",
            },
            {
                "metric": "answers naming the first-shown list (Set 1)",
                "ours": _fmt(*s1) + f" % of {len(verdicts)} parsed calls",
                "paper": "not reported",
            },
            {
                "metric": "unparsed pairwise answers",
                "ours": f"{int((run.pairwise['status'] != 'parsed').sum())}/{len(run.pairwise)}",
                "paper": "not reported",
            },
        ]
    )
    return table, metrics


def table3(run: SaerRun) -> pd.DataFrame:
    """Adversarial correct / wrong / tie per prompt version (percent of parsed), beside the paper."""
    cfg = run.config
    paper = paper_table("saer_table3")
    paper_v = paper.dropna(subset=["prompt_version"]).set_index("prompt_version")
    rows = []
    for version in cfg.prompt_versions:
        sub = run.adversarial.loc[run.adversarial["prompt_version"] == version]
        parsed = sub.loc[sub["status"] == "parsed"]
        out: dict[str, Any] = {
            "evaluator": f"{VERSION_NAMES[version]} prompt ({version})",
            "n_parsed": len(parsed),
            "n_unparsed": len(sub) - len(parsed),
        }
        for outcome in OUTCOMES:
            pt, lo, hi = _share_ci(parsed["outcome"].to_numpy() == outcome)
            out[f"{outcome}_%"] = pt
            out[f"{outcome}_95%_CI"] = _fmt(pt, lo, hi)
        first = parsed["verdict"].to_numpy() == "Set 1"
        out["chose_Set_1_%"] = 100 * float(first.mean()) if len(first) else float("nan")
        ref = paper_v.loc[version]
        out["paper_correct_%"] = ref["correct_pct"]
        out["paper_wrong_%"] = ref["wrong_pct"]
        out["paper_tie_%"] = ref["tie_pct"]
        rows.append(out)
    for ev in paper.loc[paper["prompt_version"].isna()].itertuples(index=False):
        rows.append(
            {
                "evaluator": f"paper: {ev.evaluator}",
                "paper_correct_%": ev.correct_pct,
                "paper_wrong_%": ev.wrong_pct,
                "paper_tie_%": ev.tie_pct,
            }
        )
    table = pd.DataFrame(rows)
    for col in ("n_parsed", "n_unparsed"):
        table[col] = table[col].astype("Int64")
    return table


def agreement_table(run: SaerRun) -> pd.DataFrame:
    """Raw agreement and quadratic weighted kappa (95% CIs) between every pair of labelers in the run.

    * pointwise: prompt versions as labelers of the same lists (Poor < Partial < Good);
    * pairwise: the two presentation orders as labelers (embedding wins < tie < co-occurrence wins);
    * adversarial: prompt versions as labelers of the same blind pairs (wrong < tie < correct).
    """
    cfg = run.config
    rows = []

    def add(task: str, name_a: str, name_b: str, x: list, y: list, labels: Sequence[str]) -> None:
        res = agreement(x, y, labels, n_boot=cfg.n_boot, seed=cfg.seed)
        rows.append(
            {
                "task": task,
                "labeler_a": name_a,
                "labeler_b": name_b,
                "n_both_parsed": res.n,
                "raw_agreement_%": 100 * res.raw,
                "raw_95%_CI": _fmt(100 * res.raw, 100 * res.raw_ci[0], 100 * res.raw_ci[1]),
                "kappa_w": res.kappa,
                "kappa_95%_CI": "n/a"
                if np.isnan(res.kappa_ci[0])
                else f"[{res.kappa_ci[0]:.2f}, {res.kappa_ci[1]:.2f}]",
            }
        )

    def none_if_na(values: Sequence[Any]) -> list:
        return [None if pd.isna(v) else v for v in values]

    pw = run.pointwise.pivot_table(
        index=["user", "algorithm"], columns="prompt_version", values="category", aggfunc="first", dropna=False
    )
    versions = [v for v in cfg.prompt_versions if v in pw.columns]
    for va, vb in combinations(versions, 2):
        add("pointwise", f"prompt {va}", f"prompt {vb}", none_if_na(pw[va]), none_if_na(pw[vb]), CATEGORIES[::-1])
    a, b = ALGORITHMS
    adj = adjudicated_pairs(run)
    add(
        "pairwise",
        f"order: {a} as Set 1",
        f"order: {b} as Set 1",
        none_if_na(adj[f"winner_{a}_first"]),
        none_if_na(adj[f"winner_{b}_first"]),
        pairwise_order(a, b),
    )
    adv = run.adversarial.pivot_table(
        index="user", columns="prompt_version", values="outcome", aggfunc="first", dropna=False
    )
    for va, vb in combinations([v for v in cfg.prompt_versions if v in adv.columns], 2):
        add(
            "adversarial",
            f"prompt {va}",
            f"prompt {vb}",
            none_if_na(adv[va]),
            none_if_na(adv[vb]),
            ("wrong", "tie", "correct"),
        )
    return pd.DataFrame(rows)


def time_cost(run: SaerRun) -> pd.DataFrame:
    """Judge calls, tokens, wall time and cost of this run, an extrapolation to the paper's run size,
    and the paper's 30 minutes / $28 (Claude 4.5 Sonnet on Bedrock)."""
    frames = [run.pointwise, run.pairwise, run.adversarial]
    allr = pd.concat([f[["latency_s", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]] for f in frames])
    n_calls = len(allr)
    fresh = allr.loc[~allr["cache_hit"]]
    judge_s = run.timings.get("pointwise_s", 0) + run.timings.get("pairwise_s", 0) + run.timings.get("adversarial_s", 0)
    per_call = float(fresh["latency_s"].mean()) if len(fresh) else float("nan")
    cost_per_call = float(fresh["cost_usd"].mean()) if len(fresh) else float("nan")
    rows = [
        (
            "judgments in this run",
            f"{n_calls} ({len(fresh)} fresh, {n_calls - len(fresh)} from cache)",
            f"{PAPER_CALLS}",
        ),
        (
            "prompt / completion tokens",
            f"{int(allr['prompt_tokens'].sum())} / {int(allr['completion_tokens'].sum())}",
            "not reported",
        ),
        ("judging wall time (this run)", f"{judge_s / 60:.2f} min", "about 30 min"),
        (
            "whole run incl. data and recommenders",
            f"{run.timings.get('total_s', float('nan')) / 60:.2f} min",
            "not reported",
        ),
        ("cost (this run)", f"${allr['cost_usd'].sum():.4f}", "about $28"),
        (
            "mean latency per fresh call",
            f"{per_call:.2f} s" if not np.isnan(per_call) else "n/a (all cached)",
            "not reported",
        ),
        (
            f"extrapolated to {PAPER_CALLS} calls (our inference of the paper's run size), sequential",
            f"{PAPER_CALLS * per_call / 60:.1f} min, ${PAPER_CALLS * cost_per_call:.2f}"
            if not np.isnan(per_call)
            else "n/a",
            "about 30 min, $28",
        ),
    ]
    return pd.DataFrame(rows, columns=["quantity", f"ours ({run.judge})", "paper (Claude 4.5 Sonnet)"])


def unparsed_summary(run: SaerRun) -> pd.DataFrame:
    """Unparsed answers per task and prompt version, with the most common reason."""
    rows = []
    for task, frame in (("pointwise", run.pointwise), ("pairwise", run.pairwise), ("adversarial", run.adversarial)):
        for version, sub in frame.groupby("prompt_version", sort=True):
            bad = sub.loc[sub["status"] != "parsed"]
            reasons = bad["reason"].fillna("").str.slice(0, 60).value_counts()
            rows.append(
                {
                    "task": task,
                    "prompt_version": version,
                    "calls": len(sub),
                    "unparsed": int((sub["status"] == "unparsed").sum()),
                    "errors": int((sub["status"] == "error").sum()),
                    "unparsed_%": 100 * len(bad) / len(sub) if len(sub) else float("nan"),
                    "most_common_reason": reasons.index[0] if len(reasons) else "-",
                }
            )
    return pd.DataFrame(rows)


def substitutions_table(domain: str) -> pd.DataFrame:
    """SAER's context fields and what this run uses instead (named substitutes)."""
    return pd.DataFrame([{"SAER context field": k, "used here": v} for k, v in SUBSTITUTIONS[domain].items()])


def example_lists(run: SaerRun, user: int | None = None) -> pd.DataFrame:
    """Side-by-side top-k lists of the two algorithms for one customer (first sampled by default)."""
    user = int(run.customers["user"].iloc[0]) if user is None else int(user)
    a, b = ALGORITHMS
    k = len(run.lists[a][user])
    return pd.DataFrame(
        {
            "rank": range(1, k + 1),
            a: [run.catalogue.line(i) for i in run.lists[a][user]],
            b: [run.catalogue.line(i) for i in run.lists[b][user]],
        }
    )


def copied_from_examples(run: SaerRun, min_chars: int = 40) -> pd.DataFrame:
    """Per task: parsed answers whose REASONING repeats >= ``min_chars`` characters verbatim from one of the
    prompt's few-shot answers (a sign that a small judge parrots the examples instead of reading the lists)."""
    rows = []
    tasks = (("pointwise", run.pointwise, "pointwise"), ("pairwise", run.pairwise, "pairwise"))
    for task, frame, mode in (*tasks, ("adversarial", run.adversarial, "pairwise")):
        for version, sub in frame.groupby("prompt_version", sort=True):
            shots = few_shot_answers(load_template(run.domain, mode, str(version)))
            parsed = sub.loc[sub["status"] == "parsed", "raw_text"].fillna("").tolist()
            copied = 0
            for text in parsed:
                for shot in shots:
                    m = SequenceMatcher(None, text, shot, autojunk=False).find_longest_match(0, len(text), 0, len(shot))
                    if m.size >= min_chars:
                        copied += 1
                        break
            rows.append(
                {
                    "task": task,
                    "prompt_version": version,
                    "few_shot_answers": len(shots),
                    "parsed": len(parsed),
                    f"reusing_>={min_chars}_chars_of_an_example": copied,
                }
            )
    return pd.DataFrame(rows)


def observations(run: SaerRun) -> list[str]:
    """Plain statements computed from this run's frames (for the discussion; nothing hard-coded)."""
    out = []
    pw = run.pairwise.loc[run.pairwise["status"] == "parsed"]
    if len(pw):
        first = 100 * float((pw["verdict"] == "Set 1").mean())
        out.append(
            f"In the main pairwise run the judge named the first-shown list (Set 1) in {first:.0f}% of "
            f"{len(pw)} parsed answers."
        )
    adj = adjudicated_pairs(run)
    cons = adj["consistent"].dropna()
    if len(cons):
        out.append(
            f"Both presentation orders agreed for {int(cons.sum())} of {len(cons)} customers; the other "
            f"{len(cons) - int(cons.sum())} verdicts depended on position and became ties."
        )
        both_tie = int(((adj["adjudicated"] == TIE) & (adj["consistent"] == True)).sum())  # noqa: E712
        if both_tie:
            out.append(
                f"{both_tie} of the consistent verdicts were 'Tie' in both orders: consistency by always "
                "answering Tie carries no preference."
            )
    for version in run.config.prompt_versions:
        adv = run.adversarial.loc[
            (run.adversarial["prompt_version"] == version) & (run.adversarial["status"] == "parsed")
        ]
        if len(adv):
            correct = 100 * float((adv["outcome"] == "correct").mean())
            shown_first = 100 * float((adv["genuine_position"] == 1).mean())
            out.append(
                f"Adversarial, prompt {version}: {correct:.0f}% correct; the genuine list was shown first in "
                f"{shown_first:.0f}% of these pairs (a judge that always picks Set 1 scores exactly that)."
            )
    p = run.pointwise.loc[(run.pointwise["prompt_version"] == run.config.main_version)]
    parsed = p.loc[p["status"] == "parsed", "category"]
    if len(parsed):
        top = parsed.value_counts()
        out.append(
            f"Pointwise ({run.config.main_version}): {int(top.iloc[0])} of {len(parsed)} parsed labels were "
            f"'{top.index[0]}'; {int((p['status'] != 'parsed').sum())} of {len(p)} answers were unparsed."
        )
    return out


def plot_table1(run: SaerRun, t1: pd.DataFrame | None = None) -> Figure:
    """Bar chart: our label distribution per algorithm beside the paper's SAER column."""

    t1 = table1(run) if t1 is None else t1
    long = pd.concat(
        [
            t1.assign(source=f"ours ({run.judge})", pct=t1["ours_%"]),
            t1.assign(source="paper SAER (Claude 4.5 Sonnet)", pct=t1["paper_SAER_%"]),
        ]
    )
    g = sns.catplot(
        data=long,
        x="category",
        y="pct",
        hue="source",
        col="algorithm",
        kind="bar",
        height=3.2,
        aspect=1.2,
        order=list(CATEGORIES),
    )
    g.set_axis_labels("", "% of lists")
    g.figure.suptitle(f"SAER Table 1: pointwise labels — {run.dataset_label}", y=1.04, fontsize=10)
    plt.close(g.figure)
    return g.figure


def results(run: SaerRun) -> tuple[list[Result], dict[str, list[dict[str, object]]]]:
    """Headline numbers (Tables 1-3 shares with CIs, position consistency) and every label and verdict."""
    out = []
    boot = "95% Wilson"
    for _, r in table1(run).iterrows():
        pt, lo, hi = _share_ci_from(r)
        out.append(
            result(
                "label_pct", pt, lo, hi, r["n_parsed"], boot, algorithm=str(r["algorithm"]), category=str(r["category"])
            )
        )
    t2, _ = table2(run)
    for _, r in t2.iterrows():
        for key in ("cooccurrence_win", "embedding_win", "tie"):
            lo, hi = _parse_ci(r[f"{key}_95%_CI"])
            out.append(result(f"{key}_pct", r[f"{key}_%"], lo, hi, r["n_parsed"], boot, scope=str(r["scope"])))
    adj = adjudicated_pairs(run)
    flags = adj["consistent"].dropna().to_numpy(dtype=float)
    if len(flags):
        pt, lo, hi = _share_ci(flags)
        out.append(result("position_consistency_pct", pt, lo, hi, len(flags), boot))
    for _, r in table3(run).dropna(subset=["n_parsed"]).iterrows():
        lo, hi = _parse_ci(r["correct_95%_CI"])
        out.append(
            result(
                "adversarial_correct_pct", r["correct_%"], lo, hi, r["n_parsed"], boot, evaluator=str(r["evaluator"])
            )
        )
    pw = run.pointwise
    items: dict[str, list[dict[str, object]]] = {
        "pointwise": [
            {
                "user": int(u),
                "algorithm": str(a),
                "prompt_version": str(v),
                "label": None if c is None or pd.isna(c) else str(c),
            }
            for u, a, v, c in zip(pw["user"], pw["algorithm"], pw["prompt_version"], pw["category"], strict=True)
        ],
        "pairwise": [
            {"user": int(u), "order": str(o), "label": None if w is None or pd.isna(w) else str(w)}
            for u, o, w in zip(run.pairwise["user"], run.pairwise["order"], run.pairwise["winner"], strict=True)
        ],
        "adversarial": [
            {"user": int(u), "prompt_version": str(v), "label": None if o is None or pd.isna(o) else str(o)}
            for u, v, o in zip(
                run.adversarial["user"], run.adversarial["prompt_version"], run.adversarial["outcome"], strict=True
            )
        ],
    }
    return out, items


def _parse_ci(text: str) -> tuple[float | None, float | None]:
    """``"12.3 [4.5, 20.0]"`` -> (4.5, 20.0); ``n/a`` -> (None, None)."""
    if not isinstance(text, str) or "[" not in text:
        return None, None
    lo, hi = text.split("[", 1)[1].rstrip("]").split(",")
    return float(lo), float(hi)


def _share_ci_from(row: pd.Series) -> tuple[float, float | None, float | None]:
    lo, hi = _parse_ci(row["ours_95%_CI"])
    return float(row["ours_%"]), lo, hi
