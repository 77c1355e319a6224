"""Sharing a run: one portable archive that replays it with no key, no network and no model call.

``export_run`` writes ``<name>.recjudge.jsonl.gz``: gzip-compressed JSON lines,

1. a header: the archive format, the package version, the git commit and the run's manifest (judge profile without
   any secret, parameters, scale, timings);
2. one ``answer`` line per distinct request the run's judges answered: its cache key, notebook, template id and
   version, the full messages, the stored answer (raw text, finish reason, usage, logprobs), model and endpoint;
3. one ``results`` line per notebook (its ``results.json``);
4. a ``checksum`` line: SHA-256 of every line before it.

``import_archive`` checks the checksum (a corrupted or truncated file is refused), refuses an archive from another
package version unless told to accept it (listing what differs), and imports every answer into the cache in one
transaction: nothing is half-imported. The book runner's ``replay`` subcommand then reruns the run's notebooks
offline and compares the results with the archived ones.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recjudge_utils import __version__
from recjudge_utils.book.usage import read_jsonl
from recjudge_utils.judge.cache import JudgeCache
from recjudge_utils.paths import runs_dir

__all__ = ["ARCHIVE_FORMAT", "Archive", "ArchiveError", "export_run", "import_archive", "read_archive"]

ARCHIVE_FORMAT = "recjudge-archive/1"
SUFFIX = ".recjudge.jsonl.gz"


class ArchiveError(ValueError):
    """The archive cannot be imported; the message says why (corrupted, truncated, another version)."""


@dataclass
class Archive:
    """A verified archive's contents: its header, the judge's answers and each notebook's results."""

    header: dict[str, Any]
    answers: list[dict[str, Any]]
    results: dict[str, dict[str, Any]]


def _line(obj: Any) -> bytes:
    return (json.dumps(obj, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def export_run(run_folder: Path, target: Path | None = None, secret_env: str | None = None) -> Path:
    """Write the archive of ``run_folder`` (default target ``runs/<run>.recjudge.jsonl.gz``); returns its path."""
    manifest_path = run_folder / "manifest.json"
    if not manifest_path.exists():
        raise ArchiveError(f"{run_folder}: no manifest.json: not a finished run")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    # the answers of the run's judge only: a notebook that does not take the run's judge (chapter 5's simulated
    # judge) recomputes its answers offline, and would otherwise fill the archive with tens of thousands of them
    judged = {Path(nb["notebook"]).stem for nb in manifest.get("notebooks", []) if "judge" in nb.get("parameters", {})}
    cache = JudgeCache(runs_dir() / "cache.sqlite")
    answers: dict[str, dict[str, Any]] = {}
    try:
        for log in sorted(run_folder.glob("*/judgments.jsonl")):
            notebook = log.parent.name
            if notebook not in judged:
                continue
            messages = {r["messages_hash"]: r["messages"] for r in read_jsonl(log.parent / "messages.jsonl")}
            for rec in read_jsonl(log):
                key = rec.get("cache_key")
                if rec.get("status") == "error" or not key or key in answers:
                    continue
                stored = cache.get(key)
                if stored is None:
                    raise ArchiveError(f"{notebook}: answer {key[:12]} is logged but not in the cache; cannot export")
                answers[key] = {
                    "type": "answer",
                    "cache_key": key,
                    "notebook": notebook,
                    "template_id": rec.get("template_id"),
                    "template_version": rec.get("template_version"),
                    "model": rec.get("model"),
                    "endpoint": rec.get("endpoint"),
                    "messages": messages.get(rec.get("messages_hash")),
                    "response": stored,
                }
    finally:
        cache.close()
    results = {
        p.parent.name: json.loads(p.read_text(encoding="utf-8")) for p in sorted(run_folder.glob("*/results.json"))
    }
    header = {
        "type": "header",
        "format": ARCHIVE_FORMAT,
        "package_version": __version__,
        "git_commit": manifest.get("git_commit"),
        "run": run_folder.name,
        "manifest": manifest,
        "answers": len(answers),
    }
    body = [_line(header)] + [_line(a) for a in answers.values()]
    body += [_line({"type": "results", "notebook": nb, "results": r}) for nb, r in results.items()]
    digest = hashlib.sha256(b"".join(body)).hexdigest()
    payload = b"".join(body) + _line({"type": "checksum", "sha256": digest})
    secret = os.environ.get(secret_env) if secret_env else None
    if secret and secret.encode() in payload:
        raise ArchiveError(f"the run's records hold the value of {secret_env}; refusing to export a secret")
    target = target or runs_dir() / f"{run_folder.name}{SUFFIX}"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    with gzip.open(tmp, "wb") as fh:
        fh.write(payload)
    tmp.replace(target)
    return target


def read_archive(path: Path) -> Archive:
    """Read and verify an archive; raise :class:`ArchiveError` when it is corrupted or truncated."""
    try:
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise ArchiveError(f"{path}: corrupted or truncated archive ({exc}); nothing imported") from None
    lines = raw.splitlines(keepends=True)
    try:
        records = [json.loads(line) for line in lines]
    except json.JSONDecodeError as exc:
        raise ArchiveError(f"{path}: corrupted archive (line not JSON: {exc}); nothing imported") from None
    if not records or records[-1].get("type") != "checksum":
        raise ArchiveError(f"{path}: truncated archive (no checksum line at the end); nothing imported")
    digest = hashlib.sha256(b"".join(lines[:-1])).hexdigest()
    if digest != records[-1].get("sha256"):
        raise ArchiveError(f"{path}: corrupted archive (checksum mismatch); nothing imported")
    header = records[0]
    if header.get("type") != "header" or header.get("format") != ARCHIVE_FORMAT:
        raise ArchiveError(
            f"{path}: not a {ARCHIVE_FORMAT} archive (format {header.get('format')!r}); nothing imported"
        )
    answers = [r for r in records if r.get("type") == "answer"]
    if len(answers) != header.get("answers"):
        raise ArchiveError(
            f"{path}: header says {header.get('answers')} answers, found {len(answers)}; nothing imported"
        )
    results = {r["notebook"]: r["results"] for r in records if r.get("type") == "results"}
    return Archive(header, answers, results)


def version_differences(header: dict[str, Any]) -> list[str]:
    """What differs between the archive's producer and this installation."""
    diffs = []
    if header.get("package_version") != __version__:
        diffs.append(f"package version: archive {header.get('package_version')}, installed {__version__}")
    return diffs


def import_archive(path: Path, accept_version_mismatch: bool = False) -> Archive:
    """Verify the archive and import all its answers into the cache in one transaction."""
    archive = read_archive(path)
    diffs = version_differences(archive.header)
    if diffs and not accept_version_mismatch:
        raise ArchiveError(
            f"{path}: made by another version ({'; '.join(diffs)}); nothing imported. Replay with "
            "--accept-version-mismatch to import it anyway (answers may not match this version's prompts)."
        )
    cache = JudgeCache(runs_dir() / "cache.sqlite")
    try:
        cache.put_many(
            [
                (
                    a["cache_key"],
                    a["response"],
                    str(a.get("endpoint")),
                    str(a.get("model")),
                    a.get("template_id"),
                    a.get("template_version"),
                )
                for a in archive.answers
            ]
        )
    finally:
        cache.close()
    return archive
