"""Judge panels: several judges, one verdict.

The members are real judges: OpenAI-compatible endpoints played by the loopback fake server (one server per member,
as three providers would be), or simulated judges. Every member's call goes through the one judge client; the panel
aggregates the parsed answers. What is checked: a member whose answer does not parse (or whose call fails) casts no
vote and is counted; a tie is a tie whatever the order of the members; ``min_members`` turns a judgment unparsed with
its reason; members already cached cost nothing (0 requests); a plan is its members' plans summed; export and replay
carry every member's answer; the profile refuses what would break the book's rules (a simulated judge mixed into an
LLM panel, the same judge twice, a panel in a panel).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from itertools import permutations
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml
from fake_openai_server import FakeOpenAIServer, Reply

from recjudge_utils.answer_formats import ANSWER_FORMATS
from recjudge_utils.answer_formats.arena_verdicts import OVERALL
from recjudge_utils.answer_formats.saer_fields import (
    LABELS_WORST_FIRST,
    format_list_label,
    format_set_verdict,
    parse_pointwise,
)
from recjudge_utils.answer_formats.truth import ScoreTruth
from recjudge_utils.book.archive import SUFFIX, ArchiveIncomplete, export_run, import_archive, read_archive
from recjudge_utils.book.plan_estimate import plan_summary
from recjudge_utils.book.run_logs import actual_usage, health_line, judge_health
from recjudge_utils.experiments.results import judge_kind
from recjudge_utils.judge.aggregation import AGGREGATORS, median_label, nearest_level, strict_majority
from recjudge_utils.judge.backends.sim import SIM_PREFIX
from recjudge_utils.judge.loading import load_profile, open_judge
from recjudge_utils.judge.panel import MEMBERS_DIR, PanelClient, PanelMember, PanelResult
from recjudge_utils.judge.planning import PLAN_FILE
from recjudge_utils.judge.profile import PanelAggregate, PanelProfile, ProfileError
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.paths import runs_dir

ASPECTS = ("accuracy", "novelty")
Script = Callable[[dict[str, Any], int], Any]


# ----------------------------------------------------------------------------------------------------- requests
def levels_request(i: int = 0, text: str = "") -> JudgeRequest:
    content = f"Rate item {i} for this user. {text}"
    return JudgeRequest(({"role": "user", "content": content},), "panel-levels", "1", answer_format="json_levels")


def arena_request(i: int = 0) -> JudgeRequest:
    return JudgeRequest(
        ({"role": "user", "content": f"Compare lists A and B for user {i}."},),
        "panel-arena",
        "1",
        answer_format="arena_pairwise",
        answer_options=(("aspect_keys", ASPECTS),),
    )


def saer_label_request(i: int = 0) -> JudgeRequest:
    return JudgeRequest(
        ({"role": "user", "content": f"Label the list of customer {i}."},),
        "panel-saer-label",
        "1",
        answer_format="saer_list_label",
        answer_options=(("n_items", 5),),
    )


def saer_pair_request(i: int = 0) -> JudgeRequest:
    return JudgeRequest(
        ({"role": "user", "content": f"Which set suits customer {i}?"},),
        "panel-saer-pair",
        "1",
        answer_format="saer_pairwise",
    )


def arena_answer(accuracy: str, novelty: str, overall: str) -> str:
    return json.dumps(
        {
            "accuracy": {"analysis": "looked", "verdict": accuracy},
            "novelty": {"analysis": "looked", "verdict": novelty},
            OVERALL: overall,
        }
    )


# ----------------------------------------------------------------------------------------------------- judges
def constant(text: str | Reply) -> Script:
    return lambda body, n: text


@contextmanager
def servers(*scripts: Script) -> Iterator[list[FakeOpenAIServer]]:
    """One fake provider per member, each serving its own model."""
    with ExitStack() as stack:
        yield [
            stack.enter_context(FakeOpenAIServer(script=s, model=f"model-{k}"))
            for k, s in zip("abcdef", scripts, strict=False)
        ]


def member(srv: FakeOpenAIServer, name: str) -> dict[str, Any]:
    return {"name": name, "backend": "openai", "model": srv.model, "base_url": srv.base_url, "retries": 0}


def panel_of(srvs: list[FakeOpenAIServer], names: str = "abc", **fields: Any) -> dict[str, Any]:
    members = [member(s, f"judge-{k}") for s, k in zip(srvs, names, strict=True)]
    return {"name": "trio", "backend": "panel", "members": members, **fields}


def requests_made(srvs: list[FakeOpenAIServer]) -> list[int]:
    return [len(s.requests) for s in srvs]


def judged(profile: Any, requests: list[JudgeRequest], run: str = "panel") -> tuple[list[PanelResult[Any]], Any]:
    client = open_judge(profile, run=run, run_name="nb", progress=False)
    try:
        results = client.judge_many(requests)
        return results, client
    finally:
        client.close()


def log_records(client: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(client.log_path).read_text().splitlines()]


# ------------------------------------------------------------------------------------ exclusion, ties, quorum
def test_a_member_whose_answer_does_not_parse_is_excluded_and_counted() -> None:
    prose = "I would give it a high score, it looks fine."
    with servers(constant('{"score": 5}'), constant('{"score": 4}'), constant(prose)) as srvs:
        [result], client = judged(panel_of(srvs, aggregate={"json_levels": "mean"}), [levels_request()])
    # the mean of the two usable answers, 4.5, halfway: the lower level, 4 (the prose cast no vote: counted as, say,
    # the midpoint 3 it would pull the mean to 4 all the same, but the outcome would hold three values)
    assert result.status == "parsed" and result.value == {"score": 4}
    assert result.panel["outcome"]["score"]["mean"] == 4.5 and result.panel["outcome"]["score"]["split"]
    assert result.panel["usable"] == 2 and result.panel["outcome"]["score"]["values"] == [4, 5]
    assert [(e["member"], e["status"]) for e in result.panel["excluded"]] == [("judge-c", "unparsed")]
    assert "no JSON object" in result.panel["excluded"][0]["reason"]
    assert [a.included for a in result.members] == [True, True, False]
    summary = client.member_summary().set_index("member")
    assert summary.loc["judge-c", "unparsed"] == 1 and summary.loc["judge-c", "excluded"] == 1
    assert summary.loc["judge-a", "excluded"] == 0
    # the judgment log keeps every member's raw answer beside the panel's verdict
    [record] = log_records(client)
    assert record["raw_response"] == '{"score": 4}' and record["route"] == "panel"
    assert [m["raw_response"] for m in record["members"]] == ['{"score": 5}', '{"score": 4}', prose]
    assert [m["included"] for m in record["members"]] == [True, True, False]
    # the usage counts the panel's judgment once and every member's paid call
    usage = client.usage_summary().set_index("template_id")
    assert usage.loc["TOTAL", "calls"] == 1 and usage.loc["TOTAL", "api_calls"] == 3
    assert usage.loc["TOTAL", "parsed"] == 1 and usage.loc["TOTAL", "unparsed"] == 0
    # the run's judge health names the member whose answers were unusable, though every judgment was
    [health] = judge_health(runs_dir() / "panel", {"nb": 0})
    assert (health["parsed"], health["flagged"], health["member_unusable"]) == (1, False, [["judge-c", 1]])
    assert "panel members' unusable answers: judge-c 1" in health_line(health)


def test_a_member_whose_call_fails_is_excluded_and_counted() -> None:
    failing = Reply(status=400, error_message="injected permanent failure")
    with servers(constant('{"score": 2}'), constant(failing), constant('{"score": 2}')) as srvs:
        [result], client = judged(panel_of(srvs), [levels_request()])
    assert result.status == "parsed" and result.value == {"score": 2}
    assert [(e["member"], e["status"]) for e in result.panel["excluded"]] == [("judge-b", "error")]
    assert client.member_summary().set_index("member").loc["judge-b", "errors"] == 1
    assert not result.cache_hit  # a failed call is never cached: a rerun asks that member again


@pytest.mark.parametrize("order", ["abc", "cba", "bca"])
def test_ties_are_ties_whatever_the_order_of_the_members(order: str) -> None:
    answers = {
        "a": arena_answer("A wins", "A wins", "A wins"),
        "b": arena_answer("B wins", "A wins", "A wins"),
        "c": arena_answer("Tie", "B wins", "B wins"),
    }
    with servers(*(constant(answers[k]) for k in order)) as srvs:
        [result], _ = judged(panel_of(srvs, names=order), [arena_request()])
    assert result.status == "parsed"
    # accuracy: one vote each, no majority: a tie (listed first, A wins, would win if order broke ties)
    assert result.value["verdicts"] == {"accuracy": "Tie", "novelty": "A wins", OVERALL: "A wins"}
    outcome = result.panel["outcome"]
    assert outcome["accuracy"] == {"votes": {"A wins": 1, "B wins": 1, "Tie": 1}, "verdict": "Tie", "majority": False}
    assert outcome["novelty"]["majority"] is True and outcome["novelty"]["votes"] == {"A wins": 2, "B wins": 1}
    assert "no majority" in result.value["analysis"]["accuracy"]


def test_an_even_split_after_an_exclusion_is_a_tie() -> None:
    scripts = [
        constant(arena_answer("A wins", "A wins", "A wins")),
        constant(arena_answer("B wins", "A wins", "B wins")),
        constant("A wins, clearly."),
    ]
    with servers(*scripts) as srvs:
        [result], _ = judged(panel_of(srvs), [arena_request()])
    assert result.value["verdicts"] == {"accuracy": "Tie", "novelty": "A wins", OVERALL: "Tie"}
    assert result.panel["usable"] == 2 and result.panel["excluded"][0]["member"] == "judge-c"


def test_saer_verdicts_take_a_strict_majority_and_labels_the_median() -> None:
    sets = [format_set_verdict(v) for v in ("Set 1", "Set 2", "Tie")]
    labels = [format_list_label(c, f) for c, f in (("Good Match", (1, 3)), ("Partial Match", (3,)), ("Poor Match", ()))]
    agreeing = [format_list_label(c, f) for c, f in (("Good Match", (1, 3)), ("Good Match", (3,)), ("Poor Match", ()))]

    def by_request(answers: list[str], k: int) -> Script:
        return lambda body, n: {"set": sets[k], "label": answers[k]}[
            "set" if "Which set" in body["messages"][-1]["content"] else "label"
        ]

    with servers(*(by_request(labels, k) for k in range(3))) as srvs:
        (pair, label), _ = judged(panel_of(srvs), [saer_pair_request(), saer_label_request()])
    assert (
        pair.status == "parsed"
        and pair.value.verdict == "Tie"
        and pair.panel["outcome"]["verdict"]["majority"] is False
    )
    # no majority on a label: the median label, Partial Match, recorded as a median (never the first member's Good
    # Match); item 3 flagged by two of three, item 1 by one
    assert label.status == "parsed" and label.value.category == "Partial Match" and label.value.flagged == (3,)
    outcome = label.panel["outcome"]["category"]
    assert outcome["votes"] == {"Good Match": 1, "Partial Match": 1, "Poor Match": 1}
    assert (outcome["majority"], outcome["by"]) == (False, "median")
    with servers(*(by_request(agreeing, k) for k in range(3))) as srvs:
        (_, label), _ = judged(panel_of(srvs), [saer_pair_request(), saer_label_request()], run="agreeing")
    # Good Match by two of three; item 3 flagged by two of three, item 1 by one
    assert label.status == "parsed" and label.value.category == "Good Match" and label.value.flagged == (3,)


def test_min_members_turns_a_judgment_unparsed_with_its_reason() -> None:
    prose = "Hard to say."
    with servers(constant('{"score": 4}'), constant('{"score": 4}'), constant(prose)) as srvs:
        [strict], _ = judged(panel_of(srvs, min_members=3), [levels_request()], run="strict")
        [usual], _ = judged(panel_of(srvs, min_members=2), [levels_request()], run="usual")
    assert strict.status == "unparsed" and strict.value is None and strict.raw_text is None
    assert strict.reason is not None
    assert "2 of 3 members gave a usable answer, fewer than min_members 3" in strict.reason
    assert "judge-c unparsed: no JSON object" in strict.reason
    assert not any(a.included for a in strict.members)
    assert usual.status == "parsed" and usual.value == {"score": 4}  # two usable answers meet min_members 2


def test_a_panel_whose_members_all_fail_is_an_error() -> None:
    failing = Reply(status=400, error_message="injected permanent failure")
    with servers(constant(failing), constant(failing), constant('{"score": 3}')) as srvs:
        [result], _ = judged(panel_of(srvs), [levels_request()])
    assert result.status == "unparsed"  # one member answered: the judgment is unparsed, not failed
    assert result.reason is not None and "judge-a error" in result.reason and "judge-b error" in result.reason
    with servers(constant(failing), constant(failing)) as srvs:
        client = open_judge(panel_of(srvs, names="ab"), run="all-fail", run_name="nb", progress=False)
        [result] = client.judge_many([levels_request()])
        with pytest.raises(Exception, match="fewer than min_members"):
            client.judge(levels_request(1))
        client.close()
    assert result.status == "error"


# ------------------------------------------------------------------------------------ cache, plan, archive
def test_a_panel_of_judges_already_run_makes_no_request() -> None:
    requests = [levels_request(i) for i in range(4)]
    with servers(constant('{"score": 2}'), constant('{"score": 3}'), constant('{"score": 5}')) as srvs:
        profile = panel_of(srvs)
        for spec in profile["members"]:  # each member run on its own first, as a judge of its own run
            results, _ = judged(spec, requests, run=f"solo-{spec['name']}")
            assert all(r.status == "parsed" and not r.cache_hit for r in results)
        before = requests_made(srvs)
        assert before == [4, 4, 4]
        first, client = judged(profile, requests)
        assert requests_made(srvs) == before  # the panel asked nothing new
        second, again = judged(profile, requests)
        assert requests_made(srvs) == before
    for results, c in ((first, client), (second, again)):
        assert all(r.cache_hit and r.cost_usd == 0 for r in results)
        assert [r.value for r in results] == [{"score": 3}] * 4  # the mean of 2, 3 and 5 is 3.33: level 3
        assert c.usage_summary().set_index("template_id").loc["TOTAL", "api_calls"] == 0
    offsets = {"nb": 0}
    usage = actual_usage(runs_dir() / "panel", offsets, {"nb": 0.0}).set_index("notebook")
    assert usage.loc["nb", "judgments"] == 8 and usage.loc["nb", "calls"] == 0 and usage.loc["nb", "cache_hits"] == 8


def test_a_first_panel_run_pays_each_member_once_and_the_manifest_counts_their_calls() -> None:
    requests = [levels_request(i) for i in range(3)] + [levels_request(0)]  # one repeated request: asked once
    with servers(constant('{"score": 2}'), constant('{"score": 3}'), constant('{"score": 5}')) as srvs:
        results, _ = judged(panel_of(srvs), requests)
        assert requests_made(srvs) == [3, 3, 3]
    assert [r.cache_hit for r in results] == [False, False, False, True]
    usage = actual_usage(runs_dir() / "panel", {"nb": 0}, {"nb": 0.0}).set_index("notebook")
    assert usage.loc["nb", "judgments"] == 4 and usage.loc["nb", "calls"] == 9
    logged = log_records_of(runs_dir() / "panel" / "nb")
    paid_tokens = sum(m["prompt_tokens"] for r in logged for m in r["members"] if not m["cache_hit"])
    assert usage.loc["nb", "prompt_tokens"] == paid_tokens > 0


def log_records_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "judgments.jsonl").read_text().splitlines()]


def plan(spec: Any, folder: Path, requests: list[JudgeRequest], monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan ``requests`` with the judge ``spec`` into ``folder`` (what the runner's plan does per notebook)."""
    monkeypatch.setenv("RECJUDGE_PLAN", str(folder))
    monkeypatch.setenv("RECJUDGE_RUN_DIR", str(folder))
    client = open_judge(spec, run_name="nb", progress=False)
    try:
        client.judge_many(requests)
    finally:
        client.close()
        monkeypatch.delenv("RECJUDGE_PLAN")
        monkeypatch.delenv("RECJUDGE_RUN_DIR")


