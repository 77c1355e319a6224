"""RecSys Arena (Wu et al. 2024): an LLM judge compares the top-k lists of two recommenders for one user.

What this module does, and where it departs from the authors' public code on purpose:

* **Prompt** (``prompts/arena/pairwise.md``, versioned): role-play profile (age, gender, occupation
  when the data has them, otherwise the history alone), the user's *most recent* ``n_history``
  training items by timestamp (titles and genres, oldest first), the top-k lists of A and B and the
  aspects (six by default, editable in the prompt file or per call). Fixed instructions come first
  (system message), the per-user content last.
* **Strict parsing** (:func:`parse_pairwise`): one JSON object, exactly one verdict per aspect plus
  ``overall``, each exactly ``A wins`` / ``B wins`` / ``Tie``. Duplicate keys, a second JSON object,
  verdict words outside the object, missing or unknown aspects and anything else (``"parties"``,
  ``"A wins or tie"``) raise :class:`ParseError`; nothing is counted by substring.
* **Both orders**: every comparison X-vs-Y is judged with X shown as A and again with X shown as B.
  Verdicts are mapped back to the real recommenders (``win``/``tie``/``lose`` for X), the
  *adjudicated* outcome is the agreeing verdict when both orders agree and ``tie`` when they
  disagree, and the *position consistency* rate is the share of comparisons whose two orders agree.
* **Statistics**: Win/Tie/Lose %, ``Q = (N_win + N_tie) / (N_lose + N_tie)``, ranks and percentile
  bootstrap CIs (``stats.bootstrap_ci``) on the win rate and on Q.
* **Absolute judge** (``prompts/arena/absolute.md``): the same user context and one list, a score in
  [0, 1] (Section 4.3 / Figure 6).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from string import Template
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.parsing import ParseError
from recjudge_utils.stats import bootstrap_ci

VERDICTS = ("A wins", "B wins", "Tie")
OUTCOMES = ("win", "tie", "lose")
OVERALL = "overall"
ORDERS = ("x_first", "y_first")  # x shown as A, x shown as B

# MovieLens-1M stores age as a bucket code; ML-100K stores the age in years.
ML1M_AGE_BUCKETS = {
    1: "under 18 years old",
    18: "18-24 years old",
    25: "25-34 years old",
    35: "35-44 years old",
    45: "45-49 years old",
    50: "50-55 years old",
    56: "56 years old or older",
}
GENDERS = {"m": "male", "f": "female", "male": "male", "female": "female"}


# ---------------------------------------------------------------------------------------------
# prompt files
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptTemplate:
    """One prompt file: id, version, the fixed ``system`` part, the per-user ``user`` part, aspects."""

    id: str
    version: str
    system: str
    user: str
    aspects: dict[str, str] = field(default_factory=dict)


def _read_prompt_text(name: str) -> str:
    return resources.files("recjudge_utils").joinpath("prompts", "arena", f"{name}.md").read_text(encoding="utf-8")


def parse_prompt_file(text: str) -> PromptTemplate:
    """Parse the ``key: value`` header and the ``=== section ===`` blocks of a prompt file."""
    header: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = re.fullmatch(r"===\s*(\w+)\s*===\s*", line)
        if m:
            current = m.group(1).lower()
            if current in sections:
                raise ValueError(f"prompt file repeats section {current!r}")
            sections[current] = []
        elif current is None:
            if line.startswith("#") or not line.strip():
                continue
            key, sep, value = line.partition(":")
            if not sep:
                raise ValueError(f"bad prompt header line: {line!r}")
            header[key.strip().lower()] = value.strip()
        else:
            sections[current].append(line)
    for needed in ("version", "id"):
        if needed not in header:
            raise ValueError(f"prompt file lacks a '{needed}:' header line")
    for needed in ("system", "user"):
        if needed not in sections:
            raise ValueError(f"prompt file lacks a '=== {needed} ===' section")
    aspects: dict[str, str] = {}
    for line in sections.get("aspects", []):
        if not line.strip():
            continue
        name, sep, desc = line.partition(":")
        if not sep:
            raise ValueError(f"aspect line needs 'Name: description': {line!r}")
        aspects[name.strip()] = desc.strip()
    return PromptTemplate(
        id=header["id"],
        version=header["version"],
        system="\n".join(sections["system"]).strip(),
        user="\n".join(sections["user"]).strip(),
        aspects=aspects,
    )


def load_prompt(name: str = "pairwise") -> PromptTemplate:
    """Load ``prompts/arena/<name>.md`` (``pairwise`` or ``absolute``)."""
    return parse_prompt_file(_read_prompt_text(name))


def aspect_key(name: str) -> str:
    """JSON key of an aspect: lower_snake_case of its name (``Impact on users`` -> ``impact_on_users``)."""
    key = re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")
    if not key:
        raise ValueError(f"aspect name {name!r} gives an empty key")
    return key


def resolve_aspects(aspects: Sequence[str] | Mapping[str, str] | None = None) -> dict[str, str]:
    """Aspect name -> description.

    ``None`` gives the six aspects of the prompt file; a list of names picks some of them
    (case-insensitive); a mapping supplies new aspects with their own descriptions.
    """
    known = load_prompt("pairwise").aspects
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


# ---------------------------------------------------------------------------------------------
# user context: profile, recent history, item descriptions
# ---------------------------------------------------------------------------------------------
def _genres_text(genres: Any) -> str:
    if genres is None or (isinstance(genres, float) and np.isnan(genres)):
        return ""
    if isinstance(genres, str):
        return genres
    return ", ".join(str(g) for g in list(genres))


def _present(value: Any) -> bool:
    """False for None / NaN / pd.NA / blank strings."""
    if value is None:
        return False
    if np.ndim(value) == 0 and pd.isna(value):
        return False
    return not (isinstance(value, str) and not value.strip())


def describe_profile(row: Mapping[str, Any] | None, dataset: str = "") -> str:
    """Role-play sentence from age / gender / occupation (only the fields that are present)."""
    parts: list[str] = []
    if row is not None:
        age = row.get("age")
        if _present(age):
            age_i = int(age)
            if dataset.lower() in {"ml-1m", "movielens-1m"} and age_i in ML1M_AGE_BUCKETS:
                parts.append(f"you are {ML1M_AGE_BUCKETS[age_i]}")
            else:
                parts.append(f"you are {age_i} years old")
        occupation = row.get("occupation")
        if _present(occupation):
            parts.append(f"your occupation is {str(occupation).strip()}")
        gender = row.get("gender")
        if _present(gender):
            g = GENDERS.get(str(gender).strip().lower(), str(gender).strip())
            parts.append(f"you are {g}")
    if not parts:
        return "No personal information is known about you: infer your tastes only from the history below."
    return "About you: " + ", ".join(parts) + "."


class ArenaContext:
    """Everything the prompts need about users and items, built once from the training data."""

    def __init__(
        self,
        items: pd.DataFrame,
        train: pd.DataFrame,
        users: pd.DataFrame | None = None,
        n_history: int = 10,
        dataset: str = "ml-100k",
        domain: str = "movie",
        item_noun: str = "movies",
    ) -> None:
        if n_history <= 0:
            raise ValueError("n_history must be positive")
        self.dataset = dataset
        self.domain = domain
        self.item_noun = item_noun
        self.n_history = n_history
        years = items["year"] if "year" in items.columns else pd.Series([None] * len(items), index=items.index)
        self._items = {}
        for item, title, genres, year in zip(items["item"], items["title"], items["genres"], years, strict=True):
            title = str(title)
            if _present(year) and not re.search(r"\(\d{4}\)\s*$", title):
                title = f"{title} ({int(year)})"
            self._items[int(item)] = (title, _genres_text(genres))
        ordered = train.sort_values(["user", "timestamp", "item"], kind="mergesort")
        recent = ordered.groupby("user", sort=False).tail(n_history)
        self._history = {int(u): [int(i) for i in g] for u, g in recent.groupby("user", sort=False)["item"]}
        self._users: dict[int, dict[str, Any]] = {}
        if users is not None and len(users):
            cols = [c for c in ("age", "gender", "occupation") if c in users.columns]
            for rec in users[["user", *cols]].to_dict("records"):
                self._users[int(rec.pop("user"))] = rec

    def history(self, user: int) -> list[int]:
        """The user's ``n_history`` most recent training items by timestamp, oldest first."""
        return list(self._history.get(int(user), []))

    def profile(self, user: int) -> str:
        return describe_profile(self._users.get(int(user)), self.dataset)

    def describe(self, item: int) -> str:
        title, genres = self._items.get(int(item), (f"item {int(item)}", ""))
        return f"{title}, genres: {genres}" if genres else title

    def numbered(self, items: Sequence[int]) -> str:
        if len(items) == 0:
            return "(none)"
        return "\n".join(f"{i}. {self.describe(it)}" for i, it in enumerate(items, start=1))


