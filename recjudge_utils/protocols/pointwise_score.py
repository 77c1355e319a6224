"""Pointwise score: a five-level judgment of one (user history, candidate item) pair, in one or more stages.

This is the serendipity judge's protocol (paper: serendipity-llm-judge, Sections 3-4): the user's last ``n``
items (names and categories, oldest first) and one candidate; the answer is a five-level score in {1..5}
(3 = neutral). A template is one prompt file, or a chain of them (least-to-most: each stage's parsed answer
fills the next stage's slots, so an item costs one call per stage):

======== ===============================================================================================
template stages (prompt files under ``prompts/serendipity/``)
======== ===============================================================================================
``base`` ``base``: the five-level score, no scale description
``ls``   ``ls``: Base plus a Likert-scale description of each level
``cot``  ``cot``: LS plus three scored steps (relevance, unexpectedness, serendipity)
``ltm``  ``ltm/relevance`` -> ``ltm/unexpectedness`` -> ``ltm/serendipity`` (the CoT steps as a chain)
======== ===============================================================================================

Every prompt is: system block, the few-shot examples as user/assistant turns, then the per-pair user turn
LAST, so the long shared prefix is identical between pairs (llama.cpp reuses its KV cache). A chained template
runs stage by stage over all pairs for the same reason. Answers are parsed strictly (answer format
``json_levels``); a pair whose answer cannot be parsed is reported as unparsed (score NaN), never imputed, and
is not sent to later stages.

When the pairs carry their ground truth (column ``g``, and ``relevance`` / ``unexpectedness`` where the data has
them), each request carries it as :class:`~recjudge_utils.answer_formats.truth.ScoreTruth` for the simulated judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from recjudge_utils.answer_formats.json_levels import LEVELS, format_levels, levels_schema
from recjudge_utils.answer_formats.truth import ScoreTruth
from recjudge_utils.data.domain import NEUTRAL_DOMAIN, DomainWords
from recjudge_utils.judge.types import Judge, JudgeRequest, JudgeResult, MetadataValue, make_request
from recjudge_utils.metrics.numbers import number_or_nan
from recjudge_utils.paths import SELECTED_TEMPLATE_FILE, current_run_dir
from recjudge_utils.prompts import Message, PromptTemplate, load_prompt
from recjudge_utils.protocols.context.serendipity import as_item_list, history_lines, item_texts, lookup

__all__ = [
    "LEVELS",
    "PAPER_TEMPLATE",
    "TEMPLATES",
    "MemberScores",
    "SerendipityJudge",
    "Stage",
    "TemplateChoice",
    "choose_template",
    "load_selected_template",
    "save_selected_template",
    "template_stages",
]

#: Template name -> the prompt files of its stages, in order.
_TEMPLATE_PROMPTS: dict[str, tuple[str, ...]] = {
    "base": ("serendipity/base",),
    "ls": ("serendipity/ls",),
    "cot": ("serendipity/cot",),
    "ltm": ("serendipity/ltm/relevance", "serendipity/ltm/unexpectedness", "serendipity/ltm/serendipity"),
}
TEMPLATES: tuple[str, ...] = tuple(_TEMPLATE_PROMPTS)
#: the template the paper selected (Tokutake et al., Table 1): what later chapters use when chapter 1 selected none
PAPER_TEMPLATE = "cot"
_SCORE_LABELS: tuple[str, ...] = tuple(str(level) for level in LEVELS)
#: the fields whose truth a pair can carry (the final score is g)
_TRUTH_FIELDS = {"score": "g", "relevance": "relevance", "unexpectedness": "unexpectedness"}


@dataclass(frozen=True)
class Stage:
    """One call of a template: its prompt file, the JSON fields it must return and its label field."""

    prompt: PromptTemplate

    @property
    def name(self) -> str:
        """``base``, ``ls``, ``cot``, ``ltm/relevance``, ..."""
        return self.prompt.id.removeprefix("serendipity/")

    @property
    def template_id(self) -> str:
        """The prompt file's id (``serendipity/cot``, ...)."""
        return self.prompt.id

    @property
    def version(self) -> str:
        """The prompt's version plus its content hash (what the cache key carries)."""
        return self.prompt.key

    @property
    def fields(self) -> tuple[str, ...]:
        """The JSON fields the stage's answer must hold."""
        return tuple(str(f) for f in cast(Iterable[object], self.prompt.get("fields", ())))

    @property
    def label_field(self) -> str:
        """The field whose logprobs give the expected label."""
        return str(self.prompt.get("label_field"))


