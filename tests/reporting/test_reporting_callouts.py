"""The MyST admonitions of ``reporting.callouts``: their text, their structure as MyST parses it, and their HTML
for JupyterLab (``recjudge_utils.myst_html``), with the bibliography (read by pybtex) behind its author-year
citations."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup, Tag
from docutils import nodes
from docutils.core import publish_doctree
from IPython.core.interactiveshell import InteractiveShell
from locations import ROOT
from myst_parser.parsers.docutils_ import Parser

from recjudge_utils import myst_html
from recjudge_utils.myst_html import Reference, bibliography, myst_to_html, references_from_bibtex
from recjudge_utils.reporting import callouts
from recjudge_utils.reporting.callouts import judge_caveat_sentence as caveat_sentence

SMALL = "SmolLM2-135M-Instruct (embedded)"


def _goals(body: str) -> callouts.Callout:
    """A learning-goals admonition as the chapters write it (in a Markdown cell since they stopped calling a helper)."""
    return callouts.Callout(callouts.admonition("admonition", body, "What you will learn", ("learning-goals",)))


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
    assert "MovieLens-100K" in body and "SAER's e-commerce logs" in body  # the data and what it replaces
    assert body.index("MovieLens-100K") < body.index("SAER's e-commerce logs")
    assert body.endswith("No searches.")
    assert "stands in here for the paper's data:" in callouts.stand_in_note("MovieLens-100K").text


def test_takeaways_are_one_bullet_per_item() -> None:
    (node,) = admonitions(callouts.takeaways(["first *goal*", "second goal"]).text)
    assert node["classes"] == ["takeaways"]
    assert title(node) == "Key takeaways"
    assert [item.astext() for item in node.findall(nodes.list_item)] == ["first goal", "second goal"]
    with pytest.raises(ValueError, match="at least one item"):
        callouts.takeaways([])


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


def test_a_notebook_displays_a_callout_as_markdown_and_html() -> None:
    callout = callouts.takeaways(["one"])
    data, _ = InteractiveShell.instance().display_formatter.format(callout)
    assert data["text/markdown"] == callout.text
    assert data["text/plain"] == callout.text
    assert data["text/html"] == myst_to_html(callout.text)
    text = callouts.myst("As {cite:t}`wu2024recsysarena` show.")
    data, _ = InteractiveShell.instance().display_formatter.format(text)
    assert set(data) == {"text/markdown", "text/html", "text/plain"}
    assert data["text/markdown"] == str(text) == "As {cite:t}`wu2024recsysarena` show."
    assert "Wu et al. [2024]" in data["text/html"]
    assert isinstance(callouts.takeaways(["a"]), callouts.MySTText)


def test_without_markdown_it_an_output_is_markdown_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> None:
        raise ImportError("No module named 'markdown_it'")

    monkeypatch.setattr(myst_html, "_markdown", missing)
    data, _ = InteractiveShell.instance().display_formatter.format(callouts.takeaways(["one"]))
    assert set(data) == {"text/markdown", "text/plain"}


# ------------------------------------------------------------------------------------------- HTML for JupyterLab

BIB = r"""
% a comment line with an @ sign: @misc{not, an entry}
@inproceedings{doe2020one,
  author    = {Doe, Jane and M{\"u}ller, J{\'e}r{\^o}me and van der Berg, Anna},
  title     = {The {LLM} Judge --- a {Study} of ``Things''},
  booktitle = {Proceedings of Something},
  pages     = {1--10},
  year      = 2020,
  doi       = {10.1/x},
}
@article{roe2019two,
  author  = "Roe, Richard and Poe, Edgar A.",
  title   = "Two {Authors}",
  journal = {Journal},
  volume  = {5},
  number  = {2},
  year    = {2019},
}
@misc{team2024org,
  author = {{The Team} and others},
  title  = {An Organisation},
  year   = {2024},
  eprint = {2401.00001},
  archiveprefix = {arXiv},
}
"""


@pytest.fixture(scope="module")
def refs() -> dict[str, Reference]:
    return references_from_bibtex(BIB)


def soup(text: str, refs: dict[str, Reference]) -> Tag:
    html = myst_to_html(text, refs)
    assert html is not None
    root = BeautifulSoup(html, "html.parser").find("div", class_=myst_html.ROOT_CLASS)
    assert isinstance(root, Tag)
    return root


def test_bibtex_reader_labels_and_references(refs: dict[str, Reference]) -> None:
    assert set(refs) == {"doe2020one", "roe2019two", "team2024org"}
    doe, roe, team = refs["doe2020one"], refs["roe2019two"], refs["team2024org"]
    assert doe.surnames == ("Doe", "Müller", "van der Berg") and doe.label == "Doe et al." and doe.year == "2020"
    assert doe.text == (
        "Jane Doe, Jérôme Müller and Anna van der Berg. 2020. The LLM Judge \u2014 a Study of \u201cThings\u201d. "
        "Proceedings of Something, 1\u201310. doi:10.1/x"
    )
    assert roe.label == "Roe and Poe" and roe.text.endswith("Two Authors. Journal 5(2).")
    assert team.label == "The Team et al." and team.text == "The Team et al. 2024. An Organisation. arXiv:2401.00001"


def test_citations_are_author_year_with_their_references(refs: dict[str, Reference]) -> None:
    root = soup("As {cite:t}`doe2020one` found {cite:p}`team2024org,roe2019two`; {cite:p}`nokey`.", refs)
    cites = root.find_all("span", class_="cite")
    assert [c.get_text() for c in cites] == [
        "Doe et al. [2020]",
        "[Roe and Poe, 2019, The Team et al., 2024]",
        "[nokey]",
    ]
    assert cites[0]["title"] == refs["doe2020one"].text
    listed = [li.get_text() for li in root.select("div.references li")]
    assert listed == [refs[k].text for k in ("doe2020one", "team2024org", "roe2019two")]  # in order of citation
    assert "{cite" not in root.get_text()


def test_roles_become_text_and_inline_markdown_html(refs: dict[str, Reference]) -> None:
    root = soup(
        "A {term}`judge profile` and {term}`MAE <mae-term>`, see {doc}`chapter 2 <02_rs_reevaluation>`, "
        "{ref}`ch1-fig-mae`, **bold**, *it*, `{cite:p}` in code, [a link](https://example.org), {math}`x^2`.",
        refs,
    )
    assert [e.get_text() for e in root.find_all("em", class_="term")] == ["judge profile", "MAE"]
    assert [e.get_text() for e in root.find_all("span", class_="xref")] == ["chapter 2", "ch1-fig-mae"]
    assert root.find("strong").get_text() == "bold" and root.find("code").get_text() == "{cite:p}"
    assert root.find("a")["href"] == "https://example.org"
    assert "$x^2$" in root.get_text()
    assert not root.select("div.references")  # nothing cited


def test_admonitions_are_boxes_with_title_and_class(refs: dict[str, Reference]) -> None:
    goals = soup(_goals("- read a *CI*\n- two").text, refs)
    (box,) = goals.select("div.admonition")
    assert box["class"] == ["admonition", "learning-goals"]
    assert "#0072b2" in box["style"]
    assert box.find("p", class_="admonition-title").get_text() == "What you will learn"
    assert [li.decode_contents() for li in box.find_all("li")] == ["read a <em>CI</em>", "two"]
    note = soup(":::{note}\nA colon fence with `code`.\n:::\n\n```{warning} Careful\nText.\n```", refs)
    titles = [p.get_text() for p in note.find_all("p", class_="admonition-title")]
    assert titles == ["Note", "Careful"]
    assert note.select("div.admonition.warning")


def test_solutions_are_closed_details_with_their_own_references(refs: dict[str, Reference]) -> None:
    text = callouts.exercise(
        "Raise b", "Run:\n\n```python\nrun(b=0.8)\n```", "Q moves {cite:p}`doe2020one`; adjudicated Q stays."
    ).text
    root = soup(text, refs)
    (outer,) = root.select("div.admonition.exercise")
    assert outer.find("p", class_="admonition-title").get_text() == "Exercise: Raise b"
    assert outer.find("pre").get_text() == "run(b=0.8)\n"
    (details,) = outer.find_all("details")
    assert "open" not in details.attrs
    assert details.find("summary").get_text() == "Solution"
    assert "adjudicated Q stays" in details.get_text()
    assert [li.get_text() for li in details.select("div.references li")] == [refs["doe2020one"].text]
    assert not root.find_all("div", class_="references", recursive=False)  # cited only inside the solution
    directives = soup(
        "```{exercise} Make it noisy\n:label: ex-noise\n\nSet `noise`.\n```\n\n"
        "```{solution} ex-noise\n:class: dropdown\n\nThe MAE rises.\n```",
        refs,
    )
    assert directives.find("p", class_="admonition-title").get_text() == "Exercise: Make it noisy"
    (solution,) = directives.find_all("details")
    assert solution.find("summary").get_text() == "Solution to Exercise: Make it noisy"
    assert solution.find("p").get_text() == "The MAE rises."


def test_directives_nest_in_any_fence_and_take_options_in_either_form(refs: dict[str, Reference]) -> None:
    root = soup(
        "::::{exercise} Outer\n---\nlabel: ex-yaml\nclass: dropdown\n---\nBody.\n\n~~~{tip}\nA {term}`tip`.\n~~~\n::::"
        "\n\n```python\nx = {cite:p}`doe2020one`\n```\n\n:::{solution} ex-yaml\nHidden.\n:::",
        refs,
    )
    exercise, solution = root.find_all("details", recursive=False)
    assert exercise["class"] == ["admonition", "exercise", "dropdown"]
    assert exercise.find("summary").get_text() == "Exercise: Outer"
    assert exercise.select_one("div.admonition.tip em.term").get_text() == "tip"
    assert solution.find("summary").get_text() == "Solution to Exercise: Outer"
    assert root.find("pre").get_text() == "x = {cite:p}`doe2020one`\n"  # code stays code
    assert not root.select("div.references")


def test_myst_html_imports_nothing_of_reporting_experiments_or_the_book() -> None:
    """A utility like paths.py: reporting and the book import it, it imports none of them."""
    tree = ast.parse(Path(myst_html.__file__).read_text(encoding="utf-8"))
    modules = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {alias.name for n in ast.walk(tree) if isinstance(n, ast.Import) for alias in n.names}
    parts = ("recjudge_utils.reporting", "recjudge_utils.experiments", "recjudge_utils.book")
    assert not [m for m in modules if m.startswith(parts)]


def test_the_book_bibliography_is_every_entry_as_plain_text() -> None:
    """Every entry of book/references.bib (as pybtex reads the file itself, its comment lines included) is a
    reference whose label, year and text hold no LaTeX: accents as letters, no braces, no commands."""
    pybtex = pytest.importorskip("pybtex.database")
    path = myst_html.default_bib_path()
    assert path is not None
    ours = bibliography(path)
    theirs = pybtex.parse_file(str(path)).entries
    assert set(ours) == set(theirs)
    for key, entry in theirs.items():
        reference = ours[key]
        assert len(reference.surnames) == len([p for p in entry.persons["author"] if str(p) != "others"]), key
        assert reference.year == entry.fields["year"], key
        for shown in (reference.label, reference.text):
            assert not set(shown) & set("{}\\~"), (key, shown)
    assert ours["zhou2023leasttomost"].surnames[1] == "Schärli"


# ------------------------------------------------------------------------------------------- the book keeps MyST

BOOK = ROOT / "book"


def _notebook(outputs: list[object], markdown: str = "") -> dict[str, object]:
    """A notebook of ``outputs`` (one code cell each, input removed), then a Markdown cell of ``markdown``."""
    shell = InteractiveShell.instance()
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# Outputs with two representations"}]
    for i, obj in enumerate(outputs, start=1):
        data, _ = shell.display_formatter.format(obj)
        assert "text/html" in data and "text/markdown" in data
        output = {"output_type": "execute_result", "execution_count": i, "metadata": {}, "data": data}
        cells.append(
            {
                "cell_type": "code",
                "id": f"c{i}",
                "execution_count": i,
                "metadata": {"tags": ["remove-input"]},
                "outputs": [output],
                "source": "callout",
            }
        )
    if markdown:
        cells.append({"cell_type": "markdown", "id": "markdown", "metadata": {}, "source": markdown})
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}


#: a Markdown cell with sphinx-exercise's directives (book/_config.yml loads sphinx_exercise)
EXERCISE_CELL = (
    "```{exercise} Make it noisy\n:label: ex-noise\n\nSet the noise to 1.6.\n```\n\n"
    "```{solution} ex-noise\n:class: dropdown\n\nThe MAE rises.\n```"
)


@pytest.mark.slow
def test_the_book_renders_the_myst_not_the_html(tmp_path: Path) -> None:
    """A one-chapter book with the book's own configuration, bibliography and glossary: the package's outputs render
    as MyST there (admonition boxes, citations and glossary terms resolved to links, the solution in a dropdown),
    and their HTML for JupyterLab is not on the page (``nb_mime_priority_overrides`` in book/_config.yml); a Markdown
    cell's sphinx-exercise directives render as an exercise and its dropdown solution."""
    src = tmp_path / "book"
    src.mkdir()
    for name in ("_config.yml", "references.bib", "glossary.md", "bibliography.md"):
        shutil.copy2(BOOK / name, src / name)
    for name in ("_static", "_ext"):
        shutil.copytree(BOOK / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    (src / "_vendor").symlink_to(BOOK / "_vendor")
    (src / "_toc.yml").write_text(
        "format: jb-book\nroot: chapter\nchapters:\n  - file: bibliography\n  - file: glossary\n", encoding="utf-8"
    )
    outputs = [
        _goals("- Read a {term}`Wilson interval` as {cite:t}`tokutake2025serendipity` do."),
        callouts.exercise("Noisier", "Set the noise to 1.6.", "The MAE rises {cite:p}`efron1979bootstrap`."),
        callouts.myst("See {doc}`the glossary <glossary>`."),
    ]
    (src / "chapter.ipynb").write_text(json.dumps(_notebook(outputs, EXERCISE_CELL)), encoding="utf-8")
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(src), "--warningiserror", "--keep-going"]
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    page = BeautifulSoup((src / "_build" / "html" / "chapter.html").read_text(encoding="utf-8"), "html.parser")
    article = page.select_one("article") or page
    assert not article.select(f".{myst_html.ROOT_CLASS}"), "the HTML for JupyterLab is on the book's page"
    goals = article.select_one("div.admonition.learning-goals")
    assert goals is not None and "What you will learn" in goals.get_text()
    assert goals.select('a[href^="glossary.html#term-"]'), goals
    assert goals.select('a[href^="bibliography.html#"]'), goals
    assert "Tokutake" in goals.get_text()
    exercise = article.select_one("div.admonition.exercise")
    assert exercise is not None and exercise.select_one("div.admonition.dropdown") is not None
    assert article.select('a[href^="glossary.html"]')
    assert "{cite" not in article.get_text() and ":class:" not in article.get_text()
    directive = article.select_one("div.exercise#ex-noise")
    assert directive is not None and "Make it noisy" in directive.get_text()
    solution = article.select_one("div.solution.dropdown")
    assert solution is not None and "Solution to Exercise" in solution.get_text() and "MAE rises" in solution.get_text()
    assert "{exercise}" not in article.get_text() and "{solution}" not in article.get_text()
