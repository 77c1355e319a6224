"""SAER's experiment (``saer.run``) with the shared scripted judge: numbers equal to those of the code before the
one-experiment-shape refactor (recorded from it), CIs as numbers, and what the swap, the adversarial test and the
copy check show about biased judges; every number chapter 4 shows is computed here (the paper's Wilson intervals
against statsmodels, the kappa exercise against scikit-learn), and the held-out split is ``split_last_n``'s."""

from __future__ import annotations

import gzip
import itertools
import json
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from claims import about, counts_in, numbers_in
from domain_words import MOVIE_WORDS
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint
from test_protocol_saer import _toy_items, paper_table

from recjudge_utils.data import Dataset
from recjudge_utils.experiments import saer
from recjudge_utils.experiments.kappa_exercise import KAPPA_EXERCISE, kappa_by_hand
from recjudge_utils.experiments.saer import SaerConfig, sample_customers
from recjudge_utils.judge.loading import client_for
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.metrics.agreement import POINTWISE_LABELS
from recjudge_utils.protocols.context.saer import Catalogue
from recjudge_utils.protocols.saer import few_shot_answers, load_template
from recjudge_utils.reporting.saer import (
    agreement_table,
    consistency_table,
    context_note,
    run_notes,
    table1,
    table2,
    table3,
)
from recjudge_utils.splitting.temporal import split_last_n

DAY = 86400
WORDS = "word-counts"  # the cheap offline encoder: no MiniLM in tests


