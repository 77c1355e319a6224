"""What notebook 4 shows about a SAER run: Tables 1-3 beside the paper, agreement between labelers, time and
cost, and statements computed from the run's frames."""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from recjudge_utils.answer_formats.saer_fields import CATEGORIES
from recjudge_utils.experiments.saer import ALGORITHMS, PAIRWISE_OUTCOMES, PAPER_CALLS, SaerRun
from recjudge_utils.metrics.pairwise import TIE
from recjudge_utils.protocols.adversarial import OUTCOMES
from recjudge_utils.protocols.context.saer import SUBSTITUTIONS
from recjudge_utils.protocols.saer import VERSION_NAMES, few_shot_answers, load_template
from recjudge_utils.reporting.paper import paper_table

__all__ = [
    "agreement_table",
    "context_lines",
    "copied_from_examples",
    "example_lists",
    "flagged_summary",
    "observations",
    "plot_table1",
    "substitutions_table",
    "table1",
    "table2",
    "table3",
    "time_cost",
    "unparsed_summary",
]


def _fmt(pt: float, lo: float, hi: float) -> str:
    if np.isnan(pt):
        return "n/a"
    return f"{pt:.1f} [{lo:.1f}, {hi:.1f}]"


def table1(run: SaerRun) -> pd.DataFrame:
    """Pointwise label distribution per algorithm (percent of parsed lists, 95% CI) beside the paper."""
    paper = paper_table("saer_table1").set_index(["algorithm", "category"])
    rows = []
    for r in run.labels.itertuples(index=False):
        ref = paper.loc[(r.algorithm, r.category)]
        rows.append(
            {
                "algorithm": r.algorithm,
                "category": r.category,
                "ours_%": r.pct,
                "ours_95%_CI": _fmt(r.pct, r.low, r.high),
                "n_parsed": r.n_parsed,
                "n_unparsed": r.n_unparsed,
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
                item = run.panel.lists[alg][int(u)][k - 1]
                counts[item] = counts.get(item, 0) + 1
        most = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        rows.append(
            {
                "algorithm": alg,
                "n_parsed": len(sub),
                "mean_flagged_per_list": float(sub["n_flagged"].mean()) if len(sub) else float("nan"),
                "lists_with_flags_%": 100 * float((sub["n_flagged"] > 0).mean()) if len(sub) else float("nan"),
                "most_flagged": "; ".join(f"{run.panel.catalogue.title(i)} (x{c})" for i, c in most) or "-",
            }
        )
    return pd.DataFrame(rows)


def table2(run: SaerRun) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(win/tie table beside the paper, consistency metrics). Rates are over parsed answers."""
    paper = paper_table("saer_table2").set_index("scope")
    rows = []
    for (_, r), paper_scope in zip(run.verdicts.iterrows(), ("SAER Raw", "SAER Adjudicated"), strict=True):
        out: dict[str, Any] = {"scope": r["scope"], "n_parsed": r["n_parsed"], "n_unparsed": r["n_unparsed"]}
        for key in PAIRWISE_OUTCOMES:
            out[f"{key}_%"] = r[f"{key}_%"]
            out[f"{key}_95%_CI"] = _fmt(r[f"{key}_%"], r[f"{key}_lo"], r[f"{key}_hi"])
        ref = paper.loc[paper_scope]
        out["paper_cooccurrence_win_%"] = ref["cooccurrence_win_pct"]
        out["paper_embedding_win_%"] = ref["embedding_win_pct"]
        out["paper_tie_%"] = ref["tie_pct"]
        rows.append(out)
    cons, first = run.position.loc["position consistency"], run.position.loc["named Set 1"]
    agree, n_both = int(cons["count"]), int(cons["n"])
    n_unparsed = int((run.pairwise["status"] != "parsed").sum())
    metrics = pd.DataFrame(
        [
            {
                "metric": "position consistency (both orders agree)",
                "ours": f"{agree}/{n_both} = " + _fmt(cons["pct"], cons["low"], cons["high"]) + " %",
                "paper": "176/200 = 88.0 %",
            },
            {
                "metric": "answers naming the first-shown list (Set 1)",
                "ours": _fmt(first["pct"], first["low"], first["high"]) + f" % of {int(first['n'])} parsed calls",
                "paper": "not reported",
            },
            {
                "metric": "unparsed pairwise answers",
                "ours": f"{n_unparsed}/{len(run.pairwise)}",
                "paper": "not reported",
            },
        ]
    )
    return pd.DataFrame(rows), metrics


def table3(run: SaerRun) -> pd.DataFrame:
    """Adversarial correct / wrong / tie per prompt version (percent of parsed), beside the paper."""
    paper = paper_table("saer_table3")
    paper_v = paper.dropna(subset=["prompt_version"]).set_index("prompt_version")
    rows = []
    for _, r in run.detection.iterrows():
        version = r["prompt_version"]
        out: dict[str, Any] = {
            "evaluator": f"{VERSION_NAMES[version]} prompt ({version})",
            "n_parsed": r["n_parsed"],
            "n_unparsed": r["n_unparsed"],
        }
        for outcome in OUTCOMES:
            out[f"{outcome}_%"] = r[f"{outcome}_%"]
            out[f"{outcome}_95%_CI"] = _fmt(r[f"{outcome}_%"], r[f"{outcome}_lo"], r[f"{outcome}_hi"])
        out["chose_Set_1_%"] = r["chose_Set_1_%"]
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
    """Raw agreement and quadratic weighted kappa (95% CIs) between every pair of labelers in the run (see
    :func:`recjudge_utils.experiments.saer.labeler_agreement`)."""
    ag = run.agreements
    out = ag[["task", "labeler_a", "labeler_b", "n_both_parsed", "raw_agreement_%"]].copy()
    out["raw_95%_CI"] = [_fmt(*v) for v in zip(ag["raw_agreement_%"], ag["raw_lo"], ag["raw_hi"], strict=True)]
    out["kappa_w"] = ag["kappa_w"]
    out["kappa_95%_CI"] = [
        "n/a" if np.isnan(lo) else f"[{lo:.2f}, {hi:.2f}]"
        for lo, hi in zip(ag["kappa_lo"], ag["kappa_hi"], strict=True)
    ]
    return out


def time_cost(run: SaerRun) -> pd.DataFrame:
    """Judge calls, tokens, wall time and cost of this run, an extrapolation to the paper's run size,
    and the paper's 30 minutes / $28 (Claude 4.5 Sonnet on Bedrock)."""
    frames = [run.pointwise, run.pairwise, run.adversarial]
    allr = pd.concat([f[["latency_s", "cache_hit", "prompt_tokens", "completion_tokens", "cost_usd"]] for f in frames])
    n_calls = len(allr)
    fresh = allr.loc[~allr["cache_hit"]]
    judge_s = sum(run.timings.get(f"judge {task}", 0.0) for task in ("pointwise", "pairwise", "adversarial"))
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
        ("whole run incl. data and recommenders", f"{sum(run.timings.values()) / 60:.2f} min", "not reported"),
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
    return pd.DataFrame(rows, columns=["quantity", f"ours ({run.judge_name})", "paper (Claude 4.5 Sonnet)"])


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


def context_lines(run: SaerRun) -> list[str]:
    """What this run showed the judge of each customer (the window and any cut) and whether a future was held out,
    counted from the run's contexts."""
    cfg, panel = run.config, run.panel
    ctxs = list(panel.contexts.values())
    liked, disliked = sum(c.n_liked for c in ctxs), sum(c.n_disliked for c in ctxs)
    shown_liked, shown_disliked = sum(len(c.history) for c in ctxs), sum(len(c.disliked) for c in ctxs)
    counts = (
        f"shown: {shown_liked} of {liked} liked and {shown_disliked} of {disliked} disliked items in the windows of "
        f"the {len(ctxs)} customers"
    )
    if cfg.max_history is None:
        lines = [
            f"Context: every item of each customer's {cfg.window_days}-day window (max_history=None), as the paper "
            f"compiles six months of purchase history; {counts}."
        ]
    else:
        lines = [
            f"Context: the {cfg.max_history} newest liked and the {cfg.max_history} newest disliked items of each "
            f"customer's {cfg.window_days}-day window (max_history={cfg.max_history}: a cut for a small judge's "
            f"context that the paper does not make; --scale paper shows the whole window); {counts}."
        ]
    if panel.heldout:
        lines.append(
            f"Held-out future: each customer's last {panel.heldout} interactions are held out of the context and of "
            "both recommenders' training, and the simulated judge's truth is read from them (a simulated-judge run "
            "only; the paper has no such split)."
        )
    else:
        lines.append(
            "Nothing held out: the judge reads each customer's history up to their last interaction and both "
            "recommenders train on every interaction (an LLM judge needs no truth)."
        )
    return lines


def example_lists(run: SaerRun, user: int | None = None) -> pd.DataFrame:
    """Side-by-side top-k lists of the two algorithms for one customer (first sampled by default)."""
    user = run.panel.users[0] if user is None else int(user)
    a, b = ALGORITHMS
    lists, catalogue = run.panel.lists, run.panel.catalogue
    return pd.DataFrame(
        {
            "rank": range(1, len(lists[a][user]) + 1),
            a: [catalogue.line(i) for i in lists[a][user]],
            b: [catalogue.line(i) for i in lists[b][user]],
        }
    )


def copied_from_examples(run: SaerRun, min_chars: int = 40) -> pd.DataFrame:
    """Per task: parsed answers whose REASONING repeats >= ``min_chars`` characters verbatim from one of the
    prompt's few-shot answers (a sign that a small judge parrots the examples instead of reading the lists)."""
    rows = []
    tasks = (("pointwise", run.pointwise, "pointwise"), ("pairwise", run.pairwise, "pairwise"))
    for task, frame, mode in (*tasks, ("adversarial", run.adversarial, "pairwise")):
        for version, sub in frame.groupby("prompt_version", sort=True):
            shots = few_shot_answers(load_template(run.panel.domain, mode, str(version)))
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
    adj = run.adjudicated
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
            t1.assign(source=f"ours ({run.judge_name})", pct=t1["ours_%"]),
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
    g.figure.suptitle(f"SAER Table 1: pointwise labels — {run.data_label}", y=1.04, fontsize=10)
    plt.close(g.figure)
    return g.figure
