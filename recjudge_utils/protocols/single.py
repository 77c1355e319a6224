"""One request, one judgment: the introduction's protocol (a single question, asked once)."""

from __future__ import annotations

from typing import Any

from recjudge_utils.judge.types import Judge, JudgeRequest, JudgeResult

__all__ = ["ask_one"]


def ask_one(judge: Judge, request: JudgeRequest) -> JudgeResult[Any]:
    """Ask ``request`` once; the result, parsed by the request's answer format, says parsed / unparsed / error and
    why."""
    return judge.judge_many([request], desc=request.template_id)[0]
