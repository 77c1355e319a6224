"""Agreement between a five-level judge score and a five-level ground truth (paper: serendipity-llm-judge, §4.1).

Pure functions over arrays. A NaN prediction means the judge's answer could not be parsed: such pairs are
counted (``unparsed_rate``) and left out of MAE / accuracy / kappa, never replaced by a default. A summary is a long
frame, one row per measure (:data:`MEASURE_COLUMNS`: value, low, high, n), read one measure at a time
(:func:`measure_by`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.metrics.agreement import weighted_kappa_ci
from recjudge_utils.metrics.intervals import bootstrap_ci, wilson

__all__ = [
    "LEVELS",
    "MEASURES",
    "MEASURE_COLUMNS",
    "confusion_frame",
    "constant_predictions",
    "mae",
    "mae_unparsed_at_worst",
    "measure_by",
    "score_distribution",
    "summarize_predictions",
    "summarize_templates",
    "three_class",
    "unparsed_rate",
]

LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)
#: a summary's columns after its group columns: one row per measure, its interval (NaN: none) and the pairs behind it
MEASURE_COLUMNS = ("measure", "value", "low", "high", "n")
#: the measures of :func:`summarize_predictions`, in its order (the last two only with expected scores)
MEASURES = ("mae", "acc3", "kappa_qw", "unparsed_rate", "mean_pred", "mae_expected", "mae_argmax_same")
_CLASS_NAMES: dict[int, str] = {-1: "negative (<3)", 0: "neutral (=3)", 1: "positive (>3)"}


def _pair(pred: Sequence[float] | np.ndarray, truth: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(pred, dtype=float)
    t = np.asarray(truth, dtype=float)
    if p.shape != t.shape or p.ndim != 1:
        raise ValueError(f"pred and truth must be 1-D and aligned, got {p.shape} and {t.shape}")
    if np.isnan(t).any():
        raise ValueError("ground truth contains NaN")
    return p, t


def _parsed(pred: Sequence[float] | np.ndarray, truth: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p, t = _pair(pred, truth)
    keep = ~np.isnan(p)
    return p[keep], t[keep]


def three_class(x: Sequence[float] | np.ndarray) -> np.ndarray:
    """-1 (negative, < 3), 0 (neutral, == 3), +1 (positive, > 3); NaN stays NaN."""
    a = np.asarray(x, dtype=float)
    return np.where(np.isnan(a), np.nan, np.sign(a - 3.0))


def mae(pred: Sequence[float] | np.ndarray, truth: Sequence[float] | np.ndarray) -> float:
    """Mean absolute error over the parsed pairs (NaN predictions excluded); NaN when none is parsed."""
    p, t = _parsed(pred, truth)
    return float(np.mean(np.abs(p - t))) if len(p) else float("nan")


def mae_unparsed_at_worst(pred: Sequence[float] | np.ndarray, truth: Sequence[float] | np.ndarray) -> float:
    """Mean absolute error over every pair, an unparsed (NaN) prediction counted at the worst error the scale allows
    for its truth, ``max(g - 1, 5 - g)``: the selection key that cannot prefer a template for failing to answer.
    Equals :func:`mae` when every pair parsed; NaN when there are no pairs."""
    p, t = _pair(pred, truth)
    if not len(p):
        return float("nan")
    worst = np.maximum(t - LEVELS[0], LEVELS[-1] - t)
    return float(np.mean(np.where(np.isnan(p), worst, np.abs(p - t))))


def unparsed_rate(pred: Sequence[float] | np.ndarray) -> float:
    """Share of NaN (unparsed or failed) predictions."""
    p = np.asarray(pred, dtype=float)
    return float(np.isnan(p).mean()) if len(p) else float("nan")


def confusion_frame(
    pred: Sequence[float] | np.ndarray,
    truth: Sequence[float] | np.ndarray,
    labels: Sequence[int] = LEVELS,
    include_unparsed: bool = True,
) -> pd.DataFrame:
    """Counts with rows = ground truth g and columns = predicted score; an ``unparsed`` column counts NaNs.

    Predictions must be integer levels (round expected scores yourself if you want their confusion matrix).
    """
    p, t = _pair(pred, truth)
    labels = [int(v) for v in labels]
    ok = ~np.isnan(p)
    bad = set(np.unique(p[ok]).tolist()) - set(labels)
    bad |= set(np.unique(t).tolist()) - set(labels)
    if bad:
        raise ValueError(f"values {sorted(bad)} are not in labels {labels}")
    cols = [*labels, "unparsed"] if include_unparsed else labels
    mat = pd.DataFrame(0, index=pd.Index(labels, name="g (truth)"), columns=pd.Index(cols, name="predicted"))
    for ti, pi in zip(t.astype(int), p, strict=True):
        if np.isnan(pi):
            if include_unparsed:
                mat.loc[ti, "unparsed"] += 1
        else:
            mat.loc[ti, int(pi)] += 1
    return mat


def _mean_abs_err(p: np.ndarray, t: np.ndarray, axis: int = -1) -> Any:
    return np.mean(np.abs(p - t), axis=axis)


def _acc3(p: np.ndarray, t: np.ndarray, axis: int = -1) -> Any:
    return np.mean(np.sign(p - 3.0) == np.sign(t - 3.0), axis=axis)


def summarize_predictions(
    pred: Sequence[float] | np.ndarray,
    truth: Sequence[float] | np.ndarray,
    expected: Sequence[float] | np.ndarray | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One template's Table 1 as a long frame: one row per measure (columns :data:`MEASURE_COLUMNS`), in the order of
    :data:`MEASURES`.

    ``mae`` with its 95 % percentile bootstrap CI over the parsed pairs; ``acc3`` (three-class accuracy, a fraction)
    with its Wilson CI (a bootstrap one collapses when every answer agrees); ``kappa_qw`` (quadratic weighted kappa,
    labels 1..5) with the percentile bootstrap CI of :func:`~recjudge_utils.metrics.agreement.weighted_kappa_ci` over
    the same resampled pairs as the MAE; ``unparsed_rate``; ``mean_pred``; and with ``expected`` (logprob-weighted
    scores, NaN where unavailable) ``mae_expected`` and ``mae_argmax_same`` (the argmax MAE on the same pairs, for a
    fair comparison), without intervals. ``n`` is the pairs each rests on: every pair for ``unparsed_rate``, the
    pairs parsed with an expected score for the last two, the parsed pairs for the others.
    """
    p, t = _pair(pred, truth)
    ok = ~np.isnan(p)
    n, n_ok = len(p), int(ok.sum())
    nan = float("nan")
    mae_ci = acc3 = kappa_ci = (nan, nan, nan)
    mean_pred = nan
    if n_ok:
        pp, tt = p[ok], t[ok]
        mae_ci = bootstrap_ci((pp, tt), _mean_abs_err, n_boot=n_boot, seed=seed)
        acc3 = (float(_acc3(pp, tt)), *wilson(float(np.sum(np.sign(pp - 3.0) == np.sign(tt - 3.0))), n_ok))
        kappa = weighted_kappa_ci(tt.astype(int), pp.astype(int), LEVELS, n_boot=n_boot, seed=seed)
        kappa_ci = (kappa.value, kappa.low, kappa.high)
        mean_pred = float(pp.mean())
    rows = [
        ("mae", *mae_ci, n_ok),
        ("acc3", *acc3, n_ok),
        ("kappa_qw", *kappa_ci, n_ok),
        ("unparsed_rate", (n - n_ok) / n if n else nan, nan, nan, n),
        ("mean_pred", mean_pred, nan, nan, n_ok),
    ]
    if expected is not None:
        e, _ = _pair(expected, truth)
        both = ~np.isnan(e) & ok
        n_both = int(both.sum())
        rows += [
            ("mae_expected", float(_mean_abs_err(e[both], t[both])) if n_both else nan, nan, nan, n_both),
            ("mae_argmax_same", float(_mean_abs_err(p[both], t[both])) if n_both else nan, nan, nan, n_both),
        ]
    return pd.DataFrame(rows, columns=list(MEASURE_COLUMNS)).astype({"value": float, "low": float, "high": float})


