"""Krippendorff's alpha and its bootstrap CI (chapter 6's agreement between judges and among a panel's members):
Krippendorff's own worked example, the ``krippendorff`` package (nominal, ordinal, interval), statsmodels' Fleiss'
kappa for complete nominal data, scipy's percentile bootstrap, and by simulation the cluster bootstrap that chapter 6
needs where templates repeat a (user, item): wider than the row bootstrap on duplicated rows, and near 95 % coverage
of a known alpha where the row bootstrap falls short."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats import inter_rater

from recjudge_utils.metrics.agreement import _alpha, krippendorff_alpha, krippendorff_alpha_ci, weighted_kappa_ci

LEVELS = [1, 2, 3, 4, 5]
N = None
#: Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: four observers, twelve units, gaps
EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def test_krippendorffs_worked_example_gives_his_values() -> None:
    nominal, counts = krippendorff_alpha(EXAMPLE, LEVELS, "nominal")
    assert round(nominal, 3) == 0.743
    assert round(krippendorff_alpha(EXAMPLE, LEVELS, "ordinal")[0], 3) == 0.815
    assert round(krippendorff_alpha(EXAMPLE, LEVELS, "interval")[0], 3) == 0.849
    assert counts.shape == (11, 5) and counts.sum() == 40  # unit 12 has one value: not pairable, left out


def test_nominal_alpha_on_complete_data_is_statsmodels_fleiss_kappa_corrected() -> None:
    rng = np.random.default_rng(3)
    for raters, cases in ((3, 40), (4, 25), (5, 200)):
        truth = rng.integers(0, 5, cases)
        codes = np.clip(truth[:, None] + rng.integers(-1, 2, (cases, raters)), 0, 4)
        fleiss = inter_rater.fleiss_kappa(inter_rater.aggregate_raters(codes, n_cat=5)[0], method="fleiss")
        n = raters * cases
        alpha, _ = krippendorff_alpha([list(codes[:, j] + 1) for j in range(raters)], LEVELS, "nominal")
        assert alpha == pytest.approx(1 - (1 - fleiss) * (n - 1) / n, abs=1e-12)


def test_the_interval_is_scipys_percentile_bootstrap_over_cases() -> None:
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, 60)
    raters = [list(np.clip(truth + rng.integers(-1, 2, 60), 1, 5)) for _ in range(3)]
    got = krippendorff_alpha_ci(raters, LEVELS, n_boot=500, seed=11)
    value, _ = krippendorff_alpha(raters, LEVELS)

    def alpha_of(rows: np.ndarray) -> float:  # the raters' labels of the resampled cases
        return krippendorff_alpha([[labels[r] for r in rows] for labels in raters], LEVELS)[0]

    ref = stats.bootstrap((np.arange(60),), alpha_of, n_resamples=500, vectorized=False, method="percentile",
                          random_state=np.random.default_rng(11))  # fmt: skip
    assert got.value == value and got.n == 60
    assert (got.low, got.high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))
    assert got.low < value < got.high and got.se > 0


def test_perfect_agreement_one_label_and_unknown_labels() -> None:
    same = [[1, 2, 3, 4, 5, 1], [1, 2, 3, 4, 5, 1], [1, 2, 3, 4, 5, None]]
    k = krippendorff_alpha_ci(same, LEVELS)
    assert (k.value, k.low, k.high, k.n) == (1.0, 1.0, 1.0, 6)
    assert math.isnan(krippendorff_alpha([[2, 2], [2, 2]], LEVELS)[0])  # one label everywhere
    assert math.isnan(krippendorff_alpha_ci([[1, None], [None, 2]], LEVELS).value)  # no case labelled twice
    with pytest.raises(ValueError, match="not in"):
        krippendorff_alpha([[1, 6], [1, 2]], LEVELS)


def test_the_ordinal_metric_by_hand_from_the_marginal_counts() -> None:
    """Krippendorff's ordinal delta(c, k) = sum_{g=c..k} n_g - (n_c + n_k) / 2 from the pairable values' totals, here
    written out cell by cell (no mid-ranks), on a small table with a rarely used middle label."""
    raters = [["lo", "lo", "mid", "hi", "hi", "hi"], ["lo", "mid", "hi", "hi", "hi", "hi"]]
    labels = ["lo", "mid", "hi"]
    counts = np.array([[2, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 2], [0, 0, 2], [0, 0, 2]])
    n_g = counts.sum(axis=0)  # 3, 2, 7 of 12 pairable values
    delta = np.zeros((3, 3))
    for c in range(3):
        for k in range(3):
            lo, hi = min(c, k), max(c, k)
            delta[c, k] = (n_g[lo : hi + 1].sum() - (n_g[c] + n_g[k]) / 2) ** 2
    assert delta[0, 2] == (12 - (3 + 7) / 2) ** 2 and delta[0, 1] == (5 - (3 + 2) / 2) ** 2
    n = counts.sum()
    observed = sum(counts[u] @ delta @ counts[u] / (counts[u].sum() - 1) for u in range(len(counts))) / n
    expected = n_g @ delta @ n_g / (n * (n - 1))
    alpha, table = krippendorff_alpha(raters, labels, "ordinal")
    assert (table == counts).all() and alpha == pytest.approx(1 - observed / expected, abs=1e-12)
    # ordinal alpha spaces the labels by their use (mid-ranks 1.5, 4, 8.5): not the interval metric's 0, 1, 2
    assert alpha != pytest.approx(krippendorff_alpha(raters, labels, "interval")[0])
    with pytest.raises(ValueError, match="not one of nominal, ordinal, interval"):
        krippendorff_alpha(raters, labels, "ratio")


@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval"])
def test_alpha_is_the_krippendorff_packages_with_gaps(metric: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(5)
    for raters, cases in ((2, 30), (3, 50), (5, 120)):
        truth = rng.integers(1, 6, cases)
        data = np.clip(truth + rng.integers(-1, 2, (raters, cases)), 1, 5).astype(float)
        data[rng.random(data.shape) < 0.15] = np.nan  # gaps: unlabelled cases, and some cases labelled once
        got, _ = krippendorff_alpha([[None if np.isnan(v) else int(v) for v in row] for row in data], LEVELS, metric)
        ref = krippendorff.alpha(reliability_data=data, value_domain=LEVELS, level_of_measurement=metric)
        assert got == pytest.approx(ref, abs=1e-10)


def test_undefined_resamples_are_counted_not_silently_dropped() -> None:
    """Five cases where both raters say 3 and one where they differ: a resample without that case has one label only
    and no alpha (nor kappa). The interval is the defined resamples', and ``dropped`` says how many were not."""
    a, b = [3, 3, 3, 3, 3, 3], [3, 3, 3, 3, 3, 4]
    alpha = krippendorff_alpha_ci([a, b], LEVELS, "ordinal", n_boot=400, seed=1)
    ref = stats.bootstrap((np.arange(6),), lambda rows: krippendorff_alpha([[a[r] for r in rows], [b[r] for r in rows]],
                          LEVELS, "ordinal")[0], n_resamples=400, vectorized=False, method="percentile",
                          random_state=np.random.default_rng(1)).bootstrap_distribution  # fmt: skip
    assert alpha.n_boot == 400 and alpha.dropped == int(np.isnan(ref).sum()) and 60 < alpha.dropped < 250
    assert (alpha.low, alpha.high) == pytest.approx(tuple(np.quantile(ref[~np.isnan(ref)], [0.025, 0.975])))
    kappa = weighted_kappa_ci(a, b, LEVELS, n_boot=400, seed=1)
    assert kappa.n_boot == 400 and 60 < kappa.dropped < 250
    full = krippendorff_alpha_ci(EXAMPLE, LEVELS, "ordinal", n_boot=300)
    assert (full.dropped, full.n_boot) == (0, 300)


