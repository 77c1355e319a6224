"""Answer formats of SAER, parsed strictly: ``saer_list_label`` and ``saer_pairwise``.

``saer_list_label``: ``REASONING: ...`` / ``CATEGORY: Good Match | Partial Match | Poor Match`` /
``FLAGGED ITEMS: 3, 7`` (or ``None``). ``saer_pairwise``: ``REASONING: ...`` / ``VERDICT: Set 1 | Set 2 | Tie``.
Case, markdown emphasis and a trailing full stop are tolerated; a field given twice with different values,
a missing field, an item number outside the list or a label outside the set raise :class:`ParseError`.
A model that goes on to invent another example after its answer (a second ``REASONING:``) is read up to there.

Parsing time is linear in the answer's length whatever the answer holds: no regular expression here can backtrack
more than a bounded amount per character, and each field value is normalised once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from recjudge_utils.answer_formats.parsing import ParseError

__all__ = [
    "CATEGORIES",
    "LABELS_WORST_FIRST",
    "POSITION_OF_SET",
    "PairwiseVerdict",
    "PointwiseVerdict",
    "format_list_label",
    "format_set_verdict",
    "list_label_grammar",
    "parse_pairwise",
    "parse_pointwise",
    "render_list_label",
    "render_set_verdict",
    "set_verdict_grammar",
]

#: SAER's list labels, best first (as the prompts list them).
CATEGORIES: tuple[str, ...] = ("Good Match", "Partial Match", "Poor Match")
#: the same labels from worst to best (the ordinal order of a label truth)
LABELS_WORST_FIRST: tuple[str, ...] = tuple(reversed(CATEGORIES))
#: the position of the set a verdict names: Set 1 is the set shown first
POSITION_OF_SET = {"Set 1": "first", "Set 2": "second", "Tie": "tie"}
_SET_OF_POSITION = {position: verdict for verdict, position in POSITION_OF_SET.items()}


_FIELD = re.compile(r"^[ \t>*_#-]*(REASONING|CATEGORY|FLAGGED ITEMS|VERDICT)[*_ \t]*:[*_]*[ \t]*(.*)$", re.I | re.M)
# one flagged item: "3", "#3", "item 3", "**[3]**"; the blanks after "item" are taken possessively (*+) because
# "item\s*" followed by "\s*" splits a long run of blanks in every way before failing (quadratic)
_MAX_ITEM_DIGITS = 4300  # CPython's default sys.get_int_max_str_digits()
_FLAGGED_ITEM = re.compile(r"^[*_\[]*(?:item\s*+)?#?\s*(\d+)\b", re.I)


def _fields(text: str) -> dict[str, str]:
    """Field name -> value of the FIRST answer block (a model that goes on to invent another
    example after its answer repeats REASONING:, which ends the first block). A field given twice
    inside the block with different values is ambiguous and raises ParseError."""
    if text is None or not text.strip():
        raise ParseError("empty answer")
    matches = list(_FIELD.finditer(text))
    if not matches:
        raise ParseError("no REASONING/CATEGORY/FLAGGED ITEMS/VERDICT field")
    out: dict[str, str] = {}
    normalised: dict[str, str] = {}  # _norm of out's values, computed once: a long first value repeated many times
    for k, m in enumerate(matches):
        name = m.group(1).upper()
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        value = (m.group(2) + text[m.end() : end]).strip()
        if name == "REASONING" and "REASONING" in out:
            break  # a second answer block begins: ignore it
        if name in out:
            if normalised[name] != _norm(value):
                raise ParseError(f"{name} given twice with different values")
        else:
            out[name] = value
            normalised[name] = _norm(value)
    return out


def _norm(value: str) -> str:
    value = re.sub(r"[*_`\"'\[\]<>]", "", value)
    value = value.strip().rstrip(".!").strip()
    return " ".join(value.lower().split())


@dataclass(frozen=True)
class PointwiseVerdict:
    """A parsed ``saer_list_label`` answer."""

    reasoning: str
    category: str
    flagged: tuple[int, ...]


def _parse_category(value: str) -> str:
    """Exactly one of CATEGORIES (case, markdown and a trailing full stop tolerated)."""
    first_line = value.strip().splitlines()[0] if value.strip() else ""
    norm = _norm(first_line)
    for cat in CATEGORIES:
        if norm == cat.lower():
            return cat
    found = [c for c in CATEGORIES if c.lower() in norm]
    if len(found) > 1:
        raise ParseError(f"ambiguous CATEGORY {first_line!r}")
    if len(found) == 1 and re.fullmatch(rf"{found[0].lower()}\s*(\(.*\))?", norm):
        return found[0]
    raise ParseError(f"CATEGORY {first_line!r} is not one of {list(CATEGORIES)}")


def _drop_parenthesised(line: str) -> str:
    """``re.sub(r"\\([^)]*\\)", "", line)`` in one pass.

    The regex is quadratic on many ``(`` without a ``)``: from each one it scans to the end of the line. The first
    ``(`` without a ``)`` after it ends the search: no later ``(`` has one either.
    """
    kept: list[str] = []
    pos = 0
    while (start := line.find("(", pos)) != -1 and (close := line.find(")", start)) != -1:
        kept.append(line[pos:start])
        pos = close + 1
    kept.append(line[pos:])
    return "".join(kept)


def _parse_flagged(value: str, n_items: int) -> tuple[int, ...]:
    """Item numbers 1..n_items ("3, 7", "#3 (title), #7", "None"); anything else raises ParseError."""
    first_line = value.strip().splitlines()[0] if value.strip() else ""
    norm = _norm(first_line)
    if norm in ("none", "n/a", "na", "no", "no items", "none flagged", "-", "[]", ""):
        if norm == "":
            raise ParseError("FLAGGED ITEMS is empty (expected item numbers or None)")
        return ()
    # drop parenthesised titles, then every comma/semicolon/'and' separated token must start with a number
    stripped = _drop_parenthesised(first_line)
    tokens = [t.strip() for t in re.split(r",|;|\band\b", stripped) if t.strip()]
    numbers = []
    for tok in tokens:
        m = _FLAGGED_ITEM.match(tok)
        if not m:
            raise ParseError(f"FLAGGED ITEMS entry {tok!r} is not an item number")
        digits = m.group(1)
        if len(digits) > _MAX_ITEM_DIGITS:
            # int() refuses so many digits (sys.get_int_max_str_digits(), 4300 by default): a ParseError, not a crash
            raise ParseError(f"FLAGGED ITEMS number of {len(digits)} digits outside 1..{n_items}")
        k = int(digits)
        if not 1 <= k <= n_items:
            raise ParseError(f"FLAGGED ITEMS number {k} outside 1..{n_items}")
        numbers.append(k)
    return tuple(sorted(set(numbers)))


def parse_pointwise(text: str, n_items: int = 10) -> PointwiseVerdict:
    """Strict parser for REASONING / CATEGORY / FLAGGED ITEMS (all three required)."""
    fields = _fields(text)
    for name in ("REASONING", "CATEGORY", "FLAGGED ITEMS"):
        if name not in fields:
            raise ParseError(f"missing {name}")
    reasoning = fields["REASONING"].strip()
    if not reasoning:
        raise ParseError("empty REASONING")
    return PointwiseVerdict(
        reasoning, _parse_category(fields["CATEGORY"]), _parse_flagged(fields["FLAGGED ITEMS"], n_items)
    )


@dataclass(frozen=True)
class PairwiseVerdict:
    """A parsed ``saer_pairwise`` answer."""

    reasoning: str
    verdict: str  # "Set 1" | "Set 2" | "Tie"


def _parse_verdict(value: str) -> str:
    """Exactly one of Set 1 / Set 2 / Tie (case, markdown, "is better" / "wins" and a remark in brackets tolerated)."""
    first_line = value.strip().splitlines()[0] if value.strip() else ""
    norm = _norm(first_line)
    table = {"set 1": "Set 1", "set 2": "Set 2", "tie": "Tie", "set1": "Set 1", "set2": "Set 2"}
    if norm in table:
        return table[norm]
    m = re.fullmatch(r"(set ?[12]|tie)( is better| wins)?( \(.*\))?", norm)
    if m:
        return table[m.group(1)]
    raise ParseError(f"VERDICT {first_line!r} is not one of Set 1 / Set 2 / Tie")


def parse_pairwise(text: str) -> PairwiseVerdict:
    """Strict parser for REASONING / VERDICT (both required; VERDICT exactly Set 1, Set 2 or Tie)."""
    fields = _fields(text)
    for name in ("REASONING", "VERDICT"):
        if name not in fields:
            raise ParseError(f"missing {name}")
    if not fields["REASONING"].strip():
        raise ParseError("empty REASONING")
    return PairwiseVerdict(fields["REASONING"].strip(), _parse_verdict(fields["VERDICT"]))


def format_list_label(
    category: str, flagged: tuple[int, ...] = (), reasoning: str = "Judged against the history."
) -> str:
    """An answer in the ``saer_list_label`` format."""
    flags = ", ".join(str(k) for k in flagged) if flagged else "None"
    return f"REASONING: {reasoning}\nCATEGORY: {category}\nFLAGGED ITEMS: {flags}"


def format_set_verdict(verdict: str, reasoning: str = "Compared both sets with the history.") -> str:
    """An answer in the ``saer_pairwise`` format (``verdict`` is ``Set 1``, ``Set 2`` or ``Tie``)."""
    return f"REASONING: {reasoning}\nVERDICT: {verdict}"


def render_list_label(values: Mapping[str, str]) -> str:
    """The ``saer_list_label`` answer holding ``values["category"]``."""
    return format_list_label(values["category"])


def render_set_verdict(values: Mapping[str, str]) -> str:
    """The ``saer_pairwise`` answer naming the position (first / second / tie) in ``values["verdict"]``."""
    return format_set_verdict(_SET_OF_POSITION[values["verdict"]])


def _reasoning_rule(chars: int) -> str:
    # printable ASCII only: a byte-level tokenizer then spends at least one character per token, so a cap in
    # characters is a cap in tokens
    return f"reasoning ::= [ -~] [ -~]{{0,{max(0, chars - 1)}}}"


def list_label_grammar(n_items: int = 10, reasoning_chars: int = 400) -> str:
    """A GBNF grammar (llama.cpp's constrained decoding) admitting exactly the answers :func:`parse_pointwise` reads:
    REASONING of at most ``reasoning_chars`` characters (so the fields after it fit the answer budget), a CATEGORY
    out of :data:`CATEGORIES`, FLAGGED ITEMS as ``None`` or at most ``n_items`` numbers 1..n_items (the list holds no
    more items to flag: unbounded, the embedded judge repeated "1, 2, 3, 4, 5, 1, 2, ..." until the budget ran out)."""
    items = " | ".join(f'"{k}"' for k in range(n_items, 0, -1))
    categories = " | ".join(f'"{c}"' for c in CATEGORIES)
    return "\n".join([
        'root ::= "REASONING: " reasoning "\\nCATEGORY: " category "\\nFLAGGED ITEMS: " flagged',
        _reasoning_rule(reasoning_chars),
        f"category ::= {categories}",
        f'flagged ::= "None" | item (", " item){{0,{n_items - 1}}}',
        f"item ::= {items}",
    ])  # fmt: skip


def set_verdict_grammar(reasoning_chars: int = 400) -> str:
    """A GBNF grammar admitting exactly the answers :func:`parse_pairwise` reads: REASONING of at most
    ``reasoning_chars`` characters, then a VERDICT."""
    verdicts = " | ".join(f'"{v}"' for v in POSITION_OF_SET)
    return "\n".join(['root ::= "REASONING: " reasoning "\\nVERDICT: " verdict', _reasoning_rule(reasoning_chars),
                      f"verdict ::= {verdicts}"])  # fmt: skip
