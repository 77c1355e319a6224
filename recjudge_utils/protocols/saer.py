"""SAER's judges (Liu et al., SIGIR '26): a pointwise list label and a pairwise comparison of two lists.

The prompt files are ``prompts/saer/<domain>/<mode>_<version>.md``: ``domain`` is ``ecommerce`` (Amazon
Beauty) or ``movies`` (the MovieLens stand-in), ``mode`` is ``pointwise`` (answer format ``saer_list_label``:
Good / Partial / Poor Match with flagged items) or ``pairwise`` (``saer_pairwise``: Set 1 / Set 2 / Tie), and
``version`` the prompt ablation: ``v1`` generic, ``v2`` over-specified rubric, ``v3`` the SAER refined prompt.
The ``ecommerce`` files speak the dataset's words (the slot ``domain``, carried by each
:class:`~recjudge_utils.protocols.context.saer.CustomerContext`): the paper's text for products, the card's words for
any other domain. Each file holds its own fixed few-shot turns after a one-line role statement; the final turn
holds, in the order of SAER Section 3.2, the customer context, the list(s), then the evaluation guidelines (v3; the
rubric in v2) and the answer format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.saer_fields import POSITION_OF_SET
from recjudge_utils.answer_formats.truth import LabelTruth, PreferenceTruth, Truth
from recjudge_utils.data.domain import DomainWords
from recjudge_utils.judge.types import Judge, JudgeRequest, JudgeResult, MetadataValue, make_request
from recjudge_utils.lists.types import ListsBySystem
from recjudge_utils.prompts import Message, PromptTemplate, load_prompt
from recjudge_utils.protocols.adversarial import adversarial_outcome
from recjudge_utils.protocols.context.saer import DOMAINS, Catalogue, CustomerContext, render_list
from recjudge_utils.protocols.truth import list_label_truth

__all__ = [
    "RESULT_COLUMNS",
    "VERSIONS",
    "VERSION_NAMES",
    "SaerAdversarial",
    "SaerPointwise",
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


def few_shot_answers(tpl: PromptTemplate, words: DomainWords) -> list[str]:
    """The worked examples' answers the judge is shown for a dataset with these ``words`` (the e-commerce files
    show theirs to products only)."""
    return [m["content"] for m in tpl.shown_fixed_turns(domain=words) if m["role"] == "assistant"]


def _words(tpl: PromptTemplate, context: CustomerContext) -> dict[str, DomainWords]:
    """The ``domain`` slot for the files that speak the dataset's words (the movie files are movies throughout)."""
    return {"domain": context.words} if "domain" in tpl.slots else {}


def _request(
    tpl: PromptTemplate,
    msgs: tuple[Message, ...],
    metadata: Mapping[str, MetadataValue],
    truth: Truth | None,
    answer_options: Mapping[str, object] | None = None,
) -> JudgeRequest:
    return make_request(tpl, msgs, answer_options=answer_options, metadata=metadata, truth=truth)


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
        **_words(tpl, context),
    )
    return _request(tpl, msgs, metadata, truth, {"n_items": len(items)})


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
        **_words(tpl, context),
    )
    return _request(tpl, msgs, metadata, truth)


def set_position(verdict: str) -> str:
    """``Set 1`` / ``Set 2`` / ``Tie`` -> the position it names (first / second / tie)."""
    return POSITION_OF_SET[verdict]


#: the judgment fields every SAER outcome row carries: status, reason, raw answer and accounting
RESULT_COLUMNS = (
    "status",
    "reason",
    "raw_text",
    "latency_s",
    "cache_hit",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
)


def _result_fields(res: JudgeResult[Any]) -> dict[str, Any]:
    """The judgment's status, reason, raw answer and accounting, as every SAER outcome row carries them."""
    row = res.to_row()
    return {k: row[k] for k in RESULT_COLUMNS}