COLUMNS = ["calls", "cached", "prompt_tokens", "completion_tokens", "cost_usd", "hours"]


def test_the_plan_of_a_panel_is_its_members_plans_summed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for env in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(env, raising=False)  # a plan needs no key
    panel = load_profile("panel-three-providers")
    assert isinstance(panel, PanelProfile)
    requests = [levels_request(i, "The history: " + "a film, " * (7 * i)) for i in range(6)]
    plan(panel, tmp_path / "panel", requests, monkeypatch)
    table = plan_summary(tmp_path / "panel", panel, ["nb"]).set_index("notebook")
    rows = []
    for m in panel.member_profiles:
        plan(m, tmp_path / m.name, requests, monkeypatch)
        rows.append(plan_summary(tmp_path / m.name, m, ["nb"]).set_index("notebook").loc["nb", COLUMNS])
    total = sum(rows[1:], start=rows[0])
    assert table.loc["nb", "calls"] == 18 == total["calls"]
    for column in COLUMNS:
        assert table.loc["nb", column] == pytest.approx(total[column]), column
    assert table.loc["TOTAL", "cost_usd"] == pytest.approx(total["cost_usd"]) and total["cost_usd"] > 0
    assert all(pd.api.types.is_integer_dtype(table[c]) for c in ("calls", "cached", "prompt_tokens"))
    # the members' prices differ (OpenAI, Anthropic, Google): the sum is not three times one of them
    assert len({round(float(r["cost_usd"]), 12) for r in rows}) == 3
    assert set(table.attrs["members"]) == {"gpt-4o-mini", "claude-sonnet-4-5", "gemini-2.5-flash"}


