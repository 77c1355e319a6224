"""The serendipity LLM-as-a-judge (paper: serendipity-llm-judge, Sections 3-4).

Input: a user's last ``n`` items (names and categories, oldest first) and one candidate item.
Output: a five-level serendipity score in {1, ..., 5} (3 = neutral). Serendipity = relevance + unexpectedness.

Four prompt templates (editable files in ``recjudge_utils/prompts/serendipity/``):

* ``base``: asks for the five-level score, no scale description.
* ``ls``: base plus a Likert-scale description of each level.
* ``cot``: ls plus three steps (relevance, unexpectedness, serendipity), each scored in the JSON answer.
* ``ltm``: the three CoT steps as three chained sub-prompts (least-to-most); the parsed answer of each
  step goes into the next one's input, so an item costs three calls.

Every prompt is: system prompt, then the few-shot examples as user/assistant turns, then the per-pair
user message LAST, so the long shared prefix is identical between pairs (llama.cpp reuses its KV cache).
LtM runs stage by stage over all pairs (all relevance calls, then all unexpectedness calls, ...) for the
same reason.

Answers are parsed strictly: a JSON object with the required integer fields in 1..5. Anything else raises
:class:`~recjudge_utils.parsing.ParseError`, and the pair is reported as unparsed (score NaN), never imputed.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.parsing import ParseError, parse_json_object
from recjudge_utils.paths import runs_dir

__all__ = [
    "LEVELS",
    "PAPER_G_DISTRIBUTION",
    "SCORE_LABELS",
    "TEMPLATES",
    "PromptFile",
    "SerendipityJudge",
    "format_item",
    "load_prompt",
    "load_selected_template",
    "paper_table1",
    "parse_answer",
    "parser_for",
    "sample_eval_pairs",
    "save_selected_template",
    "select_few_shot_examples",
    "template_stages",
]

TEMPLATES: tuple[str, ...] = ("base", "ls", "cot", "ltm")
LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)
SCORE_LABELS: tuple[str, ...] = tuple(str(level) for level in LEVELS)

#: Distribution of the ground truth g over the 2,150 Serendipity-2018 pairs, Section 4.1 of the paper.
PAPER_G_DISTRIBUTION: dict[int, int] = {1: 321, 2: 1022, 3: 586, 4: 208, 5: 13}

_PROMPT_DIR = ("prompts", "serendipity")
SELECTED_TEMPLATE_FILE = "selected_template.json"


# --------------------------------------------------------------------------------------------- prompt files
@dataclass(frozen=True)
class PromptFile:
    """One prompt file: ``version: N`` header line, a ``---`` line, then the text."""

    name: str
    version: str
    text: str

    @property
    def key(self) -> str:
        """Version plus a content hash, so an edit without a version bump still changes the cache key."""
        digest = hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:8]
        return f"{self.version}-{digest}"

    def render(self, **values: Any) -> str:
        """Fill the ``$placeholders`` (``string.Template``); a missing placeholder raises KeyError."""
        return Template(self.text).substitute({k: str(v) for k, v in values.items()})


def _parse_prompt_file(name: str, raw: str) -> PromptFile:
    lines = raw.splitlines()
    if len(lines) < 3 or not lines[0].startswith("version:") or lines[1].strip() != "---":
        raise ValueError(f"prompt file {name!r} must start with a 'version: N' line and a '---' line")
    version = lines[0].split(":", 1)[1].strip()
    if not version:
        raise ValueError(f"prompt file {name!r} has an empty version")
    text = "\n".join(lines[2:]).strip("\n")
    return PromptFile(name=name, version=version, text=text)


@lru_cache(maxsize=64)
def load_prompt(name: str) -> PromptFile:
    """Load ``recjudge_utils/prompts/serendipity/<name>`` (e.g. ``"cot.md"``) via importlib.resources."""
    res = resources.files("recjudge_utils").joinpath(*_PROMPT_DIR, name)
    return _parse_prompt_file(name, res.read_text(encoding="utf-8"))


def paper_table1() -> pd.DataFrame:
    """The paper's Table 1 (MAE and three-class accuracy per template, GPT-4o-mini and Llama-3.1-70B).

    Columns: template, model, mae, accuracy_pct. Transcribed in ``prompts/serendipity/paper_table1.csv``.
    """
    res = resources.files("recjudge_utils").joinpath(*_PROMPT_DIR, "paper_table1.csv")
    with res.open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, comment="#")


# --------------------------------------------------------------------------------------------- templates
@dataclass(frozen=True)
class Stage:
    """One call of a template: its system prompt, its per-pair message and the JSON fields it must return."""

    name: str  # "base", "ls", "cot", "ltm/relevance", ...
    system_file: str
    input_file: str
    fields: tuple[str, ...]
    label_field: str
    max_tokens: int

    @property
    def template_id(self) -> str:
        return f"serendipity/{self.name}"

    @property
    def version(self) -> str:
        return f"{load_prompt(self.system_file).key}.{load_prompt(self.input_file).key}"


_STAGES: dict[str, tuple[Stage, ...]] = {
    "base": (Stage("base", "base.md", "input.md", ("score",), "score", 32),),
    "ls": (Stage("ls", "ls.md", "input.md", ("score",), "score", 32),),
    "cot": (Stage("cot", "cot.md", "input.md", ("relevance", "unexpectedness", "score"), "score", 64),),
    "ltm": (
        Stage("ltm/relevance", "ltm_relevance.md", "input.md", ("relevance",), "relevance", 32),
        Stage(
            "ltm/unexpectedness",
            "ltm_unexpectedness.md",
            "ltm_unexpectedness_input.md",
            ("unexpectedness",),
            "unexpectedness",
            32,
        ),
        Stage("ltm/serendipity", "ltm_serendipity.md", "ltm_serendipity_input.md", ("score",), "score", 32),
    ),
}


def template_stages(template: str) -> tuple[Stage, ...]:
    """The calls a template makes per item (one, or three for ``ltm``)."""
    if template not in _STAGES:
        raise ValueError(f"unknown serendipity template {template!r}; choose from {TEMPLATES}")
    return _STAGES[template]


# --------------------------------------------------------------------------------------------- parsing
def _level(obj: dict, key: str) -> int:
    if key not in obj:
        raise ParseError(f"JSON object has no {key!r} field (keys: {sorted(map(str, obj))})")
    value = obj[key]
    if isinstance(value, bool) or value is None:
        raise ParseError(f"{key}={value!r} is not an integer from 1 to 5")
    if isinstance(value, float):
        if not value.is_integer():
            raise ParseError(f"{key}={value!r} is not an integer from 1 to 5")
        value = int(value)
    if isinstance(value, str):
        s = value.strip()
        if len(s) != 1 or s not in "12345":
            raise ParseError(f"{key}={value!r} is not an integer from 1 to 5")
        value = int(s)
    if not isinstance(value, int) or not 1 <= value <= 5:
        raise ParseError(f"{key}={value!r} is not an integer from 1 to 5")
    return value


def parse_answer(text: str | None, fields: Sequence[str]) -> dict[str, int]:
    """Parse a judge answer: a JSON object holding every field in ``fields`` as an integer 1..5.

    JSON recovery (code fences, prose around the object) is delegated to ``parse_json_object``;
    the field values are checked strictly (``4``, ``4.0`` and ``"4"`` pass; ``3.5``, ``"4/5"``, ``0``, ``6`` fail).
    Extra keys are ignored. Raises ParseError with the reason otherwise.
    """
    obj = parse_json_object(text)
    return {key: _level(obj, key) for key in fields}


def parser_for(template: str, stage: int = 0) -> Callable[[str], dict[str, int]]:
    """The strict parser of a template's ``stage``-th call (``ltm`` has stages 0, 1, 2)."""
    fields = template_stages(template)[stage].fields

    def parse(text: str) -> dict[str, int]:
        return parse_answer(text, fields)

    parse.__name__ = f"parse_{template}_{stage}"
    return parse


