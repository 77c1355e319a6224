"""Agreement between labelers and the SAER adjudication rules, as reusable pure functions.

A *labeler* is anything that assigns one label per case: a prompt version, a judge model, one
presentation order of a pairwise comparison, a human annotator. Two labelers are compared with
raw agreement and Cohen's quadratic weighted kappa over a fixed ordinal label order
(:func:`weighted_kappa`, the one kappa of two labelers in the package; :func:`weighted_kappa_ci` adds its CI, a
percentile bootstrap over cases; :func:`agreement` gives both with their CIs). Three or more labelers of the same
cases are compared with :func:`fleiss_kappa`. Missing labels (``None``/NaN, e.g. an unparsed judge answer) are
never imputed: the case is left out of that comparison and ``n`` says how many remain.

Adjudication rules from the SAER paper (Section 3.4):

* pointwise, *strict*: when labelers disagree the harsher label wins (Good vs Poor -> Poor);
* pairwise, *conservative*: when labelers (or the two presentation orders) prefer different
  sides, the verdict is a tie.

Human labels CSV schema (``load_human_labels``), one row per (case, annotator)::

    user,algorithm,annotator,label
    17,co-occurrence,A,Partial Match        # task "pointwise": label in POINTWISE_LABELS
    17,,A,co-occurrence                      # task "pairwise": label = winning algorithm or "Tie"

``user`` is the customer id used by the run, ``algorithm`` names the list for pointwise rows
(empty for pairwise rows), ``annotator`` is any string, ``label`` the annotator's verdict.
Lines starting with ``#`` are comments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.metrics.intervals import bootstrap_ci, bootstrap_distribution, percentile_interval
from recjudge_utils.metrics.pairwise import TIE, conservative, is_missing

#: Pointwise categories from harshest to most lenient (the ordinal order used by kappa).
POINTWISE_LABELS: tuple[str, ...] = ("Poor Match", "Partial Match", "Good Match")


@dataclass(frozen=True)
class Kappa:
    """Quadratic weighted kappa on ``n`` cases with its bootstrap standard error and percentile CI."""

    value: float
    se: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Agreement:
    """Raw agreement and quadratic weighted kappa between two labelers on ``n`` shared cases."""

    n: int
    raw: float
    kappa: float
    raw_ci: tuple[float, float] = (float("nan"), float("nan"))
    kappa_ci: tuple[float, float] = (float("nan"), float("nan"))
    kappa_se: float = float("nan")


def _paired(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray) -> tuple[list[Any], list[Any]]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"labelers must label the same cases: {len(a)} labels vs {len(b)} labels")
    keep = [i for i in range(len(a)) if not (is_missing(a[i]) or is_missing(b[i]))]
    return [a[i] for i in keep], [b[i] for i in keep]


def _share_equal(p: np.ndarray, q: np.ndarray, axis: int = -1) -> Any:
    return np.mean(p == q, axis=axis)


def _codes(
    a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray, labels: Sequence[Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``labels`` of the cases both labelers labelled; a label outside ``labels`` raises ValueError."""
    x, y = _paired(a, b)
    code = {lab: i for i, lab in enumerate(labels)}
    unknown = (set(x) | set(y)) - set(code)
    if unknown:
        raise ValueError(f"weighted kappa: labels {sorted(map(str, unknown))} not in {list(labels)}")
    return np.array([code[v] for v in x], dtype=np.intp), np.array([code[v] for v in y], dtype=np.intp)