def _panel_cases(rng: np.random.Generator, n_clusters: int, per: int = 3, raters: int = 3) -> np.ndarray:
    """Three raters' 0-4 levels of ``n_clusters`` (user, item) pairs, each judged under ``per`` templates: a pair's
    true level and each rater's leaning on that pair are shared by its templates, the rest is per template. Cases x
    raters, the templates one after the other (case i belongs to pair i % n_clusters)."""
    truth = rng.choice(5, n_clusters, p=[0.1, 0.2, 0.3, 0.25, 0.15])
    leaning = rng.normal(0, 0.7, (n_clusters, raters))
    templates = [truth[:, None] + leaning + rng.normal(0, 0.6, (n_clusters, raters)) for _ in range(per)]
    return np.clip(np.rint(np.concatenate(templates)), 0, 4).astype(int)


def test_the_cluster_bootstrap_is_wider_than_the_row_bootstrap_on_duplicated_rows() -> None:
    rng = np.random.default_rng(2)
    once = _panel_cases(rng, 60, per=1)
    raters = [list(np.tile(once[:, j] + 1, 4)) for j in range(3)]  # every pair four times, as four templates would
    clusters = list(np.tile(np.arange(60), 4))
    rows = krippendorff_alpha_ci(raters, LEVELS, "ordinal", n_boot=500, seed=3)
    pairs = krippendorff_alpha_ci(raters, LEVELS, "ordinal", n_boot=500, seed=3, clusters=clusters)
    single = krippendorff_alpha_ci([list(once[:, j] + 1) for j in range(3)], LEVELS, "ordinal", n_boot=500, seed=3)
    assert rows.value == pairs.value and rows.n == pairs.n == 240
    # the row bootstrap takes 240 cases for independent ones: about half the width (1 / sqrt(4)) of the truth
    assert pairs.high - pairs.low > 1.6 * (rows.high - rows.low)
    assert pairs.high - pairs.low == pytest.approx(single.high - single.low, rel=0.25)  # the 60 pairs' own width
    kappa_rows = weighted_kappa_ci(raters[0], raters[1], LEVELS, n_boot=500, seed=3)
    kappa_pairs = weighted_kappa_ci(raters[0], raters[1], LEVELS, n_boot=500, seed=3, clusters=clusters)
    assert kappa_pairs.high - kappa_pairs.low > 1.6 * (kappa_rows.high - kappa_rows.low)


