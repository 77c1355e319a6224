"""The one format and the one loader of every prompt file in ``recjudge_utils/prompts/``.

A prompt file is Markdown with YAML front matter and role blocks::

    ---
    id: serendipity/cot                 # unique; the folder path without ".md"
    version: 2                          # bump on purpose when you change the prompt
    description: LS plus three scored steps (relevance, unexpectedness, serendipity)
    answer_format: json_levels          # a format registered in recjudge_utils.answer_formats
    ...                                 # anything else the protocol reads (fields, aspects, max_tokens, ...)
    ---
    === system ===
    You are an expert judge of serendipity in {{ item }} recommendation. ...
    === user ===
    The user's last {{ n }} {{ items }} (oldest first):
    {{ history }}

Blocks are ``=== system ===``, ``=== user ===`` and ``=== assistant ===``; fixed few-shot turns are written as
user/assistant blocks; the LAST block is the per-item user turn. Slots are Jinja2 expressions (``{{ name }}``,
rendered with ``StrictUndefined``): a missing slot or an unknown one is an error naming the file and the slot.
The dataset's words are the slot ``domain`` (a :class:`~recjudge_utils.data.domain.DomainWords`: ``{{ domain.item }}``,
``{{ domain.items }}``, ``{{ domain.consumed }}``, ``{{ domain.platform }}``), so one file speaks every dataset's
language; the filter ``with_article`` puts "a" or "an" before a word (``{{ domain.item | with_article }}``). A fixed
few-shot turn that renders to nothing (its text inside a ``{% if %}`` that is false for these words) is left out.
Few-shot examples that come from data are passed to :meth:`PromptTemplate.render` and rendered with the last
block, each followed by its answer, just before the final turn.

The cache key of every request carries :attr:`PromptTemplate.key`, the front-matter version plus a hash of the
file's bytes: editing a prompt can never reuse stale answers, even if the version is not bumped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TypedDict

import jinja2
import jinja2.meta
import yaml

from recjudge_utils.answer_formats import ANSWER_FORMATS

__all__ = ["Message", "PromptFileError", "PromptTemplate", "list_prompts", "load_prompt", "parse_prompt"]

_ROLES = ("system", "user", "assistant")
_BLOCK = re.compile(r"^=== (system|user|assistant) ===[ \t]*$", re.MULTILINE)
_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)


def _with_article(word: object) -> str:
    """``word`` after "a" or "an", chosen by its first letter (a vowel letter: "an"), which is right for the nouns a
    dataset's card gives (a movie, a book, an item, an online shop)."""
    text = str(word)
    return f"{'an' if text[:1].lower() in 'aeiou' else 'a'} {text}"


_ENV.filters["with_article"] = _with_article


@lru_cache(maxsize=512)
def _compiled(source: str) -> jinja2.Template:
    return _ENV.from_string(source)


@lru_cache(maxsize=512)
def _variables(source: str) -> frozenset[str]:
    return frozenset(jinja2.meta.find_undeclared_variables(_ENV.parse(source)))


class Message(TypedDict):
    """One chat message: what a prompt renders and a judge request carries."""

    role: str
    content: str


class PromptFileError(ValueError):
    """A prompt file breaks the format; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Block:
    """One ``=== role ===`` block of a prompt file, unrendered."""

    role: str
    source: str


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed prompt file: identity, answer format, role blocks and the rest of the front matter."""

    id: str
    version: str
    description: str
    answer_format: str
    blocks: tuple[Block, ...]
    digest: str
    meta: Mapping[str, object] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Version plus a content hash: what goes into the cache key as the template version."""
        return f"{self.version}-{self.digest[:12]}"

    @property
    def slots(self) -> frozenset[str]:
        """Every slot any block uses."""
        names: set[str] = set()
        for block in self.blocks:
            names |= _variables(block.source)
        return frozenset(names)

    @property
    def _fixed_blocks(self) -> tuple[Block, ...]:
        return self.blocks[1:-1] if self.blocks and self.blocks[0].role == "system" else self.blocks[:-1]

    @property
    def fixed_turns(self) -> tuple[Message, ...]:
        """The few-shot turns written in the file (between the system block and the final turn), unrendered."""
        return tuple(Message(role=b.role, content=b.source) for b in self._fixed_blocks)

    def shown_fixed_turns(self, **slots: object) -> tuple[Message, ...]:
        """The few-shot turns written in the file, rendered with ``slots``; a turn that renders to nothing (written
        inside an ``{% if %}`` these slots make false) is left out, since the judge is not shown it."""
        rendered = (Message(role=b.role, content=self._render_block(b, slots)) for b in self._fixed_blocks)
        return tuple(m for m in rendered if m["content"].strip())

    def _render_block(self, block: Block, slots: Mapping[str, object]) -> str:
        try:
            return _compiled(block.source).render(**slots)
        except jinja2.UndefinedError as exc:
            raise KeyError(f"prompt {self.id}: slot missing ({exc.message})") from None

    def render(
        self,
        examples: Sequence[tuple[Mapping[str, object], str]] = (),
        /,
        **slots: object,
    ) -> tuple[Message, ...]:
        """Messages: the file's blocks rendered with ``slots``, with ``examples`` (slot values of the final turn,
        answer) inserted as user/assistant turns just before the final turn.

        Raises:
            KeyError: a slot the file uses is missing, or a slot is given that the file does not use.
        """
        unknown = set(slots) - self.slots
        for ex_slots, _ in examples:
            unknown |= set(ex_slots) - self.slots
        if unknown:
            raise KeyError(f"prompt {self.id}: unknown slots {sorted(unknown)} (the file uses {sorted(self.slots)})")
        messages: list[Message] = []
        if self.blocks[0].role == "system":  # the last block is a user turn, so a first system block is not it
            messages.append(Message(role="system", content=self._render_block(self.blocks[0], slots)))
        messages.extend(self.shown_fixed_turns(**slots))
        final = self.blocks[-1]
        for ex_slots, answer in examples:
            messages.append(Message(role="user", content=self._render_block(final, {**slots, **ex_slots})))
            messages.append(Message(role="assistant", content=answer))
        messages.append(Message(role=final.role, content=self._render_block(final, slots)))
        return tuple(messages)

    def get(self, name: str, default: object = None) -> object:
        """A front-matter field of the protocol's own (``fields``, ``aspects``, ``max_tokens``, ...)."""
        return self.meta.get(name, default)