def _toy_dataset(n_users=24, n_items=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(1, n_users + 1):
        n = 6 + (u % 3) * 5
        for j, it in enumerate(rng.choice(np.arange(1, n_items + 1), size=n, replace=False)):
            rows.append((u, int(it), float(rng.integers(1, 6)), 1_000_000 + j * DAY + u))
    inter = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    return Dataset(
        "toy",
        inter,
        _toy_items(n_items),
        None,
        label="toy (stand-in)",
        is_real=False,
        source="test",
        domain=MOVIE_WORDS,
    )


def _measure(frame: pd.DataFrame, measure: str, column: str = "value") -> list:
    """``column`` of a long frame's rows holding ``measure``, in the frame's order."""
    return frame.loc[frame["measure"] == measure, column].tolist()


def _group(frame: pd.DataFrame, column: str, key: str) -> pd.DataFrame:
    """A long frame's rows whose ``column`` is ``key``, indexed by measure."""
    return frame.loc[frame[column] == key].set_index("measure")


def _always_set_1(req):
    if req.template_id.split("/")[-1].startswith("pointwise"):
        return "REASONING: fine.\nCATEGORY: Partial Match\nFLAGGED ITEMS: 2"
    return "REASONING: first looks better.\nVERDICT: Set 1"


def _requests(client):
    return [r for _, reqs in client.calls for r in reqs]


def test_run_with_position_biased_judge_shows_what_the_swap_reveals(scripted_judge):
    ds = _toy_dataset()
    cfg = SaerConfig(
        n_customers=9,
        prompt_versions=("v1", "v3"),
        main_version="v3",
        n_boot=100,
        pointwise_ablation=True,
        encoder=WORDS,
    )
    client = scripted_judge(_always_set_1)
    run = saer.run(client, ds, cfg)
    # calls: pointwise 2 algs x 9 x 2 versions, pairwise 9 x 2 orders, adversarial 9 x 2 versions
    assert len(_requests(client)) == 36 + 18 + 18
    # requests grouped by template (prefix reuse): pointwise v3 -> pointwise v1 -> pairwise v3 (the swapped
    # comparisons, then the v3 adversarial pairs on the same template) -> pairwise v1 (adversarial)
    ids = [r.template_id for r in _requests(client)]
    switches = [b for a, b in itertools.pairwise(ids) if a != b]
    assert switches == ["saer/movies/pointwise_v1", "saer/movies/pairwise_v3", "saer/movies/pairwise_v1"]
    # Table 1: everything Partial
    partial = run.labels.loc[run.labels["category"] == "Partial Match"]
    assert partial["pct"].tolist() == [100.0, 100.0] and (run.labels["n_unparsed"] == 0).all()
    t1 = table1(run, "Table 1").data
    assert t1.loc[t1["Label"] == "Partial Match", "Ours, % [95 % CI]"].str.startswith("100.0 [").all()
    assert t1["Algorithm (judged lists)"].str.endswith("(9 lists)").all()
    assert t1["Paper: SAER %"].tolist() == paper_table("table1")["saer_pct"].tolist()
    # every list flags its item 2: one flag per list, the items most often second in a list come first
    fl = run.flagged.set_index("algorithm")
    assert fl["flagged_mean"].tolist() == [1.0, 1.0] and fl["flagged_%"].tolist() == [100.0, 100.0]
    for alg, most in fl["most"].items():
        second = pd.Series([run.sample.lists[alg][u][1] for u in run.sample.users]).value_counts()
        assert [count for _, count in most] == second.sort_values(ascending=False).tolist()[:3]
        assert {item for item, _ in most} <= set(second.index)
    # Table 2: raw rates split 50/50 by position; the swap turns every pair into a tie
    raw, adj = (part.set_index("measure")["value"] for _, part in run.verdicts.groupby("scope", sort=False))
    assert raw["cooccurrence_win"] == 50.0 and raw["embedding_win"] == 50.0
    assert adj["tie"] == 100.0
    t2 = table2(run, "Table 2").data.set_index(["Verdicts", "Source"])
    assert t2.loc[("raw calls", "ours"), "Co-occurrence wins %"].startswith("50.0 [")
    assert t2.loc[("adjudicated pairs", "ours"), "Ties %"].startswith("100.0 [")
    assert t2.loc[("adjudicated pairs", "paper"), "Ties %"] == "15.5"
    assert consistency_table(run, "Position consistency").data.iloc[0]["Ours"].startswith("0 of 9: 0.0 [0.0, ")
    assert (run.adjudicated["consistent"] == False).all()  # noqa: E712
    # what the two orders said: the first-shown list won both times for every customer
    assert run.orders["count"].to_dict() == dict.fromkeys(saer.ORDER_OUTCOMES, 0) | {
        "first-shown list won both times": 9,
        "unjudged": 0,
    }
    assert run.orders.loc["first-shown list won both times", "pct"] == 100.0
    # Table 3: "correct" exactly when the genuine list happened to be shown first
    adv = run.adversarial.loc[run.adversarial["prompt_version"] == "v3"]
    expected = 100 * float((adv["genuine_position"] == 1).mean())
    det = _group(run.detection, "prompt_version", "v3")["value"]
    assert det["correct"] == pytest.approx(expected)
    assert det["genuine_first"] == det["genuine_first_parsed"] == pytest.approx(expected)
    t3 = table3(run, "Table 3").data.set_index(["Evaluator", "Source"])
    row = t3.loc[("SAER refined prompt (v3)", "ours")]
    assert row["Correct %"].startswith(f"{expected:.1f} [") and row["Named Set 1 %"] == "100.0"
    assert t3.loc[("SAER refined prompt (v3)", "paper"), "Correct %"] == "91.0"
    assert sum(evaluator.startswith("Human") for evaluator, _ in t3.index) == 2
    # agreement: identical constant answers across versions -> full raw agreement, undefined kappa
    ag = run.agreements
    pw = ag.loc[ag["task"] == "pointwise"].iloc[:2].set_index("measure")["value"]
    assert pw["raw_agreement"] == 100.0 and np.isnan(pw["kappa_w"])
    orders = _group(ag, "task", "pairwise")["value"]
    assert orders["raw_agreement"] == 0.0 and orders["kappa_w"] == pytest.approx(0.0)  # constant vs constant
    shown = agreement_table(run, "Agreement").data
    ours = shown.loc[shown["Source"] == "ours"].set_index("Task")
    assert ours.loc["pairwise", "Weighted κ [95 % CI]"].startswith("0.00 [")
    assert ours.loc["pointwise", "Weighted κ [95 % CI]"] == "n/a"
    frames = (run.pointwise, run.pairwise, run.adversarial)
    cost = run.cost
    assert (cost.calls, cost.fresh) == (72, 72)
    assert cost.prompt_tokens == sum(int(f["prompt_tokens"].sum()) for f in frames)
    assert cost.per_call_s == pytest.approx(pd.concat(frames)["latency_s"].mean())
    assert cost.minutes_at(saer.PAPER_CALLS) == pytest.approx(saer.PAPER_CALLS * cost.per_call_s / 60)
    assert cost.judge_s == pytest.approx(sum(v for k, v in run.timings.items() if k.startswith("judge ")))
    assert run.answers[["unparsed", "errors"]].sum().sum() == 0 and run.answers["reason"].isna().all()
    assert run.answers["calls"].tolist() == [18, 18, 18, 9, 9]  # pointwise v1, v3, pairwise v3, adversarial v1, v3
    assert run.top_label == ("Partial Match", 18)  # the main prompt's labels


def test_run_with_content_aware_judge_and_unparsed_answers(scripted_judge):
    """A judge that prefers the set sharing more genres with the history is position-consistent;
    garbage answers are counted as unparsed, never replaced."""
    ds = _toy_dataset()
    cat = Catalogue.from_items(ds.items)

    def overlap(block, history_genres):
        titles = re.findall(r"^\d+\. (Movie \d+)", block, re.M)
        ids = [int(t.split()[1]) for t in titles]
        return sum(len(set(cat.categories[i]) & history_genres) for i in ids)

    def answer(req):
        text = req.messages[-1]["content"]
        hist = text.split("RECOMMENDATIONS")[0].split("SET 1")[0]
        genres = {g for g in ("Action", "Comedy", "Drama", "Horror") if g in hist}
        if "pointwise_v1" in req.template_id:
            return "I think it is fine."  # unparseable
        if req.template_id.split("/")[-1].startswith("pointwise"):
            return "REASONING: ok\nCATEGORY: Good Match\nFLAGGED ITEMS: None"
        s1, s2 = text.split("SET 2")
        a, b = overlap(s1.split("SET 1")[1], genres), overlap(s2, genres)
        verdict = "Set 1" if a > b else "Set 2" if b > a else "Tie"
        return f"REASONING: overlap {a} vs {b}\nVERDICT: {verdict}"

    cfg = SaerConfig(n_customers=8, prompt_versions=("v1", "v3"), n_boot=100, pointwise_ablation=True, encoder=WORDS)
    run = saer.run(scripted_judge(answer), ds, cfg)
    adj = run.adjudicated
    assert adj["consistent"].all()  # content-only judge: same verdict in both orders
    pw = run.pointwise
    v1 = pw.loc[pw["prompt_version"] == "v1"]
    assert (v1["status"] == "unparsed").all() and v1["category"].isna().all()
    summary = run.answers.set_index(["task", "prompt_version"])
    assert summary.loc[("pointwise", "v1"), "unparsed"] == 16
    assert summary.loc[("pointwise", "v1"), "raw"] == "I think it is fine."  # the first answer that did not parse
    assert summary.loc[("pointwise", "v1"), "reason"].startswith("no REASONING")
    assert summary.loc[("pointwise", "v3"), "unparsed"] == 0 and pd.isna(summary.loc[("pointwise", "v3"), "raw"])
    assert run.agreements.loc[run.agreements["task"] == "pointwise", "n"].iloc[0] == 0  # nothing imputed
    ag = agreement_table(run, "Agreement").data
    assert ag.loc[(ag["Task"] == "pointwise") & (ag["Source"] == "ours"), "Cases"].iloc[0] == "0"


def test_sample_customers_stratified_and_seeded():
    ds = _toy_dataset(n_users=30)
    s = sample_customers(ds.interactions, 9, seed=1)
    assert s["user"].is_unique and len(s) == 9
    assert s["engagement"].value_counts().to_dict() == {"low": 3, "medium": 3, "high": 3}
    pd.testing.assert_frame_equal(s, sample_customers(ds.interactions, 9, seed=1))
    with pytest.raises(ValueError):
        sample_customers(ds.interactions, 999)
    with pytest.raises(ValueError):
        SaerConfig(n_customers=1)
    with pytest.raises(ValueError):
        SaerConfig(prompt_versions=("v1",), main_version="v3")


def test_parroting_judge_is_detected_and_always_tie_is_called_out(scripted_judge):
    tie_example = few_shot_answers(load_template("movies", "pairwise", "v3"), MOVIE_WORDS)[-1]

    def answer(req):
        if req.template_id.split("/")[-1].startswith("pointwise"):
            return "REASONING: my own words here.\nCATEGORY: Good Match\nFLAGGED ITEMS: None"
        if req.template_id.endswith("_v3"):
            return tie_example  # copies the explicit tie example verbatim
        return "REASONING: short.\nVERDICT: Tie"

    run = saer.run(
        scripted_judge(answer),
        _toy_dataset(),
        SaerConfig(n_customers=4, prompt_versions=("v1", "v3"), n_boot=50, pointwise_ablation=True, encoder=WORDS),
    )
    cp = run.copied.set_index(["task", "prompt_version"])
    assert cp.loc[("pairwise", "v3"), "copied"] == 8 and cp.loc[("adversarial", "v3"), "copied"] == 4
    assert cp.loc[("pointwise", "v3"), ["shots", "parsed", "copied"]].tolist() == [5, 8, 0]
    assert cp.loc[("adversarial", "v1"), "shots"] == 0 and cp.loc[("adversarial", "v1"), "copied"] == 0
    cons = run.position.loc["position consistency"]
    assert (cons["count"], cons["n"]) == (4, 4) and run.orders.loc["tie in both orders", "count"] == 4
    notes = run_notes(run).text.splitlines()
    assert counts_in(about(notes, "agreed")) == [(4, 4)]  # both orders agreed for 4 of 4 customers
    assert numbers_in(about(notes, "'Tie'"))[0] == 4  # all 4 by answering Tie twice


def test_run_on_amazon_format_files_uses_the_ecommerce_prompts(tmp_path, scripted_judge):
    data = pytest.importorskip("recjudge_utils.data")
    folder = tmp_path / "amazon-beauty"
    folder.mkdir()
    rng = np.random.default_rng(0)
    cats = [["Beauty", "Hair Care", "Styling Tools"], ["Beauty", "Skin Care", "Serums"], ["Beauty", "Makeup", "Lips"]]
    with gzip.open(folder / "reviews_Beauty_5.json.gz", "wt", encoding="utf-8") as fh:
        for r in range(12):
            for j, p in enumerate(rng.choice(20, size=6, replace=False)):
                rec = {
                    "reviewerID": f"R{r}",
                    "asin": f"P{p:03d}",
                    "overall": float(rng.integers(1, 6)),
                    "unixReviewTime": 1_400_000_000 + j * DAY,
                }
                fh.write(json.dumps(rec) + "\n")
    with gzip.open(folder / "meta_Beauty.json.gz", "wt", encoding="utf-8") as fh:
        for p in range(20):
            rec = {"asin": f"P{p:03d}", "categories": [cats[p % 3]]}
            if p % 4:
                rec["title"] = f"Product {p}"
            if p % 2:
                rec["brand"] = f"Brand{p % 5}"
            fh.write(repr(rec) + "\n")
    ds = data.load_dataset("amazon-beauty", data_dir=tmp_path, fetch=False, verbose=False)
    client = scripted_judge(_always_set_1)
    cfg = SaerConfig(n_customers=6, prompt_versions=("v3",), n_boot=50, pointwise_ablation=True, encoder=WORDS)
    run = saer.run(client, ds, cfg)
    assert run.sample.domain == "ecommerce" and "stand-in" not in run.data_label
    assert {r.template_id.split("/")[1] for r in _requests(client)} == {"ecommerce"}
    body = _requests(client)[0].messages[-1]["content"]
    assert "Purchase history (reviewed 3-5 stars)" in body and "Recent searches: not available" in body
    assert "Bought but disliked (reviewed 1-2 stars)" in body
    # products without a title in the metadata are named by their ASIN, never given an invented title
    assert any("untitled product P0" in r.messages[-1]["content"] for r in _requests(client))
    assert len(table1(run, "Table 1").data) == 6


def truth_judge(req: JudgeRequest) -> str:
    """Reads the truth, less well under the generic prompt v1: labels, the list with more held-out positives
    (Set 1 on equal evidence: a position bias), the genuine list (a tie against some decoys)."""
    truth: object = req.truth
    meta = dict(req.metadata or {})
    v1 = req.template_id.endswith("_v1")
    if req.template_id.split("/")[-1].startswith("pointwise"):
        level = truth.level  # type: ignore[attr-defined]
        level = min(level + 1, 2) if v1 and int(meta["user"]) % 2 else level  # type: ignore[arg-type]
        return f"REASONING: fine.\nCATEGORY: {truth.labels[level]}\nFLAGGED ITEMS: 2"  # type: ignore[attr-defined]
    if meta.get("task") == "adversarial" and int(meta["decoy_user"]) % (2 if v1 else 3) == 0:  # type: ignore[arg-type]
        return "REASONING: cannot tell.\nVERDICT: Tie"
    first, second = truth.first, truth.second  # type: ignore[attr-defined]
    return f"REASONING: compared.\nVERDICT: {'Set 1' if first >= second else 'Set 2'}"


def _two_genre_items(n_items: int = 40) -> pd.DataFrame:
    genres = ["Action", "Comedy", "Drama", "Horror"]
    return pd.DataFrame(
        {
            "item": range(1, n_items + 1),
            "title": [f"Movie {i}" for i in range(1, n_items + 1)],
            "genres": [[genres[i % 4], genres[(i * 7) % 4]] for i in range(1, n_items + 1)],
            "year": [1980 + i % 30 for i in range(1, n_items + 1)],
        }
    )


def test_run_gives_the_numbers_of_the_old_code_with_cis_as_numbers(scripted_judge):
    inter = _toy_dataset().interactions
    ds = Dataset(
        "toy", inter, _two_genre_items(), None, label="toy (stand-in)", is_real=False, source="test", domain=MOVIE_WORDS
    )
    # a scripted judge reading the truth needs the held-out future a simulated judge gets
    cfg = SaerConfig(n_customers=9, n_boot=200, pointwise_ablation=True, encoder=WORDS, heldout=saer.SIM_HELDOUT)
    run = saer.run(scripted_judge(truth_judge), ds, cfg)
    assert run.sample.users == [24, 10, 14, 6, 1, 17, 3, 4, 2]
    assert set(run.timings) == {
        "load data",
        "fit recommenders",
        "judge pointwise",
        "judge pairwise",
        "judge adversarial",
    }
    # re-recorded when both recommenders moved to purchases only (issue 32, item 5): customer 24 keeps one visible
    # interaction, a 1-2 star one, so neither model knows them and both give the popularity fallback
    assert run.sample.lists["co-occurrence"][24] == [10, 37, 13, 9, 25, 31, 27, 1, 35, 16]
    assert run.sample.lists["embedding"][24] == run.sample.lists["co-occurrence"][24]
    assert run.sample.hits["co-occurrence"] == {24: 0, 10: 1, 14: 0, 6: 0, 1: 0, 17: 1, 3: 2, 4: 0, 2: 1}
    assert run.labels["pct"].tolist() == pytest.approx([100 / 9, 300 / 9, 500 / 9, 200 / 9, 100 / 9, 600 / 9])
    assert run.labels["low"].round(1).tolist() == [2.0, 12.1, 26.7, 6.3, 2.0, 35.4]
    assert _measure(run.verdicts, "cooccurrence_win") == pytest.approx([1000 / 18, 400 / 18])
    assert _measure(run.verdicts, "tie") == pytest.approx([0.0, 600 / 9])
    assert [round(h, 1) for h in _measure(run.verdicts, "tie", "high")] == [17.6, 87.9]
    cons = run.position.loc["position consistency"]
    assert (cons["count"], cons["n"]) == (3, 9) and cons["low"] == pytest.approx(12.05838183869109)
    assert _measure(run.detection, "correct") == pytest.approx([600 / 9, 500 / 9, 500 / 9])
    assert _measure(run.detection, "chose_Set_1") == pytest.approx([200 / 9, 100 / 9, 100 / 9])
    ag = run.agreements
    assert _measure(ag, "kappa_w") == pytest.approx(
        [0.8669950738916257] * 2 + [1.0, 0.06896551724137934] + [-0.15384615384615397] * 2 + [1.0]
    )
    assert [round(lo, 2) for lo in _measure(ag, "kappa_w", "low")] == [0.63, 0.63, 1.0, 0.0, -0.62, -0.62, 1.0]
    assert [round(lo, 1) for lo in _measure(ag, "raw_agreement", "low")] == [61.1, 61.1, 100.0, 10.8, 21.9, 21.9, 100.0]
    assert agreement_table(run, "Agreement").data["Weighted κ [95 % CI]"].iloc[0] == "0.87 [0.63, 1.00]"
    for frame, value in ((run.labels, "pct"), (run.verdicts, "value"), (run.detection, "value"),
                         (run.agreements, "value")):  # fmt: skip
        ci = frame.dropna(subset=["low", "high"])
        assert len(ci) and ((ci["low"] <= ci[value] + 1e-9) & (ci[value] <= ci["high"] + 1e-9)).all()
    results = run.results()
    assert [r.metric for r in results].count("label_pct") == 6 and len(results) == 16
    for e in (r.estimate for r in results):
        assert e.known and e.has_ci and e.low <= e.value <= e.high
    assert results[0].estimate.low == pytest.approx(1.9890887638544907)  # a number, no longer a string rounded to 0.1
    assert {k: len(v) for k, v in run.items().items()} == {"pointwise": 54, "pairwise": 18, "adversarial": 27}


def test_an_llm_run_sees_the_whole_history_and_only_a_simulated_run_holds_out_the_future(tmp_path, scripted_judge):
    """Issue 24, item 3: the held-out split exists only so the simulated judge has a truth; an LLM judge reads each
    customer's last interactions, and the recommenders train on them."""
    ds = _toy_dataset()
    cfg = SaerConfig(n_customers=6, prompt_versions=("v3",), n_boot=20, encoder=WORDS, max_history=None)
    client = scripted_judge(_always_set_1)
    llm = saer.run(client, ds, cfg)
    assert llm.config.heldout == 0 and llm.sample.heldout == 0 and llm.sample.hits is None
    assert all(r.truth is None for r in _requests(client) if r.metadata and r.metadata["task"] != "adversarial")
    inter = ds.interactions.sort_values(["user", "timestamp", "item"])
    for u in llm.sample.users:
        last = inter.loc[inter["user"] == u].tail(saer.SIM_HELDOUT)
        ctx = llm.sample.contexts[u]
        assert set(last["item"]) <= {i for i, _, _ in (*ctx.history, *ctx.disliked)}
        assert ctx.window_end == int(last["timestamp"].max())
        # recommenders trained on the last interactions too: they are seen, so never recommended back
        assert not set(last["item"]) & set(llm.sample.lists["co-occurrence"][u])

    sim = client_for(model="sim", backend="sim", run_dir=tmp_path / "sim", progress=False)
    try:
        simulated = saer.run(sim, ds, cfg)
    finally:
        sim.close()
    assert simulated.sample.users == llm.sample.users
    assert simulated.config.heldout == saer.SIM_HELDOUT and simulated.sample.hits is not None
    for u in simulated.sample.users:
        last = inter.loc[inter["user"] == u].tail(saer.SIM_HELDOUT)
        ctx = simulated.sample.contexts[u]
        assert not set(last["item"]) & {i for i, _, _ in (*ctx.history, *ctx.disliked)}
    with pytest.raises(ValueError, match="resolve"):
        saer.build_sample(ds, cfg)  # heldout None: the judge decides, so a bare sample cannot
    # the notebook's note comes from the run
    liked = sum(c.n_liked for c in llm.sample.contexts.values())
    llm_lines = context_note(llm).text.splitlines()
    assert "every item" in llm_lines[2] and "`max_history=None`" in llm_lines[2]  # the whole window, uncut
    assert numbers_in(llm_lines[2])[0] == cfg.window_days == 180
    assert f"shown: {liked} of {liked} liked" in llm_lines[2]
    assert llm_lines[3].startswith("- Nothing held out")
    words_line = about(llm_lines, "Words:")  # which words, prompts and item fields the judge was shown
    assert '"movie"' in words_line and '"watched"' in words_line
    prompts_line = about(llm_lines, "SAER:")
    assert f"saer/movies/pointwise_{cfg.main_version}" in prompts_line and "saer/movies/pairwise_" in prompts_line
    assert "title" in prompts_line and "categories" in prompts_line
    sim_note = context_note(simulated).text
    assert f"- Held-out future: each customer's last {saer.SIM_HELDOUT} " in sim_note
    cut = context_note(saer.run(scripted_judge(_always_set_1), ds, replace(cfg, max_history=2))).text
    (line,) = [line for line in cut.splitlines() if "max_history=2" in line]
    assert numbers_in(line)[:2] == [2, 2] and "liked" in line and "disliked" in line  # 2 of each per customer


def test_config_checks_min_interactions_and_encoder():
    with pytest.raises(ValueError, match="min_interactions"):
        SaerConfig(min_interactions=5)  # a simulated-judge run holds out 5
    assert SaerConfig(min_interactions=2, heldout=0).resolved("simulated judge").heldout == 0  # given: kept
    with pytest.raises(ValueError, match="max_history"):
        SaerConfig(max_history=0)
    with pytest.raises(ValueError, match="encoder"):
        SaerConfig(encoder="bert")


def test_both_recommenders_learn_from_purchases_and_a_disliked_item_seeds_nothing():
    """Issue 32, item 5: SAER's co-occurrence is items "frequently purchased together" (Sec. 3.4); the stand-in's
    purchases are 3-5 stars, so a 1-2 star rating neither co-occurs, nor seeds a list, nor comes back in one."""
    t0 = 1_000_000
    rows = [
        (1, 1, 5.0, t0),  # customer 1 bought item 1 ...
        (1, 2, 1.0, t0 + DAY),  # ... and disliked item 2, most recently
        *[(u, i, 4.0, t0 + u) for u in (2, 3, 4) for i in (2, 3)],  # items 2 and 3 bought together, three times
        (5, 1, 4.0, t0 + 5),
        (5, 4, 4.0, t0 + 6),  # items 1 and 4 bought together once
        (6, 1, 2.0, t0 + 7),
        (6, 5, 5.0, t0 + 8),  # items 1 and 5 only co-rated through a dislike
    ]
    inter = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"])
    ds = Dataset(
        "toy",
        inter,
        _two_genre_items(8),
        None,
        label="toy (stand-in)",
        is_real=False,
        source="test",
        domain=MOVIE_WORDS,
    )
    cfg = SaerConfig(n_customers=2, min_interactions=2, heldout=0, encoder=WORDS)
    models = {alg: fit.model for alg, fit in saer.fit_recommenders(ds, inter, cfg).items()}
    bought = {(u, i) for u, i, r, _ in rows if r >= 3}
    for model in models.values():
        matrix = model.train_matrix.tocoo()
        learned = {
            (int(model.user_ids[r]), int(model.item_ids[c])) for r, c in zip(matrix.row, matrix.col, strict=True)
        }
        assert learned == bought
    cooc = models["co-occurrence"]
    col = {int(i): c for c, i in enumerate(cooc.item_ids)}
    assert cooc.cooccurrence[col[1], col[5]] == 0  # co-rated only through customer 6's 2-star rating
    assert cooc.cooccurrence[col[1], col[2]] == 0 and cooc.cooccurrence[col[2], col[3]] == 3
    lists = saer.unrated_lists(models, inter, [1], k=3)
    # seeded by item 1 alone: item 4 (bought with it) first; item 3 (bought with the disliked item 2) has no score
    assert lists["co-occurrence"][1][0] == 4
    for per_user in lists.values():
        assert not {1, 2} & set(per_user[1]) and len(per_user[1]) == 3  # nothing rated comes back, disliked included


def test_the_held_out_split_is_split_last_n_for_the_sampled_customers_only():
    """Issue 30, item 4: one held-out split. SAER's was a copy of ``split_last_n`` restricted to its customers; the
    loaders give interactions sorted by (user, timestamp, item), which is the order ``split_last_n`` returns, so the
    visible rows reach the contexts and the recommenders in the same order as before."""
    rng = np.random.default_rng(3)
    times = {u: rng.integers(0, 4, 8) for u in (1, 2, 3)}  # few distinct times: ties that the item breaks
    rows = [(u, i, 4.0, 1_000 + int(times[u][i - 1])) for u in (1, 2, 3) for i in range(1, 9)]
    inter = pd.DataFrame(rows, columns=["user", "item", "rating", "timestamp"]).sample(frac=1.0, random_state=0)
    visible, future = split_last_n(inter, 3, min_train=1, users=[1, 3])
    assert set(future["user"]) == {1, 3} and len(future) == 6  # user 2 keeps every interaction
    for u in (1, 3):
        last = inter.loc[inter["user"] == u].sort_values(["timestamp", "item"]).tail(3)
        assert set(future.loc[future["user"] == u, "item"]) == set(last["item"])  # ties in time broken by item
    assert len(visible) + len(future) == len(inter)
    assert visible.equals(visible.sort_values(["user", "timestamp", "item"]).reset_index(drop=True))
    assert split_last_n(inter, 4)[1].empty  # 8 interactions are fewer than n_test + min_train (4 + 5)
    # the sample holds out exactly that future: no held-out item in a context, the rest of the window in it
    ds = _toy_dataset()
    cfg = SaerConfig(n_customers=5, n_boot=10, encoder=WORDS, heldout=saer.SIM_HELDOUT)
    sample = saer.build_sample(ds, cfg)
    visible, future = split_last_n(ds.interactions, saer.SIM_HELDOUT, min_train=1, users=sample.users)
    for u in sample.users:
        ctx = sample.contexts[u]
        shown = {i for i, _, _ in (*ctx.history, *ctx.disliked)}
        assert not shown & set(future.loc[future["user"] == u, "item"])
        assert ctx.window_end == int(visible.loc[visible["user"] == u, "timestamp"].max())


def test_paper_shares_are_wilson_intervals_of_the_printed_counts():
    """The paper prints shares without intervals: each one's count is share x sample size, its interval Wilson's
    (statsmodels' proportion_confint as the reference)."""
    paper = saer.paper_shares()
    assert (paper.loc["position consistency", "count"], paper.loc["position consistency", "n"]) == (176, 200)
    assert paper.loc["Good Match, co-occurrence", ["value", "count", "n"]].tolist() == [12.5, 25, saer.PAPER_LISTS]
    assert paper.loc["adversarial correct, v3", ["value", "count", "n"]].tolist() == [91.0, 91, 100]
    assert paper.loc["adversarial correct, Human Annotator B", "value"] == 73.0
    assert paper.loc["adjudicated ties", ["value", "n"]].tolist() == [15.5, 200]
    assert len(paper) == 2 + 3 + 1 + 5
    for _, row in paper.iterrows():
        low, high = proportion_confint(row["count"], row["n"], method="wilson")
        assert (row["low"], row["high"]) == pytest.approx((100 * low, 100 * high))
        assert row["count"] == round(row["value"] * row["n"] / 100)


def test_headline_puts_the_runs_shares_beside_the_papers(scripted_judge):
    run = saer.run(scripted_judge(_always_set_1), _toy_dataset(), SaerConfig(n_customers=6, n_boot=20, encoder=WORDS))
    frame = run.headline()
    measures = ["Good Match, co-occurrence", "Good Match, embedding", "adjudicated co-occurrence wins",
                "adjudicated embedding wins", "adjudicated ties", "position consistency",
                *(f"adversarial correct, {v}" for v in run.config.prompt_versions)]  # fmt: skip
    assert frame["measure"].tolist() == [m for m in measures for _ in range(2)]
    assert frame["source"].tolist() == ["ours", "paper"] * len(measures)
    paper = frame.loc[frame["source"] == "paper"].set_index("measure")[["value", "low", "high"]]
    pd.testing.assert_frame_equal(paper, run.paper.loc[measures, ["value", "low", "high"]], check_names=False)
    ours = frame.loc[frame["source"] == "ours"].set_index("measure")
    cons = run.position.loc["position consistency"]
    assert ours.loc["position consistency", ["value", "low", "high"]].tolist() == [
        cons["pct"],
        cons["low"],
        cons["high"],
    ]
    assert ours.loc["adjudicated ties", "value"] == run.adjudicated_verdicts.set_index("measure").loc["tie", "value"]
    assert ours.loc["adjudicated ties", "value"] == 100.0


@pytest.mark.parametrize(
    "a, b",
    [
        KAPPA_EXERCISE,
        (
            ["Poor Match", "Good Match", "Good Match", "Partial Match"],
            ["Poor Match", "Good Match", "Poor Match", "Partial Match"],
        ),
    ],
)
def test_kappa_by_hand_is_scikit_learns_quadratic_kappa(a, b):
    k = kappa_by_hand(a, b)
    expected = cohen_kappa_score(a, b, labels=list(POINTWISE_LABELS), weights="quadratic")
    assert k.kappa == pytest.approx(expected) and k.package == pytest.approx(expected)
    assert k.costs == [(x - y) ** 2 for x, y in zip(k.codes_a, k.codes_b, strict=True)]
    assert k.observed == pytest.approx(np.mean(k.costs)) and k.kappa == pytest.approx(1 - k.observed / k.expected)
    assert sum(k.shares_a) == pytest.approx(1.0) and k.codes_a == [list(POINTWISE_LABELS).index(v) for v in a]
    changes = [
        cohen_kappa_score(a, [*b[:i], label, *b[i + 1 :]], labels=list(POINTWISE_LABELS), weights="quadratic")
        for i in range(len(b))
        for label in POINTWISE_LABELS
        if label != b[i]
    ]
    assert k.n_changes == len(changes) == 2 * len(b)
    assert k.worst == pytest.approx(np.nanmin(changes))
    changed = [*b[: k.where], k.to, *b[k.where + 1 :]]
    assert cohen_kappa_score(a, changed, labels=list(POINTWISE_LABELS), weights="quadratic") == pytest.approx(k.worst)
    assert k.steps_after == abs(list(POINTWISE_LABELS).index(k.to) - k.codes_a[k.where])


def test_the_always_set_1_line_counts_every_pair_and_the_note_the_parsed_ones(scripted_judge):
    """What a judge always naming Set 1 scores (the figure's line) is the share of all pairs showing the genuine list
    first; the note beside the judge's own correct share counts the pairs whose answer parsed, as that share does."""

    def answer(req: JudgeRequest) -> str:
        meta = dict(req.metadata or {})
        if meta.get("task") == "adversarial" and int(meta["user"]) % 3 == 0:
            return "no idea"
        return _always_set_1(req)

    run = saer.run(scripted_judge(answer), _toy_dataset(), SaerConfig(n_customers=12, n_boot=10, encoder=WORDS))
    adv = run.adversarial.loc[run.adversarial["prompt_version"] == "v3"]
    parsed = adv.loc[adv["status"] == "parsed"]
    det = _group(run.detection, "prompt_version", "v3")
    assert det.loc["genuine_first", "n"] == len(adv) and det.loc["genuine_first_parsed", "n"] == len(parsed)
    det = det["value"]
    assert det["genuine_first"] == pytest.approx(100 * (adv["genuine_position"] == 1).mean())
    assert det["genuine_first_parsed"] == pytest.approx(100 * (parsed["genuine_position"] == 1).mean())
    assert det["genuine_first"] != det["genuine_first_parsed"]  # the two differ on this sample
    assert det["correct"] == det["genuine_first_parsed"]  # always Set 1: correct exactly when shown first