def template_stages(template: str) -> tuple[Stage, ...]:
    """The calls a template makes per item (one, or three for ``ltm``)."""
    if template not in _TEMPLATE_PROMPTS:
        raise ValueError(f"unknown serendipity template {template!r}; choose from {TEMPLATES}")
    return tuple(Stage(load_prompt(pid)) for pid in _TEMPLATE_PROMPTS[template])


class SerendipityJudge:
    """Scores (user history, candidate item) pairs with one template through a judge.

    ``examples``: frame from :func:`~recjudge_utils.protocols.few_shot.select_few_shot_examples` (None:
    zero-shot). ``n_history``: how many of the most recent history items are shown (the paper uses 10).
    ``words``: the dataset's words the prompt uses (``Dataset.domain``; neutral words, never a movie word, by default).
    ``use_json_schema``: ask the backend for JSON matching the answer's schema (grammar-constrained on llama.cpp).
    ``texts``: item id -> the line the judge reads of it, from the dataset's card
    (:func:`recjudge_utils.data.folder.judge_item_texts`); None: this paper's own line, ``Title (Year) (categories:
    A, B)`` (:func:`~recjudge_utils.protocols.context.serendipity.item_texts`).
    """

    def __init__(
        self,
        client: Judge,
        template: str = "cot",
        examples: pd.DataFrame | None = None,
        n_history: int = 10,
        words: DomainWords = NEUTRAL_DOMAIN,
        use_json_schema: bool = True,
        seed: int | None = 0,
        texts: Mapping[int, str] | None = None,
    ) -> None:
        self.stages = template_stages(template)
        if n_history < 1:
            raise ValueError("n_history must be >= 1")
        self.client = client
        self.template = template
        self.examples = examples if examples is not None else pd.DataFrame()
        if len(self.examples):
            need = {"history_text", "candidate_text", "g", "relevance", "unexpectedness"}
            missing = need - set(self.examples.columns)
            if missing:
                raise ValueError(f"examples lack columns {sorted(missing)}; use select_few_shot_examples()")
        self.n_history = int(n_history)
        self.words = words
        self.use_json_schema = use_json_schema
        self.seed = seed
        self.texts = texts

    def _item_texts(self, items: pd.DataFrame) -> Mapping[int, str]:
        """The card's item lines when the judge was given them, else the paper's, built from ``items``."""
        return self.texts if self.texts is not None else item_texts(items)

    # -- rendering ---------------------------------------------------------------------------------------
    def _slots(self, history_text: Sequence[str], candidate_text: str, prev: Mapping[str, int]) -> dict[str, object]:
        n, lines = history_lines(history_text, self.n_history)
        slots: dict[str, object] = {"n": n, "history": lines, "candidate": candidate_text}
        slots.update({k: v for k, v in prev.items() if k in ("relevance", "unexpectedness")})
        return slots

    def _examples(self, stage: Stage) -> list[tuple[dict[str, object], str]]:
        out = []
        for ex in self.examples.itertuples(index=False):
            truth = {"relevance": int(ex.relevance), "unexpectedness": int(ex.unexpectedness), "score": int(ex.g)}
            slots = {
                k: v
                for k, v in self._slots(ex.history_text, ex.candidate_text, truth).items()
                if k in stage.prompt.slots
            }
            out.append((slots, format_levels({f: truth[f] for f in stage.fields})))
        return out

    def _render(
        self, stage: Stage, examples: list[tuple[dict[str, object], str]], slots: Mapping[str, object]
    ) -> tuple[Message, ...]:
        used = {k: v for k, v in slots.items() if k in stage.prompt.slots}
        return stage.prompt.render(examples, domain=self.words, **used)

    def messages(
        self,
        history: Sequence[int],
        candidate: int,
        items: pd.DataFrame,
        stage: int = 0,
        previous: Mapping[str, int] | None = None,
    ) -> tuple[Message, ...]:
        """The chat messages of one call (for inspection and tests)."""
        texts = self._item_texts(items)
        st = self.stages[stage]
        hist = [lookup(texts, i) for i in as_item_list(history)]
        slots = self._slots(hist, lookup(texts, candidate), previous or {})
        return self._render(st, self._examples(st), slots)

    def _request(
        self,
        stage: Stage,
        messages: tuple[Message, ...],
        metadata: Mapping[str, MetadataValue],
        truth: ScoreTruth | None,
    ) -> JudgeRequest:
        is_label = stage.label_field == "score"
        return make_request(
            stage.prompt,
            messages,
            answer_options={"fields": stage.fields},
            seed=self.seed,
            json_schema=levels_schema(stage.fields) if self.use_json_schema else None,
            label_options=_SCORE_LABELS if is_label else None,
            label_field=stage.label_field if is_label else None,
            truth=truth,
            metadata=metadata,
        )

    @staticmethod
    def _truths(pairs: pd.DataFrame) -> list[ScoreTruth | None]:
        cols = {f: c for f, c in _TRUTH_FIELDS.items() if c in pairs.columns}
        if "score" not in cols:
            return [None] * len(pairs)
        values = {f: pairs[c].to_numpy() for f, c in cols.items()}
        out: list[ScoreTruth | None] = []
        for k in range(len(pairs)):
            levels = tuple((f, int(v[k])) for f, v in values.items() if not pd.isna(v[k]))
            out.append(ScoreTruth(levels) if any(f == "score" for f, _ in levels) else None)
        return out

    # -- scoring -----------------------------------------------------------------------------------------
    def score(self, pairs: pd.DataFrame, items: pd.DataFrame, desc: str | None = None) -> pd.DataFrame:
        """Judge every pair. Returns one row per input row, same order.

        Columns: user, item, score (1..5, NaN unless parsed), expected_score (logprob-weighted, NaN when the
        backend gives no logprobs), status ("parsed"/"unparsed"/"error"), reason, relevance, unexpectedness
        (CoT/LtM, else NaN), stage_failed (LtM: which step failed), n_calls, prompt_tokens, completion_tokens,
        latency_s, cost_usd, cache_hits, raw_text (answer of the last call made).
        """
        missing = {"user", "item", "history"} - set(pairs.columns)
        if missing:
            raise ValueError(f"pairs frame lacks columns {sorted(missing)}")
        texts = self._item_texts(items)
        n = len(pairs)
        users = pairs["user"].to_numpy()
        cands = pairs["item"].to_numpy()
        hist_texts = [[lookup(texts, i) for i in as_item_list(h)] for h in pairs["history"]]
        cand_texts = [lookup(texts, i) for i in cands]
        truths = self._truths(pairs)

        out = {
            "score": np.full(n, np.nan),
            "expected_score": np.full(n, np.nan),
            "relevance": np.full(n, np.nan),
            "unexpectedness": np.full(n, np.nan),
            "n_calls": np.zeros(n, dtype=int),
            "prompt_tokens": np.zeros(n, dtype=int),
            "completion_tokens": np.zeros(n, dtype=int),
            "latency_s": np.zeros(n),
            "cost_usd": np.zeros(n),
            "cache_hits": np.zeros(n, dtype=int),
        }
        status = ["parsed"] * n
        reason: list[str | None] = [None] * n
        stage_failed: list[str | None] = [None] * n
        raw: list[str | None] = [None] * n
        prev: list[dict[str, int]] = [{} for _ in range(n)]
        alive = list(range(n))

        for st in self.stages:
            if not alive:
                break
            examples = self._examples(st)
            reqs = [
                self._request(
                    st,
                    self._render(st, examples, self._slots(hist_texts[k], cand_texts[k], prev[k])),
                    {"user": int(users[k]), "item": int(cands[k]), "template": self.template, "stage": st.name},
                    truths[k],
                )
                for k in alive
            ]
            results = self.client.judge_many(reqs, desc=desc or st.template_id)
            if len(results) != len(reqs):
                raise RuntimeError(f"client returned {len(results)} results for {len(reqs)} requests")
            still: list[int] = []
            for k, res in zip(alive, results, strict=True):
                out["n_calls"][k] += 1
                out["prompt_tokens"][k] += int(res.prompt_tokens)
                out["completion_tokens"][k] += int(res.completion_tokens)
                out["latency_s"][k] += float(res.latency_s)
                out["cost_usd"][k] += float(res.cost_usd)
                out["cache_hits"][k] += int(res.cache_hit)
                raw[k] = res.raw_text
                if st.label_field == "score":
                    out["expected_score"][k] = number_or_nan(res.expected_label)
                if res.status != "parsed" or res.value is None:
                    status[k] = "error" if res.status == "error" else "unparsed"
                    why = res.reason or res.status
                    reason[k] = f"{st.name}: {why}" if len(self.stages) > 1 else str(why)
                    stage_failed[k] = st.name
                    continue
                prev[k].update(res.value)
                still.append(k)
            alive = still

        for k in range(n):
            if status[k] != "parsed":
                continue
            out["score"][k] = float(prev[k]["score"])
            for f in ("relevance", "unexpectedness"):
                if f in prev[k]:
                    out[f][k] = float(prev[k][f])
        frame = pd.DataFrame(
            {
                "user": users,
                "item": cands,
                "score": out["score"],
                "expected_score": out["expected_score"],
                "status": status,
                "reason": reason,
                "relevance": out["relevance"],
                "unexpectedness": out["unexpectedness"],
                "stage_failed": stage_failed,
            }
        )
        for col in ("n_calls", "prompt_tokens", "completion_tokens", "latency_s", "cost_usd", "cache_hits"):
            frame[col] = out[col]
        frame["raw_text"] = raw
        frame.attrs["template"] = self.template
        return frame


