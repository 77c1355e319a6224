"""The run says how healthy its judge was: parsed, unparsed and failed answers per notebook, in the manifest, on the
run-manifest page and in the terminal, flagged where more than a fifth of a notebook's answers were unusable.

Counted from judgment logs: written by hand for the arithmetic, and by a tiny two-notebook book executed by the
runner against the loopback fake OpenAI server (answers in prose and a failing call scripted per request).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import nbformat
import pytest
from claims import counts_in, numbers_in
from fake_openai_server import FakeOpenAIServer, Reply

from recjudge_utils import book
from recjudge_utils.book.report import load_manifest
from recjudge_utils.book.run_logs import health_line, judge_health
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.records import reason_kind
from recjudge_utils.manifest import RunManifest, manifest_markdown

PROSE = "I think the user would probably enjoy these movies, they look quite nice overall."
PROSE_REASON = f"no JSON object found in answer: {PROSE!r}"
HTTP_400 = "judge call failed (not retryable) at http://127.0.0.1:40475/v1 model 'm': HTTP 400: injected failure"


def record(status: str, reason: str | None = None, cache_hit: bool = False, version: str = "1") -> dict[str, Any]:
    return {"status": status, "reason": reason, "cache_hit": cache_hit, "template_version": version}


def write_log(folder: Path, notebook: str, records: list[dict[str, Any]]) -> None:
    (folder / notebook).mkdir(parents=True, exist_ok=True)
    with open(folder / notebook / "judgments.jsonl", "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)


@pytest.mark.parametrize(
    ("reason", "status", "kind"),
    [
        (PROSE_REASON, "unparsed", "no JSON object found in answer"),
        ("no JSON object in the answer", "unparsed", "no JSON object in the answer"),
        (HTTP_400, "error", "HTTP 400: injected failure"),
        (
            "judge call failed after 7 attempts at http://x model 'm': HTTP 429: slow down",
            "error",
            "HTTP 429: slow down",
        ),
        ("CATEGORY 'Foo' is not one of ['A', 'B']", "unparsed", "CATEGORY '...' is not one of ['...', '...']"),
        (
            "invalid or truncated JSON: Expecting value at char 12 (answer cut at an output budget of 64 tokens)",
            "unparsed",
            "invalid or truncated JSON: Expecting value at char N",
        ),
        (None, "unparsed", "no reason given"),
    ],
)
def test_reasons_that_differ_only_by_the_answer_count_together(reason: str | None, status: str, kind: str) -> None:
    assert reason_kind(reason, status) == kind


def test_counts_per_notebook_from_this_executions_lines(tmp_path: Path) -> None:
    write_log(tmp_path, "01_a", [record("error", HTTP_400)] * 3)  # an earlier execution into the same run
    start = 3
    write_log(
        tmp_path,
        "01_a",
        [
            record("parsed"),
            record("parsed", cache_hit=True),
            record("unparsed", PROSE_REASON, cache_hit=True),  # a cached answer is no more usable for being cached
            record("unparsed", PROSE_REASON),
            record("unparsed", "no JSON object in the answer"),
            record("unparsed", "no JSON object in the answer"),
            record("unparsed", PROSE_REASON.replace("movies", "films")),
            record("error", HTTP_400),
            record("parsed", version="1+repair1"),  # the repair of one unparsed answer: that answer became usable
        ],
    )
    # exactly a fifth unusable is not flagged; more is
    write_log(tmp_path, "02_b", [record("parsed")] * 4 + [record("unparsed", PROSE_REASON)])
    write_log(tmp_path, "03_c", [record("parsed")] * 3 + [record("error", HTTP_400)])
    rows = {r["notebook"]: r for r in judge_health(tmp_path, {"01_a": start, "02_b": 0, "03_c": 0, "04_d": 0})}
    a = rows["01_a"]
    assert (a["judgments"], a["parsed"], a["unparsed"], a["errors"], a["cache_hits"]) == (8, 3, 4, 1, 2)
    assert a["repaired"] == 1 and a["flagged"] and a["unusable_share"] == 0.625
    assert a["unparsed_reasons"] == [["no JSON object found in answer", 3], ["no JSON object in the answer", 2]]
    assert a["error_reasons"] == [["HTTP 400: injected failure", 1]]
    assert (rows["02_b"]["flagged"], rows["03_c"]["flagged"]) == (False, True)
    assert rows["04_d"]["judgments"] == 0 and not rows["04_d"]["flagged"]
    # 3 of 8 usable; 4 unparsed, 3 of them for the most common reason; 1 error, and the reasons themselves
    line = health_line(a)
    assert line.startswith("01_a ") and numbers_in(line) == [3, 8, 4, 3, 1, 400]
    assert "no JSON object found in answer" in line and "HTTP 400: injected failure" in line
    line = health_line(rows["02_b"])
    assert line.startswith("02_b ") and numbers_in(line) == [4, 5, 1] and "no JSON object found in answer" in line


def table_row(page: str, first: str) -> list[str]:
    """The cells after the first of the row of the page's judge health table whose first cell is ``first`` (``\\|``
    stays in its cell)."""
    health = page.split("## Judge health", 1)[1].split("\n#", 1)[0]
    (row,) = [line for line in health.splitlines() if line.startswith(f"| {first} |")]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[2:-1]]


def test_the_manifest_page_shows_each_notebooks_health(tmp_path: Path) -> None:
    write_log(tmp_path, "04_saer", [record("unparsed", "no REASONING/CATEGORY/FLAGGED ITEMS/VERDICT field")] * 12)
    write_log(tmp_path, "03_arena", [record("parsed")] * 30 + [record("unparsed", "a | pipe `x`")] * 2)
    manifest = RunManifest("r", {"name": "j"}, "demo", {}, "0", "c", "3", "now")
    manifest.judge_health = judge_health(tmp_path, {"03_arena": 0, "04_saer": 0})
    page = manifest_markdown(manifest)
    assert "## Judge health" in page and "more than a fifth" in page  # what the mark means
    *counts, reason = table_row(page, "03_arena")
    assert counts == ["30 of 32", "2 / 0", "0"] and counts_in(reason) == [(2, 2)]
    assert "`a \\| pipe 'x'`" in reason  # the answer's pipe escaped, its backticks replaced: one cell
    *counts, reason = table_row(page, "04_saer")
    assert counts == ["0 of 12 ⚠", "12 / 0", "0"] and counts_in(reason) == [(12, 12)]
    assert "`no REASONING/CATEGORY/FLAGGED ITEMS/VERDICT field`" in reason
    assert "## Judge health" not in manifest_markdown(RunManifest("r", {}, "demo", {}, "0", "c", "3", "now"))


def test_the_report_counts_the_health_of_a_run_whose_manifest_predates_it(tmp_path: Path) -> None:
    write_log(tmp_path, "01_a", [record("parsed")] * 2)  # an earlier execution
    write_log(tmp_path, "01_a", [record("parsed"), record("error", HTTP_400), record("error", HTTP_400)])
    actual = [{"notebook": "01_a", "judgments": 3}, {"notebook": "TOTAL", "judgments": 3}]
    manifest = dict(asdict(RunManifest("old", {}, "demo", {}, "0", "c", "3", "now", status="ok")), actual=None)
    manifest.pop("judge_health")  # as a manifest written before it had one
    manifest["actual"] = {"notebooks": actual}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    health = load_manifest(tmp_path).judge_health
    assert [(r["notebook"], r["judgments"], r["parsed"], r["errors"], r["flagged"]) for r in health] == [
        ("01_a", 3, 1, 2, True)
    ]


# ------------------------------------------------------------------------------- a tiny book executed by the runner
NOTEBOOK_BODY = """\
from recjudge_utils.judge.loading import open_judge
from recjudge_utils.judge.types import JudgeRequest

