"""A replay, and an offline run, check before any notebook runs that every answer they need is at hand.

Archives are made from real runs judged through the real client by the loopback fake OpenAI server (a judge that
computes nothing, so a missing answer cannot be made up offline): first runs made in-process (fast), then runs of a
tiny two-notebook book executed by the runner, exported, truncated, and replayed or rerun offline with the server
stopped. Each refusal is asserted with its counts per notebook and with nothing executed or imported.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from claims import about, counts_in, numbers_in
from fake_openai_server import FakeOpenAIServer, Reply

from recjudge_utils.book import cli
from recjudge_utils.book.archive import SUFFIX, ArchiveError, ArchiveIncomplete, export_run, import_archive
from recjudge_utils.book.planner import CacheCheck, _cache_checks
from recjudge_utils.judge.loading import open_judge
from recjudge_utils.judge.planning import PLAN_FILE
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.paths import runs_dir

#: requests per notebook; the third request of 02_b fails (HTTP 400) every time it is asked
REQUESTS = {"01_a": 5, "02_b": 4}
FAILING = "02_b item 2"


def answer(body: dict[str, Any], n: int) -> Reply | str:
    if body["messages"][-1]["content"] == FAILING:
        return Reply(status=400, error_message="injected permanent failure")
    return '{"score": 3}'


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    with FakeOpenAIServer(script=answer, model="fake-model") as srv:
        yield srv


def profile_of(srv: FakeOpenAIServer) -> dict[str, Any]:
    return {"name": "fake", "backend": "openai", "model": srv.model, "base_url": srv.base_url}


def cache_rows() -> int:
    path = runs_dir() / "cache.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as con:
        return int(con.execute("select count(*) from responses").fetchone()[0])


def records_of(archive: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gzip.decompress(archive.read_bytes()).splitlines()][:-1]


def rewrite(archive: Path, target: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> Path:
    """The archive with its records edited, its header's answer count and its checksum made to agree again: only
    the requests the run made can tell what is missing."""
    records = edit(records_of(archive))
    records[0]["answers"] = sum(r["type"] == "answer" for r in records)
    body = [(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n").encode() for r in records]
    checksum = {"type": "checksum", "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    target.write_bytes(gzip.compress(b"".join(body) + (json.dumps(checksum) + "\n").encode()))
    return target


def drop_answers(archive: Path, target: Path, per_notebook: dict[str, int]) -> Path:
    """Drop the first ``per_notebook[nb]`` answer lines of each notebook: a truncated export."""

    def edit(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        left = dict(per_notebook)
        kept = []
        for r in records:
            if r["type"] == "answer" and left.get(r["notebook"], 0) > 0:
                left[r["notebook"]] -= 1
                continue
            kept.append(r)
        assert not any(left.values()), f"the archive has fewer answers than asked to drop: {left}"
        return kept

    return rewrite(archive, target, edit)


# ------------------------------------------------------------------------------------ archives of in-process runs
def make_run(srv: FakeOpenAIServer, name: str = "shared") -> Path:
    """A finished run of two notebooks judged by the fake server (02_b with one failed call); returns its folder."""
    profile = profile_of(srv)
    for notebook, n in REQUESTS.items():
        client = open_judge(profile, run=name, run_name=notebook, progress=False)
        requests = [JudgeRequest(({"role": "user", "content": f"{notebook} item {i}"},), "tiny", "1") for i in range(n)]
        judged = client.judge_many(requests)
        (client.run_dir / "results.json").write_text(json.dumps([r.status for r in judged]))
        client.close()
    folder = runs_dir() / name
    manifest = json.loads((folder / "manifest.json").read_text())
    # what the book runner records per notebook: the archive keeps the answers of notebooks that take the judge
    manifest["notebooks"] = [{"notebook": f"{nb}.ipynb", "parameters": {"judge": profile}} for nb in REQUESTS]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture
def archive(server: FakeOpenAIServer, tmp_path: Path) -> Path:
    """The run's archive, written outside the runs folder, with the cache it came from removed."""
    path = export_run(make_run(server), tmp_path / f"shared{SUFFIX}")
    (runs_dir() / "cache.sqlite").unlink()
    return path


def test_the_archive_lists_each_notebooks_requests(archive: Path) -> None:
    listed = {r["notebook"]: r for r in records_of(archive) if r["type"] == "requests"}
    assert {nb: (len(r["answered"]), len(r["failed"])) for nb, r in listed.items()} == {"01_a": (5, 0), "02_b": (3, 1)}
    answers = {r["cache_key"] for r in records_of(archive) if r["type"] == "answer"}
    assert {k for r in listed.values() for k in r["answered"]} == answers