def test_the_plan_of_a_panel_counts_a_cached_member_as_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    requests = [levels_request(i) for i in range(3)]
    with servers(constant('{"score": 2}'), constant('{"score": 3}'), constant('{"score": 4}')) as srvs:
        profile = panel_of(srvs)
        judged(profile["members"][0], requests, run="solo")
        plan(profile, tmp_path / "plan", requests, monkeypatch)
        assert requests_made(srvs) == [3, 0, 0]  # the plan sent nothing
    panel = load_profile(profile)
    table = plan_summary(tmp_path / "plan", panel, ["nb"]).set_index("notebook")
    assert table.loc["nb", "calls"] == 6 and table.loc["nb", "cached"] == 3
    members = {name: rows[0] for name, rows in table.attrs["members"].items()}
    assert (members["judge-a"]["calls"], members["judge-b"]["calls"]) == (0, 3)
    assert (tmp_path / "plan" / MEMBERS_DIR / "judge-a" / "nb" / PLAN_FILE).exists()


def test_the_offline_check_reads_every_members_plan(tmp_path: Path) -> None:
    from recjudge_utils.book.planner import _cache_checks

    for name, cached in (("judge-a", True), ("judge-b", False)):
        folder = tmp_path / MEMBERS_DIR / name / "nb"
        folder.mkdir(parents=True)
        lines = [{"template_id": "t", "cache_key": f"{name}-{i}", "cached": cached, "chained": False} for i in range(2)]
        (folder / PLAN_FILE).write_text("".join(json.dumps(line) + "\n" for line in lines))
    [check] = _cache_checks(tmp_path, [Path("nb.ipynb")], {}, tmp_path / "run")
    assert (check.requests, check.missing) == (4, 2)


