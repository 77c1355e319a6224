"""Answer formats: every format a prompt may declare, registered once, below the prompts, the judge and the protocols.

A prompt file names the format of its answer in its front matter (``answer_format: json_levels``). This registry is
the one place a format lives: the prompt loader accepts only the names registered here, a protocol builds its strict
parser from the entry, and the simulated judge writes its answers with the entry's renderer from the truth type the
entry names, so the real parsers read them.

===================  ====================  =====================  ================================================
``answer_format``    module                truth it answers from  used by
===================  ====================  =====================  ================================================
``json_levels``      :mod:`.json_levels`   ``ScoreTruth``         serendipity score (Base/LS/CoT/LtM), introduction
``arena_pairwise``   :mod:`.arena_verdicts` ``PreferenceTruth``   RecSys Arena pairwise
``json_list_score``  :mod:`.arena_verdicts` ``ListScoreTruth``    RecSys Arena absolute score
``saer_list_label``  :mod:`.saer_fields`   ``LabelTruth``         SAER pointwise label
``saer_pairwise``    :mod:`.saer_fields`   ``PreferenceTruth``    SAER pairwise and adversarial
===================  ====================  =====================  ================================================

The package also holds what the formats stand on: :class:`~.parsing.ParseError` and the tolerant JSON recovery
(:mod:`.parsing`), and the truth types an experiment attaches to a request (:mod:`.truth`). It imports nothing else of
recjudge, so every stage above it (prompts, judge, protocols) can read it without an import against the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from recjudge_utils.answer_formats.arena_verdicts import (
    make_pairwise_parser,
    parse_absolute,
    render_absolute,
    render_pairwise,
)
from recjudge_utils.answer_formats.json_levels import format_levels, levels_parser
from recjudge_utils.answer_formats.saer_fields import (
    LABELS_WORST_FIRST,
    list_label_grammar,
    parse_pairwise,
    parse_pointwise,
    render_list_label,
    render_set_verdict,
    set_verdict_grammar,
)
from recjudge_utils.answer_formats.truth import LabelTruth, ListScoreTruth, PreferenceTruth, ScoreTruth, Truth

__all__ = ["ANSWER_FORMATS", "AnswerFormat", "answer_format"]

Parser = Callable[[str], Any]


@dataclass(frozen=True)
class AnswerFormat:
    """One answer format: its name, its strict parser, how the simulated judge writes it, and from which truth.

    ``parser(**options)`` builds the parser from what the protocol knows (``fields``, ``aspect_keys``, ``n_items``).
    ``render(values)`` writes a well-formed answer holding one value per answer field; the simulated judge decides
    the values from a ``truth`` of the named type (levels, positions first / second / tie, a score in [0, 1], a label
    out of ``labels``, worst first, when the request carries no truth).
    """

    name: str
    parser: Callable[..., Parser]
    render: Callable[[Mapping[str, Any]], str]
    truth: type[Truth]
    #: the answer's fields; formats keyed by the request's JSON schema use its required fields instead, when it has any
    fields: tuple[str, ...] = ()
    keyed_by_schema: bool = False
    labels: tuple[str, ...] = ()
    #: ``grammar(**options)``: a GBNF grammar of the well-formed answers, for a format no JSON schema describes (a
    #: backend with constrained decoding sends it, as it sends a JSON answer's schema); None: no grammar
    grammar: Callable[..., str] | None = None

    def answer_fields(self, required: Sequence[str]) -> tuple[str, ...]:
        """The fields an answer holds, given the fields the request's JSON schema requires."""
        return tuple(required) if self.keyed_by_schema and required else self.fields


ANSWER_FORMATS: dict[str, AnswerFormat] = {
    fmt.name: fmt
    for fmt in (
        AnswerFormat(
            "json_levels",
            parser=levels_parser,
            render=format_levels,
            truth=ScoreTruth,
            fields=("score",),
            keyed_by_schema=True,
        ),
        AnswerFormat(
            "arena_pairwise",
            parser=make_pairwise_parser,
            render=render_pairwise,
            truth=PreferenceTruth,
            keyed_by_schema=True,
        ),
        AnswerFormat(
            "json_list_score",
            parser=lambda: parse_absolute,
            render=render_absolute,
            truth=ListScoreTruth,
            fields=("score",),
        ),
        AnswerFormat(
            "saer_list_label",
            parser=lambda n_items=10: partial(parse_pointwise, n_items=n_items),
            render=render_list_label,
            truth=LabelTruth,
            fields=("category",),
            labels=LABELS_WORST_FIRST,
            grammar=list_label_grammar,
        ),
        AnswerFormat(
            "saer_pairwise",
            parser=lambda: parse_pairwise,
            render=render_set_verdict,
            truth=PreferenceTruth,
            fields=("verdict",),
            grammar=set_verdict_grammar,
        ),
    )
}


def answer_format(name: str | None) -> AnswerFormat:
    """The registered format ``name``; a KeyError names the known ones."""
    if name not in ANSWER_FORMATS:
        raise KeyError(f"unknown answer format {name!r}; known: {', '.join(ANSWER_FORMATS)}")
    return ANSWER_FORMATS[name]
