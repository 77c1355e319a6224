"""Answer formats of RecSys Arena, parsed strictly: ``arena_pairwise`` and ``json_list_score``.

``arena_pairwise``: one JSON object, exactly one verdict per aspect (``{"analysis": ..., "verdict": ...}``) plus
``overall``, each exactly ``A wins`` / ``B wins`` / ``Tie``. Duplicate keys, a second JSON object, verdict words
outside the object, missing or unknown aspects and anything else (``"parties"``, ``"A wins or tie"``) raise
:class:`ParseError`; nothing is counted by substring (the authors' public code counts verdicts by substring).

``json_list_score``: ``{"analysis": ..., "score": x}`` with ``x`` a number in [0, 1] (Section 4.3).

Every check is a single pass over the answer (code fences found with ``str.find``, regular expressions that cannot
backtrack more than a bounded amount, one JSON decode), so parsing time is linear in the answer's length whatever
the answer holds; JSON nested too deeply for the decoder, or a number too long to convert, is a ParseError.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from recjudge_utils.answer_formats.parsing import ParseError, fence_spans

__all__ = [
    "ABSOLUTE_SCHEMA",
    "OVERALL",
    "POSITION_OF_VERDICT",
    "VERDICTS",
    "aspect_key",
    "canonical_verdict",
    "format_absolute",
    "make_pairwise_parser",
    "pairwise_json_schema",
    "parse_absolute",
    "parse_pairwise",
    "render_absolute",
    "render_pairwise",
]

VERDICTS = ("A wins", "B wins", "Tie")
OVERALL = "overall"
#: the position of the list a verdict names: A is the list shown first
POSITION_OF_VERDICT = {"A wins": "first", "B wins": "second", "Tie": "tie"}
_VERDICT_OF_POSITION = {position: verdict for verdict, position in POSITION_OF_VERDICT.items()}


def aspect_key(name: str) -> str:
    """JSON key of an aspect: lower_snake_case of its name (``Impact on users`` -> ``impact_on_users``)."""
    key = re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")
    if not key:
        raise ValueError(f"aspect name {name!r} gives an empty key")
    return key


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


# the verdict at the start of a value; what may follow it (blanks, one full stop or "!") is checked with str.strip,
# since ``\s*[.!]?\s*$`` backtracks quadratically over a long run of blanks followed by anything else
_VERDICT_VALUE_RE = re.compile(r"\s*(a\s+wins|b\s+wins|tie)", re.IGNORECASE)


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
    fences = fence_spans(body)
    if len(fences) > 1:
        raise ParseError("more than one code block")
    if fences:
        fence = fences[0]
        outside_fence = body[: fence.start] + " " + body[fence.end :]
        if "{" in outside_fence:
            raise ParseError("more than one JSON object")
        if _VERDICT_WORDS_RE.search(outside_fence):
            raise ParseError("verdict words outside the JSON object")
        body = body[fence.body_start : fence.body_end]
    start = body.find("{")
    if start < 0:
        raise ParseError("no JSON object in the answer")
    decoder = json.JSONDecoder(object_pairs_hook=_no_duplicate_keys)
    try:
        obj, end = decoder.raw_decode(body, start)
    except ParseError:
        raise  # a duplicate key, from _no_duplicate_keys
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid or truncated JSON: {exc.msg} at char {exc.pos}") from None
    except RecursionError:
        raise ParseError("invalid JSON: nested too deeply") from None
    except ValueError as exc:  # an integer longer than int() converts (sys.get_int_max_str_digits)
        raise ParseError(f"invalid JSON: {exc}") from None
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
    if not m or value[m.end() :].strip() not in ("", ".", "!"):
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
    """The strict parser of a pair-wise answer with verdicts for ``aspect_keys`` (and ``overall``)."""
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
    if not isinstance(score, int | float) or (isinstance(score, float) and not math.isfinite(score)):
        raise ParseError(f"score {score!r} is not a number")
    if not 0 <= score <= 1:  # compared as is: float() of a long integer overflows
        raise ParseError(f"score {score} is outside [0, 1]")
    note = by_key.get("analysis")
    return {"score": float(score), "analysis": note if isinstance(note, str) else None}


def _format_pairwise(verdicts: Mapping[str, str], analysis: str = "Compared the two lists for this user.") -> str:
    """An answer in the ``arena_pairwise`` format (keys in the given order, ``overall`` last)."""
    obj: dict[str, object] = {}
    for key, verdict in verdicts.items():
        obj[key] = verdict if key == OVERALL else {"analysis": analysis, "verdict": verdict}
    return json.dumps(obj)


def format_absolute(score: float, analysis: str = "Judged the list for this user.") -> str:
    """An answer in the ``json_list_score`` format."""
    return json.dumps({"analysis": analysis, "score": round(float(score), 3)})


def render_pairwise(positions: Mapping[str, str]) -> str:
    """The ``arena_pairwise`` answer naming, per key, the position (first / second / tie) the judge prefers."""
    return _format_pairwise({key: _VERDICT_OF_POSITION[position] for key, position in positions.items()})


def render_absolute(values: Mapping[str, float]) -> str:
    """The ``json_list_score`` answer holding ``values["score"]``."""
    return format_absolute(values["score"])
