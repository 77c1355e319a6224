"""RecSys Arena's judges (Wu et al. 2024): the pairwise comparison with swap and the absolute list score.

* **Pairwise** (``prompts/arena/pairwise.md``): the judge role-plays the user (profile, recent history; see
  :mod:`~recjudge_utils.protocols.context.arena`), reads the top-k lists of recommenders A and B, and answers
  one verdict per aspect (six by default, listed in the prompt file's front matter) plus ``overall``. Every
  game is judged in both orders (:mod:`~recjudge_utils.protocols.pairwise`); the paper's own setting is the
  ``x_first`` order alone (the tested model shown as A).
* **Absolute** (``prompts/arena/absolute.md``): the same user context and one list, a score in [0, 1]
  (Section 4.3 / Figure 6).

The prompts follow the paper's Figure 2: the role-play sentence (system message), then in the user message the
profile, the history, the list(s), the aspects and the output rules, so the fixed aspects come after the per-user
content (only the role-play sentence is a prefix shared by every request).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.arena_verdicts import (
    ABSOLUTE_SCHEMA,
    OVERALL,
    POSITION_OF_VERDICT,
    VERDICTS,
    aspect_key,
    pairwise_json_schema,
)
from recjudge_utils.answer_formats.truth import ListScoreTruth, PreferenceTruth
from recjudge_utils.judge.types import Judge, JudgeRequest, MetadataValue, make_request
from recjudge_utils.lists.types import ListsBySystem
from recjudge_utils.prompts import Message, PromptTemplate, load_prompt
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.pairwise import Game, judge_games

__all__ = [
    "OVERALL",
    "VERDICTS",
    "AbsoluteJudge",
    "PairwiseJudge",
    "aspect_key",
    "resolve_aspects",
]


def resolve_aspects(aspects: Sequence[str] | Mapping[str, str] | None = None) -> dict[str, str]:
    """Aspect name -> description.

    ``None`` gives the six aspects of the prompt file; a list of names picks some of them
    (case-insensitive); a mapping supplies new aspects with their own descriptions.
    """
    raw = load_prompt("arena/pairwise").get("aspects", {})
    known = {str(k): str(v) for k, v in dict(raw).items()}  # type: ignore[call-overload]
    if aspects is None:
        return dict(known)
    if isinstance(aspects, Mapping):
        out = {str(k): str(v) for k, v in aspects.items()}
    else:
        by_key = {aspect_key(k): k for k in known}
        out = {}
        for name in aspects:
            k = aspect_key(name)
            if k not in by_key:
                raise ValueError(f"unknown aspect {name!r}; known: {list(known)} (pass a mapping to add new ones)")
            out[by_key[k]] = known[by_key[k]]
    keys = [aspect_key(n) for n in out]
    if len(set(keys)) != len(keys) or OVERALL in keys:
        raise ValueError(f"aspect keys must be distinct and not {OVERALL!r}: {keys}")
    return out


def _aspect_block(aspects: Mapping[str, str]) -> str:
    return "\n".join(f"- {name}: {desc}" for name, desc in aspects.items())


def _json_shape(aspects: Mapping[str, str]) -> str:
    lines = [f'  "{aspect_key(n)}": {{"analysis": "...", "verdict": "A wins" | "B wins" | "Tie"}},' for n in aspects]
    lines.append(f'  "{OVERALL}": "A wins" | "B wins" | "Tie"')
    return "{\n" + "\n".join(lines) + "\n}"


def _render_messages(
    template: PromptTemplate,
    context: ArenaContext,
    user: int,
    list_a: Sequence[int],
    list_b: Sequence[int] | None,
    aspects: Mapping[str, str],
    k: int,
) -> tuple[Message, ...]:
    """System message (the role-play sentence, fixed for all users) + user message (this user's profile, history
    and lists, then the aspects and the answer format). The lists are shown as given: they were cut to ``k`` where
    they were made (:mod:`recjudge_utils.lists.types`)."""
    slots: dict[str, object] = {
        "domain": context.words,
        "aspect_block": _aspect_block(aspects),
        "json_shape": _json_shape(aspects),
        "profile": context.profile(user),
        "history": context.numbered(context.history(user)),
        "k": k,
        "list_a": context.numbered(list(list_a)),
        "list_b": context.numbered(list(list_b)) if list_b is not None else "",
    }
    return template.render(**{name: value for name, value in slots.items() if name in template.slots})


class PairwiseJudge:
    """Pair-wise RecSys Arena judge: every comparison in both orders, verdicts mapped back to the recommenders."""

    def __init__(
        self,
        client: Judge,
        context: ArenaContext,
        aspects: Sequence[str] | Mapping[str, str] | None = None,
        k: int = 5,
        max_tokens: int | None = None,
        template: str = "arena/pairwise",
    ) -> None:
        if k <= 0:
            raise ValueError("k must be positive")
        self.client = client
        self.context = context
        self.aspects = resolve_aspects(aspects)
        self.aspect_keys = [aspect_key(a) for a in self.aspects]
        self.k = k
        self.template = load_prompt(template)
        self.max_tokens = max_tokens  # None: the prompt file's budget

    def messages(self, user: int, list_a: Sequence[int], list_b: Sequence[int]) -> tuple[Message, ...]:
        """The messages showing ``list_a`` as A (first) and ``list_b`` as B to ``user``."""
        return _render_messages(self.template, self.context, user, list_a, list_b, self.aspects, self.k)

    def request(
        self,
        user: int,
        list_a: Sequence[int],
        list_b: Sequence[int],
        metadata: Mapping[str, MetadataValue] | None = None,
        truth: PreferenceTruth | None = None,
    ) -> JudgeRequest:
        """The request comparing ``list_a`` (shown as A) with ``list_b`` for ``user``."""
        return make_request(
            self.template,
            self.messages(user, list_a, list_b),
            answer_options={"aspect_keys": self.aspect_keys},
            max_tokens=self.max_tokens,
            json_schema=pairwise_json_schema(self.aspects),
            truth=truth,
            metadata=metadata,
        )

    def judge(
        self,
        comparisons: pd.DataFrame,
        recs: ListsBySystem,
        both_orders: bool = True,
        evidence: Mapping[str, Mapping[int, float]] | None = None,
        with_analysis: bool = False,
    ) -> pd.DataFrame:
        """Judge every row (user, x, y) of ``comparisons``; one output row per (comparison, order).

        ``recs[name][user]`` is that recommender's ranked top-``k`` list for the user, shown as it is;
        ``evidence[name][user]`` (optional) is the truth attached for the simulated judge (held-out positives
        in the shown list). Columns: user, x, y, order, x_position ("A"/"B"), status, reason, raw_text,
        ``verdict_<key>`` (in A/B terms, as the judge answered) and ``<key>`` (the outcome for x: win/tie/lose);
        with ``with_analysis``, ``analysis_<key>``: the judge's one-sentence analysis of each aspect.
        """
        games_ = [
            Game(
                case={"user": int(r.user)},
                x=str(r.x),
                y=str(r.y),
                x_evidence=None if evidence is None else evidence[str(r.x)][int(r.user)],
                y_evidence=None if evidence is None else evidence[str(r.y)][int(r.user)],
            )
            for r in comparisons[["user", "x", "y"]].itertuples(index=False)
        ]

        def build(
            game: Game, first: str, second: str, truth: PreferenceTruth | None, meta: dict[str, MetadataValue]
        ) -> JudgeRequest:
            user = int(game.case["user"])  # type: ignore[arg-type]
            meta = {"user": user, "A": first, "B": second, "x": game.x, "y": game.y, "order": meta["order"]}
            return self.request(user, recs[first][user], recs[second][user], metadata=meta, truth=truth)

        raw = judge_games(
            self.client,
            games_,
            build,
            read=lambda value: value["verdicts"],
            position_of=POSITION_OF_VERDICT.__getitem__,
            keys=[*self.aspect_keys, OVERALL],
            both_orders=both_orders,
            desc=self.template.id,
            details=(lambda value: {f"analysis_{k}": v for k, v in value["analysis"].items()})
            if with_analysis
            else None,
        )
        if len(raw):
            raw.insert(raw.columns.get_loc("order") + 1, "x_position", np.where(raw["order"] == "x_first", "A", "B"))
        return raw


class AbsoluteJudge:
    """Scores one list for one user in [0, 1] (the absolute evaluation of Section 4.3)."""

    def __init__(
        self,
        client: Judge,
        context: ArenaContext,
        aspects: Sequence[str] | Mapping[str, str] | None = None,
        k: int = 5,
        max_tokens: int | None = None,
    ) -> None:
        self.client = client
        self.context = context
        self.aspects = resolve_aspects(aspects)
        self.k = k
        self.template = load_prompt("arena/absolute")
        self.max_tokens = max_tokens  # None: the prompt file's budget

    def request(
        self,
        user: int,
        items: Sequence[int],
        metadata: Mapping[str, MetadataValue] | None = None,
        truth: ListScoreTruth | None = None,
    ) -> JudgeRequest:
        """The request scoring ``items`` for ``user`` in [0, 1]."""
        return make_request(
            self.template,
            _render_messages(self.template, self.context, user, items, None, self.aspects, self.k),
            max_tokens=self.max_tokens,
            json_schema=ABSOLUTE_SCHEMA,
            truth=truth,
            metadata=metadata,
        )

    def score(
        self,
        users: Sequence[int],
        recs: ListsBySystem,
        truth: Mapping[str, Mapping[int, float]] | None = None,
    ) -> pd.DataFrame:
        """DataFrame(user, model, score (NaN if unparsed), status, reason); ``truth[model][user]`` in [0, 1]
        (optional) is attached for the simulated judge."""
        plan = [(int(u), str(m)) for m in recs for u in users]
        requests = [
            self.request(
                u,
                recs[m][u],
                metadata={"user": u, "model": m},
                truth=None if truth is None else ListScoreTruth(float(truth[m][u])),
            )
            for u, m in plan
        ]
        results = self.client.judge_many(requests, desc=self.template.id) if requests else []
        rows = []
        for (u, m), res in zip(plan, results, strict=True):
            ok = res.status == "parsed" and res.value is not None
            rows.append(
                {
                    "user": u,
                    "model": m,
                    "score": res.value["score"] if ok and res.value is not None else np.nan,
                    "status": res.status,
                    "reason": res.reason,
                }
            )
        return pd.DataFrame(rows)
