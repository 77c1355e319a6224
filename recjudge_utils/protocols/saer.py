"""SAER's judges (Liu et al., SIGIR '26): a pointwise list label and a pairwise comparison of two lists.

The prompt files are ``prompts/saer/<domain>/<mode>_<version>.md``: ``domain`` is ``ecommerce`` (Amazon
Beauty) or ``movies`` (the MovieLens stand-in), ``mode`` is ``pointwise`` (answer format ``saer_list_label``:
Good / Partial / Poor Match with flagged items) or ``pairwise`` (``saer_pairwise``: Set 1 / Set 2 / Tie), and
``version`` the prompt ablation: ``v1`` generic, ``v2`` over-specified rubric, ``v3`` the SAER refined prompt.
Each file holds its own fixed few-shot turns; the customer context and the list(s) fill the final turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from recjudge_utils.answer_formats.saer_fields import POSITION_OF_SET
from recjudge_utils.answer_formats.truth import LabelTruth, PreferenceTruth, Truth
from recjudge_utils.judge.types import JudgeRequest, MetadataValue
from recjudge_utils.prompts import Message, PromptTemplate, load_prompt
from recjudge_utils.protocols.context.saer import DOMAINS, Catalogue, CustomerContext, render_list

__all__ = [
    "VERSIONS",
    "VERSION_NAMES",
    "few_shot_answers",
    "history_only",
    "load_template",
    "pairwise_request",
    "pointwise_request",
    "set_position",
]

VERSIONS: tuple[str, ...] = ("v1", "v2", "v3")
VERSION_NAMES = {"v1": "generic", "v2": "over-specified rubric", "v3": "SAER refined"}


def load_template(domain: str, mode: str, version: str) -> PromptTemplate:
    """``prompts/saer/<domain>/<mode>_<version>.md``, checked against its front matter."""
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, not {domain!r}")
    if mode not in ("pointwise", "pairwise"):
        raise ValueError(f"mode must be 'pointwise' or 'pairwise', not {mode!r}")
    if version not in VERSIONS:
        raise ValueError(f"prompt version must be one of {VERSIONS}, not {version!r}")
    tpl = load_prompt(f"saer/{domain}/{mode}_{version}")
    if tpl.get("mode") != mode or tpl.get("prompt_version") != version:
        raise ValueError(f"{tpl.id}: front matter says {tpl.get('mode')}/{tpl.get('prompt_version')}")
    return tpl


def history_only(tpl: PromptTemplate) -> bool:
    """Whether the prompt shows only the purchase history (the generic v1 prompt)."""
    return bool(tpl.get("history_only", False))


def few_shot_answers(tpl: PromptTemplate) -> list[str]:
    """The assistant turns written in the prompt file (its worked examples)."""
    return [m["content"] for m in tpl.fixed_turns if m["role"] == "assistant"]


def _request(
    tpl: PromptTemplate, msgs: tuple[Message, ...], metadata: Mapping[str, MetadataValue], truth: Truth | None
) -> JudgeRequest:
    return JudgeRequest(
        messages=msgs,
        template_id=tpl.id,
        template_version=tpl.key,
        max_tokens=int(cast(int, tpl.get("max_tokens", 160))),
        answer_format=tpl.answer_format,
        truth=truth,
        metadata=metadata,
    )


def pointwise_request(
    tpl: PromptTemplate,
    context: CustomerContext,
    items: Sequence[int],
    catalogue: Catalogue,
    metadata: Mapping[str, MetadataValue],
    truth: LabelTruth | None = None,
) -> JudgeRequest:
    """The pointwise request: the customer's context and one list to label (Good / Partial / Poor Match)."""
    msgs: tuple[Message, ...] = tpl.render(
        context=context.render(catalogue, history_only(tpl)),
        list=render_list(items, catalogue),
        n_items=str(len(items)),
    )
    return _request(tpl, msgs, metadata, truth)


def pairwise_request(
    tpl: PromptTemplate,
    context: CustomerContext,
    set_1: Sequence[int],
    set_2: Sequence[int],
    catalogue: Catalogue,
    metadata: Mapping[str, MetadataValue],
    truth: PreferenceTruth | None = None,
) -> JudgeRequest:
    """The pairwise request: the customer's context and two sets to compare, Set 1 shown first."""
    msgs: tuple[Message, ...] = tpl.render(
        context=context.render(catalogue, history_only(tpl)),
        set_1=render_list(set_1, catalogue),
        set_2=render_list(set_2, catalogue),
    )
    return _request(tpl, msgs, metadata, truth)


def set_position(verdict: str) -> str:
    """``Set 1`` / ``Set 2`` / ``Tie`` -> the position it names (first / second / tie)."""
    return POSITION_OF_SET[verdict]
