"""Token prices (USD per 1M input/output tokens) and the dollar cost of tokens (:func:`usd`, the one formula).

The default table ships as ``recjudge_utils/pricing.json`` (OpenAI list prices; the embedded local
model costs 0). Pass a dict or the path of a JSON file of the same shape to override or extend it.
Unknown models cost ``nan`` (reported, never silently 0), except models on a non-OpenAI endpoint
flagged as free by the caller.
"""

from __future__ import annotations

import importlib.resources
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

__all__ = ["BATCH_DISCOUNT", "PriceTable", "usd"]

BATCH_DISCOUNT = 0.5  # the OpenAI Batch API bills half the standard price


def usd(prompt_tokens: float, completion_tokens: float, price: Mapping[str, float], *, batch: bool = False) -> float:
    """Dollars of ``prompt_tokens`` in and ``completion_tokens`` out at ``price`` (USD per 1M ``input`` and
    ``output`` tokens); ``batch``: at the Batch API's discount."""
    cost = (prompt_tokens * price["input"] + completion_tokens * price["output"]) / 1e6
    return cost * (BATCH_DISCOUNT if batch else 1.0)


def _default_table() -> dict[str, dict[str, float]]:
    text = importlib.resources.files("recjudge_utils.judge").joinpath("pricing.json").read_text(encoding="utf-8")
    return {k: v for k, v in json.loads(text).items() if not k.startswith("_")}


def _load_pricing(override: Mapping[str, Any] | str | Path | None = None) -> dict[str, dict[str, float]]:
    """Default table updated with ``override`` (a dict or a JSON file path)."""
    table = _default_table()
    if override is None:
        return table
    if isinstance(override, str | Path):
        override = cast(Mapping[str, Any], json.loads(Path(override).read_text(encoding="utf-8")))
    for model, price in dict(override).items():
        if str(model).startswith("_"):
            continue
        if not isinstance(price, dict) or not {"input", "output"} <= set(price):
            raise ValueError(f"price for {model!r} must be a dict with 'input' and 'output' (USD per 1M tokens)")
        table[str(model)] = {"input": float(price["input"]), "output": float(price["output"])}
    return table


class PriceTable:
    """Looks up a model's price; dated snapshots fall back to the base name (gpt-4o-2024-11-20 -> gpt-4o)."""

    def __init__(self, override: Mapping[str, Any] | str | Path | None = None) -> None:
        self.table = _load_pricing(override)

    def price(self, model: str) -> dict[str, float] | None:
        """USD per 1M input/output tokens of ``model`` (its longest known prefix), or None."""
        if model in self.table:
            return self.table[model]
        # longest known prefix, e.g. "gpt-4o-mini-2024-07-18" -> "gpt-4o-mini"
        best = max((m for m in self.table if model.startswith(m + "-")), key=len, default=None)
        return self.table[best] if best else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int, *, batch: bool = False) -> float:
        """USD cost of one call; ``nan`` when the model has no price."""
        p = self.price(model)
        return math.nan if p is None else usd(prompt_tokens, completion_tokens, p, batch=batch)

    def as_dict(self) -> dict[str, Any]:
        """The table as a plain dict."""
        return dict(self.table)
