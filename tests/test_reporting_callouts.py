"""The MyST admonitions of ``reporting.callouts``: their text, and their structure as MyST parses it."""

from __future__ import annotations

import pytest
from docutils import nodes
from docutils.core import publish_doctree
from IPython.core.interactiveshell import InteractiveShell
from myst_parser.parsers.docutils_ import Parser

from recjudge_utils.reporting import callouts
from recjudge_utils.reporting.display import judge_caveat as caveat_sentence

SMALL = "SmolLM2-135M-Instruct (embedded)"


def admonitions(text: str) -> list[nodes.admonition]:
    """The admonitions of ``text`` parsed as MyST (docutils only; a parse problem raises)."""
    doctree = publish_doctree(text, parser=Parser(), settings_overrides={"halt_level": 2, "report_level": 2})
    return list(doctree.findall(nodes.admonition))


def title(node: nodes.admonition) -> str:
    return node.next_node(nodes.title).astext()


def test_small_judge_gets_a_warning_with_the_printed_caveat() -> None:
    callout = callouts.judge_caveat(SMALL)
    assert callout is not None
    (node,) = admonitions(callout.text)
    assert node["classes"] == ["warning"]
    assert title(node) == "Judge caveat"
    assert node.children[1].astext() == caveat_sentence(SMALL)


def test_capable_judge_has_no_caveat() -> None:
    assert callouts.judge_caveat("gpt-5-mini") is None


def test_simulated_judge_gets_its_own_note_with_the_error_model() -> None:
    callout = callouts.judge_caveat("simulated judge (position bias 0.3)")
    assert callout is not None
    (node,) = admonitions(callout.text)
    assert node["classes"] == ["simulated"]
    assert title(node) == "Simulated judge"
    assert "simulated judge (position bias 0.3)" in node.astext()
    with_parameters = callouts.simulated_judge_note(parameters={"position_bias": 0.3, "noise": 0.5})
    assert "Error model: position bias 0.3, noise 0.5." in admonitions(with_parameters.text)[0].astext()
    with pytest.raises(ValueError, match="not a simulated judge"):
        callouts.simulated_judge_note(SMALL)


def test_stand_in_note_names_the_data_and_what_it_replaces() -> None:
    (node,) = admonitions(callouts.stand_in_note("MovieLens-100K", "SAER's e-commerce logs", "No searches.").text)
    assert node["classes"] == ["note"]
    assert title(node) == "Stand-in data"
    body = node.astext()
    assert "MovieLens-100K stands in here for SAER's e-commerce logs:" in body
    assert body.endswith("No searches.")
    assert "stands in here for the paper's data:" in callouts.stand_in_note("MovieLens-100K").text


@pytest.mark.parametrize(
    ("make", "heading", "css"),
    [
        (callouts.learning_goals, "What you will learn", "learning-goals"),
        (callouts.takeaways, "Key takeaways", "takeaways"),
    ],
)
def test_list_callouts_are_one_bullet_per_item(make, heading: str, css: str) -> None:
    (node,) = admonitions(make(["first *goal*", "second goal"]).text)
    assert node["classes"] == [css]
    assert title(node) == heading
    assert [item.astext() for item in node.findall(nodes.list_item)] == ["first goal", "second goal"]
    with pytest.raises(ValueError, match="at least one item"):
        make([])


def test_exercise_hides_its_solution_in_a_nested_dropdown_even_around_code() -> None:
    text = callouts.exercise("Raise b", "Run:\n\n```python\nrun(b=0.8)\n```", "Q moves; adjudicated Q stays.").text
    outer, inner = admonitions(text)
    assert outer["classes"] == ["exercise"]
    assert title(outer) == "Exercise: Raise b"
    assert inner.parent is outer
    assert inner["classes"] == ["dropdown"]
    assert title(inner) == "Solution"
    assert inner.children[1].astext() == "Q moves; adjudicated Q stays."
    (code,) = outer.findall(nodes.literal_block)
    assert code.astext() == "run(b=0.8)"


def test_a_fence_is_longer_than_any_backtick_run_in_its_body() -> None:
    text = callouts.admonition("note", "````\nfour\n````")
    assert text.startswith("`````{note}\n") and text.endswith("\n`````")


def test_a_notebook_displays_a_callout_as_markdown() -> None:
    callout = callouts.takeaways(["one"])
    data, _ = InteractiveShell.instance().display_formatter.format(callout)
    assert data["text/markdown"] == callout.text
    assert data["text/plain"] == callout.text
