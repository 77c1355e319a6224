"""A damaged or foreign archive imports nothing: checked on a small run made in-process, without running a book.

The run: one notebook folder judged by the simulated judge through the real client (so the cache, the judgment
log and the message log are what a notebook leaves), its ``results.json``, and the run's manifest; ``export_run``
archives it as it archives a book's run.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

from recjudge_utils.answer_formats.truth import ScoreTruth
from recjudge_utils.book import cli
from recjudge_utils.book.archive import SUFFIX, export_run, import_archive
from recjudge_utils.experiments.results import write_results
from recjudge_utils.experiments.run import result
from recjudge_utils.judge.loading import open_judge
from recjudge_utils.judge.types import JudgeRequest
from recjudge_utils.paths import runs_dir

NOTEBOOK = "01_tiny"


def make_run(name: str = "tiny", n: int = 4) -> Path:
    """A finished run of one notebook with ``n`` judged requests; returns its folder."""
    client = open_judge("sim", run=name, run_name=NOTEBOOK, progress=False)
    requests = [
        JudgeRequest(
            ({"role": "user", "content": f"item {i}"},),
            "tiny",
            "1",
            answer_format="json_levels",
            truth=ScoreTruth((("score", 1 + i % 5),)),
            metadata={"item": i},
        )
        for i in range(n)
    ]
    judged = client.judge_many(requests, lambda text: json.loads(text)["score"])
    items = [{"item": i, "label": r.value} for i, r in enumerate(judged)]
    write_results(NOTEBOOK, "tiny", client, "toy data", [result("judged", len(items), n=len(items))], {"scores": items})
    client.close()
    folder = runs_dir() / name
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    # what the book runner records per notebook: the archive keeps the answers of notebooks that take the judge
    manifest["notebooks"] = [{"notebook": f"{NOTEBOOK}.ipynb", "parameters": {"judge": "sim"}}]
    manifest_path.write_text(json.dumps(manifest))
    return folder


def cache_rows(runs: Path) -> int:
    path = runs / "cache.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as con:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        return sum(con.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)


def rewrite(archive: Path, target: Path, edit: Any) -> Path:
    lines = gzip.decompress(archive.read_bytes()).splitlines(keepends=True)
    records = [json.loads(line) for line in lines[:-1]]
    edit(records)
    body = [(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n").encode() for r in records]
    checksum = {"type": "checksum", "sha256": hashlib.sha256(b"".join(body)).hexdigest()}
    target.write_bytes(gzip.compress(b"".join(body) + (json.dumps(checksum) + "\n").encode()))
    return target


def corrupt(archive: Path, target: Path) -> Path:
    """One letter of one stored message changed: still valid JSON, so only the checksum can tell."""
    raw = gzip.decompress(archive.read_bytes())
    assert b'"role": "user"' in raw
    target.write_bytes(gzip.compress(raw.replace(b'"role": "user"', b'"role": "usEr"', 1)))
    return target


def garble(archive: Path, target: Path) -> Path:
    raw = bytearray(gzip.decompress(archive.read_bytes()))
    raw[len(raw) // 2 : len(raw) // 2 + 4] = b"\x00{[,"
    target.write_bytes(gzip.compress(bytes(raw)))
    return target


def truncate(archive: Path, target: Path) -> Path:
    data = archive.read_bytes()
    target.write_bytes(data[: len(data) // 2])
    return target


def not_gzip(archive: Path, target: Path) -> Path:
    raw = gzip.decompress(archive.read_bytes())
    target.write_bytes(zlib.compress(raw))  # not even gzip
    return target


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    """The tiny run's archive, written outside the runs folder, with the cache it came from removed."""
    folder = make_run()
    path = export_run(folder, tmp_path / f"tiny{SUFFIX}")
    (runs_dir() / "cache.sqlite").unlink()
    return path


def test_an_intact_archive_imports_every_answer(archive: Path) -> None:
    imported = import_archive(archive)
    assert len(imported.answers) == 4
    assert imported.results[NOTEBOOK]["results"][0]["value"] == 4
    assert cache_rows(runs_dir()) >= 4


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (corrupt, "checksum mismatch"),
        (garble, "corrupted archive"),
        (truncate, "corrupted or truncated"),
        (not_gzip, "corrupted or truncated"),
        (
            lambda a, t: rewrite(a, t, lambda recs: recs[0].update(package_version="0.0.1")),
            "made by another version (package version: archive 0.0.1",
        ),
    ],
    ids=["corrupted", "garbled", "truncated", "not-gzip", "other-version"],
)
def test_damaged_or_foreign_archive_imports_nothing(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any, message: str
) -> None:
    bad = damage(archive, tmp_path / f"bad{SUFFIX}")
    assert cli.main(["replay", str(bad), "--no-build"]) == 2
    err = capsys.readouterr().err
    assert message in err and "nothing imported" in err
    assert cache_rows(runs_dir()) == 0
    assert not (runs_dir() / "tiny-replay").exists() and not any(runs_dir().glob("*/executed"))
