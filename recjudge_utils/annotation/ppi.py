"""System estimates that use both the people's labels and the judge's: human-only, judge-only, prediction-powered.

Per system (stratum) and the kind's measure (:attr:`~recjudge_utils.annotation.kinds.Kind.measure`):

* **human-only**: the mean of the consensus values of the system's labelled tasks, with the normal (CLT) interval
  (``ppi_py.classical_mean_ci``, the interval PPI is compared with in its papers);
* **judge-only**: the mean of the judge's values over all the system's judged units, with no correction and no CI
  (it is as biased as the judge: more judgments do not remove the bias);
* **prediction-powered** (PPI++, Angelopoulos, Duchi & Zrnic 2023): ``ppi_py.ppi_mean_pointestimate`` and
  ``ppi_py.ppi_mean_ci`` with the power-tuning ``lam`` estimated from the data (``lam=None``; clipped to [0, 1], so a
  useless judge is weighted down to the human-only estimate), on the labelled tasks (human and judge values) and the
  system's other judged units (judge values). The labelled tasks must be a simple random sample of the system's
  judged units, which the stratified draw of :mod:`~recjudge_utils.annotation.sample` makes them. The units are a
  finite population sampled without replacement; PPI's interval treats them as an infinite one, which errs wide.

The **effective number of human labels** is n x (human-only width / prediction-powered width)^2: how many labels the
human-only interval would need to be as narrow (both widths scale as 1 / sqrt(n)). :func:`labels_needed_curve`
draws the labelled sample again at smaller and larger sizes (with replacement) and averages both widths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from recjudge_utils._extras import optional_imports
from recjudge_utils.annotation.agreement_with_people import consensus
from recjudge_utils.annotation.kinds import kind_named
from recjudge_utils.annotation.read_labels import Labels
from recjudge_utils.annotation.sample import AnnotationSample
from recjudge_utils.metrics.estimate import Estimate
from recjudge_utils.metrics.intervals import Seed, make_rng

with optional_imports("book"):
    import ppi_py
    from ppi_py.ppi import _calc_lam_glm  # the lam ppi_mean_ci tunes, to report it (ppi_py exports no function)

__all__ = [
    "ESTIMATE_COLUMNS",
    "ThreeEstimates",
    "estimate",
    "labels_needed_curve",
    "stratum_arrays",
    "system_estimates",
]

ESTIMATE_COLUMNS = [
    "system",
    "measure",
    "n_labelled",
    "n_judged",
    "human",
    "human_low",
    "human_high",
    "judge",
    "ppi",
    "ppi_low",
    "ppi_high",
    "lam",
    "effective_labels",
]


@dataclass(frozen=True)
class ThreeEstimates:
    """One system's three estimates: human-only with CI (``n``: the labelled tasks), judge-only without one (``n``: the
    judged units), prediction-powered with CI; ``lam``: PPI++'s tuned weight of the judge (0 = human-only, 1 = plain
    PPI); and the labels the judge's are worth."""

    human: Estimate
    judge: Estimate
    ppi: Estimate
    lam: float
    effective_labels: float

    def row(self) -> dict[str, float | int | None]:
        """The numbers of :data:`ESTIMATE_COLUMNS` after ``system`` and ``measure``."""
        return {
            "n_labelled": self.human.n,
            "n_judged": self.judge.n,
            "human": self.human.value,
            "human_low": self.human.low,
            "human_high": self.human.high,
            "judge": self.judge.value,
            "ppi": self.ppi.value,
            "ppi_low": self.ppi.low,
            "ppi_high": self.ppi.high,
            "lam": self.lam,
            "effective_labels": self.effective_labels,
        }


def _tuned_lam(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray) -> float:
    """PPI++'s variance-minimising lam for a mean, computed as ``ppi_py.ppi_mean_ci(lam=None)`` computes it (its
    gradients at the lam = 1 estimate, clipped to [0, 1]), so that the same lam is reported and used for the estimate
    and the interval; 0 when the judge's values do not vary (the formula divides by their variance)."""
    if np.var(np.concatenate([yhat, yhat_unlabelled])) == 0:
        return 0.0
    point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_unlabelled, lam=1)
    grads, grads_hat, grads_rest = (np.reshape(a - point, (-1, 1)) for a in (y, yhat, yhat_unlabelled))
    return float(np.squeeze(_calc_lam_glm(grads, grads_hat, grads_rest, np.eye(1), coord=None, clip=True)))


