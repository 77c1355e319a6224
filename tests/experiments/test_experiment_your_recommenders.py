"""Chapter 7: lists from files, three protocols on the same users, the agreement between them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from recjudge_utils.answer_formats.saer_fields import LABELS_WORST_FIRST
from recjudge_utils.data import Dataset, SerendipityPairs
from recjudge_utils.experiments import your_recommenders as ours
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.types import JudgeRequest, JudgeResult
from recjudge_utils.lists import ListFormatError, write_trec_runs
from recjudge_utils.protocols.truth import list_label_truth
from recjudge_utils.splitting.export import temporal_fold

N_USERS, N_ITEMS, K = 40, 30, 5


def toy_dataset() -> Dataset:
    rng = np.random.default_rng(0)
    n = 1400
    inter = pd.DataFrame(
        {
            "user": rng.integers(0, N_USERS, n),
            "item": rng.integers(0, N_ITEMS, n),
            "rating": rng.choice([2.0, 4.0, 5.0], n),
            "timestamp": 880_000_000 + 3600 * rng.permutation(n),
        }
    ).drop_duplicates(["user", "item"])
    genres = ["Drama", "Comedy", "Action", "Horror", "Romance"]
    items = pd.DataFrame(
        {
            "item": range(N_ITEMS + 1000),
            "title": [f"Movie {i}" for i in range(N_ITEMS + 1000)],
            "genres": [[genres[i % 5], genres[(i * 3) % 5]] for i in range(N_ITEMS + 1000)],
        }
    )
    users = pd.DataFrame({"user": range(N_USERS), "age": 30, "gender": "F", "occupation": "writer"})
    return Dataset("toy", inter.reset_index(drop=True), items.iloc[:N_ITEMS], users, "toy", False, "test")


def toy_examples(items: pd.DataFrame) -> SerendipityPairs:
    """Labelled pairs from users 1000+ (never judged), two per level."""
    rows = [{"user": 1000 + k, "item": k, "g": k % 5 + 1, "history": [1, 2, 3]} for k in range(10)]
    return SerendipityPairs(pd.DataFrame(rows), items, "toy pairs", False, "test")


def toy_lists(dataset: Dataset, fold: Any) -> pd.DataFrame:
    """Three systems' top-K for every evaluation user (training items excluded): popular first, by id, by a hash."""
    seen = fold.train.groupby("user")["item"].agg(set).to_dict()
    popularity = fold.train["item"].value_counts()
    orders: dict[str, list[int]] = {
        "popular": [int(i) for i in popularity.index] + [i for i in range(N_ITEMS) if i not in popularity.index],
        "by_id": list(range(N_ITEMS)),
        "hashed": sorted(range(N_ITEMS), key=lambda i: (i * 7919) % 31),
    }
    rows = []
    for system, order in orders.items():
        for u in fold.eval_users:
            items = [i for i in order if i not in seen.get(int(u), set())][:K]
            rows += [(system, int(u), r, i) for r, i in enumerate(items, start=1)]
    return pd.DataFrame(rows, columns=["system", "user", "rank", "item"])


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Any]:
    ds = toy_dataset()
    fold = temporal_fold(ds, 0)
    frame = toy_lists(ds, fold)
    trec = tmp_path / "trec"
    write_trec_runs(frame, trec)
    return {"dataset": ds, "fold": fold, "frame": frame, "trec": trec, "tmp": tmp_path}


class Counting:
    """A judge that counts the requests it is asked, over the simulated judge."""

    def __init__(self, inner: JudgeClient) -> None:
        self.inner = inner
        self.requests = 0

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    def judge_many(
        self, requests: Sequence[JudgeRequest], parse: Callable[[str], Any] | None = None, desc: str | None = None
    ) -> list[JudgeResult[Any]]:
        self.requests += len(requests)
        return self.inner.judge_many(requests, parse, desc)


def sim(tmp: Path, **options: float) -> JudgeClient:
    profile = load_profile("sim", options={"seed": 0, **options})
    client: JudgeClient = profile.client(run_dir=tmp / "judge", progress=False)
    return client


def judged(world: dict[str, Any], source: Any, judge: Any, **config: Any) -> ours.YourRecommendersRun:
    ds, fold = world["dataset"], world["fold"]
    lists = ours.read_system_lists(ds, fold, source, top_k=K)
    data = ours.YourRecommendersData(ds, fold, toy_examples(ds.items), lists)
    cfg = ours.YourRecommendersConfig(**{"n_users": 6, "n_boot": 50, **config})
    return ours.run(judge, data, cfg)


