"""The plan before paying: it trains and stores nothing, uses stored recommenders where they exist, stands in for
the others with lists that never coincide, needs no API key, and states how it counted tokens."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from claims import numbers_in

from recjudge_utils.book.plan_estimate import earlier_calls, plan_summary, token_rule
from recjudge_utils.experiments.reevaluation import ReevaluationConfig, ReevaluationData
from recjudge_utils.experiments.saer import SAER_MODELS
from recjudge_utils.judge.loading import load_profile, open_judge
from recjudge_utils.judge.planning import JUDGE_FILE, PLAN_FILE, SAMPLES_FILE, ChatTokenizer, prompt_chars
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.paths import project_root
from recjudge_utils.recommenders import make_recommender, training
from recjudge_utils.recommenders.artifacts import ArtifactStore, compute_log
from recjudge_utils.recommenders.plan_standin import (
    METHODS_FILE,
    StandInRecommender,
    fit_or_stand_in,
    planning_without_training,
)

ROOT = project_root()


def toy(n_users: int = 30, n_items: int = 60, per_user: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = [
        (u, int(i), 5.0, 100 * u + j)
        for u in range(n_users)
        for j, i in enumerate(rng.choice(n_items, per_user, replace=False))
    ]
    return pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])


def toy_items(n_items: int = 60) -> pd.DataFrame:
    return pd.DataFrame({"item": range(n_items), "title": [f"Item {i}" for i in range(n_items)]})


@pytest.fixture
def plan_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Plan mode as the runner sets it: RECJUDGE_PLAN and RECJUDGE_RUN_DIR point at the plan folder."""
    folder = tmp_path / "plan"
    folder.mkdir()
    monkeypatch.setenv("RECJUDGE_PLAN", str(folder))
    monkeypatch.setenv("RECJUDGE_RUN_DIR", str(folder))
    return folder


def methods(folder: Path) -> list[dict[str, str]]:
    path = folder / METHODS_FILE
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_plan_mode_without_artifacts_trains_and_stores_nothing(plan_mode: Path, isolated_runs: Path) -> None:
    store = ArtifactStore()
    before = (store.count(), len(compute_log()))
    fitted = training.train("bprmf", toy(), None, split={"kind": "toy"}, params={"epochs": 1}, store=store)
    model, loaded = fitted.model, fitted.loaded
    assert planning_without_training() and not loaded
    assert isinstance(model, StandInRecommender)
    assert (store.count(), len(compute_log())) == before == (0, 0)
    assert not (isolated_runs / "artifacts").exists()
    assert methods(plan_mode) == [{"model": "bprmf", "method": "stand-in"}]


def test_reevaluation_in_plan_mode_tunes_nothing(
    plan_mode: Path, monkeypatch: pytest.MonkeyPatch, scripted_judge
) -> None:
    from test_experiment_reevaluation import interactions, score_of, toy_examples, toy_items

    import recjudge_utils.experiments.reevaluation as reevaluation
    import recjudge_utils.recommenders.training as training
    from recjudge_utils.data import Dataset

    def no_tuning(*args: object, **kwargs: object) -> None:
        raise AssertionError("plan mode ran a TPE study")

    monkeypatch.setattr(training, "tune", no_tuning)
    ds = Dataset("toy", interactions(), toy_items(), None, "toy data", False, "test")
    config = ReevaluationConfig(recommenders=("pop", "bprmf", "kfn"), n_trials=3, n_users=3, top_k=5, n_boot=50)
    judge = scripted_judge(score_of)
    run = reevaluation.run(judge, ReevaluationData(ds, toy_examples()), config)
    models = {name: fit.model for name, fit in run.fitted[0].items()}
    assert not isinstance(models["pop"], StandInRecommender)  # Pop learns nothing: fitted, exact lists
    assert isinstance(models["bprmf"], StandInRecommender) and isinstance(models["kfn"], StandInRecommender)
    assert ArtifactStore().count() == 0 and compute_log() == []
    assert not (plan_mode / "optuna.sqlite").exists() and not (plan_mode / "optuna.log").exists()
    recorded = methods(plan_mode)
    assert {(m.get("model"), m.get("method")) for m in recorded if "model" in m} == {
        ("pop", "fitted"),
        ("bprmf", "stand-in"),
        ("kfn", "stand-in"),
    }
    assert any("upper bound" in m.get("note", "") for m in recorded)