def make_run(profile: dict[str, Any], requests: list[JudgeRequest], name: str) -> tuple[Path, list[Any]]:
    client = open_judge(profile, run=name, run_name="nb", progress=False)
    results = client.judge_many(requests)
    (client.run_dir / "results.json").write_text(json.dumps([r.value for r in results]))
    client.close()
    folder = runs_dir() / name
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["notebooks"] = [{"notebook": "nb.ipynb", "parameters": {"judge": load_profile(profile).to_dict()}}]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder, results


def test_export_and_replay_carry_every_members_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_replay_check import drop_answers

    requests = [levels_request(i) for i in range(3)]
    scripts = [constant('{"score": 1}'), constant('{"score": 4}'), constant("No idea.")]
    with servers(*scripts) as srvs:
        profile = panel_of(srvs)
        folder, results = make_run(profile, requests, "shared")
    archive_path = export_run(folder, tmp_path / f"shared{SUFFIX}")
    archive = read_archive(archive_path)
    member_keys = {a.result.cache_key for r in results for a in r.members}
    assert len(member_keys) == 9
    assert {a["cache_key"] for a in archive.answers} == member_keys  # the unparsed answers too
    assert {a["model"] for a in archive.answers} == {"model-a", "model-b", "model-c"}
    assert archive.header["manifest"]["judge"]["backend"] == "panel"
    (runs_dir() / "cache.sqlite").unlink()
    with pytest.raises(ArchiveIncomplete, match="1 of the 9 answers"):
        import_archive(drop_answers(archive_path, tmp_path / "short.jsonl.gz", {"nb": 1}))
    import_archive(archive_path)
    # the servers are gone: the replay answers from the imported answers alone
    monkeypatch.setenv("RECJUDGE_OFFLINE", "1")
    replayed, _ = judged(archive.header["manifest"]["judge"], requests, run="replayed")
    assert [r.value for r in replayed] == [r.value for r in results] == [{"score": 2}] * 3  # median 2.5: the lower
    assert all(r.cache_hit for r in replayed)
    assert [len(r.panel["excluded"]) for r in replayed] == [1, 1, 1]