def write_formats(frame: pd.DataFrame, folder: Path) -> dict[str, Path]:
    """The same lists as each toolkit writes them, one folder per format."""
    out = {}
    for name in ("lenskit", "msr", "recbole", "elliot", "parquet"):
        (folder / name).mkdir(parents=True)
        out[name] = folder / name
    for system, part in frame.groupby("system"):
        score = 1.0 / part["rank"]
        pd.DataFrame({"item": part["item"], "score": score, "rank": part["rank"], "user": part["user"]}).to_csv(
            out["lenskit"] / f"{system}.csv", index=False
        )
        pd.DataFrame({"userID": part["user"], "itemID": part["item"], "prediction": score}).sample(
            frac=1.0, random_state=0
        ).to_csv(out["msr"] / f"{system}.csv", index=False)
        pd.DataFrame({"user_id:token": part["user"], "item_id:token": part["item"], "score:float": score}).to_csv(
            out["recbole"] / f"{system}.tsv", sep="\t", index=False
        )
        pd.DataFrame({"u": part["user"], "i": part["item"], "s": score}).to_csv(
            out["elliot"] / f"{system}.tsv", sep="\t", index=False, header=False
        )
        pd.DataFrame({"user": part["user"], "item": part["item"], "score": score}).to_parquet(
            out["parquet"] / f"{system}.parquet", index=False
        )
    return out


def test_every_format_gives_identical_judged_results(world: dict[str, Any]) -> None:
    reference = judged(world, world["trec"], sim(world["tmp"]))
    assert set(reference.sample.systems) == {"popular", "by_id", "hashed"}
    for name, folder in write_formats(world["frame"], world["tmp"] / "formats").items():
        got = judged(world, folder, sim(world["tmp"]))
        pd.testing.assert_frame_equal(got.summary, reference.summary, obj=name)
        pd.testing.assert_frame_equal(got.taus, reference.taus, obj=name)
        for protocol in ours.PROTOCOLS:
            assert got.judgments[protocol]["raw_text"].tolist() == reference.judgments[protocol]["raw_text"].tolist()


