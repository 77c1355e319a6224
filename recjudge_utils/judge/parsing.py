"""Tolerant parsing of judge answers.

Small instruct models (and big ones) wrap JSON in code fences, add prose before or after it,
use single quotes or Python literals (``True``, ``None``), or leave trailing commas. The parsers
here accept all of that and raise :class:`ParseError` (with the reason) when no JSON object can be
recovered, so that the caller can count the answer as *unparsed* instead of inventing a score.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = ["ParseError", "extract_label", "json_field_parser", "parse_json_object"]

_FENCE_RE = re.compile(r"```(?:[a-zA-Z0-9_+-]*)?[ \t]*\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}


class ParseError(ValueError):
    """Raised by a parser to mark an answer as unparseable; the message is the reason."""


def _balanced_objects(text: str) -> Iterator[str]:
    """Yield every balanced ``{...}`` substring, outermost first, respecting quoted strings."""
    n = len(text)
    start = text.find("{")
    while start != -1:
        depth = 0
        quote: str | None = None
        escaped = False
        end = -1
        for i in range(start, n):
            ch = text[i]
            if quote:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == quote:
                    quote = None
                continue
            if ch in "\"'":
                # an apostrophe inside a word (don't, it's) is not a quote
                if ch == "'" and 0 < i < n - 1 and text[i - 1].isalnum() and text[i + 1].isalnum():
                    continue
                quote = ch
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end != -1:
            yield text[start : end + 1]
            start = text.find("{", end + 1)
        else:
            # unbalanced from here (e.g. truncated answer); try the next opening brace
            start = text.find("{", start + 1)


def _json_to_python_literals(s: str) -> str:
    """Replace bare JSON literals (true/false/null) outside strings by Python ones."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(s):
        ch = s[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < len(s):
                out.append(s[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "\"'":
            quote = ch
            out.append(ch)
            i += 1
            continue
        m = re.match(r"true|false|null", s[i:])
        if m and (i == 0 or not s[i - 1].isalnum()) and not s[i + m.end() : i + m.end() + 1].isalnum():
            out.append(_JSON_LITERALS[m.group(0)])
            i += m.end()
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _load_candidate(candidate: str) -> Any:
    candidate = candidate.strip()
    try:
        return json.loads(candidate)
    except (json.JSONDecodeError, RecursionError):
        pass
    no_trailing = _TRAILING_COMMA_RE.sub(r"\1", candidate)
    if no_trailing != candidate:
        try:
            return json.loads(no_trailing)
        except (json.JSONDecodeError, RecursionError):
            pass
    for variant in (no_trailing, _json_to_python_literals(no_trailing)):
        try:
            return ast.literal_eval(variant)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    raise ValueError("not a JSON/Python literal")


def parse_json_object(text: str | None) -> dict:
    """Recover one JSON object (dict) from a model answer.

    Accepts: plain JSON, JSON inside Markdown code fences, JSON followed or preceded by prose,
    single-quoted keys/strings, Python-literal dicts (``True``/``None``) and trailing commas.
    When several objects are present the first one that parses wins (fenced blocks first).

    Raises:
        ParseError: no JSON object could be recovered; the message says why.
    """
    if text is None or not str(text).strip():
        raise ParseError("empty answer")
    text = str(text)
    candidates: list[str] = []
    for block in _FENCE_RE.findall(text):
        candidates.append(block)
        candidates.extend(_balanced_objects(block))
    candidates.append(text)
    candidates.extend(_balanced_objects(text))
    seen: set[str] = set()
    found_non_dict = False
    for cand in candidates:
        cand = cand.strip()
        if not cand or cand in seen:
            continue
        seen.add(cand)
        try:
            value = _load_candidate(cand)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
        found_non_dict = True
    snippet = text.strip().replace("\n", " ")
    snippet = snippet[:120] + ("..." if len(snippet) > 120 else "")
    if found_non_dict:
        raise ParseError(f"answer holds JSON but no object: {snippet!r}")
    if "{" in text and "}" not in text[text.find("{") :]:
        raise ParseError(f"truncated JSON object (no closing brace): {snippet!r}")
    raise ParseError(f"no JSON object found in answer: {snippet!r}")


def extract_label(value: Any, options: Sequence[str]) -> str:
    """Normalise a label value (``4``, ``"4"``, ``4.0``, ``" 4 "``, ``"4/5"``) to one of ``options``.

    Raises:
        ParseError: the value is not one of the options.
    """
    opts = [str(o) for o in options]
    if isinstance(value, bool) or value is None:
        raise ParseError(f"label {value!r} is not one of {opts}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    s = str(value).strip().strip("\"'").strip()
    if s in opts:
        return s
    lowered = {o.lower(): o for o in opts}
    if s.lower() in lowered:
        return lowered[s.lower()]
    m = re.match(r"^([+-]?\d+(?:\.0+)?)\s*(?:/\s*\d+)?$", s)
    if m:
        num = m.group(1).split(".")[0].lstrip("+")
        if num in opts:
            return num
    raise ParseError(f"label {value!r} is not one of {opts}")


def json_field_parser(field: str, options: Sequence[str] | None = None) -> Callable[[str], dict]:
    """A parser that requires ``field`` in the JSON object (and, with ``options``, a valid label).

    The returned dict is the whole object with ``field`` normalised to the matching option string.
    """

    def parse(text: str) -> dict:
        obj = parse_json_object(text)
        if field not in obj:
            keys = {k.lower(): k for k in obj if isinstance(k, str)}
            if field.lower() not in keys:
                raise ParseError(f"JSON object has no {field!r} field (keys: {sorted(map(str, obj))})")
            obj[field] = obj.pop(keys[field.lower()])
        if options is not None:
            obj[field] = extract_label(obj[field], options)
        return obj

    return parse