def _kappa_of_codes(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """The formula: quadratic weighted kappa of integer codes 0..k-1, NaN when undefined.

    The arithmetic is scikit-learn's ``cohen_kappa_score`` step for step (so the point estimates the chapters
    reported before stay the same to the last bit), on a ``bincount`` confusion table, fast enough to bootstrap.
    """
    confusion = np.bincount(x * k + y, minlength=k * k).reshape(k, k).astype(np.float64)
    sum0, sum1 = confusion.sum(axis=0), confusion.sum(axis=1)
    total = sum0.sum()
    if total == 0:
        return float("nan")
    expected = np.outer(sum0, sum1) / total
    weights = np.zeros((k, k)) + np.arange(k)
    weights = (weights - weights.T) ** 2
    denominator = np.sum(weights * expected)
    if denominator == 0:  # both labelers gave one and the same label to every case
        return float("nan")
    return float(1 - np.sum(weights * confusion) / denominator)


def weighted_kappa(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray, labels: Sequence[Any]) -> float:
    """Cohen's quadratic weighted kappa between two labelers over the ordered label set ``labels``.

    Cases either labeler left unlabelled (None/NaN) are dropped, never imputed. Returns NaN when kappa is undefined
    (no case left, or both labelers always give one and the same label); a label outside ``labels`` raises ValueError.
    """
    x, y = _codes(a, b, labels)
    return _kappa_of_codes(x, y, len(labels))


def weighted_kappa_ci(
    a: Sequence[Any] | np.ndarray,
    b: Sequence[Any] | np.ndarray,
    labels: Sequence[Any],
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> Kappa:
    """:func:`weighted_kappa` with its CI: the percentile bootstrap over cases, the one kappa CI of the book.

    The cases both labelers labelled are resampled with replacement and kappa recomputed by the same formula; the SE
    is the standard deviation of the resampled kappas, and resamples where kappa is undefined are left out. Why the
    bootstrap rather than statsmodels' asymptotic standard error (``cohens_kappa``): the book compares labelers on
    small samples (tens of SAER users; a few hundred pairs, fewer once unparsed answers are dropped), where the
    normal approximation can put a bound outside [-1, 1] and has no SE at all for a table with an empty row; the
    bootstrap needs no such approximation, stays within what kappa can be, and is the interval every other
    non-share statistic of the package uses (MAE, Q, paired differences), on the same resampled cases.
    """
    x, y = _codes(a, b, labels)
    k, n = len(labels), len(x)
    value = _kappa_of_codes(x, y, k)
    nan = float("nan")
    if n < 2 or np.isnan(value):
        return Kappa(value, nan, nan, nan, n)
    _, boots = bootstrap_distribution((x, y), lambda p, q: _kappa_of_codes(p, q, k), n_boot=n_boot, seed=seed)
    boots = boots[np.isfinite(boots)]
    if not len(boots):
        return Kappa(value, nan, nan, nan, n)
    low, high = percentile_interval(boots, ci)
    return Kappa(value, float(np.std(boots)), low, high, n)


def raw_agreement(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Share of cases (both labelled) where the two labelers give the same label; NaN if none."""
    x, y = _paired(a, b)
    if not x:
        return float("nan")
    return float(np.mean([p == q for p, q in zip(x, y, strict=True)]))


def agreement(
    a: Sequence[Any],
    b: Sequence[Any],
    labels: Sequence[Any],
    n_boot: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Raw agreement and quadratic kappa with percentile-bootstrap CIs (the same cases resampled for both) and
    kappa's bootstrap SE (:func:`weighted_kappa_ci`)."""
    x, y = _codes(a, b, labels)
    n = len(x)
    if n == 0:
        return Agreement(0, float("nan"), float("nan"))
    raw_pt, raw_lo, raw_hi = bootstrap_ci((x, y), _share_equal, n_boot=n_boot, seed=seed)
    k = weighted_kappa_ci(a, b, labels, n_boot=n_boot, seed=seed)
    return Agreement(n=n, raw=raw_pt, kappa=k.value, raw_ci=(raw_lo, raw_hi), kappa_ci=(k.low, k.high), kappa_se=k.se)


def fleiss_kappa(labels_by_rater: Sequence[Sequence[Any]], labels: Sequence[Any]) -> float:
    """Fleiss' kappa of raters who each labelled every case (Fleiss 1971; the book uses it for three or more), over
    the categories ``labels`` (nominal: their order does not matter).

    ``labels_by_rater`` holds one sequence of labels per rater, aligned by case. A case any rater left unlabelled
    (None/NaN) is dropped, never imputed; a label outside ``labels`` raises ValueError. With m raters, n_ij the
    raters who put case i in category j, p_j the share of all labels in category j: P_i = (sum_j n_ij^2 - m) /
    (m (m - 1)), kappa = (mean P_i - sum_j p_j^2) / (1 - sum_j p_j^2) (statsmodels' ``fleiss_kappa``, method
    "fleiss"). NaN when no case is left or every label is the same (chance agreement is then 1).
    """
    raters = [list(r) for r in labels_by_rater]
    if len(raters) < 2:
        raise ValueError("Fleiss' kappa needs at least two raters")
    n = len(raters[0])
    if any(len(r) != n for r in raters):
        raise ValueError("all raters must label the same cases")
    cases = [case for case in zip(*raters, strict=True) if not any(is_missing(v) for v in case)]
    code = {lab: i for i, lab in enumerate(labels)}
    unknown = {v for case in cases for v in case} - set(code)
    if unknown:
        raise ValueError(f"Fleiss' kappa: labels {sorted(map(str, unknown))} not in {list(labels)}")
    if not cases:
        return float("nan")
    k, m = len(labels), len(raters)
    codes = np.array([[code[v] for v in case] for case in cases], dtype=np.intp)
    counts = np.stack([np.bincount(row, minlength=k) for row in codes]).astype(np.float64)
    p_case = ((counts**2).sum(axis=1) - m) / (m * (m - 1))
    p_category = counts.sum(axis=0) / counts.sum()
    chance = float(np.sum(p_category**2))
    if chance >= 1.0:
        return float("nan")
    return float((p_case.mean() - chance) / (1.0 - chance))


def krippendorff_alpha(
    labels_by_rater: Sequence[Sequence[Any]], labels: Sequence[Any], metric: str = "interval"
) -> tuple[float, np.ndarray]:
    """Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability") of raters over cases,
    and the cases-by-labels count table it was computed from. A missing label (None/NaN) is left out and a case counts
    once two raters labelled it. ``metric``: "nominal" (labels as categories) or "interval" (their positions in
    ``labels`` as numbers: ordered, equally spaced levels). alpha = 1 - D_o / D_e, the disagreement within cases over
    the disagreement of all labels paired at random; NaN when every label is the same. With every case labelled by all
    raters, nominal alpha = 1 - (1 - Fleiss' kappa) (n - 1) / n, n the labels counted."""
    code = {lab: i for i, lab in enumerate(labels)}
    cases = [[v for v in case if not is_missing(v)] for case in zip(*labels_by_rater, strict=True)]
    if unknown := {v for case in cases for v in case} - set(code):
        raise ValueError(f"Krippendorff's alpha: labels {sorted(map(str, unknown))} not in {list(labels)}")
    cases = [[code[v] for v in case] for case in cases]
    counts = np.array([np.bincount(c, minlength=len(code)) for c in cases if len(c) >= 2]).reshape(-1, len(code))
    return _alpha(counts, metric), counts


def _alpha(counts: np.ndarray, metric: str) -> float:
    k = np.arange(counts.shape[1], dtype=float)
    delta = (k[:, None] - k[None, :]) ** 2 if metric == "interval" else 1.0 - np.eye(len(k))
    pairable, per_case = counts.sum(), counts.sum(axis=1)
    total = counts.sum(axis=0)
    expected = total @ delta @ total / (pairable * (pairable - 1)) if pairable > 1 else 0.0
    observed = np.sum(np.einsum("ck,kl,cl->c", counts, delta, counts) / (per_case - 1)) / max(pairable, 1)
    return float(1.0 - observed / expected) if expected > 0 else float("nan")


def krippendorff_alpha_ci(
    labels_by_rater: Sequence[Sequence[Any]],
    labels: Sequence[Any],
    metric: str = "interval",
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
) -> Kappa:
    """:func:`krippendorff_alpha` with its percentile-bootstrap CI over cases (resamples where alpha is undefined left
    out; SE: the resampled alphas' standard deviation), as :func:`weighted_kappa_ci` gives kappa's. ``n``: the cases
    two or more raters labelled."""
    value, counts = krippendorff_alpha(labels_by_rater, labels, metric)
    nan, n = float("nan"), len(counts)
    if n < 2 or np.isnan(value):
        return Kappa(value, nan, nan, nan, n)
    _, boots = bootstrap_distribution(np.arange(n), lambda rows: _alpha(counts[rows], metric), n_boot, seed)
    low, high = percentile_interval(boots, ci)
    return Kappa(value, float(np.nanstd(boots)), low, high, n)


def strict_adjudicate(*labelers: Sequence[Any], order: Sequence[str] = POINTWISE_LABELS) -> list[Any]:
    """Per case, the harshest label any labeler gave (``order`` runs harshest first).

    A case with any missing label stays missing (None): the consensus of an incomplete panel is unknown.
    """
    if not labelers:
        raise ValueError("strict_adjudicate needs at least one labeler")
    n = len(labelers[0])
    if any(len(lab) != n for lab in labelers):
        raise ValueError("all labelers must label the same cases")
    rank = {lab: i for i, lab in enumerate(order)}
    out: list[Any] = []
    for case in zip(*labelers, strict=True):
        if any(is_missing(v) for v in case):
            out.append(None)
            continue
        unknown = [v for v in case if v not in rank]
        if unknown:
            raise ValueError(f"label {unknown[0]!r} not in {list(order)}")
        out.append(min(case, key=rank.__getitem__))
    return out


def pairwise_order(first: str, second: str, tie: str = TIE) -> tuple[str, str, str]:
    """Ordinal order for kappa on pairwise verdicts: ``second`` wins < tie < ``first`` wins."""
    return (second, tie, first)


# -- human labels -------------------------------------------------------------------------------
HUMAN_COLUMNS = ("user", "algorithm", "annotator", "label")


def load_human_labels(path: str | Path, task: str, algorithms: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a human-label CSV (schema in the module docstring) and validate it for ``task``.

    ``task`` is ``"pointwise"`` (labels must be POINTWISE_LABELS) or ``"pairwise"`` (labels must be
    one of ``algorithms`` or "Tie"). Returns the rows with columns user, algorithm, annotator, label.
    """
    frame = pd.read_csv(path, comment="#", dtype={"algorithm": str, "annotator": str, "label": str})
    return _validate_human_labels(frame, task, algorithms, source=str(path))


def _validate_human_labels(
    frame: pd.DataFrame, task: str, algorithms: Sequence[str] | None = None, source: str = "human labels"
) -> pd.DataFrame:
    """Check columns, label values and duplicates; raise ValueError naming the offending row."""
    missing = set(HUMAN_COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"{source}: missing columns {sorted(missing)} (need {list(HUMAN_COLUMNS)})")
    if task not in ("pointwise", "pairwise"):
        raise ValueError(f"task must be 'pointwise' or 'pairwise', not {task!r}")
    out = frame.loc[:, list(HUMAN_COLUMNS)].copy()
    out["user"] = out["user"].astype("int64")
    out["annotator"] = out["annotator"].astype(str)
    out["label"] = out["label"].astype(str).str.strip()
    out["algorithm"] = out["algorithm"].fillna("").astype(str).str.strip()
    if task == "pointwise":
        allowed = set(POINTWISE_LABELS)
        if (out["algorithm"] == "").any():
            row = int(np.flatnonzero((out["algorithm"] == "").to_numpy())[0])
            raise ValueError(f"{source}: row {row + 1}: pointwise rows need an algorithm")
    else:
        if algorithms is None:
            raise ValueError("pairwise human labels need the algorithm names")
        allowed = {*algorithms, TIE}
    bad = ~out["label"].isin(sorted(allowed))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{source}: row {row + 1}: label {out['label'].iloc[row]!r} not in {sorted(allowed)}")
    keys = ["user", "algorithm", "annotator"]
    dup = out.duplicated(keys)
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise ValueError(f"{source}: row {row + 1}: duplicate label for {out.loc[out.index[row], keys].to_dict()}")
    return out.reset_index(drop=True)


def compare_with_humans(
    judge: pd.DataFrame,
    humans: pd.DataFrame,
    labels: Sequence[str],
    task: str,
    judge_name: str = "judge",
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Agreement rows: each annotator pair, the judge vs each annotator, the judge vs the consensus.

    ``judge`` has columns user, algorithm (pointwise; "" for pairwise) and label. The consensus is
    the strict adjudication (pointwise) or the conservative merge (pairwise) of all annotators, as
    in the paper's Tables 1-2. Only cases labelled by every annotator and the judge count.
    """
    keys = ["user", "algorithm"]
    judge = judge.assign(algorithm=judge["algorithm"].fillna("").astype(str))
    wide = humans.pivot(index=keys, columns="annotator", values="label")
    annotators = list(wide.columns)
    merged = wide.join(judge.set_index(keys)["label"].rename("__judge__"), how="inner")
    rows = []

    def add(name_a: str, name_b: str, a: Sequence[Any], b: Sequence[Any]) -> None:
        res = agreement(a, b, labels, n_boot=n_boot, seed=seed)
        rows.append(
            {
                "labeler_a": name_a,
                "labeler_b": name_b,
                "n": res.n,
                "raw_agreement": res.raw,
                "raw_low": res.raw_ci[0],
                "raw_high": res.raw_ci[1],
                "kappa_w": res.kappa,
                "kappa_low": res.kappa_ci[0],
                "kappa_high": res.kappa_ci[1],
            }
        )

    for i, a in enumerate(annotators):
        for b in annotators[i + 1 :]:
            add(f"human {a}", f"human {b}", merged[a].tolist(), merged[b].tolist())
    for a in annotators:
        add(judge_name, f"human {a}", merged["__judge__"].tolist(), merged[a].tolist())
    cols = [merged[a].tolist() for a in annotators]
    if task == "pointwise":
        consensus = strict_adjudicate(*cols, order=labels)
        rule = "strict adjudication"
    else:
        consensus = conservative(*cols)
        rule = "conservative merge"
    add(judge_name, f"human consensus ({rule})", merged["__judge__"].tolist(), consensus)
    return pd.DataFrame(rows)
