"""Judges from the providers researchers pick, each against a fake server that behaves as that provider does.

Reasoning models (400 for temperature, max_tokens and logprobs; hidden reasoning tokens spent from the budget) under
their own name and under an opaque deployment name; Azure (deployment URL, api-version query, api-key header);
Anthropic's and Gemini's OpenAI-compatible endpoints; a router; a LiteLLM proxy; Ollama; vLLM. Every example profile
under ``judges/`` is validated, planned and makes one real call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer
from fake_providers import PROVIDERS
from format_aware_script import FormatAwareScript

from recjudge_utils.answer_formats.json_levels import levels_parser
from recjudge_utils.judge.backends.openai_compatible import ADAPTATIONS_FILE, REASONING_HEADROOM
from recjudge_utils.judge.loading import load_profile, open_judge, profile_dir
from recjudge_utils.judge.profile import ProfileError, profile_json_schema
from recjudge_utils.judge.transport import rejected_parameters
from recjudge_utils.judge.types import JudgeRequest

SECRET = "sk-test-provider-secret-0123456789"
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
PARSE = levels_parser(["score"])


def levels_request(i: int, max_tokens: int = 32) -> JudgeRequest:
    """A 5-level score request in the format the fake judge answers (json_levels), with labels (asks for logprobs)."""
    return JudgeRequest(
        messages=(
            {"role": "system", "content": "Rate the serendipity of the item on a 5-level scale. Answer as JSON."},
            {"role": "user", "content": f"History: film {i}, film {i + 1}. Candidate: film {i + 7}."},
        ),
        template_id="serendipity/base",
        template_version="1",
        max_tokens=max_tokens,
        json_schema=SCHEMA,
        label_options=("1", "2", "3", "4", "5"),
        label_field="score",
        answer_format="json_levels",
    )


def profile_for(server: FakeOpenAIServer, **fields: Any) -> dict[str, Any]:
    return {"name": "judge-under-test", "model": server.model, "base_url": server.base_url, "retries": 2, **fields}


def files_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file() and p.suffix != ".sqlite")


# --------------------------------------------------------------------------------------------- reasoning models
@pytest.mark.parametrize("provider", ["openai-reasoning", "opaque-reasoning", "litellm"])
def test_reasoning_model_requests_adapt_once_and_every_judgment_parses(
    provider: str, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS[provider]) as server:
        # temperature set on purpose: the reasoning endpoint refuses it; no max_output_tokens: the headroom applies
        spec = profile_for(server, max_concurrency=4, generation={"temperature": 0.0})
        client = open_judge(spec, run="reasoning", run_name="nb", progress=False)
        results = client.judge_many([levels_request(i) for i in range(24)], parse=PARSE)
        refused = list(server.refused)
        sent = server.requests[-1]
        usage = client.usage_summary()
        client.close()
    assert [r.status for r in results] == ["parsed"] * 24, [r.reason for r in results if not r.ok]
    # each rejected parameter cost at most one refused request per request in flight, not one per judgment
    assert 1 <= len(refused) <= 3 * 4
    assert "temperature" not in sent and "max_tokens" not in sent and "logprobs" not in sent
    assert sent["max_completion_tokens"] == 32 + REASONING_HEADROOM
    err = capsys.readouterr().err
    # a model named like a reasoning model gets max_completion_tokens from the start; an opaque name learns it
    expected = ("temperature", "logprobs") + (("max_tokens",) if provider == "opaque-reasoning" else ())
    for name in ("temperature", "max_tokens", "logprobs"):
        assert err.count(f"rejected {name!r}") == (1 if name in expected else 0), err
    adaptations = json.loads((isolated_runs / "reasoning" / ADAPTATIONS_FILE).read_text())
    (state,) = adaptations.values()
    learned = "max_completion_tokens" if provider == "opaque-reasoning" else None  # else known from the name
    assert state["token_parameter"] == learned and state["logprobs"] is False
    assert "temperature" in state["dropped"]
    total = usage[usage["template_id"] == "TOTAL"].iloc[0]
    assert total["errors"] == 0 and total["unparsed"] == 0 and total["budget_spent"] == 0
    assert total["reasoning_tokens"] >= 150 * 24  # the fake spends 150-450 hidden tokens per answer
    assert all(r.reasoning_tokens >= 150 and r.completion_tokens > r.reasoning_tokens for r in results)


def test_a_second_notebook_of_the_run_starts_adapted_and_its_answers_are_cached_under_what_was_sent(
    isolated_runs: Path,
) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS["opaque-reasoning"]) as server:
        spec = profile_for(server, max_concurrency=1, generation={"temperature": 0.0})
        first = open_judge(spec, run="r", run_name="nb1", progress=False)
        first.judge_many([levels_request(i) for i in range(3)], parse=PARSE)
        first.close()
        refused_before, asked_before = len(server.refused), len(server.requests)
        second = open_judge(spec, run="r", run_name="nb2", progress=False)
        again = second.judge_many([levels_request(i) for i in range(3)], parse=PARSE)
        fresh = second.judge_many([levels_request(i) for i in range(3, 6)], parse=PARSE)
        second.close()
    assert all(r.cache_hit for r in again)  # same requests, same adapted body: same cache key
    assert all(r.ok and not r.cache_hit for r in fresh)
    assert len(server.refused) == refused_before  # nothing refused twice in one run
    assert len(server.requests) == asked_before + 3


def test_budget_spent_on_reasoning_is_unparsed_with_the_reason_and_counted(isolated_runs: Path) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS["openai-reasoning"]) as server:
        # 100 tokens: less than the 150-450 hidden tokens the fake spends first
        client = open_judge(profile_for(server, generation={"max_output_tokens": 100}), run="b", progress=False)
        results = client.judge_many([levels_request(i) for i in range(5)], parse=PARSE)
        usage = client.usage_summary()
        client.close()
    assert [r.status for r in results] == ["unparsed"] * 5
    assert all("raise generation.max_output_tokens" in (r.reason or "") for r in results)
    assert all(r.budget_spent and r.finish_reason == "length" for r in results)
    assert int(usage[usage["template_id"] == "TOTAL"]["budget_spent"].iloc[0]) == 5


def test_max_output_tokens_never_lowers_a_prompts_own_budget(isolated_runs: Path) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS["openai-chat"]) as server:
        client = open_judge(profile_for(server, generation={"max_output_tokens": 64}), run="m", progress=False)
        client.judge_many([levels_request(0, max_tokens=512), levels_request(1, max_tokens=16)], parse=PARSE)
        client.close()
        budgets = sorted(body["max_tokens"] for body in server.requests)
    assert budgets == [64, 512]


def test_generation_settings_reach_the_body_headers_and_query(isolated_runs: Path) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS["openai-chat"]) as server:
        generation = {
            "temperature": 0.3,
            "seed": 7,
            "reasoning_effort": "low",
            "extra_body": {"service_tier": "flex"},
            "headers": {"X-Team": "recsys"},
            "query": {"trace": "1"},
        }
        client = open_judge(profile_for(server, generation=generation), run="g", progress=False)
        client.judge_many([levels_request(0)], parse=PARSE)
        client.close()
        body, headers, path = server.requests[-1], server.headers[-1], server.paths[-1]
    assert body["temperature"] == 0.3 and body["seed"] == 7 and body["reasoning_effort"] == "low"
    assert body["service_tier"] == "flex"
    assert headers["x-team"] == "recsys" and "trace=1" in path


def test_temperature_is_omitted_unless_set(isolated_runs: Path) -> None:
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS["openai-chat"]) as server:
        client = open_judge(profile_for(server), run="t", progress=False)
        client.judge_many([levels_request(0)], parse=PARSE)
        client.close()
    assert "temperature" not in server.requests[-1]


# --------------------------------------------------------------------------------------------- example profiles
# (profile file, provider the fake plays, environment variable of the key)
EXAMPLES = [
    ("gpt-5-mini", "openai-reasoning", "OPENAI_API_KEY"),
    ("gpt-4.1-mini", "openai-chat", "OPENAI_API_KEY"),
    ("gpt-4o-mini", "openai-chat", "OPENAI_API_KEY"),
    ("claude-sonnet-4-5", "anthropic", "ANTHROPIC_API_KEY"),
    ("gemini-2.5-flash", "gemini", "GEMINI_API_KEY"),
    ("azure-openai", "azure", "AZURE_OPENAI_API_KEY"),
    ("openrouter-gpt-5-mini", "openrouter", "OPENROUTER_API_KEY"),
    ("litellm-proxy", "litellm", None),
    ("ollama-qwen2.5-7b", "ollama", None),
    ("vllm-llama-3.1-8b", "vllm", None),
]


def test_every_shipped_profile_validates_and_the_schema_file_is_current() -> None:
    folder = profile_dir()
    assert folder is not None
    names = sorted(p.stem for p in folder.glob("*.yaml"))
    for name in names:
        load_profile(name)
    assert {e[0] for e in EXAMPLES} <= set(names)
    committed = json.loads((folder / "profile.schema.json").read_text())
    assert committed == json.loads(json.dumps(profile_json_schema(), sort_keys=True)), (
        "regenerate: python -m recjudge_utils.judge.profiles_cli --write-schema"
    )


@pytest.mark.parametrize(("name", "provider", "key_env"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_example_profile_plans_and_judges_against_its_provider(
    name: str,
    provider: str,
    key_env: str | None,
    isolated_runs: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if key_env:
        monkeypatch.setenv(key_env, SECRET)
    shipped = load_profile(name)
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS[provider]) as server:
        profile = load_profile(shipped, base_url=server.base_url, model=shipped.model)
        if PROVIDERS[provider].models is not None and shipped.model not in PROVIDERS[provider].models:
            assert f"models/{shipped.model}" in PROVIDERS[provider].models  # Gemini's listing
        profile.check(preflight=True)  # the endpoint lists the model under the id the provider uses
        # plan mode: every request rendered, none sent
        monkeypatch.setenv("RECJUDGE_PLAN", str(isolated_runs / "plan"))
        planned = open_judge(profile, run="plan-run", run_name="nb", progress=False)
        planned.judge_many([levels_request(0)], parse=PARSE)
        planned.close()
        monkeypatch.delenv("RECJUDGE_PLAN")
        assert not server.requests
        # a real call, as that provider answers it
        client = open_judge(profile, run="real-run", run_name="nb", progress=False)
        results = client.judge_many([levels_request(i) for i in range(3)], parse=PARSE)
        client.close()
        headers, paths = list(server.headers), list(server.paths)
    assert [r.status for r in results] == ["parsed"] * 3, [r.reason for r in results]
    if provider == "azure":
        chat = [h for h, p in zip(headers, paths, strict=True) if p.startswith("POST")]
        assert all(h.get("api-key") == SECRET and "authorization" not in h for h in chat)
        assert all("api-version=2024-10-21" in p for p in paths if p.startswith("POST"))
    assert SECRET not in files_text(isolated_runs)


def test_preflight_says_which_model_id_to_use(isolated_runs: Path) -> None:
    with FakeOpenAIServer(provider=PROVIDERS["openrouter"]) as server:
        profile = load_profile({"name": "x", "model": "gpt-5-mini", "base_url": server.base_url})
        with pytest.raises(ProfileError, match=r"field 'model'.*did you mean 'openai/gpt-5-mini'"):
            profile.check(preflight=True)


# --------------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"generation": {"temprature": 0}}, "unknown field 'generation.temprature'"),
        ({"generation": {"temperature": "cold"}}, "field 'generation.temperature'"),
        ({"generation": {"headers": {"Authorization": "Bearer x"}}}, "carries a credential"),
        ({"options": {"top_logprob": 5}}, "unknown field 'options.top_logprob'"),
        ({"max_concurrency": 0}, "field 'max_concurrency'"),
        ({"backend": "nope"}, "unknown backend 'nope'"),
        ({"backend": "sim", "options": {"position_bias": 2}}, "field 'options.position_bias'"),
    ],
)
def test_profile_errors_name_the_file_and_the_field(fields: dict[str, Any], message: str, tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump({"name": "x", "model": "m", "base_url": "http://127.0.0.1:9/v1", **fields}))
    with pytest.raises(ProfileError) as info:
        load_profile(path)
    assert str(path) in str(info.value) and message in str(info.value)


@pytest.mark.parametrize(
    ("message", "param", "expected"),
    [
        (
            "Unsupported value: 'temperature' does not support 0.0 with this model. "
            "Only the default (1) value is supported.",
            "temperature",
            "temperature",
        ),
        (
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            None,
            "max_tokens",
        ),
        ('Invalid JSON payload received. Unknown name "logprobs": Cannot find field.', None, "logprobs"),
        ("litellm.UnsupportedParamsError: openai does not support parameters: ['seed'], for model=x", None, "seed"),
        ("response_format json_schema is not supported", None, "json_schema"),
    ],
)
def test_rejected_parameters_are_read_from_each_providers_error(message: str, param: str | None, expected: str) -> None:
    assert rejected_parameters(message, param)[0] == expected


def test_errors_that_name_no_parameter_are_not_adaptations() -> None:
    assert rejected_parameters("This model's maximum context length is 8192 tokens.") == ()
    assert rejected_parameters("Invalid API key provided: sk-...") == ()