def test_plan_mode_uses_stored_artifacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = ArtifactStore()
    fitted = training.train("bprmf", toy(), None, split={"kind": "toy"}, params={"epochs": 1}, store=store)
    trained, _ = fitted.model, fitted.loaded
    count = store.count()
    monkeypatch.setenv("RECJUDGE_PLAN", str(tmp_path))
    fitted = training.train("bprmf", toy(), None, split={"kind": "toy"}, params={"epochs": 1}, store=store)
    loaded_model, loaded = fitted.model, fitted.loaded
    assert loaded and not isinstance(loaded_model, StandInRecommender)
    users = np.arange(10)
    assert (loaded_model.recommend(users, k=5) == trained.recommend(users, k=5)).all()
    assert store.count() == count
    assert methods(tmp_path) == [{"model": "bprmf", "method": "stored"}]


def test_stand_in_lists_differ_between_models(plan_mode: Path) -> None:
    train, split = toy(), {"kind": "toy"}
    specs = [("bprmf", {}), ("sasrec", {}), ("kfn", {}), ("uaum", {}), ("desr", {}), ("purs", {})]
    specs += [("deepfm", {"use_side_features": True}), ("deepfm", {"use_side_features": False})]
    users = np.arange(30)
    lists = []
    for name, params in specs:
        fitted = training.train(name, train, toy_items(), split=split, params=params)
        model, _ = fitted.model, fitted.loaded
        assert isinstance(model, StandInRecommender)
        recs = model.recommend(users, k=5)
        assert recs.shape == (30, 5)
        lists.append(recs)
        assert not set(train.loc[train["user"] == 0, "item"]) & set(recs[0])  # seen items excluded, as by a model
    for a in range(len(lists)):
        for b in range(a + 1, len(lists)):
            same = [set(lists[a][u]) == set(lists[b][u]) for u in range(len(users))]
            assert not any(same), (specs[a], specs[b])
    # a user unseen in training gets the stand-in's own list, not the popularity fallback shared by all models
    unseen = [
        training.train(n, train, toy_items(), split=split, params=p).model.recommend([999], k=5) for n, p in specs
    ]
    assert len({tuple(r[0]) for r in unseen}) == len(specs)


def test_saer_models_fitted_from_cache_or_stood_in(plan_mode: Path, isolated_runs: Path) -> None:
    train = toy()
    recs = {alg: make_recommender(key, **params) for alg, (key, params) in SAER_MODELS.items()}
    cooc = fit_or_stand_in("co-occurrence", recs["co-occurrence"], train, toy_items(), key="c")
    emb = fit_or_stand_in("embedding", recs["embedding"], train, toy_items(), key="e")
    assert not isinstance(cooc, StandInRecommender)  # counting, not learning: fitted, exact
    assert isinstance(emb, StandInRecommender)  # the catalogue is not encoded yet: no MiniLM in a plan
    assert not (isolated_runs / "embeddings").exists()

    def encoder(texts: list[str]) -> np.ndarray:
        return np.random.default_rng(len(texts)).normal(size=(len(texts), 8))

    # a caller's cheap encoder is used, nothing written
    given = make_recommender("embedding", **SAER_MODELS["embedding"][1], encoder=encoder)
    assert not isinstance(fit_or_stand_in("embedding", given, train, toy_items(), key="e2"), StandInRecommender)
    assert not (isolated_runs / "embeddings").exists()
    assert [m["method"] for m in methods(plan_mode)] == ["fitted", "stand-in", "fitted"]


def write_plan(folder: Path, identity: dict[str, str], requests: list[tuple[str, str, str]]) -> None:
    """A plan folder with one notebook ``nb`` holding records (template, prompt, answer) and their samples."""
    nb = folder / "nb"
    nb.mkdir(parents=True)
    (nb / JUDGE_FILE).write_text(json.dumps(identity))
    with open(nb / PLAN_FILE, "w") as fh, open(nb / SAMPLES_FILE, "w") as samples:
        for k, (tpl, prompt, answer) in enumerate(requests):
            messages = [{"role": "system", "content": "Judge."}, {"role": "user", "content": prompt}]
            chars = prompt_chars(messages)
            record = {
                "template_id": tpl,
                "cache_key": f"k{k}",
                "cached": False,
                "prompt_chars": chars,
                "completion_chars": len(answer),
                "prompt_tokens": chars // 4,
                "completion_tokens": len(answer) // 4,
                "max_tokens": 400,
                "chained": False,
            }
            fh.write(json.dumps(record) + "\n")
            sample = {"template_id": tpl, "messages": messages, "answer": answer, "prompt_chars": chars}
            samples.write(json.dumps(sample) + "\n")


