"""Agreement between labelers and the SAER adjudication rules, as reusable pure functions.

A *labeler* is anything that assigns one label per case: a prompt version, a judge model, one
presentation order of a pairwise comparison, a human annotator. Two labelers are compared with
raw agreement and Cohen's quadratic weighted kappa over a fixed ordinal label order
(:func:`weighted_kappa`, the one kappa of two labelers in the package; :func:`weighted_kappa_ci` adds its CI, a
percentile bootstrap over cases; :func:`agreement` gives both with their CIs). Any number of labelers, with gaps, are
compared with Krippendorff's alpha (:func:`krippendorff_alpha`, nominal, ordinal or interval; its CI
:func:`krippendorff_alpha_ci`); :func:`fleiss_kappa` is Fleiss' nominal kappa for complete data. Missing labels
(``None``/NaN, e.g. an unparsed judge answer) are never imputed: the case is left out of that comparison and ``n``
says how many remain.

Every CI here takes ``clusters`` (one id per case, aligned with the labels given): when one unit appears as several
cases (the same (user, item) judged under several prompt templates), the bootstrap resamples the units, each with
all its cases (:func:`~recjudge_utils.metrics.intervals.bootstrap_distribution`), not the cases one by one. A
resample where the statistic is undefined (every label in it the same) is left out of the interval and counted in
the result's ``dropped``, never silently.

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

from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.intervals import bootstrap_ci, bootstrap_distribution, percentile_interval
from recjudge_utils.metrics.pairwise import TIE, conservative, is_missing

#: Pointwise categories from harshest to most lenient (the ordinal order used by kappa).
POINTWISE_LABELS: tuple[str, ...] = ("Poor Match", "Partial Match", "Good Match")


@dataclass(frozen=True)
class Kappa(Estimate):
    """A chance-corrected agreement (quadratic weighted kappa, Krippendorff's alpha) on ``n`` cases with its percentile
    bootstrap CI and, beside the estimate's fields, its bootstrap standard error ``se``; ``dropped``: the resamples
    where it was undefined, left out of both (out of ``n_boot``; 0 and 0 when no bootstrap was run)."""

    n: int = 0
    se: float = float("nan")
    dropped: int = 0
    n_boot: int = 0


def _bootstrap(ci: float) -> str:
    """How the intervals of this module are made, at level ``ci``: ``"95% percentile bootstrap"``."""
    return f"{ci:.0%} percentile bootstrap"


@dataclass(frozen=True)
class Agreement:
    """Raw agreement (a share, 0-1) and quadratic weighted kappa (with its bootstrap SE) between two labelers, each
    with its interval and ``n``, the cases both labelled."""

    raw: Estimate
    kappa: Kappa

    @property
    def n(self) -> int:
        """The cases both labelers labelled."""
        return self.raw.n or 0


def _kept(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray) -> list[int]:
    """The cases both labelers labelled."""
    if len(a) != len(b):
        raise ValueError(f"labelers must label the same cases: {len(a)} labels vs {len(b)} labels")
    return [i for i in range(len(a)) if not (is_missing(a[i]) or is_missing(b[i]))]


def _paired(a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray) -> tuple[list[Any], list[Any]]:
    a, b = list(a), list(b)
    keep = _kept(a, b)
    return [a[i] for i in keep], [b[i] for i in keep]


def _clusters_of(clusters: Sequence[Any] | None, keep: Sequence[int], n: int) -> list[Any] | None:
    """The cluster ids of the cases kept (``clusters``: one per case given, None: no clusters)."""
    if clusters is None:
        return None
    clusters = list(clusters)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster ids for {n} cases")
    return [clusters[i] for i in keep]


def _interval(value: float, n: int, boots: np.ndarray, ci: float) -> Kappa:
    """``value`` with the percentile interval and SE of its finite resamples, and how many were not."""
    kept = boots[np.isfinite(boots)]
    dropped = len(boots) - len(kept)
    if not len(kept):
        return Kappa(value, n=n, method=_bootstrap(ci), dropped=dropped, n_boot=len(boots))
    low, high = percentile_interval(kept, ci)
    return Kappa(value, low, high, n, _bootstrap(ci), se=float(np.std(kept)), dropped=dropped, n_boot=len(boots))


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
    clusters: Sequence[Any] | None = None,
) -> Kappa:
    """:func:`weighted_kappa` with its CI: the percentile bootstrap over cases, the one kappa CI of the book.

    The cases both labelers labelled are resampled with replacement (``clusters``, one id per case given: the
    clusters, each with all its cases) and kappa recomputed by the same formula; the SE is the standard deviation of
    the resampled kappas, and resamples where kappa is undefined are left out and counted (``dropped``). Why the
    bootstrap rather than statsmodels' asymptotic standard error (``cohens_kappa``): the book compares labelers on
    small samples (tens of SAER users; a few hundred pairs, fewer once unparsed answers are dropped), where the
    normal approximation can put a bound outside [-1, 1] and has no SE at all for a table with an empty row; the
    bootstrap needs no such approximation, stays within what kappa can be, and is the interval every other
    non-share statistic of the package uses (MAE, Q, paired differences), on the same resampled cases.
    """
    x, y = _codes(a, b, labels)
    k, n = len(labels), len(x)
    groups = _clusters_of(clusters, _kept(list(a), list(b)), len(a))
    value = _kappa_of_codes(x, y, k)
    if n < 2 or np.isnan(value):
        return Kappa(value, n=n, method=_bootstrap(ci))
    _, boots = bootstrap_distribution(
        (x, y), lambda p, q: _kappa_of_codes(p, q, k), n_boot=n_boot, seed=seed, clusters=groups
    )
    return _interval(value, n, boots, ci)


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
    clusters: Sequence[Any] | None = None,
) -> Agreement:
    """Raw agreement and quadratic kappa with percentile-bootstrap CIs (the same cases resampled for both; by
    ``clusters`` when given) and kappa's bootstrap SE (:func:`weighted_kappa_ci`)."""
    n = len(_codes(a, b, labels)[0])  # a label outside ``labels`` raises here
    if n == 0:
        return Agreement(Estimate(float("nan"), n=0), Kappa(float("nan"), n=0))
    raw = Estimate(*raw_agreement_ci(a, b, n_boot=n_boot, seed=seed, clusters=clusters), n, _bootstrap(0.95))
    return Agreement(raw, weighted_kappa_ci(a, b, labels, n_boot=n_boot, seed=seed, clusters=clusters))


def raw_agreement_ci(
    a: Sequence[Any],
    b: Sequence[Any],
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
) -> tuple[float, float, float]:
    """:func:`raw_agreement` with its percentile-bootstrap CI over the cases both labelled (by ``clusters`` when
    given, one id per case): (share, low, high); NaN, NaN, NaN without a case. A share is defined in every resample,
    so none is dropped."""
    keep = _kept(list(a), list(b))
    if not keep:
        return float("nan"), float("nan"), float("nan")
    x, y = _paired(a, b)
    code = {v: i for i, v in enumerate(dict.fromkeys([*x, *y]))}
    p, q = np.array([code[v] for v in x]), np.array([code[v] for v in y])
    groups = _clusters_of(clusters, keep, len(a))
    return bootstrap_ci((p, q), _share_equal, n_boot=n_boot, ci=ci, seed=seed, clusters=groups)


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


#: the distance metrics of Krippendorff's alpha this module computes
ALPHA_METRICS: tuple[str, ...] = ("nominal", "ordinal", "interval")


def krippendorff_alpha(
    labels_by_rater: Sequence[Sequence[Any]], labels: Sequence[Any], metric: str = "interval"
) -> tuple[float, np.ndarray]:
    """Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's alpha-reliability") of raters over cases,
    and the cases-by-labels count table it was computed from. A missing label (None/NaN) is left out and a case counts
    once two raters labelled it. alpha = 1 - D_o / D_e, the disagreement within cases over the disagreement of all
    labels paired at random; NaN when every label is the same. ``metric``, the squared distance delta^2(c, k) of two
    labels:

    * ``nominal``: 0 for the same label, else 1 (labels as categories). With every case labelled by all raters,
      nominal alpha = 1 - (1 - Fleiss' kappa) (n - 1) / n, n the labels counted;
    * ``ordinal``: labels ranked in the order of ``labels``, with no assumption on their spacing: delta(c, k) =
      sum of n_g over the labels g from c to k, minus (n_c + n_k) / 2, n_g the number of pairable values with label
      g (Krippendorff 2011). Two labels are as far apart as the values that lie between them, so a rarely
      used middle label brings its neighbours close. Equivalently: the interval metric on the labels' mid-ranks;
    * ``interval``: (position of c - position of k)^2, the positions in ``labels`` as numbers (ordered, equally
      spaced levels).

    Krippendorff's worked example with gaps (four observers, twelve units) gives 0.743 nominal, 0.815 ordinal and
    0.849 interval.
    """
    counts, _ = _alpha_counts(labels_by_rater, labels)
    return _alpha(counts, _checked(metric)), counts


def _checked(metric: str) -> str:
    if metric not in ALPHA_METRICS:
        raise ValueError(f"Krippendorff's alpha: metric {metric!r} is not one of {', '.join(ALPHA_METRICS)}")
    return metric


def _alpha_counts(labels_by_rater: Sequence[Sequence[Any]], labels: Sequence[Any]) -> tuple[np.ndarray, list[int]]:
    """The cases-by-labels count table of the cases two or more raters labelled, and those cases' positions."""
    code = {lab: i for i, lab in enumerate(labels)}
    cases = [[v for v in case if not is_missing(v)] for case in zip(*labels_by_rater, strict=True)]
    if unknown := {v for case in cases for v in case} - set(code):
        raise ValueError(f"Krippendorff's alpha: labels {sorted(map(str, unknown))} not in {list(labels)}")
    kept = [i for i, c in enumerate(cases) if len(c) >= 2]
    counts = np.array([np.bincount([code[v] for v in cases[i]], minlength=len(code)) for i in kept])
    return counts.reshape(-1, len(code)), kept


def _delta(total: np.ndarray, metric: str) -> np.ndarray:
    """delta^2 between every two labels, from the labels' pairable totals (which only the ordinal metric reads)."""
    if metric == "nominal":
        return 1.0 - np.eye(len(total))
    # ordinal: the mid-ranks, sum_{g <= c} n_g - n_c / 2; interval: the positions
    position = np.cumsum(total) - total / 2.0 if metric == "ordinal" else np.arange(len(total), dtype=float)
    return (position[:, None] - position[None, :]) ** 2


def _alpha(counts: np.ndarray, metric: str) -> float:
    pairable, per_case = counts.sum(), counts.sum(axis=1)
    total = counts.sum(axis=0).astype(float)
    delta = _delta(total, metric)
    expected = total @ delta @ total / (pairable * (pairable - 1)) if pairable > 1 else 0.0
    observed = np.sum(((counts @ delta) * counts).sum(axis=1) / (per_case - 1)) / max(pairable, 1)
    return float(1.0 - observed / expected) if expected > 0 else float("nan")


def krippendorff_alpha_ci(
    labels_by_rater: Sequence[Sequence[Any]],
    labels: Sequence[Any],
    metric: str = "interval",
    n_boot: int = 2000,
    ci: float = 0.95,
    seed: int = 0,
    clusters: Sequence[Any] | None = None,
) -> Kappa:
    """:func:`krippendorff_alpha` with its percentile-bootstrap CI over cases (SE: the resampled alphas' standard
    deviation), as :func:`weighted_kappa_ci` gives kappa's. ``clusters`` (one id per case given, aligned with the
    labels): resample the clusters, each with all its cases. The ordinal metric's distances are recomputed from each
    resample's own totals, as the statistic defines them. A resample where alpha is undefined (one label only) is left
    out of the interval and counted in ``dropped`` (of ``n_boot``). ``n``: the cases two or more raters labelled."""
    counts, kept = _alpha_counts(labels_by_rater, labels)
    metric = _checked(metric)
    value = _alpha(counts, metric)
    n = len(counts)
    groups = _clusters_of(clusters, kept, len(next(iter(labels_by_rater), [])))
    if n < 2 or np.isnan(value):
        return Kappa(value, n=n, method=_bootstrap(ci))
    _, boots = bootstrap_distribution(
        np.arange(n), lambda rows: _alpha(counts[rows], metric), n_boot, seed, clusters=groups
    )
    return _interval(value, n, boots, ci)


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
                "raw_agreement": res.raw.value,
                "raw_low": res.raw.low,
                "raw_high": res.raw.high,
                "kappa_w": res.kappa.value,
                "kappa_low": res.kappa.low,
                "kappa_high": res.kappa.high,
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
