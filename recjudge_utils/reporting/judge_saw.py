"""What the judge saw (issue 43, item 2): the prompt templates a chapter used, the dataset's domain words and the
item fields each protocol's item line showed, as one note (:func:`judge_saw`) or its lines (:func:`judge_saw_lines`,
which chapter 4 puts in its context note).

The fields follow the road the prompts take (:func:`recjudge_utils.data.folder.judge_item_texts`): a folder dataset's
judge reads its card's ``items.describe`` within ``items.max_chars``; a dataset known by name shows each protocol's
own fields (serendipity: title, year, genres as categories; Arena: title, year, genres; SAER: title, year, brand,
categories), named here from the columns its items frame has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from recjudge_utils.data import Dataset
from recjudge_utils.data.domain import NEUTRAL_DOMAIN, DomainWords
from recjudge_utils.data.folder import card_describes
from recjudge_utils.protocols.pointwise_score import template_stages
from recjudge_utils.protocols.saer import load_template
from recjudge_utils.reporting.callouts import Callout, admonition

__all__ = ["JudgeUse", "arena_use", "item_fields", "judge_saw", "judge_saw_lines", "saer_use", "serendipity_use"]

Protocol = Literal["serendipity", "arena", "saer"]


@dataclass(frozen=True)
class JudgeUse:
    """One protocol's part of what the judge saw: its prompt templates (ids) and the fields of its item line."""

    protocol: str
    prompts: tuple[str, ...]
    fields: str


def _has_text(items: pd.DataFrame, column: str) -> bool:
    return column in items.columns and bool(items[column].map(lambda v: isinstance(v, str) and bool(v.strip())).any())


def item_fields(protocol: Protocol, items: pd.DataFrame, dataset: Dataset | None = None) -> str:
    """The fields a protocol's item line shows: the card's ``items.describe`` for a folder ``dataset`` (every
    protocol), else the protocol's own, as ``items`` has them (a year only where the frame holds one: the protocols
    append it to a title that lacks it)."""
    described = card_describes(dataset) if dataset is not None else None
    if described is not None:
        if not described.describe:
            return "id only (the card describes nothing)"
        described_fields = ", ".join(described.describe)
        return f"{described_fields} (the card's `items.describe`, at most {described.max_chars} characters)"
    year = ["year"] if "year" in items.columns else []
    if protocol == "serendipity":
        fields = ["title", *year, "genres (as categories)"]
    elif protocol == "arena":
        fields = ["title", *year, "genres"]
    else:
        brand = ["brand"] if _has_text(items, "brand") else []
        fields = ["title", *year, *brand, *(["categories"] if "genres" in items.columns else [])]
    return ", ".join(fields)


def serendipity_use(templates: Iterable[str], items: pd.DataFrame, dataset: Dataset | None = None) -> JudgeUse:
    """The serendipity judge's part: every stage's prompt of each template (LtM's three steps)."""
    prompts = tuple(stage.prompt.id for t in templates for stage in template_stages(t))
    return JudgeUse("serendipity", prompts, item_fields("serendipity", items, dataset))


def arena_use(items: pd.DataFrame, dataset: Dataset | None = None, absolute: bool = False) -> JudgeUse:
    """RecSys Arena's part: the pairwise prompt, and the absolute one when the chapter scored lists too."""
    prompts = ("arena/pairwise", *(("arena/absolute",) if absolute else ()))
    return JudgeUse("Arena", prompts, item_fields("arena", items, dataset))


def saer_use(
    variant: str, versions: Mapping[str, Sequence[str]], items: pd.DataFrame, dataset: Dataset | None = None
) -> JudgeUse:
    """SAER's part: the prompt file of each mode (``pointwise``, ``pairwise``) and version used, in ``variant``."""
    prompts = tuple(load_template(variant, mode, v).id for mode, vs in versions.items() for v in vs)
    return JudgeUse("SAER", prompts, item_fields("saer", items, dataset))


def judge_saw_lines(uses: Sequence[JudgeUse], words: DomainWords) -> list[str]:
    """The domain words the prompts used, then one line per protocol: its prompt templates and item fields."""
    if words == NEUTRAL_DOMAIN:
        source = "neutral words, as the dataset's card gives none"
    else:
        source = "the dataset's domain words, from its card"
    lines = [
        f'Words: the prompts call an item "{words.item}" ("{words.items}"), consuming one "{words.consumed}" and the '
        f'platform "{words.platform}" ({source}).'
    ]
    for use in uses:
        prompts = ", ".join(f"`{p}`" for p in dict.fromkeys(use.prompts))
        lines.append(f"{use.protocol}: {prompts}; each item shows its {use.fields}.")
    return lines


def judge_saw(uses: Sequence[JudgeUse], words: DomainWords) -> Callout:
    """The note "What the judge saw": the words, and each protocol's prompt templates and item fields."""
    body = "\n".join(f"- {line}" for line in judge_saw_lines(uses, words))
    return Callout(admonition("admonition", body, title="What the judge saw", classes=("note",)))
