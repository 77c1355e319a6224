"""The words every prompt uses for a dataset's items: one :class:`DomainWords` per dataset.

A dataset's card (``recjudge.yaml``, :mod:`recjudge_utils.data.card`) sets them; without one the prompts use
:data:`NEUTRAL_DOMAIN`, never a movie word. ``Dataset.domain`` carries them from the files to every prompt.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["NEUTRAL_DOMAIN", "DomainWords"]


class DomainWords(BaseModel):
    """The words every prompt uses for this dataset's items."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    item: str = Field(..., min_length=1, description="singular item noun: movie, book, product")
    items: str = Field(..., min_length=1, description="plural item noun: movies, books, products")
    consumed: str = Field(..., min_length=1, description="verb for consuming one: watched, read, bought")
    platform: str = Field(..., min_length=1, description="kind of platform: movie, book, online shop (default: item)")

    @model_validator(mode="before")
    @classmethod
    def _platform(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("platform") is None and isinstance(data.get("item"), str):
            return {**data, "platform": data["item"]}
        return data


NEUTRAL_DOMAIN = DomainWords(item="item", items="items", consumed="interacted with", platform="online")
