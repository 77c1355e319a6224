"""Sharing a run: one portable archive that replays it with no key, no network and no model call.

``export_run`` writes ``<name>.recjudge.jsonl.gz``: gzip-compressed JSON lines,

1. a header: the archive format, the package version, the git commit and the run's manifest (judge profile without
   any secret, parameters, scale, timings);
2. one ``answer`` line per distinct request the run's judges answered: its cache key, notebook, template id and
   version, the full messages, the stored answer (raw text, finish reason, usage, logprobs), model and endpoint;
3. one ``requests`` line per notebook judged with the run's profile: the cache keys its judgment log says were
   asked, those answered and those whose call failed (so a replay can tell an answer missing from the archive from
   one the run never received);
4. one ``results`` line per notebook (its ``results.json``);
5. a ``checksum`` line: SHA-256 of every line before it.

``import_archive`` checks the checksum (a corrupted or truncated file is refused), refuses an archive from another
package version unless told to accept it (listing what differs), then checks that every answer the run received is
in the archive or already in this machine's cache (:func:`answer_check`), and refuses with the count per notebook
when one is missing. Only then does it import every answer into the cache, in one transaction: nothing is
half-imported. The book runner's ``replay`` subcommand then reruns the run's notebooks offline and compares the
results with the archived ones.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recjudge_utils import __version__
from recjudge_utils.files import atomic_write
from recjudge_utils.judge.backends import backend_class
from recjudge_utils.judge.cache import JudgeCache
from recjudge_utils.judge.records import read_jsonl
from recjudge_utils.judge.usage import logged_calls
from recjudge_utils.paths import runs_dir

__all__ = [
    "ARCHIVE_FORMAT",
    "Archive",
    "ArchiveError",
    "ArchiveIncomplete",
    "NotebookAnswers",
    "answer_check",
    "export_run",
    "import_archive",
    "read_archive",
]

ARCHIVE_FORMAT = "recjudge-archive/1"
SUFFIX = ".recjudge.jsonl.gz"


class ArchiveError(ValueError):
    """The archive cannot be imported; the message says why (corrupted, truncated, another version)."""


class ArchiveIncomplete(ArchiveError):
    """The archive lacks answers its run received (or does not list its run's requests): a replay would judge those
    requests as errors, so nothing is imported and no notebook runs."""


@dataclass(frozen=True)
class NotebookAnswers:
    """One notebook's requests in an archive: distinct requests its run got an answer to, how many of those answers
    neither the archive nor this machine's cache holds, and how many requests failed in the run itself (no answer
    to hold: a replay records them as errors, as the run did)."""

    notebook: str
    answered: int
    missing: int
    failed: int


@dataclass
class Archive:
    """A verified archive's contents: its header, the judge's answers, each notebook's results and the requests
    each notebook's judgment log says were asked (None: an archive exported before archives listed them)."""

    header: dict[str, Any]
    answers: list[dict[str, Any]]
    results: dict[str, dict[str, Any]]
    requests: dict[str, dict[str, list[str]]] | None = None
    #: what :func:`answer_check` found when the archive was imported (empty: not checked)
    checked: list[NotebookAnswers] = field(default_factory=list)


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
    requests: dict[str, dict[str, list[str]]] = {}
    try:
        for log in sorted(run_folder.glob("*/judgments.jsonl")):
            notebook = log.parent.name
            if notebook not in judged:
                continue
            messages = {r["messages_hash"]: r["messages"] for r in read_jsonl(log.parent / "messages.jsonl")}
            # a judge panel's record holds its members' calls, each cached under the member's own key
            records = [(r, c) for r in read_jsonl(log) for c in logged_calls(r)]
            answered = {str(c["cache_key"]) for _, c in records if c.get("cache_key") and c.get("status") != "error"}
            failed = {str(c["cache_key"]) for _, c in records if c.get("cache_key") and c.get("status") == "error"}
            # sorted: the same run exports the same bytes
            requests[notebook] = {"answered": sorted(answered), "failed": sorted(failed - answered)}
            for rec, call in records:
                key = call.get("cache_key")
                if call.get("status") == "error" or not key or key in answers:
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
                    "model": call.get("model"),
                    "endpoint": call.get("endpoint"),
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
        # which notebooks have a requests line: an archive missing one of them cannot pass for one that lists all
        "requests": sorted(requests),
    }
    body = [_line(header)] + [_line(a) for a in answers.values()]
    body += [_line({"type": "requests", "notebook": nb, **keys}) for nb, keys in requests.items()]
    body += [_line({"type": "results", "notebook": nb, "results": r}) for nb, r in results.items()]
    digest = hashlib.sha256(b"".join(body)).hexdigest()
    payload = b"".join(body) + _line({"type": "checksum", "sha256": digest})
    for env in sorted(v for v in {secret_env, *_key_variables(manifest.get("judge") or {})} if v):
        secret = os.environ.get(env)
        if secret and secret.encode() in payload:
            raise ArchiveError(f"the run's records hold the value of {env}; refusing to export a secret")
    target = target or runs_dir() / f"{run_folder.name}{SUFFIX}"
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(target, "wb") as fh, gzip.open(fh, "wb") as gz:
        gz.write(payload)
    return target