def _json_schema(fields: Sequence[str]) -> dict:
    return {
        "type": "object",
        "properties": {f: {"type": "integer", "enum": list(LEVELS)} for f in fields},
        "required": list(fields),
        "additionalProperties": False,
    }


def _answer_json(values: dict[str, int]) -> str:
    return json.dumps({k: int(v) for k, v in values.items()})


# --------------------------------------------------------------------------------------------- item text
def _genres_text(genres: Any) -> str:
    if genres is None or (isinstance(genres, float) and math.isnan(genres)):
        return "unknown"
    if isinstance(genres, str):
        return genres.strip() or "unknown"
    parts = [str(g).strip() for g in genres if str(g).strip()]
    return ", ".join(parts) if parts else "unknown"


def format_item(title: Any, genres: Any) -> str:
    """How one item is shown to the judge: ``Title (categories: A, B)``."""
    return f"{str(title).strip()} (categories: {_genres_text(genres)})"


def _with_year(title: Any, year: Any) -> Any:
    """``Title (1995)`` when the items frame has a separate year the title does not already show."""
    try:
        y = int(year)
    except (TypeError, ValueError):
        return title
    if y <= 0 or str(title).rstrip().endswith(f"({y})"):
        return title
    return f"{str(title).strip()} ({y})"