def write_earlier_run(runs: Path, endpoint: str, model: str, calls: list[tuple[str, str, int, int]]) -> None:
    """``runs/old/nb/judgments.jsonl`` and ``messages.jsonl``: paid calls (template, prompt, prompt and completion
    tokens) of one judge, plus a cache hit and a call of another judge that must not count."""
    from recjudge_utils.judge.cache import messages_hash

    folder = runs / "old" / "nb"
    folder.mkdir(parents=True)
    with open(folder / "judgments.jsonl", "w") as log, open(folder / "messages.jsonl", "w") as msgs:
        for k, (tpl, prompt, pt, ct) in enumerate(calls):
            messages = [{"role": "user", "content": prompt}]
            h = messages_hash(messages)
            msgs.write(json.dumps({"messages_hash": h, "messages": messages}) + "\n")
            base = {"template_id": tpl, "model": model, "endpoint": endpoint, "messages_hash": h, "status": "parsed"}
            log.write(
                json.dumps({**base, "cache_key": f"e{h[:12]}", "prompt_tokens": pt, "completion_tokens": ct}) + "\n"
            )
            hit = {**base, "cache_key": f"e{h[:12]}", "cache_hit": True, "prompt_tokens": 1, "completion_tokens": 1}
            log.write(json.dumps(hit) + "\n")
            other = {**base, "endpoint": "https://elsewhere/v1", "cache_key": f"o{k}", "prompt_tokens": 10**6}
            log.write(json.dumps(other) + "\n")


def test_remote_token_rule_is_chars_over_4_without_earlier_runs(tmp_path: Path) -> None:
    profile = load_profile("gpt-4o-mini")
    identity = {"backend": "openai", "endpoint": "https://api.openai.com/v1", "model": "gpt-4o-mini"}
    write_plan(tmp_path / "plan", identity, [("t", "x" * 394, '{"score": 3}')])
    rule = token_rule(profile, tmp_path / "plan", ["nb"])
    assert rule.prompt == "chars/4 (no earlier run of this judge)"
    assert rule.completion.startswith("chars/4") and "simulated" in rule.completion  # uncalibrated:
    assert "no earlier run" in rule.completion and "measured" not in rule.completion
    table = plan_summary(tmp_path / "plan", profile, ["nb"])
    assert table.loc[0, "prompt_tokens"] == 100 and table.loc[0, "completion_tokens"] == 3  # 400 / 4, 12 / 4
    assert table.attrs["prompt_token_rule"] == rule.prompt


def test_remote_token_rule_calibrated_by_earlier_calls_of_the_same_judge(tmp_path: Path, isolated_runs: Path) -> None:
    profile = load_profile("gpt-4o-mini")
    endpoint, model = "https://api.openai.com/v1", "gpt-4o-mini"
    # earlier: 400-character prompts that took 150 tokens (chars/4 = 100: ratio 1.5); answers of 40 tokens
    write_earlier_run(isolated_runs, endpoint, model, [("t", "y" * 400, 150, 40)] * 3)
    calls = earlier_calls(endpoint, model)
    assert len(calls) == 1  # one cache key; the cache hit and the other judge's call are not counted
    assert calls[0].prompt_chars == 400 and calls[0].prompt_tokens == 150
    write_plan(
        tmp_path / "plan", {"backend": "openai", "endpoint": endpoint, "model": model}, [("t", "x" * 394, "a" * 40)]
    )
    rule = token_rule(profile, tmp_path / "plan", ["nb"])
    assert rule.prompt.startswith("chars/4") and "measured" in rule.prompt
    assert numbers_in(rule.prompt) == [4, 1.5, 1]  # chars/4 x 1.50, measured on 1 earlier call
    # completions: the sim's 40 characters (10 tokens) against 40 actual tokens per call: x 4
    assert rule.completion.startswith("chars/4") and "per template" in rule.completion
    assert numbers_in(rule.completion) == [4, 4.0, 1]  # chars/4 x 4.00, measured on 1 earlier call
    table = plan_summary(tmp_path / "plan", profile, ["nb"])
    assert table.loc[0, "prompt_tokens"] == 150 and table.loc[0, "completion_tokens"] == 40