def _key_variables(judge: dict[str, Any]) -> set[str | None]:
    """The environment variables naming the keys of a judge profile (a panel's: its members')."""
    members = judge.get("members") if judge.get("backend") == "panel" else None
    if isinstance(members, list):
        return {env for m in members if isinstance(m, dict) for env in _key_variables(m)}
    return {judge.get("api_key_env")}


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
    listed = [r for r in records if r.get("type") == "requests"]
    if "requests" in header and sorted(r["notebook"] for r in listed) != header["requests"]:
        raise ArchiveError(
            f"{path}: header lists the requests of {header['requests']}, found those of "
            f"{sorted(r['notebook'] for r in listed)}; nothing imported"
        )
    requests = {r["notebook"]: {"answered": r["answered"], "failed": r["failed"]} for r in listed}
    # an archive with no answer has no request line either: it lists its requests when any answer does
    return Archive(header, answers, results, requests if listed or not answers else None)


def _version_differences(header: dict[str, Any]) -> list[str]:
    """What differs between the archive's producer and this installation."""
    diffs = []
    if header.get("package_version") != __version__:
        diffs.append(f"package version: archive {header.get('package_version')}, installed {__version__}")
    return diffs


def answer_check(archive: Archive, cache_path: Path | None = None) -> list[NotebookAnswers]:
    """Per notebook of the archived run: the answers its log says it received that neither the archive nor the cache
    at ``cache_path`` (default: this machine's ``runs/cache.sqlite``, which a replay also reads) holds. The cache is
    only read, and only when the archive lacks some answer. Raises ArchiveIncomplete when the archive lists no
    requests (exported before archives did)."""
    if archive.requests is None:
        run = archive.header.get("run", "RUN")
        raise ArchiveIncomplete(
            "the archive does not list the requests its run made (it was exported before archives did), so a replay "
            "cannot check before it runs that the archive holds every answer; nothing imported, no notebook run. "
            f"Export the run again with the current version (python -m recjudge_utils.book export {run}), or "
            "replay it unchecked with --unchecked (a missing answer then becomes an error in the replayed notebook)."
        )
    present = {str(a["cache_key"]) for a in archive.answers}
    absent = {k for keys in archive.requests.values() for k in keys["answered"] if k not in present}
    cache_path = cache_path or runs_dir() / "cache.sqlite"
    if absent and cache_path.exists():  # answers this machine already holds replay as well as imported ones
        with JudgeCache(cache_path) as cache:
            absent -= set(cache.get_many(sorted(absent)))
    return [
        NotebookAnswers(
            notebook,
            len(keys["answered"]),
            sum(k in absent for k in keys["answered"]),
            len(keys["failed"]),
        )
        for notebook, keys in archive.requests.items()
    ]


def _incomplete_message(path: Path, archive: Archive, checked: list[NotebookAnswers]) -> str:
    """Why a replay of ``archive`` is refused: the missing answers per notebook, and what to do."""
    run = archive.header.get("run", "RUN")
    lacking = [c for c in checked if c.missing]
    missing, answered = sum(c.missing for c in lacking), sum(c.answered for c in checked)
    rows = [f"  {c.notebook}: {c.missing} of {c.answered} answers missing" for c in lacking]
    return "\n".join(
        [
            f"{path}: {missing} of the {answered} answers run {run!r} received are in neither the archive nor this "
            "machine's cache, so a replay would judge those requests as errors; nothing imported, no notebook run:",
            *rows,
            f"Export the run again with the current version (python -m recjudge_utils.book export {run}) and replay "
            f"that archive, or rerun it with a key for its judge (python -m recjudge_utils.book run --run {run} "
            "--judge PROFILE).",
        ]
    )


def _computes_answers(header: dict[str, Any]) -> bool:
    """The archived run's judge computes its answers (the simulated judge, or a panel of them): a replay needs none
    of them."""
    return _judge_computes((header.get("manifest") or {}).get("judge") or {})


def _judge_computes(judge: dict[str, Any]) -> bool:
    backend = judge.get("backend")
    if backend == "panel":
        members = judge.get("members") or []
        return bool(members) and all(isinstance(m, dict) and _judge_computes(m) for m in members)
    try:
        return bool(backend) and backend_class(str(backend)).computes_answers
    except KeyError:  # a backend this installation does not know: its answers come from the archive or nowhere
        return False


def import_archive(path: Path, accept_version_mismatch: bool = False, unchecked: bool = False) -> Archive:
    """Verify the archive, check that it holds every answer its run received (unless ``unchecked``), and import all
    its answers into the cache in one transaction.

    Raises:
        ArchiveError: corrupted, truncated or from another version; ArchiveIncomplete: answers are missing.
    """
    archive = read_archive(path)
    diffs = _version_differences(archive.header)
    if diffs and not accept_version_mismatch:
        raise ArchiveError(
            f"{path}: made by another version ({'; '.join(diffs)}); nothing imported. Replay with "
            "--accept-version-mismatch to import it anyway (answers may not match this version's prompts)."
        )
    if not unchecked and not _computes_answers(archive.header):
        try:
            archive.checked = answer_check(archive)
        except ArchiveIncomplete as exc:
            raise ArchiveIncomplete(f"{path}: {exc}") from None
        if any(c.missing for c in archive.checked):
            raise ArchiveIncomplete(_incomplete_message(path, archive, archive.checked))
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