# ------------------------------------------------------------------------------------ profiles and labels
def sim_member(name: str, seed: int, **options: float) -> dict[str, Any]:
    return {"name": name, "backend": "sim", "options": {"noise": 0.8, "seed": seed, **options}}


def sim_panel(n: int = 3, **fields: Any) -> dict[str, Any]:
    return {"name": "sims", "backend": "panel", "members": [sim_member(f"s{k}", k) for k in range(n)], **fields}


def test_a_panel_of_simulated_judges_is_labelled_simulated_and_an_llm_panel_is_not() -> None:
    with open_judge(sim_panel(), run="sims", run_name="nb", progress=False) as client:
        assert client.model_name.startswith(SIM_PREFIX) and judge_kind(client.model_name) == "simulated"
    assert load_profile(sim_panel()).computes_answers
    llm = load_profile("panel-three-providers")
    assert not llm.computes_answers
    with servers(constant('{"score": 1}'), constant('{"score": 2}')) as srvs:
        client = open_judge(panel_of(srvs, names="ab"), run="llms", run_name="nb", progress=False)
        assert judge_kind(client.model_name) == "llm" and "model-a" in client.model_name
        client.close()


def test_simulated_members_with_different_options_answer_independently() -> None:
    truth = ScoreTruth((("score", 3),))
    requests = [
        JudgeRequest(({"role": "user", "content": f"item {i}"},), "t", "1", answer_format="json_levels", truth=truth)
        for i in range(40)
    ]
    results, _ = judged(sim_panel(), requests)
    per_member = [[a.result.value["score"] for a in r.members] for r in results]
    columns = list(zip(*per_member, strict=True))
    assert len({tuple(c) for c in columns}) == 3  # no two members answered alike throughout
    assert any(len(set(row)) > 1 for row in per_member)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"members": [sim_member("s", 1), "gpt-4o-mini"]}, "simulated judges only or of LLM judges only"),
        ({"members": [sim_member("s", 1), sim_member("s", 2)]}, "field 'members.1': the name 's' is also members.0"),
        ({"members": [sim_member("s", 1), sim_member("t", 1)]}, "field 'members.1': the same judge as members.0"),
        ({"members": [sim_member("s", 1), {"backend": "panel", "members": []}]}, "field 'members.1'"),
        ({"members": [sim_member("s", 1)]}, "field 'members': a panel needs a list of at least two judges"),
        ({"members": [sim_member("s", 1), "no-such-judge"]}, "field 'members.1': no judge profile 'no-such-judge'"),
        ({"members": [sim_member("s", 1), {"backend": "sim", "optons": {}}]}, "unknown field 'optons'"),
        ({"min_members": 4}, "field 'min_members': 4 is more than the panel's 3 members"),
        ({"min_members": 0}, "field 'min_members'"),
        ({"aggregate": {"arena_pairwise": "mean"}}, "field 'aggregate.arena_pairwise'"),
        ({"aggregate": {"json_levels": "mode"}}, "field 'aggregate.json_levels'"),
        ({"aggregate": {"json_level": "mean"}}, "unknown field 'aggregate.json_level'"),
        ({"prices": {"input": 1.0, "output": 1.0}}, "field 'prices': a panel has no prices of its own"),
        ({"retries": 2}, "field 'retries': a panel has no retries of its own"),
    ],
)
def test_bad_panel_profiles_name_the_file_and_the_field(fields: dict[str, Any], message: str, tmp_path: Path) -> None:
    path = tmp_path / "panel.yaml"
    path.write_text(yaml.safe_dump({**sim_panel(), **fields}))
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_a_panel_in_a_panel_is_refused_by_name(tmp_path: Path) -> None:
    (tmp_path / "inner.yaml").write_text(yaml.safe_dump(sim_panel()))
    (tmp_path / "outer.yaml").write_text(
        yaml.safe_dump({**sim_panel(2), "members": ["inner.yaml", sim_member("x", 9)]})
    )
    with pytest.raises(ProfileError, match=r"outer\.yaml: field 'members\.0': 'sims' is itself a panel"):
        load_profile(tmp_path / "outer.yaml")