client = open_judge(judge, run_name=NAME, progress=False)
client.judge_many([JudgeRequest(({"role": "user", "content": f"{NAME} item {i}"},), "tiny", "1") for i in range(5)])
client.close()
"""
#: what the fake judge answers per request: prose (unparsed) or a failing call, else a parsed JSON object
SCRIPT = {"01_a item 0": PROSE, "01_a item 1": PROSE, "01_a item 2": PROSE, "02_b item 4": PROSE}


def answer(body: dict[str, Any], n: int) -> Reply | str:
    content = body["messages"][-1]["content"]
    if content == "01_a item 3":
        return Reply(status=400, error_message="injected permanent failure")
    return SCRIPT.get(content, '{"score": 3}')


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    with FakeOpenAIServer(script=answer, model="fake-model") as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "book").mkdir()
    for name in ("01_a", "02_b"):
        params = nbformat.v4.new_code_cell('judge = "embedded"')
        params.metadata["tags"] = ["parameters"]
        nb = nbformat.v4.new_notebook(cells=[params, nbformat.v4.new_code_cell(f"NAME = {name!r}\n{NOTEBOOK_BODY}")])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "notebooks" / f"{name}.ipynb")
    return root


@pytest.mark.slow
def test_a_run_records_flags_and_prints_its_judges_health(
    project: Path, server: FakeOpenAIServer, isolated_runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = load_profile({"name": "fake", "model": server.model, "base_url": server.base_url})
    book.run(profile, "half", build=False, root=project)
    out = capsys.readouterr().out
    (line,) = [line for line in out.splitlines() if "judge health: 01_a" in line]
    assert numbers_in(line) == [1, 5, 3, 1, 400] and "injected permanent failure" in line  # usable, unparsed, error
    assert "judge health: 02_b" not in out  # 1 of 5 unusable: a fifth, not more
    saved = json.loads((isolated_runs / "half" / "manifest.json").read_text())
    fields = ("judgments", "parsed", "unparsed", "errors", "cache_hits", "flagged")
    counts = {r["notebook"]: tuple(r[f] for f in fields) for r in saved["judge_health"]}
    assert counts == {"01_a": (5, 1, 3, 1, 0, True), "02_b": (5, 4, 1, 0, 0, False)}
    page = (isolated_runs / "half" / "run_manifest.md").read_text()
    assert table_row(page, "01_a")[:3] == ["1 of 5 ⚠", "3 / 1", "0"]
    assert table_row(page, "02_b")[:3] == ["4 of 5", "1 / 0", "0"]
    assert page == (isolated_runs / "half" / "executed" / "run_manifest.md").read_text()  # the page the book shows

    # again, forced (nothing changed, so the run would otherwise keep its executed copies): every answer from the
    # cache (the failed call is asked again and fails again), counted the same
    book.run(profile, "half", build=False, root=project, force=True)
    saved = json.loads((isolated_runs / "half" / "manifest.json").read_text())
    counts = {r["notebook"]: tuple(r[f] for f in fields) for r in saved["judge_health"]}
    assert counts == {"01_a": (5, 1, 3, 1, 4, True), "02_b": (5, 4, 1, 0, 5, False)}
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "judge health: 01_a" in line]
    assert counts_in(line)[0] == (1, 5)
