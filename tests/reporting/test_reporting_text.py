"""The chapters' text files: every key a template can be addressed by is a string (YAML reads a bare ``null``,
``yes`` or ``1`` key as None, True or 1, which no dotted key reaches)."""

from __future__ import annotations

from importlib import resources
from typing import Any

import pytest
import yaml

TEXT = resources.files("recjudge_utils").joinpath("reporting", "text")
CHAPTERS = sorted(p.name.removesuffix(".yaml") for p in TEXT.iterdir() if p.name.endswith(".yaml"))


def non_string_keys(node: Any, path: str = "") -> list[str]:
    if not isinstance(node, dict):
        return []
    found = [f"{path}{k!r}" for k in node if not isinstance(k, str)]
    return found + [bad for k, v in node.items() if isinstance(k, str) for bad in non_string_keys(v, f"{path}{k}.")]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_key_of_a_text_file_is_a_string(chapter: str) -> None:
    assert non_string_keys(yaml.safe_load(TEXT.joinpath(f"{chapter}.yaml").read_text(encoding="utf-8"))) == []