def test_members_by_name_and_by_path_relative_to_the_panel_file(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(sim_member("mine", 7)))
    path = tmp_path / "panel.yaml"
    path.write_text(yaml.safe_dump({"backend": "panel", "members": ["sim", "mine.yaml", sim_member("inline", 8)]}))
    panel = load_profile(path)
    assert isinstance(panel, PanelProfile)
    assert [m.name for m in panel.member_profiles] == ["sim", "mine", "inline"] and panel.quorum == 2
    # what the runner hands to every notebook: every member inline, loadable without the files
    again = load_profile(json.loads(json.dumps(panel.to_dict())))
    assert again.to_dict() == panel.to_dict()


def test_a_missing_key_of_a_member_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with pytest.raises(ProfileError, match=r"panel-three-providers\.yaml: field 'members\.1': .*ANTHROPIC_API_KEY"):
        load_profile("panel-three-providers").check()


def test_every_answer_format_has_an_aggregator_and_a_profile_field() -> None:
    assert set(AGGREGATORS) == set(ANSWER_FORMATS) == set(PanelAggregate.model_fields)
    defaults = PanelAggregate().model_dump()
    assert all(defaults[name] == agg.rules[0] for name, agg in AGGREGATORS.items())


# ------------------------------------------------------------------------------------ the aggregation rules
def test_strict_majority_needs_more_than_half_and_ignores_the_order_of_votes() -> None:
    order = ("A wins", "B wins", "Tie")
    assert strict_majority(["A wins", "B wins"], order) == (None, {"A wins": 1, "B wins": 1})
    assert strict_majority(["B wins", "A wins", "B wins"], order)[0] == "B wins"
    assert strict_majority(["Tie", "A wins", "B wins", "A wins"], order)[0] is None  # 2 of 4 is not more than half
    assert (
        list(strict_majority(["Tie", "B wins", "A wins"], order)[1].items())
        == list(strict_majority(["A wins", "Tie", "B wins"], order)[1].items())
        == [("A wins", 1), ("B wins", 1), ("Tie", 1)]
    )


