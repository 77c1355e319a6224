"""A fake judge for the fake OpenAI server: every prompt answered in the format it asks for.

The answer format is read from the request body alone (a phrase only that format's prompt files contain, and the
JSON schema in ``response_format``); the answer is rendered by the simulated judge's formatters with a seed taken
from the messages, so the same request always gets the same answer and the real parsers run on every one.
Used by the end-to-end book tests and by ``benchmarks/bench_plan.py``.
"""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace
from typing import Any

import numpy as np
from fake_openai_server import Reply

from recjudge_utils.judge.backends.sim import SimParameters, simulated_answer

__all__ = ["FormatAwareScript", "answer_format", "answer_schema"]

# the prompt files' answer formats, told apart by a phrase only that format's prompts contain
FORMAT_MARKERS = (
    ("Set 1", "saer_pairwise"),
    ("Good Match", "saer_list_label"),
    ("A wins", "arena_pairwise"),
    ("between 0 and 1", "json_list_score"),
)


def answer_format(body: dict[str, Any]) -> str:
    text = "\n".join(str(m.get("content")) for m in body["messages"])
    return next((fmt for marker, fmt in FORMAT_MARKERS if marker in text), "json_levels")


def answer_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    rf = body.get("response_format") or {}
    return (rf.get("json_schema") or {}).get("schema") or rf.get("schema")


class FormatAwareScript:
    """A deterministic judge over HTTP: each request gets an answer in its prompt's format (a function of the
    messages only), and every ``every_429``-th / ``every_500``-th HTTP request fails first."""

    def __init__(self, every_429: int = 0, every_500: int = 0) -> None:
        self.every_429, self.every_500 = every_429, every_500
        self.injected = {429: 0, 500: 0}
        self.params = SimParameters(noise=1.0, seed=0)

    def __call__(self, body: dict[str, Any], n: int) -> Reply | str:
        for status, every in ((429, self.every_429), (500, self.every_500)):
            if every and n % every == every - 1:
                self.injected[status] += 1
                return Reply(status=status, headers={"Retry-After": "0"}, error_message=f"injected {status}")
        request = SimpleNamespace(
            answer_format=answer_format(body), json_schema=answer_schema(body), truth=None, template_id="fake"
        )
        digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        return simulated_answer(request, self.params, rng)  # type: ignore[arg-type]