def _bad(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


def bad_inputs(world: dict[str, Any]) -> dict[str, tuple[Path, str]]:
    """Each bad input: a source and what its refusal must say."""
    tmp = world["tmp"] / "bad"
    first = (world["trec"] / "popular.trec").read_text().splitlines()
    user = first[0].split()[0]
    ok = "\n".join(first) + "\n"
    return {
        "unknown user": (
            _bad(tmp / "u", "s.trec", ok + "999999 Q0 1 1 9.0 s\n"),
            r"s\.trec: line \d+: 1 unknown user id.*first five: 999999; ids must be the dataset's own",
        ),
        "unknown item": (
            _bad(tmp / "i", "s.trec", ok + f"{user} Q0 77777 9 0.001 s\n"),
            r"s\.trec: line \d+: 1 unknown item id.*first five: 77777",
        ),
        "duplicate item": (
            _bad(tmp / "d", "s.trec", ok + first[0] + "\n"),
            r"s\.trec: line \d+: item \d+ appears twice in user \d+'s list",
        ),
        "short list": (
            _bad(tmp / "sh", "s.trec", "\n".join(first[:3]) + "\n"),
            r"s\.trec: line 3: user \d+'s list has 3 items, fewer than top_k=5",
        ),
        "non-numeric score": (
            _bad(tmp / "n", "s.csv", "user,item,score\n1,2,high\n"),
            r"s\.csv: line 2: 'high' in the score column is not a number",
        ),
        "missing column": (_bad(tmp / "m", "s.csv", "user,score\n1,2.0\n"), r"s\.csv: line 1: missing an item column"),
        "empty file": (_bad(tmp / "e", "s.csv", ""), r"s\.csv: line 1: empty file"),
        "unknown format": (
            _bad(tmp / "f", "s.trec", "a b c d\n"),
            r"s\.trec: line 1: 4 columns, not a TREC run.*the formats known are",
        ),
        "two files, one name": (
            _bad(_bad(tmp / "2", "x.trec", ok.replace(" popular", " same")), "y.trec", ok.replace(" popular", " same")),
            r"x\.trec and .*y\.trec both name the system 'same'",
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "unknown user",
        "unknown item",
        "duplicate item",
        "short list",
        "non-numeric score",
        "missing column",
        "empty file",
        "unknown format",
        "two files, one name",
    ],
)
def test_bad_input_is_refused_before_any_judge_call(world: dict[str, Any], case: str) -> None:
    source, message = bad_inputs(world)[case]
    judge = Counting(sim(world["tmp"]))
    with pytest.raises(ListFormatError, match=message):
        judged(world, source, judge)
    assert judge.requests == 0


def test_without_chapter_2_lists_the_chapter_says_what_to_do(world: dict[str, Any]) -> None:
    with pytest.raises(FileNotFoundError, match=r"run chapter 2 first.*-p lists PATH"):
        ours.read_system_lists(world["dataset"], world["fold"], None, top_k=K)


def test_calls_match_the_plan_printed_before_judging(world: dict[str, Any]) -> None:
    judge = Counting(sim(world["tmp"]))
    run = judged(world, world["trec"], judge, arena_pairs="popular")
    plan = ours.planned_calls(3, 6, K, "popular")
    usage = run.usage().set_index("protocol")["judgments"]
    assert usage["arena"] == plan["arena"] == 2 * 2 * 6
    assert usage["saer"] == plan["saer"] == 3 * 6
    assert 0 < usage["serendipity"] <= plan["serendipity"]
    assert judge.requests == usage.sum()
    assert set(run.duels["y"]) == {"popular"}


def test_a_perfect_simulated_judge_answers_each_protocols_truth(world: dict[str, Any]) -> None:
    run = judged(world, world["trec"], sim(world["tmp"]))
    hits = run.sample.hits
    labels = run.judgments["saer"]
    for u, s, category in zip(labels["user"], labels["system"], labels["category"], strict=True):
        truth = list_label_truth(hits[s][int(u)])
        assert category == LABELS_WORST_FIRST[truth.level]
    duels = run.duels.dropna(subset=["overall"])
    assert len(duels) > 0
    for u, x, y, outcome in zip(duels["user"], duels["x"], duels["y"], duels["overall"], strict=True):
        diff = hits[x][int(u)] - hits[y][int(u)]
        assert outcome == ("win" if diff > 0 else "lose" if diff < 0 else "tie")
    scores = run.judgments["serendipity"]
    assert (scores["status"] == "parsed").all()
    assert set(scores["score"].astype(int)) <= {1, 2, 3, 4, 5}


def test_results_hold_every_tau_and_the_items_chapter_6_compares(world: dict[str, Any]) -> None:
    run = judged(world, world["trec"], sim(world["tmp"], noise=0.8))
    results = run.results()
    taus = [r for r in results if r.metric == "kendall_tau"]
    measures = [*ours.PROTOCOLS, *ours.OFFLINE]
    assert len(taus) == len(measures) * (len(measures) - 1) // 2
    assert {r.group["system"] for r in results if r.metric == "arena"} == set(run.sample.systems)
    items = run.items()
    assert len(items["saer_labels"]) == 3 * 6
    assert len(items["scores"]) == len(run.judgments["serendipity"])


def test_systems_and_pairs_are_checked(world: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"systems \['nope'\] were not read"):
        judged(world, world["trec"], sim(world["tmp"]), systems=("nope",))
    with pytest.raises(ValueError, match="arena_pairs must be 'all' or one of the systems"):
        ours.arena_comparisons(["a", "b"], [1], "c")
    pairs = ours.arena_comparisons(["a", "b", "c"], [1, 2], "all")
    assert len(pairs) == 6
    run = judged(world, world["trec"], sim(world["tmp"]), systems=("by_id", "popular"), protocols=("saer",))
    assert run.sample.systems == ["popular", "by_id"] or run.sample.systems == ["by_id", "popular"]
    assert set(run.judgments) == {"saer"}


def test_recovery_compares_a_noisy_simulated_judge_with_a_perfect_one(world: dict[str, Any]) -> None:
    ds, fold = world["dataset"], world["fold"]
    lists = ours.read_system_lists(ds, fold, world["trec"], top_k=K)
    data = ours.YourRecommendersData(ds, fold, toy_examples(ds.items), lists)
    cfg = ours.YourRecommendersConfig(n_users=3, n_boot=50, arena_pairs="popular")
    got = ours.recovery(data, cfg, n_users=8)
    assert got.perfect.config.arena_pairs == "all" and len(got.perfect.sample.users) == 8
    assert got.coverage.empty  # below 20 simulated users the subsets would say nothing
    assert got.error_model["noise"] == 0.8
    assert set(got.taus["protocol"]) == set(ours.PROTOCOLS)
    # the perfect judge against itself through the same code is the identity: its own tau must be 1 where defined
    same = ours.true_ranking_agreement(got.perfect, got.perfect, n_boot=20)
    own = same[same["against"].str.startswith("its own")]["tau"].dropna()
    assert len(own) and np.allclose(own, 1.0)


def test_chapter_7_judges_with_chapter_1s_examples_and_keeps_its_users(world: dict[str, Any]) -> None:
    """Issue 32, item 1: chapter 7 takes the few-shot examples as chapter 2 does, chapter 1's when it can; a judged
    user among chapter 1's example users makes it draw afresh, never change the users (the same for every
    protocol)."""
    from recjudge_utils.protocols.few_shot import select_few_shot_examples
    from recjudge_utils.protocols.pointwise_score import save_selected_template

    ds, fold = world["dataset"], world["fold"]
    lists = ours.read_system_lists(ds, fold, world["trec"], top_k=K)
    users = ours.judged_users(fold, lists, 6, 0)
    # three pairs per level: one of them from judged user users[0], who shares the toy dataset's user ids
    rows = [{"user": 2000 + k, "item": k % N_ITEMS, "g": k % 5 + 1, "history": [1, 2, 3]} for k in range(15)]
    rows[0]["user"] = users[0]
    pairs = SerendipityPairs(pd.DataFrame(rows), ds.items, "toy pairs", False, "test", {"users_of": "toy"})
    cfg = ours.YourRecommendersConfig(n_users=6, n_boot=50, protocols=("serendipity",))

    def record(examples: pd.DataFrame) -> None:
        fields = examples[["user", "item", "g", "relevance", "unexpectedness"]].to_dict("records")
        save_selected_template("cot", n_shots=10, n_history=10, data=pairs.display_label, examples=fields)

    chosen = select_few_shot_examples(pairs.pairs, ds.items, n_per_level=2, exclude_users=[users[0]], seed=5)
    record(chosen)
    run = ours.run(sim(world["tmp"]), ours.YourRecommendersData(ds, fold, pairs, lists), cfg)
    assert run.examples_source is not None and run.examples_source.origin == "chapter 1"
    pd.testing.assert_frame_equal(run.examples_source.examples, chosen)

    with_judged_user = select_few_shot_examples(pairs.pairs, ds.items, n_per_level=2, seed=0)
    assert users[0] in set(with_judged_user["user"])
    record(with_judged_user)
    redrawn = ours.run(sim(world["tmp"]), ours.YourRecommendersData(ds, fold, pairs, lists), cfg)
    assert redrawn.examples_source is not None and redrawn.examples_source.origin == "fresh draw"
    assert users[0] not in set(redrawn.examples_source.examples["user"])
    assert redrawn.sample.users == run.sample.users == users


def test_distinct_resamples_count_the_multisets_a_bootstrap_can_draw() -> None:
    from itertools import combinations_with_replacement

    for n in range(1, 7):
        assert ours.distinct_resamples(n) == len(list(combinations_with_replacement(range(n), n)))
    assert ours.distinct_resamples(3) == 10 and ours.distinct_resamples(0) == 0


def constructed_run(duels: pd.DataFrame, separation: pd.DataFrame, taus: pd.DataFrame) -> ours.YourRecommendersRun:
    """A run holding only what the Run's own statistics read: the systems, the duels, the separation, the taus."""
    systems = ["a", "b", "c"]
    sample = ours.YourRecommendersSample([1, 2], systems, {s: {} for s in systems}, {s: {} for s in systems}, K)
    empty = pd.DataFrame()
    return ours.YourRecommendersRun(
        config=ours.YourRecommendersConfig(protocols=("arena",)), judge_name="j", data_label="d", sample=sample,
        judgments={}, matrices={}, summary=empty, taus=taus, separation=separation, duels=duels,
        serendipity_per_user=empty,
    )  # fmt: skip


def counted_run(duels: bool = True) -> ours.YourRecommendersRun:
    """Three systems, Arena and the offline metrics: duels with and without verdicts, two separated Arena pairs, one
    computable tau."""
    measures = ["arena", *ours.OFFLINE]
    duel_rows = [(1, "a", "b", "win"), (2, "a", "b", "tie"), (3, "a", "b", None), (1, "a", "c", None),
                 (2, "b", "c", "lose")]  # fmt: skip
    separation = pd.DataFrame(
        [("arena", "a", "b", 0.4, True), ("arena", "a", "c", -0.2, True), ("arena", "b", "c", 0.1, False)]
        + [(m, x, y, 0.0, False) for m in ours.OFFLINE for x, y in (("a", "b"), ("a", "c"), ("b", "c"))],
        columns=["measure", "a", "b", "difference", "separated"],
    )
    taus = pd.DataFrame(
        [{"a": a, "b": b, "tau": 0.5 if (a, b) == ("arena", "precision") else np.nan} for i, a in enumerate(measures)
         for b in measures[i + 1 :]]
    )  # fmt: skip
    frame = pd.DataFrame(duel_rows if duels else [], columns=["user", "x", "y", "overall"])
    return constructed_run(frame, separation, taus)


def test_the_runs_duel_points_separated_pairs_and_tau_matrix() -> None:
    run, measures = counted_run(), ["arena", *ours.OFFLINE]
    points = run.duel_points().set_index(["x", "y"])
    # a against b: a win and a tie over two verdicts (the third duel has none): (1 + 0.5) / 2
    assert points.loc[("a", "b")].tolist() == [0.75, 2, 3]
    assert np.isnan(points.loc[("a", "c"), "share"]) and points.loc[("a", "c"), "n"] == 0
    assert points.loc[("b", "c"), "share"] == 0.0
    assert counted_run(duels=False).duel_points().empty
    counts = run.separated_counts()
    assert list(counts.index) == measures and run.system_pairs == 3
    assert counts.loc["arena", "separated"] == 2 and counts.loc["arena", "pairs"] == 3
    assert counts.loc["arena", "which"] == [("a", "b"), ("c", "a")]  # the higher first
    assert counts.loc["precision", "which"] == []
    matrix = run.tau_matrix()
    assert list(matrix.index) == list(matrix.columns) == measures
    assert matrix.loc["arena", "precision"] == matrix.loc["precision", "arena"] == 0.5
    assert (np.diag(matrix.to_numpy()) == 1.0).all() and np.isnan(matrix.loc["recall", "ndcg"])


def test_unparsed_answers_are_counted_per_protocol_and_reason() -> None:
    run = counted_run()
    arena_calls = pd.DataFrame(
        {"status": ["parsed", "unparsed", "unparsed", "error", "unparsed"],
         "reason": [None, "no JSON", "no JSON", "timeout", None],
         "raw_text": ["ok", "x" * 200, "line\nbreak", None, None]}
    )  # fmt: skip
    saer_calls = pd.DataFrame({"status": ["parsed"], "reason": [None], "raw_text": ["fine"]})
    run = dataclasses.replace(run, judgments={"arena": arena_calls, "saer": saer_calls})
    unparsed = run.unparsed(examples=1)
    assert unparsed[["protocol", "reason", "bad", "total"]].values.tolist() == [
        ["arena", "no JSON", 2, 5], ["arena", "timeout", 1, 5], ["arena", "", 1, 5]
    ]  # fmt: skip
    assert unparsed["raw"].tolist() == [["x" * 160], [], []]  # the first example only, cut at 160 characters
    assert run.unparsed()["raw"].iloc[0] == ["x" * 160, "line break"]  # on one line
    assert dataclasses.replace(run, judgments={"saer": saer_calls}).unparsed().empty


# ------------------------------------------------------------------------- issue 41: conclusions a reviewer accepts
def test_below_ten_judged_users_no_pair_is_decided_and_no_tau_is_claimed(world: dict[str, Any]) -> None:
    run = judged(world, world["trec"], sim(world["tmp"]))  # 6 users
    assert len(run.separation) == len(run.measures) * 3
    assert (run.separation["decision"] == "no decision").all() and not run.separation["separated"].any()
    assert (run.separated_counts()["undecided"] == 3).all()
    assert (run.taus["claim"] == "too few users").all()


@pytest.fixture
def full(world: dict[str, Any]) -> ours.YourRecommendersRun:
    """Every evaluation user (33), the simulated judge with its error model, every system against ``popular``."""
    return judged(world, world["trec"], sim(world["tmp"], noise=0.8), n_users=0, arena_pairs="popular")


def test_every_measure_is_tested_on_the_judged_users(full: ours.YourRecommendersRun) -> None:
    run, users = full, len(full.sample.users)
    assert users >= 30
    offline = run.separation[run.separation["measure"].isin(ours.OFFLINE)]
    assert (offline["n"] == users).all()  # the same users as the protocols, not every evaluation user
    assert (run.separation["n"] <= users).all() and (run.separation["family"] == 3).all()
    assert set(run.separation["test"]) == {"paired sign-flip permutation, Holm"}
    precision = run.matrices["precision"]
    row = run.separation[(run.separation["measure"] == "precision")].iloc[0]
    assert row["difference"] == pytest.approx((precision[row["a"]] - precision[row["b"]]).mean())
    # the offline table over every evaluation user stays, apart
    assert {f"{m}_all_users" for m in ours.OFFLINE} <= set(run.summary["measure"])
    assert set(run.offline_all) == set(ours.OFFLINE)


def test_the_baseline_headline_power_plan_and_beyond_accuracy(full: ours.YourRecommendersRun) -> None:
    run = full
    base = run.baseline_tests
    assert set(base["b"]) == {"popular"} and (base["family"] == 2).all()
    assert len(base) == 2 * len(run.measures)
    power = run.power.set_index("measure")
    assert list(power.index) == run.measures and power["power"].between(0, 1).all()
    assert (power["separated"] == run.separated_counts()["separated"]).all()
    assert set(run.curve["measure"]) <= set(run.measures) and list(run.curve["users"].unique()) == [10, 20, 33]
    assert set(run.plan.columns) >= {"measure", "a", "b", "d_z", "users_needed"}
    assert {"arp", "novelty", "ild"} <= set(run.matrices) and list(run.beyond["system"]) == run.sample.systems
    assert run.beyond["coverage"].between(0, 1).all()
    assert (
        run.popularity_fit is not None and run.popularity_fit.n == run.judgments["serendipity"]["score"].notna().sum()
    )
    taus = run.taus
    assert {"tau_ap", "reliability_a", "reliability_b", "tau_decided", "claim"} <= set(taus.columns)
    assert (taus["claim"] == "too few systems").all()  # three systems: tau is shown, never claimed


def test_results_hold_every_test_and_the_run_folder_every_matrix_and_the_qrels(
    full: ours.YourRecommendersRun, tmp_path: Path
) -> None:
    results = full.results()
    tests = [r for r in results if r.metric == "paired_difference"]
    assert len(tests) == len(full.separation) + len(full.baseline_tests)
    first = tests[0]
    assert {"measure", "a", "b", "p_adjusted", "test", "decision"} <= set(first.group)
    method = first.estimate.method
    assert first.estimate.n == full.separation["n"].iloc[0] and method and "simultaneous" in method
    assert {r.metric for r in results} >= {"discriminative_power", "swap_rate", "split_half_reliability"}
    written = ours.write_run_files(full, tmp_path / "out")
    names = {p.name for p in written}
    assert {f"{m}.csv" for m in full.measures} <= names and "precision_all_users.csv" in names
    back = pd.read_csv(tmp_path / "out" / "matrices" / "saer.csv", index_col="user")
    pd.testing.assert_frame_equal(back, full.matrices["saer"].rename_axis("user"), check_names=False)
    qrels = tmp_path / "out" / "serendipity.qrels"
    lines = qrels.read_text().splitlines()
    scores = full.judgments["serendipity"].dropna(subset=["score"])
    assert len(lines) == len(scores.drop_duplicates(["user", "item"]))
    _user, zero, _item, label = lines[0].split()
    assert zero == "0" and 0 <= int(label) <= 4
    ranx = pytest.importorskip("ranx")
    assert len(ranx.Qrels.from_file(str(qrels), kind="trec").to_dict()) == scores["user"].nunique()


RUNS = 200


def test_chapter_7_calls_no_pair_of_identical_systems_different_in_more_than_5_percent_of_runs() -> None:
    """Issue 41's check through the chapter's own comparisons: 8 systems drawn from one distribution (Avg.Score-like
    per-user values, 30 judged users), 200 simulated runs, three measures each; the family-wise false-positive rate
    of a measure's decisions stays within 5 % (plus two Monte Carlo standard errors)."""
    rng = np.random.default_rng(2026)
    systems = [f"s{i}" for i in range(8)]
    any_false = {m: 0 for m in ("serendipity", "saer", "precision")}
    for run in range(RUNS):
        leniency = rng.normal(3.0, 0.6, (30, 1, 1))
        judged_ = {
            "serendipity": pd.DataFrame(
                np.clip(np.rint(leniency + rng.normal(0, 1, (30, 8, 5))), 1, 5).mean(axis=2), columns=systems
            ),
            "saer": pd.DataFrame(rng.choice([0.0, 1.0, 2.0], (30, 8), p=[0.3, 0.4, 0.3]), columns=systems),
            "precision": pd.DataFrame(rng.binomial(5, 0.1, (30, 8)) / 5, columns=systems),
        }
        tests = ours.comparisons(judged_, list(judged_), seed=run, intervals=False)
        for m, part in tests.groupby("measure"):
            any_false[str(m)] += bool(part["separated"].any())
    rates = {m: n / RUNS for m, n in any_false.items()}
    print(f"chapter 7's family-wise false-positive rate, {RUNS} runs of 8 identical systems: {rates}")
    assert max(rates.values()) <= 0.05 + 2 * (0.05 * 0.95 / RUNS) ** 0.5


def test_q_beside_the_share_and_unparsed_rates_across_systems(world: dict[str, Any]) -> None:
    run = judged(world, world["trec"], sim(world["tmp"], unparseable=0.3), arena_pairs="popular")
    q = run.duel_q()
    assert set(q["y"]) == {"popular"} and len(q) == 2 * 5  # per pair: win, tie, lose, Q and the share of points
    points = run.duel_points().set_index(["x", "y"])
    for (x, y), pair in q.groupby(["x", "y"]):
        value = pair.set_index("measure")["value"]
        assert value["share"] == pytest.approx(points.loc[(x, y), "share"], nan_ok=True)
        assert value["win"] + value["tie"] + value["lose"] == pytest.approx(100.0)
    by_system = run.unparsed_by_system()
    saer = by_system[by_system["protocol"] == "saer"].set_index("system")
    labels = run.judgments["saer"]
    for s in run.sample.systems:
        mine = labels[labels["system"] == s]
        assert saer.loc[s, "total"] == len(mine) and saer.loc[s, "unparsed"] == (mine["status"] != "parsed").sum()
    slots = by_system[by_system["protocol"] == "serendipity"]
    assert (slots["total"] == 6 * K).all()
    tests = run.missingness().set_index("protocol")
    assert set(tests.index) == {"serendipity", "arena", "saer"} and tests["p"].dropna().between(0, 1).all()
    metrics = {r.metric for r in run.results()}
    assert {"arena_q", "unparsed_across_systems_p"} <= metrics


def test_shares_and_q_can_order_two_systems_differently() -> None:
    """The disclosure in the chapter's Q caption, checked: W3/T7/L0 against W6/T0/L4."""
    from recjudge_utils.metrics.pairwise import q_value

    first, second = (3 + 0.5 * 7) / 10, (6 + 0) / 10
    assert (first, second) == (0.65, 0.6) and first > second
    assert q_value(3, 7, 0) == pytest.approx(10 / 7) and q_value(6, 0, 4) == 1.5 and q_value(3, 7, 0) < 1.5


def test_tau_coverage_measures_the_interval_against_all_users_tau() -> None:
    """Noisy rankings of five systems against their truth: tau over subsets drifts below the whole sample's, and the
    share of subset CIs holding the sample's tau is reported per size."""
    rng = np.random.default_rng(3)
    systems = [f"s{i}" for i in range(5)]
    truth = pd.DataFrame(np.tile(np.arange(5.0), (60, 1)) + rng.normal(0, 0.2, (60, 5)), columns=systems)
    noisy = truth + rng.normal(0, 3.0, (60, 5))
    got = ours.tau_coverage({"saer": noisy}, {"saer": truth}, ["saer"], [10, 30, 60], draws=15, n_boot=100)
    assert list(got["users"]) == [10, 30]  # a subset as large as the sample is the sample itself
    from recjudge_utils.metrics.system_agreement import kendall_tau

    target = kendall_tau(noisy.to_numpy(), truth.to_numpy(), n_boot=2).value
    assert (got["target"] == target).all() and got["coverage"].between(0, 1).all()
    assert got["mean_tau"].iloc[0] < got["mean_tau"].iloc[1] <= 1.0  # fewer users, more noise: tau-hat drifts down
    assert (got["draws"] <= 15).all()