def test_embedded_token_rule_counts_with_smollm2_tokenizer(tmp_path: Path) -> None:
    profile = load_profile("embedded")
    prompt = "The user watched Heat (1995), Casino (1995) and Fargo (1996). Rate the candidate: Toy Story (1995)."
    write_plan(tmp_path / "plan", {"backend": "embedded", "endpoint": "local:x", "model": "m"}, [("t", prompt, "{}")])
    rule = token_rule(profile, tmp_path / "plan", ["nb"])
    assert rule.prompt.startswith("SmolLM2 tokenizer") and numbers_in(rule.prompt)[0] == 1  # sampled request
    assert "SmolLM2 tokenizer" in rule.completion and "no earlier run" in rule.completion
    tokenizer = ChatTokenizer()
    try:
        messages = [{"role": "system", "content": "Judge."}, {"role": "user", "content": prompt}]
        exact = tokenizer.prompt_tokens(messages)
        # the ChatML wrapping is counted: more tokens than the contents alone
        assert exact > tokenizer.text_tokens("Judge.") + tokenizer.text_tokens(prompt) + 4
    finally:
        tokenizer.close()
    table = plan_summary(tmp_path / "plan", profile, ["nb"])
    assert table.loc[0, "prompt_tokens"] == exact  # the sampled request itself is counted exactly


def test_open_judge_in_plan_mode_needs_no_key(plan_mode: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = open_judge("gpt-4o-mini", run_name="nb", progress=False)
    try:
        request = JudgeRequest(
            messages=({"role": "user", "content": "Rate it."},),
            template_id="t",
            template_version="1",
            answer_format="json_levels",
        )
        result = client.judge(request)
    finally:
        client.close()
    assert result.status == "parsed"
    records = [json.loads(line) for line in (plan_mode / "nb" / PLAN_FILE).read_text().splitlines()]
    assert len(records) == 1 and records[0]["prompt_chars"] == len("Rate it.")
    assert json.loads((plan_mode / "nb" / JUDGE_FILE).read_text())["model"] == "gpt-4o-mini"


@pytest.mark.slow
@pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")
def test_book_plan_of_one_notebook_needs_no_key_and_says_how_it_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from recjudge_utils import book

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    summary = book.plan(load_profile("gpt-4o-mini"), "x", only=["00"], root=ROOT)
    row = summary["notebooks"][0]
    assert row["notebook"] == "00_introduction" and row["calls"] == 1
    assert row["requests"] == "exact requests (no recommenders)"
    assert summary["prompt_token_rule"] == "chars/4 (no earlier run of this judge)"
    assert "completion_token_rule" in summary and summary["recommenders"]["00_introduction"]["stand_ins"] == ""


def test_plan_method_names_the_stand_ins_and_the_counts_caveat(tmp_path: Path) -> None:
    from recjudge_utils.book.planner import _plan_method

    folder = tmp_path / "nb"
    folder.mkdir()
    lines = [
        {"model": "pop", "method": "fitted"},
        {"model": "bprmf", "method": "stand-in"},
        {"model": "deepfm", "method": "stand-in"},
        {"model": "deepfm", "method": "stand-in"},
        {"note": "each distinct pair is one call"},
    ]
    (folder / METHODS_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    method = _plan_method(tmp_path, "nb")
    requests = method["requests"]  # stand-ins by name, one trained twice, and the caveat the note brings
    assert requests.startswith("stand-in lists") and "bprmf, deepfm x2" in requests and "about the most" in requests
    assert method["fitted_without_training"] == "pop" and method["notes"] == ["each distinct pair is one call"]
    assert json.loads((folder / "plan_method.json").read_text()) == method
    (folder / METHODS_FILE).write_text(json.dumps({"model": "bprmf", "method": "stored"}) + "\n")
    assert _plan_method(tmp_path, "nb")["requests"] == "exact requests (stored recommenders)"
    assert _plan_method(tmp_path, "other")["requests"] == "exact requests (no recommenders)"