# ------------------------------------------------------------------------------- hand-over to the next chapter
class MemberScores:
    """The judge, passed through, noting each panel member's answer to every request (a single judge's results have
    no members): per (template, user, item, member) the member's last parsed score and the tokens of its calls."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge
        self.seen: dict[tuple[str, int, int, str], dict[str, Any]] = {}

    @property
    def model_name(self) -> str:
        return self.judge.model_name

    def judge_many(
        self, requests: Sequence[JudgeRequest], parse: Callable[[str], Any] | None = None, desc: str | None = None
    ) -> list[JudgeResult[Any]]:
        results = self.judge.judge_many(requests, parse, desc)
        for res in results:
            meta = res.request.metadata or {}
            for answer in getattr(res, "members", ()):
                key = (str(meta["template"]), int(meta["user"]), int(meta["item"]), str(answer.member))  # type: ignore[arg-type]
                row = self.seen.setdefault(key, {"label": None, "tokens": 0})
                row["tokens"] += answer.result.prompt_tokens + answer.result.completion_tokens
                if answer.result.status == "parsed" and "score" in (answer.result.value or {}):
                    row["label"] = int(answer.result.value["score"])
        return results

    def frame(self, pairs: pd.DataFrame) -> pd.DataFrame:
        """Template, user, item, member, label, truth (the pair's g) and tokens, one row per member's judged pair."""
        g = pairs.drop_duplicates(["user", "item"]).set_index(["user", "item"])["g"]
        rows = [{"template": t, "user": u, "item": i, "member": m, "label": v["label"], "truth": int(g[(u, i)]),
                 "tokens": int(v["tokens"])} for (t, u, i, m), v in self.seen.items()]  # fmt: skip
        return pd.DataFrame(rows, dtype=object)  # labels stay int or None, as the scores' items


def _selected_path(path: str | Path | None) -> Path:
    return Path(path) if path is not None else current_run_dir() / SELECTED_TEMPLATE_FILE


def save_selected_template(template: str | None, path: str | Path | None = None, **info: object) -> Path:
    """Write the selected template (plus ``info``: MAE, judge model, data label, ...) as JSON to ``path``.

    ``path`` defaults to the book's hand-over file in the run folder (:data:`~recjudge_utils.paths.
    SELECTED_TEMPLATE_FILE`), where notebook 2 reads it. ``template=None`` records that none was selected (``info``
    then says why), so a later chapter says so instead of reading an older run's choice.
    """
    stages = template_stages(template) if template is not None else []  # validates the name
    target = _selected_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "template": template,
        "template_versions": {st.name: st.version for st in stages},
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **info,
    }
    target.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return target


@dataclass(frozen=True)
class TemplateChoice:
    """The serendipity template a later chapter judges with, and why (chapter 1's choice, a parameter, the paper's)."""

    template: str
    why: str

    def line(self) -> str:
        return f"serendipity template: {self.template} ({self.why})"


def choose_template(parameter: str | None, path: str | Path | None = None) -> TemplateChoice:
    """``parameter`` when given, else chapter 1's selection in this run, else the paper's CoT; ``why`` says which,
    and what chapter 1 selected (or that it selected none, with its reason, or has not run)."""
    selected = load_selected_template(path, default=None) if _selected_path(path).is_file() else None
    if selected is None:
        chapter1 = "chapter 1 has not run in this run"
    elif selected.get("template") is None:
        chapter1 = f"chapter 1 selected none: {selected.get('reason', 'no reason recorded')}"
    else:
        chapter1 = f"chapter 1 selected {selected['template']}"
    if parameter is not None:
        return TemplateChoice(parameter, f"the template parameter; {chapter1}")
    if selected is not None and selected.get("template") is not None:
        return TemplateChoice(str(selected["template"]), "chapter 1's selection in this run")
    return TemplateChoice(PAPER_TEMPLATE, f"the paper's choice, because {chapter1}")


def load_selected_template(path: str | Path | None = None, default: str | None = "cot") -> dict[str, object]:
    """Read the selected template (``path`` as in :func:`save_selected_template`).

    Without the file, returns ``{"template": default, "source": "default"}`` (the paper's choice, CoT) or raises
    FileNotFoundError when ``default`` is None."""
    target = _selected_path(path)
    if not target.is_file():
        if default is None:
            raise FileNotFoundError(f"no selected template at {target}; run notebook 01 first")
        return {"template": default, "source": "default (notebook 01 has not been run)"}
    record: dict[str, object] = json.loads(target.read_text(encoding="utf-8"))
    record.setdefault("source", str(target))
    return record
