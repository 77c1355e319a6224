"""Tolerant parsing of judge answers.

Small instruct models (and big ones) wrap JSON in code fences, add prose before or after it,
use single quotes or Python literals (``True``, ``None``), or leave trailing commas. The parsers
here accept all of that and raise :class:`ParseError` (with the reason) when no JSON object can be
recovered, so that the caller can count the answer as *unparsed* instead of inventing a score.

Every step runs in time linear in the answer's length, whatever the answer holds (a truncated or
adversarial answer of unbalanced braces, quotes or fences must not stall a run): fences are found
with ``str.find``, balanced objects in one left-to-right pass, JSON literals in one regex pass, and
the candidates handed to the decoders (``json.loads``, ``ast.literal_eval``, both linear; nesting beyond their
limits is caught) are the fenced blocks, the answer, and disjoint balanced objects of both: at most four times
the answer's length in total.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, TypeAlias

__all__ = ["FenceSpan", "ParseError", "extract_label", "fence_spans", "parse_json_object"]

_FENCE = "```"
# the info string after the opening fence (```json), then blanks and one newline; no character of it is a
# backtick, so the greedy match is the only way the fenced-block regex ```info\n(.*?)``` can match
_FENCE_INFO_RE = re.compile(r"[a-zA-Z0-9_+-]*[ \t]*\n?")
# linear: a failed match backtracks only over the blanks that follow one comma
_TRAILING_COMMA_RE = re.compile(r",\s*([}\]])")
_JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}
# a quoted string (closed, or running to the end of the text: a truncated answer), or a bare JSON literal.
# The string branches are "unrolled loops" (no two ways to match the same text), so the scan never backtracks.
_STRING_OR_LITERAL_RE = re.compile(
    r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)' r"|'[^'\\]*(?:\\.[^'\\]*)*(?:'|\\?\Z)" r"|true|false|null",
    re.DOTALL,
)

# Quote states of the brace scan: outside quotes, inside "..." (just after a backslash: escaped), inside '...'.
_OUT, _DQ, _DQ_ESC, _SQ, _SQ_ESC = range(5)
# the state after one character, indexed by the state before it
_AFTER_OTHER = (_OUT, _DQ, _DQ, _SQ, _SQ)  # any character but a quote or a backslash (braces included)
_AFTER_DQUOTE = (_DQ, _OUT, _DQ, _SQ, _SQ)
_AFTER_SQUOTE = (_SQ, _DQ, _DQ, _OUT, _SQ)
_AFTER_WORD_APOSTROPHE = (_OUT, _DQ, _DQ, _OUT, _SQ)  # don't, it's: opens no quote (but closes one)
_AFTER_BACKSLASH = (_OUT, _DQ_ESC, _DQ, _SQ_ESC, _SQ)
_AFTER = {"{": _AFTER_OTHER, "}": _AFTER_OTHER, '"': _AFTER_DQUOTE, "'": _AFTER_SQUOTE, "\\": _AFTER_BACKSLASH}
_SCAN_CHARS = "{}\"'\\"
_SCAN_RE = re.compile(r"[{}\"'\\]")

# The scans that share a quote state at some position: one stack entry per open-brace level, holding the
# start of every scan whose innermost open brace is at that level (an int, or a pair of entries once merged).
_Entry: TypeAlias = "int | tuple[_Entry, _Entry]"


class ParseError(ValueError):
    """Raised by a parser to mark an answer as unparseable; the message is the reason."""


class FenceSpan(NamedTuple):
    """A closed Markdown code fence: ``text[start:end]`` is the whole block, ``text[body_start:body_end]`` its body."""

    start: int
    end: int
    body_start: int
    body_end: int


def fence_spans(text: str) -> list[FenceSpan]:
    """Every closed Markdown code fence of ``text``, in one pass.

    The blocks are exactly the matches of ``re.finditer(r"```[a-zA-Z0-9_+-]*[ \\t]*\\n?(.*?)```", text, re.S)``,
    but that regex is quadratic on an opening fence followed by a long word and no closing fence (the info string
    and the lazy body can split the word in every way, and each split scans to the end). Here: the info string
    holds no backtick, so the first closing fence after it ends the block; and when an opening fence has no
    closing fence after it, no later one has either, so the search stops.
    """
    spans: list[FenceSpan] = []
    pos = 0
    while (start := text.find(_FENCE, pos)) != -1:
        info = _FENCE_INFO_RE.match(text, start + len(_FENCE))
        body_start = info.end() if info else start + len(_FENCE)
        close = text.find(_FENCE, body_start)
        if close == -1:
            break
        pos = close + len(_FENCE)
        spans.append(FenceSpan(start, pos, body_start, close))
    return spans


def _merge_stacks(a: list[_Entry], b: list[_Entry]) -> list[_Entry]:
    """Merge the stacks of two groups of scans that reach the same quote state at the same position.

    From there on both see the same characters in the same state, so the k-th open level from the top of either
    closes at the same ``}``: align the stacks at the top. This costs the shorter length, by which the number of
    stack entries drops, so all merges together cost at most the number of ``{``.
    """
    if len(a) < len(b):
        a, b = b, a
    offset = len(a) - len(b)
    for k, entry in enumerate(b):
        a[offset + k] = (a[offset + k], entry)
    return a


def _close_entry(entry: _Entry, end: int, ends: dict[int, int]) -> None:
    """Record ``end`` as the closing brace of every scan in ``entry``."""
    todo = [entry]
    while todo:
        item = todo.pop()
        if isinstance(item, int):
            ends[item] = end
        else:
            todo.extend(item)


def _word_apostrophe(text: str, i: int) -> bool:
    """An apostrophe inside a word (don't, it's) opens no quote."""
    return 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()


def _step_groups(groups: dict[int, list[_Entry]], text: str, i: int, ends: dict[int, int]) -> dict[int, list[_Entry]]:
    """Advance every group of scans over the character ``text[i]`` (one of ``_SCAN_CHARS``)."""
    ch = text[i]
    if ch == "{" and _OUT not in groups:
        groups[_OUT] = []  # the scan that starts here
    table = (_AFTER_WORD_APOSTROPHE if _word_apostrophe(text, i) else _AFTER_SQUOTE) if ch == "'" else _AFTER[ch]
    moved: dict[int, list[_Entry]] = {}
    for state, stack in groups.items():
        if state == _OUT:
            if ch == "{":
                stack.append(i)  # one level deeper for the scans outside quotes, and a new scan from here
            elif ch == "}":
                _close_entry(stack.pop(), i, ends)
                if not stack:
                    continue  # every scan of the group is done
        nxt = table[state]
        other = moved.get(nxt)
        moved[nxt] = stack if other is None else _merge_stacks(other, stack)
    if ch == "\\" and i + 1 < len(text) and text[i + 1] not in _SCAN_CHARS:
        # the escaped character is not visited by the scan loop: leave the escaped states here
        settled: dict[int, list[_Entry]] = {}
        for state, stack in moved.items():
            nxt = _AFTER_OTHER[state]
            other = settled.get(nxt)
            settled[nxt] = stack if other is None else _merge_stacks(other, stack)
        moved = settled
    return moved


def _brace_ends(text: str) -> dict[int, int]:
    """Map the index of every ``{`` (in order) to the index of the ``}`` that balances it, or to -1.

    "Balances" as a scan started at that ``{`` sees it: skipping quoted strings ("..." and '...', backslash
    escapes, an apostrophe between two letters or digits opens none), with quotes before the ``{`` ignored.
    Scanning again from every ``{`` is quadratic (``"{" * n``). Instead all those scans run together in one
    left-to-right pass: the scans that are in the same quote state at a position behave alike from there on, so
    they form one group (at most five groups, one per state) with one stack of open levels, as in ordinary
    bracket matching.
    """
    ends: dict[int, int] = {}
    first = text.find("{")
    if first == -1:
        return ends
    n = len(text)
    # Most of the time all running scans form one group: it is kept in `state` and `stack` (the general step
    # costs a few dictionaries per character); `state` is -1 when there are none or several (in `groups`).
    state = -1
    stack: list[_Entry] = []
    groups: dict[int, list[_Entry]] = {}
    for m in _SCAN_RE.finditer(text, first):
        i = m.start()
        ch = text[i]
        if ch == "{":
            ends[i] = -1
        if state == _OUT:
            if ch == "{":
                stack.append(i)
            elif ch == "}":
                _close_entry(stack.pop(), i, ends)
                if not stack:
                    state = -1
            elif ch == '"':
                state = _DQ
            elif ch == "'" and not _word_apostrophe(text, i):
                state = _SQ
            continue
        if state != -1:
            if ch != "{":
                state = _AFTER[ch][state]  # inside quotes: "{" is the only character that makes a second group
                if ch == "\\" and i + 1 < n and text[i + 1] not in _SCAN_CHARS:
                    state = _AFTER_OTHER[state]
                continue
            groups = {state: stack}
        elif not groups:
            if ch == "{":
                state, stack = _OUT, [i]
            continue
        groups = _step_groups(groups, text, i, ends)
        state = -1
        if len(groups) == 1:
            ((state, stack),) = groups.items()
            groups = {}
    return ends


def _balanced_objects(text: str) -> Iterator[str]:
    """Yield the balanced ``{...}`` substrings, left to right, respecting quoted strings.

    From the first ``{``: when it is balanced, yield it and go on after its ``}``; otherwise (e.g. a truncated
    answer) go on with the next ``{``, which may lie inside it. The substrings are disjoint, so the decoders that
    try them handle at most the length of ``text`` in total.
    """
    after = -1
    for start, end in _brace_ends(text).items():
        if start > after and end != -1:
            yield text[start : end + 1]
            after = end


def _json_to_python_literals(s: str) -> str:
    """Replace bare JSON literals (true/false/null) outside strings by Python ones.

    One regex pass over strings and literals; a literal glued to a letter or digit (``trueish``) is kept.
    """

    def replace(m: re.Match[str]) -> str:
        token = m.group()
        literal = _JSON_LITERALS.get(token)
        if literal is None:
            return token  # a quoted string
        start, end = m.span()
        if (start > 0 and s[start - 1].isalnum()) or s[end : end + 1].isalnum():
            return token
        return literal

    return _STRING_OR_LITERAL_RE.sub(replace, s)


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
    for fence in fence_spans(text):
        block = text[fence.body_start : fence.body_end]
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