def _item_texts(items: pd.DataFrame) -> dict[int, str]:
    missing = {"item", "title", "genres"} - set(items.columns)
    if missing:
        raise ValueError(f"items frame lacks columns {sorted(missing)}")
    titles = items["title"].to_numpy()
    if "year" in items.columns:
        titles = [_with_year(t, y) for t, y in zip(titles, items["year"].to_numpy(), strict=True)]
    return {
        int(i): format_item(t, g)
        for i, t, g in zip(items["item"].to_numpy(), titles, items["genres"].to_numpy(), strict=True)
    }


def _lookup(texts: dict[int, str], item: Any) -> str:
    try:
        return texts[int(item)]
    except KeyError:
        raise KeyError(f"item {item!r} is not in the items frame") from None


def _as_list(history: Any) -> list:
    if history is None or (isinstance(history, float) and math.isnan(history)):
        return []
    return list(history)


# --------------------------------------------------------------------------------------------- examples
def sample_eval_pairs(pairs: pd.DataFrame, n_pairs: int | None, exclude_users: Iterable[int] = (), seed: int = 0):
    """A uniform random sample of ``n_pairs`` pairs from users not in ``exclude_users`` (all of them when None).

    Rows keep their original order (sorted by index) so results are stable; deterministic under ``seed``.
    """
    pool = pairs[~pairs["user"].isin(list(exclude_users))]
    if n_pairs is None or n_pairs >= len(pool):
        return pool.copy()
    return pool.sample(n=int(n_pairs), random_state=seed).sort_index()


def select_few_shot_examples(
    pairs: pd.DataFrame,
    items: pd.DataFrame,
    n_per_level: int = 2,
    exclude_users: Iterable[int] | None = None,
    seed: int = 0,
    label_col: str = "g",
) -> pd.DataFrame:
    """Pick ``n_per_level`` labelled pairs per score level (1..5) as few-shot examples.

    Examples never come from ``exclude_users`` (the users being evaluated): no leakage. Within a level, pairs
    are drawn at random (``seed``) preferring distinct users. The returned frame carries the rendered text, so
    the examples can be used with any items frame later (notebook 2 judges other datasets with them):

    columns user, item, g, relevance, unexpectedness, history_text (list[str], oldest first), candidate_text,
    aux_source. ``relevance`` / ``unexpectedness`` (shown in the CoT/LtM example answers) come from the pairs'
    own ``relevance`` / ``unexpectedness`` columns when the data has them (``aux_source="data"``); otherwise they
    are set to the example's g (``aux_source="g"``), i.e. the examples then only teach the final score. The
    rows are shuffled (``seed``) so that the levels are interleaved, and the order is the same for every template.
    A level with fewer candidates than ``n_per_level`` gives what it has, with a warning.
    """
    if n_per_level < 0:
        raise ValueError("n_per_level must be >= 0")
    excluded = set() if exclude_users is None else {int(u) for u in exclude_users}
    pairs = pairs.reset_index(drop=True)  # positional labels: a duplicated index cannot duplicate examples
    pool = pairs[~pairs["user"].isin(list(excluded))]
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for level in LEVELS:
        if n_per_level == 0:
            break
        cand = pool[pool[label_col].to_numpy() == level]
        if len(cand) < n_per_level:
            warnings.warn(
                f"only {len(cand)} candidate examples with {label_col}={level} (wanted {n_per_level})",
                stacklevel=2,
            )
        order = rng.permutation(len(cand))
        picked: list[int] = []
        used_users: set[int] = set()
        for pos in order:  # first pass: distinct users
            u = int(cand["user"].iloc[pos])
            if u not in used_users and len(picked) < n_per_level:
                picked.append(int(pos))
                used_users.add(u)
        for pos in order:  # second pass: fill up if there are too few distinct users
            if len(picked) >= n_per_level:
                break
            if int(pos) not in picked:
                picked.append(int(pos))
        chosen.extend(cand.index[picked].tolist())
    ex = pairs.loc[chosen]
    ex = ex.iloc[rng.permutation(len(ex))] if len(ex) else ex
    texts = _item_texts(items)
    has_aux = {"relevance", "unexpectedness"} <= set(pairs.columns)
    out = pd.DataFrame(
        {
            "user": ex["user"].astype(int).to_numpy(),
            "item": ex["item"].astype(int).to_numpy(),
            "g": ex[label_col].astype(int).to_numpy(),
        }
    )
    if has_aux:
        out["relevance"] = ex["relevance"].astype(int).to_numpy()
        out["unexpectedness"] = ex["unexpectedness"].astype(int).to_numpy()
    else:
        out["relevance"] = out["g"].to_numpy()
        out["unexpectedness"] = out["g"].to_numpy()
    out["history_text"] = [[_lookup(texts, i) for i in _as_list(h)] for h in ex["history"]]
    out["candidate_text"] = [_lookup(texts, i) for i in ex["item"]]
    out["aux_source"] = "data" if has_aux else "g"
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------------------------- the judge
def _result_get(result: Any, name: str, default: Any = None) -> Any:
    return getattr(result, name, default)