def estimate(y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray, ci: float = 0.95) -> ThreeEstimates:
    """The three estimates from the labelled tasks' human values ``y`` and judge values ``yhat`` and the judge's values
    on the system's other units ``yhat_unlabelled`` (NaN where fewer than 2 labelled tasks or no other unit)."""
    y, yhat, rest = (np.asarray(a, dtype=float) for a in (y, yhat, yhat_unlabelled))
    n, nan = len(y), float("nan")
    judge = Estimate(float(np.mean(np.concatenate([yhat, rest]))) if n + len(rest) else nan, n=n + len(rest))
    if n < 2:
        human = Estimate(float(np.mean(y)) if n else nan, n=n)
        return ThreeEstimates(human, judge, Estimate(nan, n=n + len(rest)), nan, nan)
    alpha = 1.0 - ci
    human_low, human_high = (float(b) for b in ppi_py.classical_mean_ci(y, alpha=alpha))
    human = Estimate(float(np.mean(y)), human_low, human_high, n, f"{ci:.0%} normal (CLT)")
    if not len(rest):  # every judged unit is labelled: the people's mean is the system's, nothing to add
        return ThreeEstimates(human, judge, replace(human, method=f"{ci:.0%} PPI++"), 0.0, float(n))
    lam = _tuned_lam(y, yhat, rest)
    point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=lam)))
    low, high = (float(np.squeeze(b)) for b in ppi_py.ppi_mean_ci(y, yhat, rest, alpha=alpha, lam=lam))
    human_width, ppi_width = human_high - human_low, high - low
    effective = n * (human_width / ppi_width) ** 2 if ppi_width > 0 else float("inf") if human_width > 0 else nan
    ppi = Estimate(point, low, high, n + len(rest), f"{ci:.0%} PPI++")
    return ThreeEstimates(human, judge, ppi, lam, float(effective))


def stratum_arrays(labels: Labels, sample: AnnotationSample, stratum: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(y, yhat, yhat_unlabelled) of one stratum: the consensus and judge values of the labelled tasks drawn in this
    stratum, and the judge values of its other units. A unit of this stratum drawn (and labelled) only in another
    stratum counts as unlabelled here: drawn with another probability, it would make the labelled part no longer a
    simple random sample of this stratum."""
    spec = kind_named(sample.kind)
    agreed = consensus(labels, sample.kind)
    members = sample.members[stratum]
    labelled = [t.task_id for t in sample.tasks if stratum in t.strata and t.task_id in agreed.index]
    done = set(labelled)
    y = np.array([spec.value(str(agreed[t])) for t in labelled])
    yhat = np.array([spec.value(sample.judge_labels[t]) for t in labelled])
    rest = np.array([spec.value(sample.judge_labels[t]) for t in members if t not in done])
    return y, yhat, rest


def system_estimates(labels: Labels, sample: AnnotationSample, ci: float = 0.95) -> pd.DataFrame:
    """One row per system (stratum): the three estimates of the kind's measure (:data:`ESTIMATE_COLUMNS`)."""
    measure = kind_named(sample.kind).measure
    rows = []
    for stratum in sorted(sample.members):
        est = estimate(*stratum_arrays(labels, sample, stratum), ci=ci)
        rows.append({"system": stratum, "measure": measure, **est.row()})
    return pd.DataFrame(rows, columns=ESTIMATE_COLUMNS)


def labels_needed_curve(
    y: np.ndarray,
    yhat: np.ndarray,
    yhat_unlabelled: np.ndarray,
    sizes: Sequence[int],
    reps: int = 200,
    ci: float = 0.95,
    seed: Seed = 0,
) -> pd.DataFrame:
    """CI width against the number of human labels: for each size, ``reps`` draws (with replacement) of that many
    labelled tasks, and the mean human-only and prediction-powered widths (columns n, human_width, ppi_width)."""
    y, yhat = np.asarray(y, dtype=float), np.asarray(yhat, dtype=float)
    if len(y) < 2:
        raise ValueError("the labels-needed curve needs at least 2 labelled tasks")
    rng = make_rng(seed)
    rows = []
    for size in sizes:
        if size < 2:
            raise ValueError(f"a size of at least 2 labels is needed, got {size}")
        widths = []
        for _ in range(reps):
            rows_drawn = (
                rng.integers(0, len(y), size) if isinstance(rng, np.random.Generator) else rng.randint(0, len(y), size)
            )
            est = estimate(y[rows_drawn], yhat[rows_drawn], yhat_unlabelled, ci=ci)
            widths.append((est.human.high - est.human.low, est.ppi.high - est.ppi.low))
        human_width, ppi_width = np.nanmean(np.array(widths), axis=0)
        rows.append({"n": int(size), "human_width": float(human_width), "ppi_width": float(ppi_width)})
    return pd.DataFrame(rows, columns=["n", "human_width", "ppi_width"])
