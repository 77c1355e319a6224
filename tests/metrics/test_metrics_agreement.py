"""Agreement metrics and the SAER adjudication rules (recjudge_utils.metrics.agreement)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats import inter_rater

from recjudge_utils.metrics.agreement import (
    POINTWISE_LABELS,
    agreement,
    compare_with_humans,
    fleiss_kappa,
    load_human_labels,
    pairwise_order,
    raw_agreement,
    strict_adjudicate,
    weighted_kappa,
    weighted_kappa_ci,
)
from recjudge_utils.metrics.pairwise import TIE
from recjudge_utils.metrics.pairwise import conservative as conservative_pairwise
from recjudge_utils.metrics.pairwise import position_consistency as swap_consistency

P, M, G = "Poor Match", "Partial Match", "Good Match"


def test_quadratic_kappa_hand_computed():
    # a = [0,0,1,2,2,1], b = [0,1,1,2,1,2] on Poor<Partial<Good. Observed disagreements (0,1),(2,1),(1,2)
    # each weigh (1/2)^2 = 1/4 -> 0.75; expected weighted disagreement from the marginals [2,2,2] x [1,3,2]
    # is 1.75 (worked out by hand), so kappa = 1 - 0.75 / 1.75 = 4/7.
    a = [P, P, M, G, G, M]
    b = [P, M, M, G, M, G]
    assert weighted_kappa(a, b, POINTWISE_LABELS) == pytest.approx(4 / 7)
    assert raw_agreement(a, b) == pytest.approx(3 / 6)


def test_kappa_matches_sklearn_on_random_labels():
    rng = np.random.default_rng(3)
    labels = list(POINTWISE_LABELS)
    for _ in range(20):
        a = rng.choice(labels, size=40).tolist()
        b = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
        expected = cohen_kappa_score(a, b, labels=labels, weights="quadratic")
        assert weighted_kappa(a, b, labels) == pytest.approx(expected)
        assert agreement(a, b, labels, n_boot=50).kappa.value == pytest.approx(expected)


def test_kappa_on_codes_is_sklearns_to_the_last_bit():
    rng = np.random.default_rng(5)
    for k in (2, 3, 5):
        x = rng.integers(0, k, size=30)
        y = np.where(rng.random(30) < 0.5, x, rng.integers(0, k, size=30))
        expected = cohen_kappa_score(x, y, labels=list(range(k)), weights="quadratic")
        assert weighted_kappa(x, y, list(range(k))) == expected  # the chapters' kappas did not move


def test_kappa_ci_is_a_bootstrap_over_the_labelled_cases():
    rng = np.random.default_rng(2)
    a = rng.choice(POINTWISE_LABELS, size=80).tolist()
    b = [x if rng.random() < 0.7 else P for x in a]
    res = weighted_kappa_ci([*a, None], [*b, G], POINTWISE_LABELS, n_boot=300)
    assert res.n == 80 and res.value == weighted_kappa(a, b, POINTWISE_LABELS)
    assert -1 <= res.low <= res.value <= res.high <= 1 and res.se > 0
    assert res == weighted_kappa_ci([*a, None], [*b, G], POINTWISE_LABELS, n_boot=300)  # seeded
    constant = weighted_kappa_ci([P, P, P], [P, P, P], POINTWISE_LABELS)
    assert np.isnan(constant.value) and np.isnan(constant.low) and constant.n == 3


def test_kappa_order_matters_for_quadratic_weights():
    # Good-vs-Poor disagreements must cost more than Good-vs-Partial ones.
    near = weighted_kappa([G, G, P, P, M, M], [M, G, P, P, M, M], POINTWISE_LABELS)
    far = weighted_kappa([G, G, P, P, M, M], [P, G, P, P, M, M], POINTWISE_LABELS)
    assert near > far


def test_missing_labels_are_dropped_not_imputed():
    a = [P, None, G, float("nan"), M]
    b = [P, G, G, M, None]
    res = agreement(a, b, POINTWISE_LABELS, n_boot=50)
    assert res.n == res.raw.n == res.kappa.n == 2
    assert res.raw.value == 1.0
    assert math.isnan(raw_agreement([None], [P]))  # NaN when nothing is shared
    assert math.isnan(raw_agreement([], []))
    none_shared = agreement([None, P], [G, None], POINTWISE_LABELS, n_boot=50)
    assert none_shared.n == 0 and math.isnan(none_shared.raw.value) and math.isnan(none_shared.kappa.value)


def test_agreement_carries_kappas_ci_and_se_on_the_same_resamples():
    rng = np.random.default_rng(4)
    a = rng.choice(POINTWISE_LABELS, size=50).tolist()
    b = [x if rng.random() < 0.6 else G for x in a]
    res = agreement(a, b, POINTWISE_LABELS, n_boot=400, seed=2)
    k = weighted_kappa_ci(a, b, POINTWISE_LABELS, n_boot=400, seed=2)
    assert (res.kappa.value, res.kappa.low, res.kappa.high, res.kappa.se) == (k.value, k.low, k.high, k.se)
    assert res.raw.value == np.mean(np.array(a) == np.array(b))
    assert 0 < res.raw.low < res.raw.value < res.raw.high < 1
    assert res.raw.method == res.kappa.method == "95% percentile bootstrap"


def test_fleiss_kappa_is_statsmodels_on_random_panels():
    rng = np.random.default_rng(8)
    for raters, cases, k in ((3, 40, 3), (4, 25, 5), (5, 12, 2), (2, 30, 3)):
        codes = rng.integers(0, k, size=(cases, raters))
        codes[: cases // 2, 1:] = codes[: cases // 2, :1]  # half the cases agreed on: kappa well above 0
        counts, _ = inter_rater.aggregate_raters(codes, n_cat=k)
        expected = inter_rater.fleiss_kappa(counts, method="fleiss")
        got = fleiss_kappa([codes[:, j].tolist() for j in range(raters)], list(range(k)))
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12) and got > 0.2


def test_fleiss_kappa_by_hand_drops_missing_cases_and_names_undefined_ones():
    # 3 raters, 4 cases: (G,G,G), (G,G,P), (P,P,P), (P,P,G); P_i = 1, 1/3, 1, 1/3 -> mean 2/3; p = (1/2, 1/2)
    # -> chance 1/2 -> kappa = (2/3 - 1/2) / (1 - 1/2) = 1/3. A fifth case with a missing label is left out.
    r1, r2, r3 = [G, G, P, P, G], [G, G, P, P, None], [G, P, P, G, P]
    assert fleiss_kappa([r1, r2, r3], [P, G]) == pytest.approx(1 / 3)
    assert math.isnan(fleiss_kappa([[P, P], [P, P], [P, P]], POINTWISE_LABELS))  # one label only: chance is 1
    assert math.isnan(fleiss_kappa([[None], [P], [P]], POINTWISE_LABELS))  # no case left
    with pytest.raises(ValueError, match="not in"):
        fleiss_kappa([[P, "Excellent"], [P, P], [P, P]], POINTWISE_LABELS)
    with pytest.raises(ValueError, match="same cases"):
        fleiss_kappa([[P, P], [P], [P, P]], POINTWISE_LABELS)


def test_agreement_ci_brackets_point_and_rejects_unknown_labels():
    rng = np.random.default_rng(0)
    a = rng.choice(POINTWISE_LABELS, size=60).tolist()
    b = [x if rng.random() < 0.7 else P for x in a]
    res = agreement(a, b, POINTWISE_LABELS, n_boot=200)
    assert res.raw.low <= res.raw.value <= res.raw.high
    assert res.kappa.low <= res.kappa.value <= res.kappa.high
    with pytest.raises(ValueError, match="not in"):
        agreement([P, "Excellent"], [P, P], POINTWISE_LABELS)
    with pytest.raises(ValueError):
        agreement([P], [P, P], POINTWISE_LABELS)


def test_strict_adjudication_harsher_label_wins():
    a = [G, G, M, P, G, None]
    b = [P, M, M, G, G, G]
    assert strict_adjudicate(a, b) == [P, M, M, P, G, None]
    # three annotators: the harshest of all
    assert strict_adjudicate([G], [M], [G]) == [M]
    with pytest.raises(ValueError, match="not in"):
        strict_adjudicate(["Great"], [G])


def test_conservative_pairwise_disagreement_is_tie():
    a = ["co-occurrence", "embedding", TIE, "embedding", None]
    b = ["co-occurrence", "co-occurrence", "embedding", "embedding", "embedding"]
    assert conservative_pairwise(a, b) == ["co-occurrence", TIE, TIE, "embedding", None]
    assert swap_consistency(a, b) == (2, 4)


def test_pairwise_order_is_ordinal_with_tie_in_the_middle():
    order = pairwise_order("co-occurrence", "embedding")
    assert order == ("embedding", TIE, "co-occurrence")
    # a flip (co-occ vs embedding) costs more than co-occ vs tie
    k_flip = weighted_kappa(["co-occurrence", "embedding", TIE], ["embedding", "embedding", TIE], order)
    k_tie = weighted_kappa(["co-occurrence", "embedding", TIE], [TIE, "embedding", TIE], order)
    assert k_tie > k_flip


def _write(tmp_path, text):
    path = tmp_path / "humans.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_human_labels_csv_pointwise_roundtrip_and_comparison(tmp_path):
    path = _write(
        tmp_path,
        "# two annotators, two lists each\n"
        "user,algorithm,annotator,label\n"
        "1,co-occurrence,A,Good Match\n1,co-occurrence,B,Partial Match\n"
        "1,embedding,A,Poor Match\n1,embedding,B,Poor Match\n"
        "2,co-occurrence,A,Partial Match\n2,co-occurrence,B,Partial Match\n"
        "2,embedding,A,Good Match\n2,embedding,B,Poor Match\n",
    )
    humans = load_human_labels(path, "pointwise")
    assert len(humans) == 8
    judge = pd.DataFrame(
        {
            "user": [1, 1, 2, 2],
            "algorithm": ["co-occurrence", "embedding", "co-occurrence", "embedding"],
            "label": [M, P, M, P],
        }
    )
    table = compare_with_humans(judge, humans, POINTWISE_LABELS, "pointwise", judge_name="SAER", n_boot=50)
    assert list(table["labeler_b"]) == ["human B", "human A", "human B", "human consensus (strict adjudication)"]
    # strict consensus = [Partial, Poor, Partial, Poor] equals the judge exactly
    consensus = table.iloc[-1]
    assert consensus["n"] == 4 and consensus["raw_agreement"] == 1.0 and consensus["kappa_w"] == pytest.approx(1.0)
    hh = table.iloc[0]
    assert hh["raw_agreement"] == pytest.approx(0.5)


def test_human_labels_pairwise_conservative_merge(tmp_path):
    path = _write(
        tmp_path,
        "user,algorithm,annotator,label\n"
        "1,,A,co-occurrence\n1,,B,co-occurrence\n2,,A,embedding\n2,,B,Tie\n3,,A,embedding\n3,,B,embedding\n",
    )
    algs = ("co-occurrence", "embedding")
    humans = load_human_labels(path, "pairwise", algorithms=algs)
    judge = pd.DataFrame({"user": [1, 2, 3], "algorithm": ["", "", ""], "label": ["co-occurrence", TIE, TIE]})
    table = compare_with_humans(judge, humans, pairwise_order(*algs), "pairwise", n_boot=50)
    merged = table.iloc[-1]
    # merged humans = [co-occ, Tie, embedding]; the judge matches 2 of 3
    assert merged["raw_agreement"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("user,annotator,label\n1,A,Good Match\n", "missing columns"),
        ("user,algorithm,annotator,label\n1,co-occurrence,A,Great\n", "row 1: label 'Great'"),
        ("user,algorithm,annotator,label\n1,,A,Good Match\n", "need an algorithm"),
        (
            "user,algorithm,annotator,label\n1,embedding,A,Good Match\n1,embedding,A,Poor Match\n",
            "row 2: duplicate",
        ),
    ],
)
def test_human_labels_csv_errors_name_the_row(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        load_human_labels(_write(tmp_path, text), "pointwise")
