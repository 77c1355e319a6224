"""The simulated judge: exact through every protocol when perfect, the documented bias when biased, seeded, and
always in the format the real parsers read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from domain_words import MOVIE_WORDS
from statsmodels.stats.proportion import proportion_confint

from recjudge_utils.answer_formats.arena_verdicts import OVERALL, make_pairwise_parser, parse_absolute
from recjudge_utils.answer_formats.json_levels import levels_parser
from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.answer_formats.saer_fields import parse_pairwise, parse_pointwise
from recjudge_utils.answer_formats.truth import PreferenceTruth
from recjudge_utils.judge.backends.sim import SimParameters, SimulatedJudge, simulated_answer
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.loading import client_for
from recjudge_utils.metrics.agreement import weighted_kappa
from recjudge_utils.metrics.pairwise import q_value, wtl_summary
from recjudge_utils.protocols.adversarial import adversarial_outcome
from recjudge_utils.protocols.arena import PairwiseJudge, resolve_aspects
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.context.saer import Catalogue, build_context
from recjudge_utils.protocols.pairwise import games
from recjudge_utils.protocols.pointwise_score import TEMPLATES, SerendipityJudge
from recjudge_utils.protocols.saer import load_template, pairwise_request, pointwise_request
from recjudge_utils.protocols.truth import list_label_truth


def sim(tmp_path, **params) -> JudgeClient:
    return client_for(model="sim", backend="sim", backend_options=params, run_dir=tmp_path / "sim", progress=False)


def items(n: int = 40) -> pd.DataFrame:
    genres = [["Drama"], ["Comedy"], ["Horror"], ["Action", "Sci-Fi"]]
    return pd.DataFrame(
        {"item": range(n), "title": [f"Movie {i}" for i in range(n)], "genres": [genres[i % 4] for i in range(n)]}
    )


def pairs(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": rng.integers(100, 130, n),
            "item": rng.integers(0, 40, n),
            "g": rng.integers(1, 6, n),
            "relevance": rng.integers(1, 6, n),
            "unexpectedness": rng.integers(1, 6, n),
            "history": [list(range(5))] * n,
        }
    )


def interactions() -> pd.DataFrame:
    rows = [(u, i, 4.0, 1000 * u + t) for u in range(1, 9) for t, i in enumerate(range(u, u + 12))]
    return pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])


# ------------------------------------------------------------------ a perfect judge reproduces the truth
@pytest.mark.parametrize("template", TEMPLATES)
def test_perfect_sim_scores_equal_g_with_kappa_one(tmp_path, template):
    p = pairs()
    out = SerendipityJudge(sim(tmp_path), template=template).score(p, items())
    assert (out["status"] == "parsed").all()
    assert (out["score"].to_numpy() == p["g"].to_numpy()).all()
    assert weighted_kappa(p["g"], out["score"].astype(int), labels=[1, 2, 3, 4, 5]) == pytest.approx(1.0)
    if template in ("cot", "ltm"):
        assert (out["relevance"].to_numpy() == p["relevance"].to_numpy()).all()


def test_perfect_sim_adjudicated_q_equals_the_true_q(tmp_path):
    inter = interactions()
    ctx = ArenaContext(items(), inter, n_history=5)
    users = sorted(inter["user"].unique())
    rng = np.random.default_rng(1)
    recs = {m: {int(u): [int(i) for i in rng.choice(40, 5, replace=False)] for u in users} for m in ("X", "Y")}
    evidence = {m: {int(u): int(rng.integers(0, 3)) for u in users} for m in ("X", "Y")}
    comparisons = pd.DataFrame({"user": users, "x": "X", "y": "Y"})
    raw = PairwiseJudge(sim(tmp_path), ctx).judge(comparisons, recs, evidence=evidence)
    adj = games(raw, [OVERALL])
    true = [
        "win" if evidence["X"][u] > evidence["Y"][u] else "lose" if evidence["X"][u] < evidence["Y"][u] else "tie"
        for u in users
    ]
    assert list(adj[OVERALL]) == true
    n = {o: true.count(o) for o in ("win", "tie", "lose")}
    q = wtl_summary(list(adj[OVERALL]), n_boot=50).set_index("measure").loc["Q", "value"]
    assert q == q_value(n["win"], n["tie"], n["lose"])
    # a perfect judge is position-consistent: both orders give the same outcome
    assert (
        raw[raw["order"] == "x_first"][OVERALL].to_numpy() == raw[raw["order"] == "y_first"][OVERALL].to_numpy()
    ).all()


def test_perfect_sim_labels_lists_and_detects_every_adversarial_pair(tmp_path):
    inter = interactions()
    cat = Catalogue.from_items(items())
    judge = sim(tmp_path)
    ctx = build_context(inter, cat, 3, MOVIE_WORDS)
    hits = [0, 1, 2, 3]
    reqs = [
        pointwise_request(
            load_template("movies", "pointwise", "v3"), ctx, list(range(10)), cat, {"h": h}, list_label_truth(h)
        )
        for h in hits
    ]
    labels = [r.value.category for r in judge.judge_many(reqs, parse_pointwise)]
    assert labels == ["Poor Match", "Partial Match", "Good Match", "Good Match"]
    tpl = load_template("movies", "pairwise", "v1")
    adv = []
    for k, pos in enumerate([1, 2, 1, 2, 2, 1]):
        truth = PreferenceTruth(first=float(pos == 1), second=float(pos == 2))
        adv.append((pos, pairwise_request(tpl, ctx, [k, k + 1], [k + 2, k + 3], cat, {"k": k}, truth)))
    results = judge.judge_many([r for _, r in adv], parse_pairwise)
    outcomes = [adversarial_outcome(r.value.verdict, pos) for (pos, _), r in zip(adv, results, strict=True)]
    assert outcomes == ["correct"] * 6


# ------------------------------------------------------------------ the documented position bias
@pytest.mark.parametrize("bias", [0.0, 0.2, 0.4])
def test_single_order_win_rate_with_no_preference_is_one_half_plus_half_the_bias(tmp_path, bias):
    inter = interactions()
    ctx = ArenaContext(items(), inter, n_history=5)
    judge = PairwiseJudge(sim(tmp_path, position_bias=bias, seed=3), ctx, aspects=["Accuracy"])
    n = 400
    users = [int(u) for u in np.resize(sorted(inter["user"].unique()), n)]
    # distinct lists per comparison so every request is its own draw; equal evidence: no preference
    recs = {"X": {}, "Y": {}}
    comparisons = []
    for k, u in enumerate(users):
        uid = 10_000 + k  # a distinct case id; the context is user u's
        recs["X"][uid], recs["Y"][uid] = [k % 40, (k + 1) % 40], [(k + 2) % 40, (k + 3) % 40]
        comparisons.append({"user": uid, "x": "X", "y": "Y"})
        ctx._history[uid] = ctx.history(u)
    evidence = {m: dict.fromkeys(recs[m], 1) for m in recs}
    raw = judge.judge(pd.DataFrame(comparisons), recs, both_orders=False, evidence=evidence)
    wins = float((raw[OVERALL] == "win").sum() + 0.5 * (raw[OVERALL] == "tie").sum())
    low, high = proportion_confint(round(wins), n, alpha=0.01, method="wilson")
    assert low <= 0.5 + bias / 2 <= high
    assert (raw[OVERALL] != "lose").all()  # with no preference the second list never wins


def test_same_seed_same_answers_other_seed_other_answers(tmp_path):
    p = pairs(80)
    a = SerendipityJudge(sim(tmp_path / "a", noise=1.0, seed=7), template="base").score(p, items())
    b = SerendipityJudge(sim(tmp_path / "b", noise=1.0, seed=7), template="base").score(p, items())
    c = SerendipityJudge(sim(tmp_path / "c", noise=1.0, seed=8), template="base").score(p, items())
    assert (a["score"].to_numpy() == b["score"].to_numpy()).all()
    assert (a["score"].to_numpy() != c["score"].to_numpy()).any()
    assert (a["score"].to_numpy() != p["g"].to_numpy()).any()  # noise 1 moves some answers


def test_an_offline_replay_recomputes_sim_answers_but_not_model_answers(tmp_path, scripted_judge):
    p = pairs(20)
    online = SerendipityJudge(sim(tmp_path / "on", noise=1.0, seed=3), template="base").score(p, items())
    offline_client = client_for(
        model="sim", backend="sim", backend_options={"noise": 1.0, "seed": 3}, offline=True,
        cache_path=tmp_path / "empty.sqlite", run_dir=tmp_path / "off", progress=False,
    )  # fmt: skip
    offline = SerendipityJudge(offline_client, template="base").score(p, items())
    assert (offline["score"].to_numpy() == online["score"].to_numpy()).all()  # computed, not refused
    model = scripted_judge(lambda request: '{"score": 4}', offline=True, cache_path=tmp_path / "empty2.sqlite")
    refused = SerendipityJudge(model, template="base").score(p, items())
    assert (refused["status"] == "error").all()  # a model's answer must come from the archive


def test_unparseable_rate_and_context_neglect(tmp_path):
    p = pairs(300)
    out = SerendipityJudge(sim(tmp_path, unparseable=0.3, seed=1), template="base").score(p, items())
    rate = float((out["status"] == "unparsed").mean())
    low, high = proportion_confint(int((out["status"] == "unparsed").sum()), len(p), alpha=0.01, method="wilson")
    assert low <= 0.3 <= high and rate > 0
    blind = SerendipityJudge(sim(tmp_path / "blind", context_neglect=1.0), template="base").score(p, items())
    assert (blind["score"] == 3).all()  # without context: the scale's midpoint


# ------------------------------------------------------------------ every answer is in its prompt's format
@pytest.mark.parametrize("seed", range(5))
def test_real_parsers_accept_every_sim_answer(seed):
    params = SimParameters(
        noise=1.5, leniency=0.5, position_bias=0.3, tie_propensity=0.2, context_neglect=0.3, seed=seed
    )
    rng = np.random.default_rng(seed)
    inter = interactions()
    cat = Catalogue.from_items(items())
    ctx = build_context(inter, cat, 3, MOVIE_WORDS)
    arena_ctx = ArenaContext(items(), inter)
    checks = []
    for st_template in TEMPLATES:
        scorer = SerendipityJudge(None, template=st_template)  # type: ignore[arg-type]
        for stage in scorer.stages:
            msgs = scorer.messages(
                [1, 2], 3, items(), stage=scorer.stages.index(stage), previous={"relevance": 3, "unexpectedness": 2}
            )
            req = scorer._request(stage, msgs, {}, None)
            checks.append((req, levels_parser(stage.fields)))
    pj = PairwiseJudge(None, arena_ctx)  # type: ignore[arg-type]
    checks.append((pj.request(1, [1, 2], [3, 4], truth=PreferenceTruth(1, 0)), make_pairwise_parser(pj.aspect_keys)))
    from recjudge_utils.protocols.arena import AbsoluteJudge

    aj = AbsoluteJudge(None, arena_ctx)  # type: ignore[arg-type]
    checks.append((aj.request(1, [1, 2]), parse_absolute))
    for version in ("v1", "v2", "v3"):
        checks.append(
            (
                pointwise_request(
                    load_template("movies", "pointwise", version), ctx, [1, 2], cat, {}, list_label_truth(1)
                ),
                parse_pointwise,
            )
        )
        checks.append(
            (
                pairwise_request(
                    load_template("movies", "pairwise", version), ctx, [1], [2], cat, {}, PreferenceTruth(0, 2)
                ),
                parse_pairwise,
            )
        )
    for req, parse in checks:
        for _ in range(20):
            parse(simulated_answer(req, params, rng))  # raises ParseError if a sim answer were malformed
    with pytest.raises(ParseError):
        parse_pointwise(simulated_answer(checks[-2][0], SimParameters(unparseable=1.0), rng))


def test_sim_is_labelled_and_its_truth_is_part_of_the_cache_key(tmp_path):
    backend = SimulatedJudge(noise=0.5, position_bias=0.2)
    assert backend.model_name.startswith("simulated judge") and "position bias 0.2" in backend.model_name
    scorer = SerendipityJudge(sim(tmp_path), template="base")
    p = pairs(2)
    p2 = p.assign(g=6 - p["g"])
    assert list(scorer.score(p, items())["score"]) == list(p["g"])
    assert list(scorer.score(p2, items())["score"]) == list(p2["g"])  # other truth, other key: not a cache hit
    with pytest.raises(ValueError, match="position_bias"):  # a probability: the one model a sim profile's options are
        SimParameters(position_bias=1.5)
    assert resolve_aspects()  # the arena prompt is readable (used above)
