"""Label probabilities from chat-completion logprobs (G-Eval style expected score).

Given ``choices[0].logprobs.content`` (one entry per generated token, each with ``top_logprobs``;
the client asks for 20), find the token that carries the label, either the value of ``label_field``
in the JSON answer (``{"score": 4}`` -> the token after ``"score":``) or, without a field, the first
generated token that is one of the labels; then renormalise the top-k probabilities over
``label_options`` and, for numeric labels, take the probability-weighted mean.

Logprobs are stored compactly in the cache as ``[[token, logprob, [[top_token, top_logprob], ...]], ...]``
(:func:`compact_logprobs`); the functions below accept that form or the SDK's dict form.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LabelDistribution", "compact_logprobs", "label_distribution"]


def compact_logprobs(content: Sequence[Any] | None) -> list | None:
    """SDK ``logprobs.content`` (objects or dicts) -> ``[[tok, lp, [[tok, lp], ...]], ...]``."""
    if not content:
        return None
    out = []
    for entry in content:
        d = entry if isinstance(entry, dict) else entry.model_dump()
        tops = [[t["token"], float(t["logprob"])] for t in (d.get("top_logprobs") or [])]
        out.append([d["token"], float(d["logprob"]), tops])
    return out


def _as_compact(content: Sequence[Any]) -> list:
    if content and isinstance(content[0], list | tuple):
        return [list(c) for c in content]
    return compact_logprobs(content) or []


@dataclass
class LabelDistribution:
    """The judge's probabilities over the label options at the label token."""

    probs: dict[str, float]  # renormalised over the label options (sums to 1)
    expected: float | None  # probability-weighted mean when every label is numeric
    argmax: str  # most probable label
    coverage: float  # probability mass of the label options among the top-k before renormalising
    position: int  # index of the label token in the generated tokens


def _norm_token(tok: str) -> str:
    # also drops JSON punctuation a tokenizer may merge into the label token (e.g. '":4' or ' "4')
    return tok.strip(" \t\r\n\"':,{}")


def _match_option(tok: str, options: Sequence[str]) -> str | None:
    t = _norm_token(tok)
    if not t:
        return None
    if t in options:
        return t
    lowered = {o.lower(): o for o in options}
    if t.lower() in lowered:
        return lowered[t.lower()]
    # a multi-token label whose first token is a unique prefix, e.g. "Unexp" for "Unexpected"
    starts = [o for o in options if o.lower().startswith(t.lower())]
    return starts[0] if len(starts) == 1 and len(t) >= 2 else None


def _label_position(tokens: list[str], options: Sequence[str], label_field: str | None) -> int | None:
    if label_field:
        text = "".join(tokens)
        m = re.search(r"[\"']?" + re.escape(label_field) + r"[\"']?\s*:\s*", text)
        if m:
            offset = m.end()
            pos = 0
            for i, tok in enumerate(tokens):
                end = pos + len(tok)
                pos = end
                if end <= offset:
                    continue
                # the value's first token may still hold the end of `"score":`, e.g. '":' or ' "'
                tail = tok[max(0, len(tok) - (end - offset)) :]
                if not _norm_token(tail):
                    continue
                return i if _match_option(tail, options) is not None else None
            return None
    for i, tok in enumerate(tokens):
        if _match_option(tok, options) is not None:
            return i
    return None


def label_distribution(
    content: Sequence[Any] | None,
    label_options: Sequence[str],
    label_field: str | None = None,
) -> LabelDistribution | None:
    """Distribution over ``label_options`` at the label token, or None when no label token is found."""
    if not content or not label_options:
        return None
    options = [str(o) for o in label_options]
    entries = _as_compact(content)
    tokens = [e[0] for e in entries]
    pos = _label_position(tokens, options, label_field)
    if pos is None:
        return None
    tok, lp, tops = entries[pos]
    candidates = tops if tops else [[tok, lp]]
    mass = dict.fromkeys(options, 0.0)
    seen: set[str] = set()
    for t, tlp in candidates:
        if t in seen:
            continue
        seen.add(t)
        opt = _match_option(t, options)
        if opt is not None:
            mass[opt] += math.exp(float(tlp))
    total = sum(mass.values())
    if total <= 0.0:
        return None
    probs = {o: m / total for o, m in mass.items()}
    expected: float | None
    try:
        expected = float(sum(float(o) * p for o, p in probs.items()))
    except ValueError:
        expected = None
    argmax = max(probs, key=lambda o: probs[o])
    return LabelDistribution(probs=probs, expected=expected, argmax=argmax, coverage=min(total, 1.0), position=pos)
