"""Answer format ``json_levels``: a JSON object of five-level integer scores (the serendipity judge).

``{"score": 4}`` for Base and LS, ``{"relevance": 4, "unexpectedness": 2, "score": 3}`` for CoT, one field per
LtM step. Parsing is strict about the values (``4``, ``4.0`` and ``"4"`` pass; ``3.5``, ``"4/5"``, ``0``, ``6``
fail) and tolerant about the JSON around them (code fences, prose: :func:`~recjudge_utils.answer_formats.parsing.
parse_json_object`). Anything else raises :class:`ParseError`: the answer is counted as unparsed, never imputed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from recjudge_utils.answer_formats.parsing import ParseError, parse_json_object

__all__ = ["LEVELS", "format_levels", "levels_parser", "levels_schema", "parse_levels"]

LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)


def _level(obj: Mapping[str, object], key: str) -> int:
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


def parse_levels(text: str | None, fields: Sequence[str]) -> dict[str, int]:
    """Parse a judge answer: a JSON object holding every field in ``fields`` as an integer 1..5.

    Extra keys are ignored. Raises ParseError with the reason otherwise.
    """
    obj = parse_json_object(text)
    return {key: _level(obj, key) for key in fields}


def levels_parser(fields: Sequence[str] = ("score",)) -> Callable[[str], dict[str, int]]:
    """A strict parser for the given fields (the final score alone by default)."""
    wanted = tuple(fields)

    def parse(text: str) -> dict[str, int]:
        return parse_levels(text, wanted)

    parse.__name__ = "parse_" + "_".join(wanted)
    return parse


def levels_schema(fields: Sequence[str]) -> dict[str, object]:
    """JSON schema of the answer (for constrained decoding where the backend supports it)."""
    return {
        "type": "object",
        "properties": {f: {"type": "integer", "enum": list(LEVELS)} for f in fields},
        "required": list(fields),
        "additionalProperties": False,
    }


def format_levels(values: Mapping[str, int]) -> str:
    """The answer text for given levels, exactly as the prompts ask for it (few-shot answers, simulated judge)."""
    return json.dumps({k: int(v) for k, v in values.items()})