def test_the_cluster_intervals_coverage_of_a_known_alpha_is_near_95_percent() -> None:
    """200 simulated panels of 60 (user, item) pairs judged under 3 templates (180 cases): the population's ordinal
    alpha (from 300,000 cases) lies in the cluster bootstrap's 95 % interval in about 95 % of runs (91.5 % in these
    200 runs, mean width 0.22; 94.3 % over 600 others; 91.8 % with 40 pairs, where the percentile bootstrap's
    small-sample shortfall shows), and in the row bootstrap's, which takes the 180 cases as independent, far less
    often (83 % here, mean width 0.15)."""
    rng = np.random.default_rng(7)
    population = _panel_cases(rng, 100_000)
    truth = _alpha((population[:, :, None] == np.arange(5)).sum(axis=1), "ordinal")
    held = {"clusters": 0, "rows": 0}
    runs = 200
    clusters = list(np.tile(np.arange(60), 3))
    for run in range(runs):
        cases = _panel_cases(rng, 60)
        raters = [list(cases[:, j] + 1) for j in range(3)]
        for name, by in (("clusters", clusters), ("rows", None)):
            k = krippendorff_alpha_ci(raters, LEVELS, "ordinal", n_boot=300, seed=run, clusters=by)
            held[name] += k.low <= truth <= k.high
    coverage = {name: n / runs for name, n in held.items()}
    assert 0.90 <= coverage["clusters"] <= 0.99, coverage
    assert coverage["rows"] < coverage["clusters"] - 0.05, coverage
