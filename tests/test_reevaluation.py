import numpy as np
import pandas as pd
import pytest

from recjudge_utils.reevaluation import (
    evaluate_recommenders,
    judge_recommendations,
    paper_table2,
    paper_table3,
    per_user_metrics,
    prepare_folds,
    summarise,
    table3_beside_paper,
)


class FakeJudge:
    """Scores pair (u, i) as 5 if i is even else 2, except item 3 which is 'unparsed'. Records calls."""

    def __init__(self):
        self.calls = []

    def score(self, pairs, items, desc=None):
        self.calls.append(pairs.copy())
        score = np.where(pairs["item"] % 2 == 0, 5.0, 2.0)
        score[pairs["item"].to_numpy() == 3] = np.nan
        status = np.where(np.isnan(score), "unparsed", "parsed")
        return pd.DataFrame({"user": pairs["user"], "item": pairs["item"], "score": score, "status": status})


def interactions(n_users=40, n_items=30, n=1200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": rng.integers(0, n_users, n),
            "item": rng.integers(0, n_items, n),
            "rating": rng.choice([2.0, 4.0, 5.0], n),
            "timestamp": rng.permutation(n),
        }
    ).drop_duplicates(["user", "item"])


def test_per_user_metrics_hand_computed():
    recs = pd.DataFrame(
        {
            "rs": ["a"] * 4 + ["b"] * 4,
            "user": [1, 1, 2, 2] * 2,
            "rank": [1, 2, 1, 2] * 2,
            "item": [10, 11, 12, 13, 11, 10, 14, 12],
        }
    )
    test = pd.DataFrame({"user": [1, 2], "item": [10, 14]})
    judg = pd.DataFrame({"user": [1, 1, 2, 2, 2], "item": [10, 11, 12, 13, 14], "score": [5, 1, 4, np.nan, 2]})
    m = per_user_metrics(recs, test, judg, k=2).set_index(["rs", "user"])
    assert m.loc[("a", 1), "p_acc"] == 0.5 and m.loc[("a", 1), "n_acc"] == 1.0
    assert m.loc[("b", 1), "n_acc"] == pytest.approx(1 / np.log2(3))
    assert m.loc[("a", 2), "p_acc"] == 0.0 and m.loc[("b", 2), "p_acc"] == 0.5
    # serendipity pool: user 1 -> {10}, user 2 -> {12}
    assert m.loc[("a", 1), "p_ser"] == 0.5 and m.loc[("a", 1), "n_ser"] == 1.0
    assert m.loc[("b", 2), "n_ser"] == pytest.approx(1 / np.log2(3))
    assert m.loc[("a", 2), "avg"] == 4.0 and m.loc[("a", 2), "n_unparsed"] == 1
    assert m.loc[("b", 1), "avg"] == 3.0


def test_judge_each_pair_once_with_training_history():
    recs = pd.DataFrame({"rs": ["a", "a", "b", "b"], "user": [1, 1, 1, 1], "rank": [1, 2, 1, 2], "item": [5, 6, 6, 7]})
    train = pd.DataFrame({"user": [1, 1, 1], "item": [1, 2, 3], "rating": 5.0, "timestamp": [3, 1, 2]})
    judge = FakeJudge()
    out = judge_recommendations(recs, train, pd.DataFrame({"item": [], "title": [], "genres": []}), judge, n_history=2)
    assert len(judge.calls) == 1 and len(judge.calls[0]) == 3
    assert judge.calls[0]["history"].tolist() == [[3, 1]] * 3
    assert sorted(out["item"]) == [5, 6, 7]


def test_evaluate_end_to_end_with_fake_judge():
    df = interactions()
    seen_users = []
    judge = FakeJudge()

    def make_judge(users):
        seen_users.extend(users)
        return judge

    res = evaluate_recommenders(
        df,
        pd.DataFrame({"item": [], "title": [], "genres": []}),
        ["pop", "random", "kfn"],
        make_judge,
        folds=2,
        n_trials=0,
        n_users=3,
        top_k=5,
        seed=0,
        progress=False,
    )
    assert set(res.summary["rs"]) == {"pop", "random", "kfn"}
    assert len(res.folds) == 2 and sorted(seen_users) == sorted({int(u) for f in res.folds for u in f.judged_users})
    for f in res.folds:
        assert set(f.judged_users) <= set(f.eval_users)
        assert set(f.test["user"]) <= set(f.train["user"])
    # every judged pair was sent exactly once per fold
    for call in judge.calls:
        assert not call.duplicated(["user", "item"]).any()
    judged = res.per_user[res.per_user["judged"]]
    assert judged["avg"].notna().all()
    assert res.summary["unparsed"].sum() == judged["n_unparsed"].sum()
    table = table3_beside_paper(res.summary)
    assert "p_ser paper" in table.columns
    # deterministic
    res2 = evaluate_recommenders(
        df,
        pd.DataFrame({"item": [], "title": [], "genres": []}),
        ["pop", "random", "kfn"],
        lambda u: FakeJudge(),
        folds=2,
        n_trials=0,
        n_users=3,
        top_k=5,
        seed=0,
        progress=False,
    )
    pd.testing.assert_frame_equal(res.summary, res2.summary)