# ---------------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------------
def _aspect_block(aspects: Mapping[str, str]) -> str:
    return "\n".join(f"- {name}: {desc}" for name, desc in aspects.items())


def _json_shape(aspects: Mapping[str, str]) -> str:
    lines = [f'  "{aspect_key(n)}": {{"analysis": "...", "verdict": "A wins" | "B wins" | "Tie"}},' for n in aspects]
    lines.append(f'  "{OVERALL}": "A wins" | "B wins" | "Tie"')
    return "{\n" + "\n".join(lines) + "\n}"


def pairwise_json_schema(aspects: Mapping[str, str], max_analysis_chars: int = 160) -> dict:
    """JSON schema of the pair-wise answer (used for constrained decoding where the server supports it)."""
    verdict = {"type": "string", "enum": list(VERDICTS)}
    per_aspect = {
        "type": "object",
        "properties": {"analysis": {"type": "string", "maxLength": max_analysis_chars}, "verdict": verdict},
        "required": ["analysis", "verdict"],
        "additionalProperties": False,
    }
    props: dict[str, Any] = {aspect_key(n): per_aspect for n in aspects}
    props[OVERALL] = verdict
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


ABSOLUTE_SCHEMA = {
    "type": "object",
    "properties": {
        "analysis": {"type": "string", "maxLength": 160},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["analysis", "score"],
    "additionalProperties": False,
}


def render_messages(
    template: PromptTemplate,
    context: ArenaContext,
    user: int,
    list_a: Sequence[int],
    list_b: Sequence[int] | None,
    aspects: Mapping[str, str],
    k: int,
) -> tuple[dict, ...]:
    """System message (fixed for all users) + user message (this user's profile, history, lists)."""
    fixed = {
        "domain": context.domain,
        "item_noun": context.item_noun,
        "aspect_block": _aspect_block(aspects),
        "json_shape": _json_shape(aspects),
    }
    system = Template(template.system).substitute(fixed)
    per_user = {
        **fixed,
        "profile": context.profile(user),
        "history": context.numbered(context.history(user)),
        "k": k,
        "list_a": context.numbered(list(list_a)[:k]),
        "list_b": context.numbered(list(list_b)[:k]) if list_b is not None else "",
    }
    content = Template(template.user).substitute(per_user)
    return ({"role": "system", "content": system}, {"role": "user", "content": content})


# ---------------------------------------------------------------------------------------------
# strict parsing
# ---------------------------------------------------------------------------------------------
_FENCE_RE = re.compile(r"```[a-zA-Z0-9_+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_VERDICT_VALUE_RE = re.compile(r"^\s*(a\s+wins|b\s+wins|tie)\s*[.!]?\s*$", re.IGNORECASE)
_VERDICT_WORDS_RE = re.compile(r"\b(?:[ab]\s+wins?|ties?|tied)\b", re.IGNORECASE)


def _norm_key(key: Any) -> str:
    """Key normalisation used by the parser (never raises): lower_snake_case, or the stripped text."""
    text = str(key)
    return re.sub(r"[^0-9a-z]+", "_", text.strip().lower()).strip("_") or text.strip()


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for key, value in pairs:
        norm = _norm_key(key)
        if norm in seen:
            raise ParseError(f"key {key!r} appears more than once")
        seen.add(norm)
        out[key] = value
    return out


def _single_json_object(text: str | None) -> dict:
    """Exactly one JSON object (optionally inside one code fence); duplicate keys are an error."""
    if text is None or not str(text).strip():
        raise ParseError("empty answer")
    body = str(text)
    fences = _FENCE_RE.findall(body)
    if len(fences) > 1:
        raise ParseError("more than one code block")
    if fences:
        outside_fence = _FENCE_RE.sub(" ", body)
        if "{" in outside_fence:
            raise ParseError("more than one JSON object")
        if _VERDICT_WORDS_RE.search(outside_fence):
            raise ParseError("verdict words outside the JSON object")
        body = fences[0]
    start = body.find("{")
    if start < 0:
        raise ParseError("no JSON object in the answer")
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
    try:
        obj, end = decoder.raw_decode(body, start)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid or truncated JSON: {exc.msg} at char {exc.pos}") from None
    if not isinstance(obj, dict):
        raise ParseError("answer is not a JSON object")
    outside = body[:start] + " " + body[end:]
    if "{" in outside:
        raise ParseError("more than one JSON object")
    if re.search(r"[\[\]}]", outside):
        raise ParseError("JSON text outside the object (the answer must be one JSON object)")
    if _VERDICT_WORDS_RE.search(outside):
        raise ParseError("verdict words outside the JSON object")
    return obj


def canonical_verdict(value: Any) -> str:
    """``"a wins"``/``"A Wins."``/``"tie"`` -> canonical; anything else (``"parties"``) -> ParseError."""
    if not isinstance(value, str):
        raise ParseError(f"verdict {value!r} is not a string")
    m = _VERDICT_VALUE_RE.match(value)
    if not m:
        raise ParseError(f"verdict {value!r} is not exactly one of {list(VERDICTS)}")
    word = re.sub(r"\s+", " ", m.group(1).lower())
    return {"a wins": "A wins", "b wins": "B wins", "tie": "Tie"}[word]


def parse_pairwise(text: str | None, aspect_keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Strictly parse a pair-wise answer.

    Returns ``{"verdicts": {key: "A wins"|"B wins"|"Tie", ..., "overall": ...},
    "analysis": {key: str | None}}``. Raises :class:`ParseError` on anything ambiguous.
    """
    obj = _single_json_object(text)
    expected = [*aspect_keys, OVERALL]
    by_key: dict[str, Any] = {}
    for key, value in obj.items():
        by_key[_norm_key(key)] = value
    unknown = sorted(set(by_key) - set(expected))
    if unknown:
        raise ParseError(f"unexpected keys {unknown}")
    missing = [k for k in expected if k not in by_key]
    if missing:
        raise ParseError(f"missing verdicts for {missing}")
    verdicts: dict[str, str] = {}
    analysis: dict[str, str | None] = {}
    for key in expected:
        value = by_key[key]
        note: str | None = None
        if isinstance(value, dict):
            inner = {_norm_key(k): v for k, v in value.items()}
            extra = sorted(set(inner) - {"verdict", "analysis"})
            if extra:
                raise ParseError(f"{key}: unexpected fields {extra}")
            if "verdict" not in inner:
                raise ParseError(f"{key}: no verdict")
            note = inner.get("analysis")
            if note is not None and not isinstance(note, str):
                raise ParseError(f"{key}: analysis is not a string")
            value = inner["verdict"]
        try:
            verdicts[key] = canonical_verdict(value)
        except ParseError as exc:
            raise ParseError(f"{key}: {exc}") from None
        analysis[key] = note
    return {"verdicts": verdicts, "analysis": analysis}


def make_pairwise_parser(aspect_keys: Sequence[str]) -> Callable[[str], dict]:
    keys = tuple(aspect_keys)

    def parse(text: str) -> dict:
        return parse_pairwise(text, keys)

    return parse


def parse_absolute(text: str | None) -> dict[str, Any]:
    """Strictly parse ``{"analysis": ..., "score": x}`` with ``x`` a number in [0, 1]."""
    obj = _single_json_object(text)
    by_key = {_norm_key(k): v for k, v in obj.items()}
    extra = sorted(set(by_key) - {"analysis", "score"})
    if extra:
        raise ParseError(f"unexpected keys {extra}")
    if "score" not in by_key:
        raise ParseError("no score")
    score = by_key["score"]
    if isinstance(score, bool):
        raise ParseError(f"score {score!r} is not a number")
    if isinstance(score, str):
        try:
            score = float(score.strip())
        except ValueError:
            raise ParseError(f"score {score!r} is not a number") from None
    if not isinstance(score, int | float) or not np.isfinite(score):
        raise ParseError(f"score {score!r} is not a number")
    if not 0.0 <= float(score) <= 1.0:
        raise ParseError(f"score {score} is outside [0, 1]")
    note = by_key.get("analysis")
    return {"score": float(score), "analysis": note if isinstance(note, str) else None}


# ---------------------------------------------------------------------------------------------
# mapping verdicts to recommenders, adjudication
# ---------------------------------------------------------------------------------------------
def outcome_for(verdict: str | None, position: str) -> str | None:
    """Outcome for the recommender shown at ``position`` ("A" or "B"): win / tie / lose (None stays None)."""
    if verdict is None or (isinstance(verdict, float) and np.isnan(verdict)):
        return None
    if position not in ("A", "B"):
        raise ValueError("position must be 'A' or 'B'")
    verdict = canonical_verdict(verdict)
    if verdict == "Tie":
        return "tie"
    return "win" if verdict[0] == position else "lose"


def adjudicate(first: str | None, second: str | None) -> str | None:
    """Both orders agree -> that outcome; they disagree -> ``tie``; either missing -> None (not judged)."""
    if first is None or second is None or pd.isna(first) or pd.isna(second):
        return None
    for o in (first, second):
        if o not in OUTCOMES:
            raise ValueError(f"unknown outcome {o!r}")
    return first if first == second else "tie"


# ---------------------------------------------------------------------------------------------
# statistics: Win/Tie/Lose, Q, bootstrap CIs, ranks
# ---------------------------------------------------------------------------------------------
def q_value(n_win: float, n_tie: float, n_lose: float) -> float:
    """Q = (N_win + N_tie) / (N_lose + N_tie); inf when the denominator is 0 and the numerator is not."""
    num, den = n_win + n_tie, n_lose + n_tie
    if den == 0:
        return float("inf") if num > 0 else float("nan")
    return float(num / den)


def _share_for_q(codes: np.ndarray) -> float:
    """(W+T)/(W+L+2T): Q = s / (1 - s), a monotone map, so percentile CIs carry over to Q."""
    w = float(np.sum(codes == 1))
    t = float(np.sum(codes == 0))
    lo = float(np.sum(codes == -1))
    den = w + lo + 2 * t
    return (w + t) / den if den else float("nan")


def _q_from_share(s: float) -> float:
    if np.isnan(s):
        return float("nan")
    return float("inf") if s >= 1.0 else float(s / (1.0 - s))


def wtl_summary(outcomes: Sequence[str | None], n_boot: int = 2000, seed: int = 0, ci: float = 0.95) -> dict[str, Any]:
    """Win/Tie/Lose %, Q and bootstrap CIs for one series of outcomes (None = unparsed, counted)."""
    vals = [o for o in outcomes if o is not None and not (isinstance(o, float) and np.isnan(o))]
    n_missing = len(list(outcomes)) - len(vals)
    row: dict[str, Any] = {"n": len(vals), "n_unjudged": n_missing}
    if not vals:
        return {**row, "win": np.nan, "tie": np.nan, "lose": np.nan, "Q": np.nan}
    codes = np.array([{"win": 1, "tie": 0, "lose": -1}[o] for o in vals])
    n_w, n_t, n_l = (int(np.sum(codes == c)) for c in (1, 0, -1))
    row.update(win=100.0 * n_w / len(vals), tie=100.0 * n_t / len(vals), lose=100.0 * n_l / len(vals))
    row["Q"] = q_value(n_w, n_t, n_l)
    _, w_lo, w_hi = bootstrap_ci((codes == 1).astype(float), n_boot=n_boot, ci=ci, seed=seed)
    _, s_lo, s_hi = bootstrap_ci(codes, statistic=_share_for_q, n_boot=n_boot, ci=ci, seed=seed)
    row.update(win_lo=100.0 * w_lo, win_hi=100.0 * w_hi, Q_lo=_q_from_share(s_lo), Q_hi=_q_from_share(s_hi))
    return row


def arena_table(
    outcomes: pd.DataFrame,
    column: str = OVERALL,
    by: Sequence[str] = ("x", "y"),
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per comparison (``by``): n, Win/Tie/Lose %, Q, CIs and the rank of Q (1 = best)."""
    rows = []
    for keys, grp in outcomes.groupby(list(by), sort=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        vals = [None if pd.isna(v) else v for v in grp[column]]
        rows.append({**dict(zip(by, keys, strict=True)), **wtl_summary(vals, n_boot=n_boot, seed=seed)})
    table = pd.DataFrame(rows)
    if len(table):
        table["rank"] = table["Q"].rank(ascending=False, method="min")
    return table


# ---------------------------------------------------------------------------------------------
# the judges
# ---------------------------------------------------------------------------------------------
def _request_cls() -> Any:
    from recjudge_utils.client import JudgeRequest  # imported lazily: tests may use a fake client

    return JudgeRequest


class PairwiseJudge:
    """Pair-wise RecSys Arena judge over a client with ``judge_many(requests, parse=..., desc=...)``."""

    def __init__(
        self,
        client: Any,
        context: ArenaContext,
        aspects: Sequence[str] | Mapping[str, str] | None = None,
        k: int = 5,
        max_tokens: int = 512,
        template: str = "pairwise",
    ) -> None:
        if k <= 0:
            raise ValueError("k must be positive")
        self.client = client
        self.context = context
        self.aspects = resolve_aspects(aspects)
        self.aspect_keys = [aspect_key(a) for a in self.aspects]
        self.k = k
        self.max_tokens = max_tokens
        self.template = load_prompt(template)
        self.parse = make_pairwise_parser(self.aspect_keys)

    def messages(self, user: int, list_a: Sequence[int], list_b: Sequence[int]) -> tuple[dict, ...]:
        return render_messages(self.template, self.context, user, list_a, list_b, self.aspects, self.k)

    def request(self, user: int, list_a: Sequence[int], list_b: Sequence[int], metadata: dict | None = None) -> Any:
        return _request_cls()(
            messages=self.messages(user, list_a, list_b),
            template_id=self.template.id,
            template_version=self.template.version,
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=0,
            json_schema=pairwise_json_schema(self.aspects),
            metadata=metadata,
        )

    def judge(
        self,
        comparisons: pd.DataFrame,
        recs: Mapping[str, Mapping[int, Sequence[int]]],
        both_orders: bool = True,
    ) -> pd.DataFrame:
        """Judge every row (user, x, y) of ``comparisons``; one output row per (comparison, order).

        ``recs[name][user]`` is that recommender's ranked list for the user (the first ``k`` are shown).
        Columns: user, x, y, order, x_position, status, reason, raw_text, ``verdict_<key>`` (in A/B
        terms, as the judge answered) and ``<key>`` (the outcome for x: win/tie/lose, None if unparsed).
        """
        plan: list[tuple[int, str, str, str]] = []
        for row in comparisons[["user", "x", "y"]].itertuples(index=False):
            plan.append((int(row.user), str(row.x), str(row.y), "x_first"))
            if both_orders:
                plan.append((int(row.user), str(row.x), str(row.y), "y_first"))
        requests = []
        for user, x, y, order in plan:
            a, b = (x, y) if order == "x_first" else (y, x)
            meta = {"user": user, "A": a, "B": b, "x": x, "y": y, "order": order}
            requests.append(self.request(user, recs[a][user], recs[b][user], metadata=meta))
        results = self.client.judge_many(requests, parse=self.parse, desc=self.template.id) if requests else []
        rows = []
        for (user, x, y, order), res in zip(plan, results, strict=True):
            position = "A" if order == "x_first" else "B"
            row: dict[str, Any] = {
                "user": user,
                "x": x,
                "y": y,
                "order": order,
                "x_position": position,
                "status": res.status,
                "reason": res.reason,
                "raw_text": res.raw_text,
            }
            verdicts = res.value["verdicts"] if res.status == "parsed" else {}
            for key in [*self.aspect_keys, OVERALL]:
                v = verdicts.get(key)
                row[f"verdict_{key}"] = v
                row[key] = outcome_for(v, position)
            rows.append(row)
        return pd.DataFrame(rows)


class AbsoluteJudge:
    """Scores one list for one user in [0, 1] (the absolute evaluation of Section 4.3)."""

    def __init__(
        self,
        client: Any,
        context: ArenaContext,
        aspects: Sequence[str] | Mapping[str, str] | None = None,
        k: int = 5,
        max_tokens: int = 128,
    ) -> None:
        self.client = client
        self.context = context
        self.aspects = resolve_aspects(aspects)
        self.k = k
        self.max_tokens = max_tokens
        self.template = load_prompt("absolute")

    def request(self, user: int, items: Sequence[int], metadata: dict | None = None) -> Any:
        return _request_cls()(
            messages=render_messages(self.template, self.context, user, items, None, self.aspects, self.k),
            template_id=self.template.id,
            template_version=self.template.version,
            max_tokens=self.max_tokens,
            temperature=0.0,
            seed=0,
            json_schema=ABSOLUTE_SCHEMA,
            metadata=metadata,
        )

    def score(self, users: Sequence[int], recs: Mapping[str, Mapping[int, Sequence[int]]]) -> pd.DataFrame:
        """DataFrame(user, model, score (NaN if unparsed), status, reason)."""
        plan = [(int(u), str(m)) for m in recs for u in users]
        requests = [self.request(u, recs[m][u], metadata={"user": u, "model": m}) for u, m in plan]
        results = self.client.judge_many(requests, parse=parse_absolute, desc=self.template.id) if requests else []
        rows = []
        for (u, m), res in zip(plan, results, strict=True):
            ok = res.status == "parsed"
            rows.append(
                {
                    "user": u,
                    "model": m,
                    "score": res.value["score"] if ok else np.nan,
                    "status": res.status,
                    "reason": res.reason,
                }
            )
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# tables over judged rows
# ---------------------------------------------------------------------------------------------
def adjudicated_outcomes(raw: pd.DataFrame, keys: Sequence[str] = (OVERALL,)) -> pd.DataFrame:
    """One row per (user, x, y): ``<key>_x_first``, ``<key>_y_first`` and the adjudicated ``<key>``."""
    rows = []
    for (user, x, y), grp in raw.groupby(["user", "x", "y"], sort=False):
        by_order = {o: g.iloc[0] for o, g in grp.groupby("order")}
        row: dict[str, Any] = {"user": user, "x": x, "y": y}
        for key in keys:
            first = by_order["x_first"][key] if "x_first" in by_order else None
            second = by_order["y_first"][key] if "y_first" in by_order else None
            first = None if first is None or pd.isna(first) else first
            second = None if second is None or pd.isna(second) else second
            row[f"{key}_x_first"], row[f"{key}_y_first"] = first, second
            row[key] = adjudicate(first, second)
        rows.append(row)
    return pd.DataFrame(rows)


def position_consistency(raw: pd.DataFrame, key: str = OVERALL) -> pd.DataFrame:
    """Per comparison (x, y) and overall: how often the two orders agree, and how often the judge says 'A wins'.

    ``consistency`` is computed over comparisons whose two orders were both parsed;
    ``a_wins_share`` is the share of all parsed answers that say ``A wins`` whatever A is.
    """
    adj = adjudicated_outcomes(raw, [key])
    both = adj.dropna(subset=[f"{key}_x_first", f"{key}_y_first"])
    rows = []
    groups = [(("all", "all"), both, raw)]
    for (x, y), grp in both.groupby(["x", "y"], sort=False):
        groups.append(((x, y), grp, raw[(raw["x"] == x) & (raw["y"] == y)]))
    for (x, y), grp, raw_grp in groups:
        parsed = raw_grp[raw_grp["status"] == "parsed"]
        agree = (grp[f"{key}_x_first"] == grp[f"{key}_y_first"]).to_numpy(dtype=float)
        row = {
            "x": x,
            "y": y,
            "n_both_parsed": len(grp),
            "consistency": float(agree.mean()) if len(agree) else np.nan,
            "a_wins_share": float((parsed[f"verdict_{key}"] == "A wins").mean()) if len(parsed) else np.nan,
            "unparsed_rate": float((raw_grp["status"] != "parsed").mean()) if len(raw_grp) else np.nan,
        }
        if len(agree) > 1:
            _, lo, hi = bootstrap_ci(agree, seed=0)
            row.update(consistency_lo=lo, consistency_hi=hi)
        rows.append(row)
    return pd.DataFrame(rows)


def paper_table(n: int) -> pd.DataFrame:
    """The paper's Table ``n`` (1-4), transcribed in ``recjudge_utils/paper_tables/arena_table<n>.csv``."""
    if n not in (1, 2, 3, 4):
        raise ValueError("the RecSys Arena paper has Tables 1-4")
    path = resources.files("recjudge_utils").joinpath("paper_tables", f"arena_table{n}.csv")
    with path.open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, comment="#")