def parse_prompt(text: str, source: str) -> PromptTemplate:
    """Parse the text of a prompt file; ``source`` names it in errors."""
    if not text.startswith("---\n"):
        raise PromptFileError(f"{source}: a prompt file starts with a '---' line and YAML front matter")
    end = text.find("\n---\n", 4)
    if end < 0:
        raise PromptFileError(f"{source}: the front matter is not closed by a '---' line")
    try:
        front = yaml.safe_load(text[4:end]) or {}
    except yaml.YAMLError as exc:
        raise PromptFileError(f"{source}: front matter is not valid YAML ({exc})") from None
    if not isinstance(front, dict):
        raise PromptFileError(f"{source}: front matter must be a mapping")
    for needed in ("id", "version", "description", "answer_format"):
        if needed not in front or str(front[needed]).strip() == "":
            raise PromptFileError(f"{source}: front matter lacks '{needed}:'")
    if front["answer_format"] not in ANSWER_FORMATS:
        raise PromptFileError(
            f"{source}: answer_format {front['answer_format']!r} is not one of {', '.join(ANSWER_FORMATS)}"
        )
    body = text[end + 5 :]
    parts = _BLOCK.split(body)
    if parts[0].strip():
        raise PromptFileError(f"{source}: text before the first '=== role ===' block")
    blocks = tuple(Block(parts[i], parts[i + 1].strip("\n")) for i in range(1, len(parts), 2))
    if not blocks:
        raise PromptFileError(f"{source}: no '=== system ===' / '=== user ===' blocks")
    if blocks[-1].role != "user":
        raise PromptFileError(f"{source}: the last block must be '=== user ===' (the per-item turn)")
    if any(b.role == "system" for b in blocks[1:]):
        raise PromptFileError(f"{source}: only the first block may be '=== system ==='")
    for b in blocks:
        try:
            _ENV.parse(b.source)
        except jinja2.TemplateSyntaxError as exc:
            raise PromptFileError(f"{source}: {b.role} block: slot syntax error ({exc.message})") from None
    meta = {k: v for k, v in front.items() if k not in ("id", "version", "description", "answer_format")}
    return PromptTemplate(
        id=str(front["id"]),
        version=str(front["version"]),
        description=str(front["description"]).strip(),
        answer_format=str(front["answer_format"]),
        blocks=blocks,
        digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        meta=meta,
    )


def _root() -> Traversable:
    return resources.files("recjudge_utils.prompts")


@cache
def load_prompt(prompt_id: str) -> PromptTemplate:
    """Load ``recjudge_utils/prompts/<prompt_id>.md`` (e.g. ``"serendipity/cot"``); the id in the file must match."""
    path = _root().joinpath(*f"{prompt_id}.md".split("/"))
    if not path.is_file():
        raise FileNotFoundError(f"no prompt file {prompt_id}.md under recjudge_utils/prompts (see list_prompts())")
    tpl = parse_prompt(path.read_text(encoding="utf-8"), f"prompts/{prompt_id}.md")
    if tpl.id != prompt_id:
        raise PromptFileError(f"prompts/{prompt_id}.md: its front matter says id {tpl.id!r}")
    return tpl


def _walk(node: Traversable, prefix: str) -> Iterator[str]:
    for child in sorted(node.iterdir(), key=lambda c: c.name):
        if child.is_dir():
            yield from _walk(child, f"{prefix}{child.name}/")
        elif child.name.endswith(".md") and child.name != "README.md":
            yield prefix + child.name[: -len(".md")]


def list_prompts(folder: str = "") -> list[str]:
    """Ids of every prompt file (optionally under ``folder``, e.g. ``"saer/movies"``)."""
    node = _root()
    for part in filter(None, folder.split("/")):
        node = node.joinpath(part)
    return list(_walk(node, f"{folder.rstrip('/')}/" if folder else ""))
