"""A chapter rerun with a reasoning model, as a researcher would try it first: it completes, nothing ends as an error.

The fake endpoint answers as OpenAI's reasoning models do (400 for temperature, max_tokens and logprobs; a few
hundred hidden reasoning tokens spent from ``max_completion_tokens`` before every answer), under an opaque deployment
name. A whole-chapter world: it runs in the ``make test-book`` lane.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer
from fake_providers import PROVIDERS
from format_aware_script import FormatAwareScript

from recjudge_utils import book
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.records import read_jsonl
from recjudge_utils.paths import project_root

ROOT = project_root()
pytestmark = [pytest.mark.book, pytest.mark.skipif(ROOT is None, reason="needs a checkout with notebooks/")]


def test_prompt_selection_chapter_completes_against_a_reasoning_model(isolated_runs: Path) -> None:
    # the opaque deployment name: the client cannot tell a reasoning model by it, so every adaptation is learned
    # from the endpoint's refusals (tests/judge/test_judge_providers.py adapts each provider's requests, named or not)
    provider = "opaque-reasoning"
    with FakeOpenAIServer(script=FormatAwareScript(), provider=PROVIDERS[provider]) as server:
        # the user's profile: temperature 0 as for any judge; the endpoint refuses it and the client drops it
        profile = load_profile(
            {
                "name": f"fake-{provider}",
                "model": server.model,
                "base_url": server.base_url,
                "max_concurrency": 1,  # one request at a time: each refusal is met once, none by a request in flight
                "generation": {"temperature": 0.0},
            }
        )
        manifest = book.run(profile, "reasoning", only=["01"], build=False, root=ROOT)
        refused = len(server.refused)
    records = read_jsonl(isolated_runs / "reasoning" / "01_serendipity_prompt_selection" / "judgments.jsonl")
    errors = [r for r in records if r["status"] == "error"]
    unparsed = [r for r in records if r["status"] == "unparsed"]
    assert len(records) >= 40
    assert not errors, errors[:2]
    assert len(unparsed) <= 0.05 * len(records), [r["reason"] for r in unparsed]
    assert sum(int(r["reasoning_tokens"]) for r in records) >= 150 * len(records)
    assert refused == 3  # temperature, max_tokens, logprobs: learned once, not per judgment
    adaptations = json.loads((isolated_runs / "reasoning" / "manifest.json").read_text())["endpoint_adaptations"]
    (state,) = adaptations.values()
    assert state["token_parameter"] == "max_completion_tokens"
    assert {"temperature"} <= set(state["dropped"]) and state["logprobs"] is False
    assert manifest.notebooks[0].status == "ok"