def summarize_templates(
    scores: Mapping[str, pd.DataFrame],
    truth: Sequence[float] | pd.Series,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Table 1 for several templates, from frames returned by ``SerendipityJudge.score``: :func:`summarize_predictions`
    of each, a ``template`` column first (one row per template and measure, the templates in ``scores``' order).

    ``truth`` is aligned with the frames' rows. What the templates used (calls, tokens, cost, judge time) is
    :func:`recjudge_utils.judge.usage.template_usage`.
    """
    t = np.asarray(truth, dtype=float)
    frames = []
    for name, frame in scores.items():
        if len(frame) != len(t):
            raise ValueError(f"template {name!r}: {len(frame)} scores for {len(t)} truths")
        expected = frame["expected_score"].to_numpy(dtype=float) if "expected_score" in frame else None
        summary = summarize_predictions(frame["score"].to_numpy(dtype=float), t, expected, n_boot, seed)
        frames.append(summary.assign(template=name)[["template", *MEASURE_COLUMNS]])
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["template", *MEASURE_COLUMNS])


def measure_by(summary: pd.DataFrame, measure: str, by: str) -> pd.DataFrame:
    """One measure's rows of a long summary (value, low, high, n), indexed by the group column ``by`` in the
    summary's order: the wide view a table or a figure of that measure reads."""
    return summary.loc[summary["measure"] == measure].set_index(by)[["value", "low", "high", "n"]]


def constant_predictions(truth: Sequence[float] | np.ndarray, value: int | str = "majority") -> np.ndarray:
    """A constant-score baseline: ``value`` in 1..5, or ``"majority"`` (the most frequent truth level,
    ties to the lower level). Compare a judge against this before believing it learned anything."""
    t = np.asarray(truth, dtype=float)
    if value == "majority":
        levels, counts = np.unique(t, return_counts=True)
        value = int(levels[np.argmax(counts)])
    if int(value) not in LEVELS:
        raise ValueError(f"constant value must be in {LEVELS} or 'majority'")
    return np.full(len(t), float(value))


def score_distribution(scores: Mapping[str, pd.DataFrame], truth: Sequence[float] | np.ndarray) -> pd.DataFrame:
    """Long frame for plotting: source ("g (truth)" or template), score ("1".."5" or "unparsed"), count, share."""
    cats = [*(str(v) for v in LEVELS), "unparsed"]
    rows = []

    def add(source: str, values: np.ndarray) -> None:
        lab = np.where(np.isnan(values), "unparsed", np.char.mod("%d", np.nan_to_num(values).astype(int)))
        counts = pd.Series(lab).value_counts().reindex(cats, fill_value=0)
        for cat, c in counts.items():
            rows.append({"source": source, "score": cat, "count": int(c), "share": c / len(values)})

    add("g (truth)", np.asarray(truth, dtype=float))
    for name, frame in scores.items():
        add(name, frame["score"].to_numpy(dtype=float))
    return pd.DataFrame(rows)