@dataclass(frozen=True)
class SaerPointwise:
    """SAER's pointwise protocol: one Good / Partial / Poor Match label per (customer, system) list.

    ``system`` names the outcome column and the metadata key of the system (``algorithm`` in chapter 4,
    ``system`` in chapter 7). ``hits[system][user]`` (optional), a list's held-out positives, becomes the truth a
    simulated judge answers from (:func:`~recjudge_utils.protocols.truth.list_label_truth`).
    """

    domain: str
    version: str = "v3"
    system: str = "system"

    @property
    def template(self) -> PromptTemplate:
        """The pointwise prompt file of this domain and version."""
        return load_template(self.domain, "pointwise", self.version)

    def play(
        self,
        judge: Judge,
        contexts: Mapping[int, CustomerContext],
        catalogue: Catalogue,
        lists: ListsBySystem,
        users: Sequence[int],
        hits: Mapping[str, Mapping[int, int]] | None = None,
        task: str = "pointwise",
    ) -> pd.DataFrame:
        """Label every system's list for every user; one row per (system, user), systems in the order given.

        Columns: user, ``<system>``, prompt_version, category (None unless parsed), flagged, n_flagged, reasoning,
        then the judgment's status, reason, raw answer and accounting.
        """
        tpl = self.template
        cases = [(int(u), str(s)) for s in lists for u in users]
        reqs = [
            pointwise_request(
                tpl,
                contexts[u],
                lists[s][u],
                catalogue,
                {"user": u, self.system: s, "prompt_version": self.version, "task": task},
                None if hits is None else list_label_truth(hits[s][u]),
            )
            for u, s in cases
        ]
        results = judge.judge_many(reqs, desc=tpl.id) if reqs else []
        rows = []
        for (u, s), res in zip(cases, results, strict=True):
            value = res.value if res.status == "parsed" else None  # a parsed result always carries the verdict
            rows.append(
                {
                    "user": u,
                    self.system: s,
                    "prompt_version": self.version,
                    "category": value.category if value is not None else None,
                    "flagged": list(value.flagged) if value is not None else None,
                    "n_flagged": len(value.flagged) if value is not None else np.nan,
                    "reasoning": value.reasoning if value is not None else None,
                    **_result_fields(res),
                }
            )
        return pd.DataFrame(rows)


@dataclass(frozen=True)
class SaerAdversarial:
    """SAER's adversarial test (Section 4.3): each customer's genuine list against the same algorithm's list for
    another customer (:func:`~recjudge_utils.protocols.adversarial.adversarial_pairs`), in the drawn position; the
    truth is the genuine list."""

    domain: str
    version: str = "v3"

    def play(
        self,
        judge: Judge,
        pairs: pd.DataFrame,
        contexts: Mapping[int, CustomerContext],
        catalogue: Catalogue,
        lists: ListsBySystem,
    ) -> pd.DataFrame:
        """One row per pair: user, algorithm, decoy_user, genuine_position, prompt_version, verdict, outcome
        (correct / wrong / tie; None when unparsed), then the judgment's status, reason, raw answer and accounting."""
        tpl = load_template(self.domain, "pairwise", self.version)
        reqs = []
        for p in pairs.itertuples(index=False):
            genuine = lists[p.algorithm][p.user]
            decoy = lists[p.algorithm][p.decoy_user]
            s1, s2 = (genuine, decoy) if p.genuine_position == 1 else (decoy, genuine)
            meta = {"user": p.user, "decoy_user": p.decoy_user, "prompt_version": self.version, "task": "adversarial"}
            truth = PreferenceTruth(first=float(p.genuine_position == 1), second=float(p.genuine_position == 2))
            reqs.append(pairwise_request(tpl, contexts[p.user], s1, s2, catalogue, meta, truth))
        results = judge.judge_many(reqs, desc=f"{tpl.id} (adversarial)") if reqs else []
        rows = []
        for p, res in zip(pairs.itertuples(index=False), results, strict=True):
            value = res.value if res.status == "parsed" else None
            verdict = value.verdict if value is not None else None
            rows.append(
                {
                    "user": p.user,
                    "algorithm": p.algorithm,
                    "decoy_user": p.decoy_user,
                    "genuine_position": p.genuine_position,
                    "prompt_version": self.version,
                    "verdict": verdict,
                    "outcome": adversarial_outcome(verdict, p.genuine_position),
                    **_result_fields(res),
                }
            )
        return pd.DataFrame(rows)