def _nan_if_none(x: Any) -> float:
    return float("nan") if x is None else float(x)


class SerendipityJudge:
    """Scores (user history, candidate item) pairs with one template through a ``JudgeClient``.

    ``examples``: frame from :func:`select_few_shot_examples` (or None for zero-shot).
    ``n_history``: how many of the most recent history items are shown (the paper uses 10).
    ``item_noun``/``items_noun``: wording of the prompt (``"movie"``/``"movies"``; e.g. ``"book"`` for Goodreads).
    ``use_json_schema``: ask the backend for JSON matching the answer's schema (grammar-constrained on llama.cpp).
    """

    def __init__(
        self,
        client: Any,
        template: str = "cot",
        examples: pd.DataFrame | None = None,
        n_history: int = 10,
        item_noun: str = "movie",
        items_noun: str | None = None,
        use_json_schema: bool = True,
        seed: int | None = 0,
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
        self.item_noun = item_noun
        self.items_noun = items_noun or f"{item_noun}s"
        self.use_json_schema = use_json_schema
        self.seed = seed

    # -- rendering ---------------------------------------------------------------------------------------
    def _user_message(self, stage: Stage, history_text: Sequence[str], candidate_text: str, prev: dict) -> str:
        hist = list(history_text)[-self.n_history :]
        lines = "\n".join(f"{k}. {t}" for k, t in enumerate(hist, start=1)) if hist else "(no history)"
        values = {
            "n": len(hist),
            "item": self.item_noun,
            "items": self.items_noun,
            "history": lines,
            "candidate": candidate_text,
        }
        values.update({k: v for k, v in prev.items() if k in ("relevance", "unexpectedness")})
        return load_prompt(stage.input_file).render(**values)

    def _prefix(self, stage: Stage) -> list[dict]:
        system = load_prompt(stage.system_file).render(item=self.item_noun, items=self.items_noun)
        messages = [{"role": "system", "content": system}]
        for ex in self.examples.itertuples(index=False):
            truth = {"relevance": int(ex.relevance), "unexpectedness": int(ex.unexpectedness), "score": int(ex.g)}
            user = self._user_message(stage, ex.history_text, ex.candidate_text, truth)
            answer = _answer_json({f: truth[f] for f in stage.fields})
            messages.append({"role": "user", "content": user})
            messages.append({"role": "assistant", "content": answer})
        return messages

    def messages(
        self, history: Sequence[int], candidate: int, items: pd.DataFrame, stage: int = 0, previous: dict | None = None
    ) -> tuple[dict, ...]:
        """The chat messages of one call (for inspection and tests)."""
        texts = _item_texts(items)
        st = self.stages[stage]
        hist = [_lookup(texts, i) for i in _as_list(history)]
        user = self._user_message(st, hist, _lookup(texts, candidate), previous or {})
        return (*self._prefix(st), {"role": "user", "content": user})

    def _request(self, stage: Stage, prefix: list[dict], user: str, metadata: dict) -> Any:
        from recjudge_utils.client import JudgeRequest  # imported lazily: the client pulls in openai

        is_label = stage.label_field == "score"
        return JudgeRequest(
            messages=(*prefix, {"role": "user", "content": user}),
            template_id=stage.template_id,
            template_version=stage.version,
            max_tokens=stage.max_tokens,
            temperature=0.0,
            seed=self.seed,
            json_schema=_json_schema(stage.fields) if self.use_json_schema else None,
            label_options=SCORE_LABELS if is_label else None,
            label_field=stage.label_field if is_label else None,
            metadata=metadata,
        )

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
        texts = _item_texts(items)
        n = len(pairs)
        users = pairs["user"].to_numpy()
        cands = pairs["item"].to_numpy()
        hist_texts = [[_lookup(texts, i) for i in _as_list(h)] for h in pairs["history"]]
        cand_texts = [_lookup(texts, i) for i in cands]

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
        prev: list[dict] = [{} for _ in range(n)]
        alive = list(range(n))

        for st in self.stages:
            if not alive:
                break
            prefix = self._prefix(st)
            reqs = [
                self._request(
                    st,
                    prefix,
                    self._user_message(st, hist_texts[k], cand_texts[k], prev[k]),
                    {"user": int(users[k]), "item": int(cands[k]), "template": self.template, "stage": st.name},
                )
                for k in alive
            ]
            parse = parser_for(self.template, self.stages.index(st))
            results = self.client.judge_many(reqs, parse=parse, desc=desc or st.template_id)
            if len(results) != len(reqs):
                raise RuntimeError(f"client returned {len(results)} results for {len(reqs)} requests")
            still: list[int] = []
            for k, res in zip(alive, results, strict=True):
                out["n_calls"][k] += 1
                out["prompt_tokens"][k] += int(_result_get(res, "prompt_tokens", 0) or 0)
                out["completion_tokens"][k] += int(_result_get(res, "completion_tokens", 0) or 0)
                out["latency_s"][k] += float(_result_get(res, "latency_s", 0.0) or 0.0)
                out["cost_usd"][k] += float(_result_get(res, "cost_usd", 0.0) or 0.0)
                out["cache_hits"][k] += int(bool(_result_get(res, "cache_hit", False)))
                raw[k] = _result_get(res, "raw_text")
                if st.label_field == "score":
                    out["expected_score"][k] = _nan_if_none(_result_get(res, "expected_label"))
                res_status = _result_get(res, "status")
                if res_status != "parsed":
                    status[k] = "error" if res_status == "error" else "unparsed"
                    why = _result_get(res, "reason") or res_status
                    reason[k] = f"{st.name}: {why}" if len(self.stages) > 1 else str(why)
                    stage_failed[k] = st.name
                    continue
                value = dict(_result_get(res, "value") or {})
                prev[k].update(value)
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


# --------------------------------------------------------------------------------------------- hand-over to NB 2
def _selected_path(path: str | Path | None) -> Path:
    return Path(path) if path is not None else runs_dir() / "01_serendipity" / SELECTED_TEMPLATE_FILE


def save_selected_template(template: str, path: str | Path | None = None, **info: Any) -> Path:
    """Write the selected template (plus ``info``: MAE, judge model, data label, ...) as JSON for notebook 2.

    Default location: ``runs_dir()/01_serendipity/selected_template.json``.
    """
    template_stages(template)  # validates the name
    target = _selected_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "template": template,
        "template_versions": {st.name: st.version for st in template_stages(template)},
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **info,
    }
    target.write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    return target


def load_selected_template(path: str | Path | None = None, default: str | None = "cot") -> dict:
    """Read what notebook 1 selected. Without the file, returns ``{"template": default, "source": "default"}``
    (the paper's choice, CoT) or raises FileNotFoundError when ``default`` is None."""
    target = _selected_path(path)
    if not target.is_file():
        if default is None:
            raise FileNotFoundError(f"no selected template at {target}; run notebook 01 first")
        return {"template": default, "source": "default (notebook 01 has not been run)"}
    record = json.loads(target.read_text(encoding="utf-8"))
    record.setdefault("source", str(target))
    return record