def test_a_complete_archive_passes_the_check(archive: Path) -> None:
    imported = import_archive(archive)
    checked = [(c.notebook, c.answered, c.missing, c.failed) for c in imported.checked]
    assert checked == [("01_a", 5, 0, 0), ("02_b", 3, 0, 1)]
    assert cache_rows() == 8


def test_a_truncated_archive_is_refused_before_anything_is_imported_or_run(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    executed: list[Any] = []
    monkeypatch.setattr(cli, "run", lambda *a, **k: executed.append(a))
    bad = drop_answers(archive, tmp_path / f"bad{SUFFIX}", {"01_a": 2, "02_b": 1})
    assert cli.main(["replay", str(bad), "--no-build", "--run", "replayed"]) == 2
    err = capsys.readouterr().err
    missing = about(err.splitlines(), "run 'shared'")
    assert counts_in(missing) == [(3, 8)] and "neither the archive nor" in missing  # 3 of its 8 answers nowhere
    assert "  01_a: 2 of 5 answers missing\n" in err
    assert "  02_b: 1 of 3 answers missing\n" in err
    assert "nothing imported, no notebook run" in err
    assert "python -m recjudge_utils.book export shared" in err
    assert executed == [] and cache_rows() == 0 and not (runs_dir() / "replayed").exists()


def test_answers_this_machine_holds_complete_a_truncated_archive(server: FakeOpenAIServer, tmp_path: Path) -> None:
    archive = export_run(make_run(server), tmp_path / f"shared{SUFFIX}")  # the cache that made it stays
    bad = drop_answers(archive, tmp_path / f"bad{SUFFIX}", {"01_a": 2})
    assert [c.missing for c in import_archive(bad).checked] == [0, 0]


def test_an_archive_that_lists_no_requests_is_refused_unless_unchecked(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def as_exported_before(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        records[0].pop("requests")
        return [r for r in records if r["type"] != "requests"]

    old = rewrite(archive, tmp_path / f"old{SUFFIX}", as_exported_before)
    assert cli.main(["replay", str(old), "--no-build", "--run", "replayed"]) == 2
    err = capsys.readouterr().err
    assert "does not list the requests" in err and "export shared" in err and "--unchecked" in err
    assert cache_rows() == 0
    assert len(import_archive(old, unchecked=True).answers) == 8 and cache_rows() == 8


def test_an_archive_that_lost_a_requests_line_is_refused(archive: Path, tmp_path: Path) -> None:
    cut = rewrite(archive, tmp_path / f"cut{SUFFIX}", lambda rs: [r for r in rs if r.get("notebook") != "01_a"])
    with pytest.raises(ArchiveError, match=r"header lists the requests of \['01_a', '02_b'\], found those of"):
        import_archive(cut)
    with pytest.raises(ArchiveIncomplete):  # answers gone with their requests line are still missing for 01_a's
        import_archive(drop_answers(archive, tmp_path / f"bad{SUFFIX}", {"01_a": 5}))


def test_the_offline_check_counts_what_the_plan_cannot_see(tmp_path: Path) -> None:
    scratch, run_folder = tmp_path / "plan", tmp_path / "run"
    plans = {
        "01_a": [("k1", True, False), ("k2", False, False), ("k3", False, True), ("k9", False, False)],
        "02_b": [("k4", False, False)],
        "03_c": [("k5", False, False), ("k6", False, True)],
    }
    for nb, records in plans.items():
        (scratch / nb).mkdir(parents=True)
        lines = [json.dumps({"cache_key": k, "cached": c, "chained": ch}) for k, c, ch in records]
        (scratch / nb / PLAN_FILE).write_text("\n".join(lines) + "\n")
    # the run, made online before, failed on k9 (no answer exists: offline it fails again, it is not missing)
    (run_folder / "01_a").mkdir(parents=True)
    (run_folder / "01_a" / "judgments.jsonl").write_text(json.dumps({"cache_key": "k9", "status": "error"}) + "\n")
    methods = {"02_b": {"stand_ins": "deepfm"}}
    checks = _cache_checks(scratch, [Path(f"{nb}.ipynb") for nb in plans], methods, run_folder)
    assert checks == [
        CacheCheck("01_a", requests=3, missing=1, chained=1, failed_before=1),
        CacheCheck("02_b", requests=0, missing=0, stand_ins="deepfm"),
        CacheCheck("03_c", requests=1, missing=1, chained=1),
    ]
    assert "stand-in lists for deepfm" in checks[1].unchecked and "1 chained requests" in checks[2].unchecked


# ------------------------------------------------------------------------------- a tiny book executed by the runner
NOTEBOOK_BODY = """\
import json
from recjudge_utils.judge.loading import open_judge
from recjudge_utils.judge.types import JudgeRequest

client = open_judge(judge, run_name=NAME, progress=False)
requests = [JudgeRequest(({"role": "user", "content": f"{NAME} item {i}"},), "tiny", "1") for i in range(n)]
judged = client.judge_many(requests)
(client.run_dir / "results.json").write_text(json.dumps([[r.status, r.value] for r in judged]))
client.close()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout with two notebooks that judge ``n`` requests each with the run's judge; the command line's."""
    root = tmp_path / "project"
    (root / "notebooks").mkdir(parents=True)
    (root / "book").mkdir()
    for name, n in REQUESTS.items():
        params = nbformat.v4.new_code_cell(f'judge = "embedded"\nn = {n}')
        params.metadata["tags"] = ["parameters"]
        cells = [params, nbformat.v4.new_code_cell(f"NAME = {name!r}\n{NOTEBOOK_BODY}")]
        nb = nbformat.v4.new_notebook(cells=cells)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, root / "notebooks" / f"{name}.ipynb")
    monkeypatch.setattr(cli, "project_root", lambda: root)
    return root


def judge_options(srv: FakeOpenAIServer) -> list[str]:
    return ["--model", srv.model, "--base-url", srv.base_url]


@pytest.mark.slow
def test_replay_of_an_executed_run_refuses_a_truncated_archive_and_replays_a_complete_one(
    project: Path, server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--run", "shared", *judge_options(server), "--no-build"]) == 0
    assert cli.main(["export", "shared"]) == 0
    server.stop()
    archive = runs_dir() / f"shared{SUFFIX}"
    (runs_dir() / "cache.sqlite").unlink()  # a reader's machine
    capsys.readouterr()

    bad = drop_answers(archive, tmp_path / f"bad{SUFFIX}", {"01_a": 1, "02_b": 2})
    assert cli.main(["replay", str(bad), "--no-build", "--run", "again"]) == 2
    err = capsys.readouterr().err
    assert "  01_a: 1 of 5 answers missing\n" in err and "  02_b: 2 of 3 answers missing\n" in err
    assert not (runs_dir() / "again").exists() and cache_rows() == 0  # nothing executed, nothing imported

    assert cli.main(["replay", str(archive), "--no-build", "--run", "again"]) == 0
    out = capsys.readouterr().out
    assert "holds all 8 answers its run received" in out
    failed = about(out.splitlines(), "02_b:")
    assert numbers_in(failed) == [1] and "failed" in failed and "archived run" in failed
    assert "every results.json equals the archived one" in out
    assert json.loads((runs_dir() / "again" / "02_b" / "results.json").read_text())[2] == ["error", None]


@pytest.mark.slow
def test_an_offline_run_is_refused_when_the_cache_lacks_requests_it_will_make(
    project: Path, server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    options = judge_options(server)
    assert cli.main(["run", "--run", "cached", *options, "--no-build"]) == 0
    server.stop()
    asked = len(server.requests)
    executed = runs_dir() / "cached" / "executed"
    before = {p.name: p.stat().st_mtime_ns for p in executed.iterdir()}
    capsys.readouterr()

    # more requests than the run made online: the plan renders 7 per notebook, the cache answers 5 and 3 of them
    assert cli.main(["run", "--run", "cached", *options, "--no-build", "--offline", "-p", "n", "7"]) == 2
    err = capsys.readouterr().err
    assert "does not answer every request" in err and "run 'cached'" in err
    assert counts_in(about(err.splitlines(), "01_a:")) == [(2, 7)]  # requests not in the cache, per notebook
    b = about(err.splitlines(), "02_b:")
    assert counts_in(b) == [(3, 7)] and numbers_in(b)[-1] == 1 and "failed" in b  # and the one that failed online
    assert "without --offline" in err
    assert {p.name: p.stat().st_mtime_ns for p in executed.iterdir()} == before  # no notebook ran

    # the same parameters: every request is answered (the one that failed online fails again), and the run goes on
    assert cli.main(["run", "--run", "cached", *options, "--no-build", "--offline"]) == 0
    out = capsys.readouterr().out
    checked = about(out.splitlines(), "[offline]", "checked")
    assert "answers all" in checked and numbers_in(checked)[0] == 8  # requests checked (then the plan's seconds)
    failed = about(out.splitlines(), "02_b:")
    assert numbers_in(failed) == [1] and "fail again" in failed
    assert len(server.requests) == asked  # stopped, and asked nothing more
    assert {p.name: p.stat().st_mtime_ns for p in executed.iterdir()} != before
