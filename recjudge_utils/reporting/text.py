"""Each chapter's words chosen by its run: the sentences its CIs and run state choose between, the notes shown only for
some runs, and the paper's data that is text. Captions are the notebooks'; headers, labels and fixed sentences are
written in the chapter's reporting module.

``reporting/text/<chapter>.yaml`` maps keys (nested mappings allowed, addressed with dots) to Jinja2 templates whose
placeholders are ``{{ name }}``. Numbers arrive formatted, counts may use the ``n`` filter (``{{ users|n }}``:
thousands separated), so the file reads as the chapter's prose. MyST roles (``{term}`Q```) and LaTeX pass through
(Jinja2 reads only double braces); a missing key or placeholder raises at once, naming the file and the key.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import jinja2
import yaml

__all__ = ["ChapterText", "chapter_text"]

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)
_ENV.filters["n"] = lambda count: f"{int(count):,}"


class ChapterText:
    """The templates of one chapter: ``text("takeaways.q_above", cells=...)`` renders one of them."""

    def __init__(self, chapter: str, entries: dict[str, Any]) -> None:
        self.chapter = chapter
        self._entries = entries

    @property
    def source(self) -> str:
        return f"recjudge_utils/reporting/text/{self.chapter}.yaml"

    def raw(self, key: str) -> Any:
        """The entry at a dotted key as the file holds it (a template, a list, a mapping)."""
        node: Any = self._entries
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"{self.source}: no entry {key!r}")
            node = node[part]
        return node

    def __call__(self, key: str, **values: Any) -> str:
        template = self.raw(key)
        if not isinstance(template, str):
            raise TypeError(f"{self.source}: {key!r} is a {type(template).__name__}, not a sentence")
        try:
            return _compiled(template).render(**values)
        except jinja2.UndefinedError as e:
            raise KeyError(f"{self.source}: {key!r} needs a value the caller did not give ({e.message})") from None


@functools.cache
def _compiled(template: str) -> jinja2.Template:
    return _ENV.from_string(template)


@functools.cache
def chapter_text(chapter: str) -> ChapterText:
    """The text file of one chapter (``"arena"`` reads ``reporting/text/arena.yaml``), read once per process."""
    path = resources.files("recjudge_utils").joinpath("reporting", "text", f"{chapter}.yaml")
    if not path.is_file():
        raise FileNotFoundError(f"no text file for chapter {chapter!r}: recjudge_utils/reporting/text/{chapter}.yaml")
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(entries, dict):
        raise ValueError(f"recjudge_utils/reporting/text/{chapter}.yaml must hold a mapping of keys to templates")
    return ChapterText(chapter, entries)