def test_scores_take_the_median_or_the_mean_and_a_split_takes_the_lower_level() -> None:
    levels = AGGREGATORS["json_levels"].combine
    assert AGGREGATORS["json_levels"].rules[0] == "median"  # the default
    values = [{"score": 1}, {"score": 4}, {"score": 5}]
    assert json.loads(levels(values, "mean").text or "") == {"score": 3}  # 3.33
    assert json.loads(levels(values, "median").text or "") == {"score": 4}
    assert [nearest_level(x) for x in (2.5, 2.49, 2.51, 0.2, 7.0, 4.5, 3.0)] == [2, 2, 3, 1, 5, 4, 3]
    cot = levels([{"relevance": 5, "score": 2}, {"relevance": 3, "score": 2}], "mean")
    assert json.loads(cot.text or "") == {"relevance": 4, "score": 2} and cot.outcome["relevance"]["mean"] == 4.0
    # four members: the median is whole (3) or halfway (3.5 -> the lower middle level, 3); the outcome keeps 3.5
    four = levels([{"score": 1}, {"score": 3}, {"score": 4}, {"score": 5}], "median")
    assert json.loads(four.text or "") == {"score": 3}
    assert four.outcome["score"] == {"values": [1, 3, 4, 5], "median": 3.5, "level": 3, "split": True}
    assert json.loads(levels([{"score": 1}, {"score": 3}, {"score": 3}, {"score": 5}], "median").text or "") == {
        "score": 3
    }
    scores = AGGREGATORS["json_list_score"].combine([{"score": 0.2}, {"score": 0.9}, {"score": 0.4}], "median")
    assert json.loads(scores.text or "")["score"] == 0.4


@pytest.mark.parametrize("rule", ["median", "mean"])
def test_two_members_answering_3_and_4_are_not_always_4(rule: str) -> None:
    """The defect of issue 41: the mean of 3 and 4 rounded half up made every such split a 4, a serendipitous item
    (score >= 4) that only half the panel called so. A split takes the lower level, whichever member said what, and
    the outcome keeps the unrounded 3.5."""
    levels = AGGREGATORS["json_levels"].combine
    splits = [(3, 4), (4, 3), (4, 5), (1, 2)]
    got = [levels([{"score": a}, {"score": b}], rule) for a, b in splits]  # type: ignore[arg-type]
    assert [json.loads(g.text or "")["score"] for g in got] == [3, 3, 4, 1]
    assert [g.outcome["score"][rule] for g in got] == [3.5, 3.5, 4.5, 1.5]
    assert all(g.outcome["score"]["split"] for g in got)
    whole = levels([{"score": 2}, {"score": 4}], rule)  # type: ignore[arg-type]
    assert json.loads(whole.text or "") == {"score": 3} and not whole.outcome["score"]["split"]