def test_summarise_mean_of_fold_means():
    per_user = pd.DataFrame(
        {
            "fold": [0, 0, 0, 1],
            "rs": "a",
            "user": [1, 2, 3, 1],
            "p_acc": [0.0, 0.0, 0.3, 0.5],
            "n_acc": 0.0,
            "p_ser": np.nan,
            "n_ser": np.nan,
            "avg": np.nan,
            "judged": False,
            "n_unparsed": 0,
        }
    )
    s = summarise(per_user, n_boot=200).iloc[0]
    assert s["p_acc"] == pytest.approx(100 * (0.1 + 0.5) / 2)
    assert s["p_acc_lo"] <= s["p_acc"] <= s["p_acc_hi"]
    assert np.isnan(s["avg"])


def test_prepare_folds_samples_judged_users_reproducibly():
    df = interactions()
    a = prepare_folds(df, folds=3, n_users=4, seed=1)
    b = prepare_folds(df, folds=3, n_users=4, seed=1)
    assert [f.judged_users.tolist() for f in a] == [f.judged_users.tolist() for f in b]
    assert all(len(f.judged_users) == min(4, len(f.eval_users)) for f in a)
    assert all((f.train["rating"] >= 4).all() and (f.test["rating"] >= 4).all() for f in a)
    assert a[0].train["timestamp"].max() <= a[0].test["timestamp"].min()


def test_paper_tables_transcribed():
    t2 = paper_table2()
    assert t2.set_index("dataset").loc["ML-1M", "interactions"] == 575281
    t3 = paper_table3("ML-1M").set_index("rs")
    assert t3.loc["PURS", "n_acc"] == 11.8 and t3.loc["KFN", "avg"] == 2.134
    assert len(paper_table3()) == 18


def _summary(values):
    rows = []
    for rs, (p_acc, p_ser, avg) in values.items():
        row = {"rs": rs, "users_acc": 10, "users_judged": 2, "unparsed": 0}
        for m, v in {"p_acc": p_acc, "n_acc": p_acc, "p_ser": p_ser, "n_ser": p_ser, "avg": avg}.items():
            row[m], row[f"{m}_lo"], row[f"{m}_hi"] = v, v - 0.5, v + 0.5
        rows.append(row)
    return pd.DataFrame(rows)


def test_observations_follow_the_numbers():
    from recjudge_utils.reevaluation import observations

    one_wins = observations(_summary({"bprmf": (9, 9, 3.0), "random": (1, 1, 2.0), "kfn": (2, 3, 2.2)}))
    assert any("best on every metric" in line and "BPRMF" in line for line in one_wins)
    assert any("above Random's: BPRMF, KFN" in line for line in one_wins)
    assert any("1 of 3 RSs inside" in line for line in one_wins)  # only KFN's 2.2 is in 2.1-2.4
    split = observations(_summary({"bprmf": (9, 1, 2.3), "purs": (1, 9, 2.2), "random": (0.5, 0.8, 2.25)}))
    assert any("no single RS is best on every metric" in line for line in split)
    assert any("above Random's: PURS" in line for line in split)


def test_training_budget():
    from recjudge_utils.reevaluation import training_budget

    assert training_budget("paper") == {}
    small = training_budget("small")
    small["bprmf"]["epochs"] = 999  # a copy: the module's table is not modified
    assert training_budget("small")["bprmf"]["epochs"] != 999
    with pytest.raises(KeyError):
        training_budget("huge")


def test_summarise_gives_no_ci_for_a_single_user():
    per_user = pd.DataFrame(
        {
            "fold": [0, 0],
            "rs": "a",
            "user": [1, 2],
            "p_acc": [0.1, 0.3],
            "n_acc": 0.0,
            "p_ser": [0.5, np.nan],
            "n_ser": [0.4, np.nan],
            "avg": [3.0, np.nan],
            "judged": [True, False],
            "n_unparsed": 0,
        }
    )
    s = summarise(per_user, n_boot=100).iloc[0]
    assert s["p_ser"] == pytest.approx(50.0) and np.isnan(s["p_ser_lo"]) and np.isnan(s["p_ser_hi"])
    assert not np.isnan(s["p_acc_lo"])
    assert "no CI" in table3_beside_paper(summarise(per_user, n_boot=100)).loc["a", "p_ser ours"]