def test_a_saer_label_without_a_majority_is_the_median_label() -> None:
    combine = AGGREGATORS["saer_list_label"].combine
    assert AGGREGATORS["saer_list_label"].rules == ("median", "majority")
    parse = parse_pointwise

    def labels(*categories: str, flagged: tuple[tuple[int, ...], ...] = ()) -> list[Any]:
        flags = flagged or tuple(() for _ in categories)
        return [parse(format_list_label(c, f)) for c, f in zip(categories, flags, strict=True)]

    for order in permutations(["Good Match", "Partial Match", "Poor Match"]):
        got = combine(labels(*order), "median")
        assert parse(got.text or "").category == "Partial Match"
        assert got.outcome["category"] | {"votes": None} == {
            "votes": None, "label": "Partial Match", "majority": False, "by": "median"
        }  # fmt: skip
        assert "median label" in (got.text or "")
    # an even count: the lower (harsher) of the two middle labels
    assert parse(combine(labels("Good Match", "Poor Match"), "median").text or "").category == "Poor Match"
    assert parse(combine(labels("Partial Match", "Good Match"), "median").text or "").category == "Partial Match"
    assert median_label(["Good Match", "Good Match", "Partial Match", "Poor Match"], LABELS_WORST_FIRST) == (
        "Partial Match"
    )
    # a majority is the median, recorded as a majority
    major = combine(labels("Poor Match", "Good Match", "Good Match"), "median")
    assert parse(major.text or "").category == "Good Match" and major.outcome["category"]["by"] == "majority"
    # the old rule is still there by name: no majority, no label
    strict = combine(labels("Good Match", "Partial Match", "Poor Match"), "majority")
    assert strict.text is None and strict.reason is not None and "no majority on the label" in strict.reason


def test_flagged_items_still_need_a_strict_majority_whatever_the_label_rule() -> None:
    combine = AGGREGATORS["saer_list_label"].combine
    parse = parse_pointwise
    values = [parse(format_list_label(c, f)) for c, f in
              (("Good Match", (1, 3)), ("Partial Match", (3, 4)), ("Poor Match", (1,)))]  # fmt: skip
    for rule in ("median", "majority"):
        got = combine(values, rule)  # type: ignore[arg-type]
        assert got.outcome["flagged_items"] == {"votes": {"1": 2, "3": 2, "4": 1}, "flagged": [1, 3]}
    assert parse(combine(values, "median").text or "").flagged == (1, 3)
    two = [parse(format_list_label(c, f)) for c, f in (("Good Match", (2,)), ("Poor Match", (2, 5)))]
    assert parse(combine(two, "median").text or "").flagged == (2,)  # 2 of 2 flag item 2; 1 of 2 is no majority


def test_a_protocol_takes_a_panel_unchanged(scripted_judge: Callable[..., Any], tmp_path: Path) -> None:
    """RecSys Arena's pairwise protocol judged by a panel of three scripted judges: two prefer X's list wherever it is
    shown, one always prefers the list shown first. The panel prefers X in both orders: no position bias left."""
    import pandas as pd
    from test_protocol_arena import _all, _answer

    from recjudge_utils.protocols.arena import PairwiseJudge, resolve_aspects
    from recjudge_utils.protocols.context.arena import ArenaContext
    from recjudge_utils.protocols.pairwise import games

    def prefers_x(req: JudgeRequest) -> str:
        verdict = "A wins" if (req.metadata or {})["A"] == "X" else "B wins"
        return _answer(_all(verdict), verdict)

    members = [
        PanelMember("x-1", scripted_judge(prefers_x, model="x-1")),
        PanelMember("x-2", scripted_judge(prefers_x, model="x-2")),
        PanelMember("first", scripted_judge(lambda req: _answer(_all("A wins"), "A wins"), model="first")),
    ]
    panel = PanelClient(members, aggregate={}, min_members=2, run_dir=tmp_path / "run" / "03", progress=False)
    items = pd.DataFrame(
        {
            "item": range(1, 7),
            "title": [f"Movie {i}" for i in range(1, 7)],
            "genres": [["Drama"]] * 6,
            "year": [1990 + i for i in range(6)],
        }
    )
    train = pd.DataFrame({"user": [1, 1], "item": [5, 6], "rating": [4.0, 4.0], "timestamp": [1, 2]})
    recs = {"X": {1: [1, 2]}, "Y": {1: [3, 4]}}
    raw = PairwiseJudge(panel, ArenaContext(items, train), k=2).judge(
        pd.DataFrame({"user": [1], "x": ["X"], "y": ["Y"]}), recs, both_orders=True
    )
    assert list(raw["status"]) == ["parsed", "parsed"] and len(resolve_aspects()) == 6
    assert (games(raw, [OVERALL])[OVERALL] == "win").all()
    assert len(log_records_of(tmp_path / "run" / "03")) == 2
