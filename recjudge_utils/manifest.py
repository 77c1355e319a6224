"""A run's record: ``manifest.json`` (what produced a run's notebooks) and its book page ``run_manifest.md``.

Holds :class:`NotebookRun` (one notebook's execution), :class:`RunManifest` (the run: judge, scale, parameters,
package, commit, notebooks, usage, judge health), its one writer (:meth:`RunManifest.write`, the only code that writes
``manifest.json``) and reader (:meth:`RunManifest.from_json`), :func:`git_commit`, and the book page
(:func:`manifest_markdown`).

Two kinds of run are recorded. The book runner's (:mod:`recjudge_utils.book.runner`) records every field. An ad-hoc
run, notebooks executed outside the runner (:func:`recjudge_utils.paths.ensure_run_dir`), is marked ``"adhoc": true``
and records only what it knows: run, judge, the names of its notebooks, package version, commit, Python and start;
it has no book page. Readers: chapters 6 and 8, :mod:`recjudge_utils.book.run_logs`, the run's report and archive.

A leaf module (the standard library and :mod:`recjudge_utils.files` only): :mod:`recjudge_utils.paths` and the base
install's judge client record ad-hoc runs through it.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recjudge_utils import __version__
from recjudge_utils.files import atomic_write_text

__all__ = ["MANIFEST_FILE", "MANIFEST_PAGE_FILE", "NotebookRun", "RunManifest", "git_commit", "manifest_markdown"]

MANIFEST_FILE = "manifest.json"
#: the manifest as a book page, beside ``manifest.json`` (a runner's run only)
MANIFEST_PAGE_FILE = "run_manifest.md"
#: what an ad-hoc run records, in this order
_ADHOC_KEYS = ("run", "adhoc", "judge", "notebooks", "package_version", "git_commit", "python", "started_utc")


def git_commit(root: Path | None) -> str:
    """The checkout's commit, with ``-dirty`` when tracked files have uncommitted changes (what was run is then not
    that commit); ``unknown`` outside a checkout or without git."""
    if root is None:
        return "unknown"
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=root, capture_output=True, text=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("-dirty" if dirty else "")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class NotebookRun:
    """What happened to one notebook in a run."""

    notebook: str
    output: str
    parameters: dict[str, Any]
    status: str = "pending"  # "ok" | "failed"
    seconds: float = 0.0
    failed_cell: int | None = None
    error: str | None = None
    #: what the executed copy was made from (:func:`.execution_cache.notebook_key`)
    cache_key: str = ""
    #: the executed copy of an earlier execution with the same key was kept (``seconds`` are that execution's)
    reused: bool = False
    #: the line of the notebook's judgment log after which this execution's judgments are (a rerun into the same run
    #: appends to the log: what an earlier execution judged is not this one's)
    judgments_from: int = 0

    @classmethod
    def from_json(cls, entry: Mapping[str, Any] | str, **changes: Any) -> NotebookRun:
        """A notebook's entry read back from a manifest (keys it does not know are left out; an ad-hoc run's entry
        is the notebook's name), with ``changes``."""
        if isinstance(entry, str):
            entry = {"notebook": entry, "output": "", "parameters": {}}
        return cls(**{k: v for k, v in {**entry, **changes}.items() if k in cls.__dataclass_fields__})


@dataclass
class RunManifest:
    """Everything needed to say what produced a run's executed notebooks.

    The defaults describe this process now (package, Python, start); ``git_commit`` is the caller's to give
    (:func:`git_commit`: a subprocess, run once per run)."""

    run: str
    #: the judge profile (``JudgeProfile.to_dict()``); an ad-hoc run's is None until a notebook opens its judge
    judge: dict[str, Any] | None = None
    scale: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    package_version: str = __version__
    git_commit: str = "unknown"
    python: str = field(default_factory=platform.python_version)
    started_utc: str = field(default_factory=_now)
    finished_utc: str = ""
    seconds: float = 0.0
    #: "running" from the first notebook on (chapter 6 reads it while the run executes), then "ok" or "failed"
    status: str = "running"
    notebooks: list[NotebookRun] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    actual: dict[str, Any] | None = None
    #: seconds spent training or tuning recommenders in this run (0 when every model was a stored artifact)
    training_seconds: float = 0.0
    #: what the judge's endpoint rejected and how requests were adapted (``endpoint_adaptations.json`` of the run)
    endpoint_adaptations: dict[str, Any] = field(default_factory=dict)
    #: per notebook judged with the run's profile: judgments, parsed, unparsed, errors, cache hits, the most common
    #: reasons, and whether more than a fifth of its answers were unusable (:func:`.run_logs.judge_health`)
    judge_health: list[dict[str, Any]] = field(default_factory=list)
    #: notebooks executed outside the book runner (:func:`recjudge_utils.paths.ensure_run_dir`)
    adhoc: bool = False

    @property
    def model(self) -> str:
        """The judge's model name."""
        return str((self.judge or {}).get("model"))

    def to_json(self) -> dict[str, Any]:
        """What ``manifest.json`` holds: every field for a runner's run (``adhoc`` left out), the ad-hoc fields only
        (:data:`_ADHOC_KEYS`, the notebooks by name) for an ad-hoc run."""
        data = asdict(self)
        if not data.pop("adhoc"):
            return data
        data |= {"adhoc": True, "notebooks": [nb.notebook for nb in self.notebooks]}
        return {key: data[key] for key in _ADHOC_KEYS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunManifest:
        """A manifest read back from ``manifest.json``'s content (keys it does not know are left out)."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        fields["notebooks"] = [NotebookRun.from_json(nb) for nb in data.get("notebooks") or []]
        return cls(**fields)

    def write(self, folder: Path) -> None:
        """Write ``manifest.json`` into ``folder`` and, for a runner's run, its book page; each replaced whole
        (chapter 6 may be reading)."""
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / MANIFEST_FILE, json.dumps(self.to_json(), indent=2, default=str) + "\n")
        if not self.adhoc:
            atomic_write_text(folder / MANIFEST_PAGE_FILE, manifest_markdown(self))


def _endpoint_of(judge: Mapping[str, Any]) -> str:
    """Where the judge's calls go, for the manifest page (a panel: its members')."""
    if judge.get("backend") == "panel":
        members = [m for m in judge.get("members") or [] if isinstance(m, Mapping)]
        return "panel of " + ", ".join(f"{m.get('name')} ({_endpoint_of(m)})" for m in members)
    return str(judge.get("base_url") or "embedded / local")


def manifest_markdown(manifest: RunManifest) -> str:
    """The manifest as a book page, so every published report says what produced it."""
    judge = manifest.judge or {}
    lines = [
        "# Run manifest",
        "",
        f"What produced the executed notebooks of run `{manifest.run}`. Rerun it with `make book`, or with",
        "another judge: `python -m recjudge_utils.book run --run NAME --judge judges/PROFILE.yaml [--scale paper]`.",
        "",
        "| field | value |",
        "| --- | --- |",
        f"| run | `{manifest.run}` |",
        f"| judge profile | `{judge.get('name')}` (backend `{judge.get('backend') or ''}`) |",
        f"| judge model | `{judge.get('model')}` |",
        f"| endpoint | `{_endpoint_of(judge)}` |",
        f"| scale | {manifest.scale} |",
        f"| status | {manifest.status} |",
        f"| recjudge_utils version | {manifest.package_version} |",
        f"| git commit | `{manifest.git_commit}` |",
        f"| Python | {manifest.python} |",
        f"| started (UTC) | {manifest.started_utc} |",
        f"| total time | {manifest.seconds:.0f} s |",
        f"| of which training recommenders | {manifest.training_seconds:.0f} s (0: every model was reused) |",
        f"| extra parameters | `{json.dumps(manifest.parameters)}` |",
        "",
        "| notebook | status | seconds |",
        "| --- | --- | --- |",
    ]
    lines += [
        f"| {r.notebook} | {r.status}{' (reused: unchanged since its execution)' if r.reused else ''} | "
        f"{r.seconds:.0f} |"
        for r in manifest.notebooks
    ]
    changes = [
        f"| {endpoint} | `{entry['parameter']}` | {entry['action']} | {entry['message']} |"
        for endpoint, state in manifest.endpoint_adaptations.items()
        for entry in state.get("log", [])
    ]
    if changes:
        lines += [
            "",
            "## What the judge's endpoint rejected",
            "",
            "Each parameter was adapted once for the whole run; the cache keys are those of the requests sent.",
            "",
            "| endpoint | parameter | adapted by | the endpoint's answer |",
            "| --- | --- | --- | --- |",
            *changes,
        ]
    health = _judge_health_table(manifest)
    lines += ["", *health] if health else []
    lines += ["", *_plan_beside_actual(manifest)]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """Text as a code span in a Markdown table cell (an answer's reason may hold a pipe or a backtick)."""
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def _reason_cell(row: dict[str, Any]) -> str:
    parts = []
    for kind, count in (("unparsed", row["unparsed"]), ("error", row["errors"])):
        reasons = row.get(f"{kind}_reasons") or []
        if count and reasons:
            reason, n = reasons[0]
            parts.append(f"{kind} ({n} of {count}): {_cell(str(reason))}")
    return "; ".join(parts) or "-"


def _judge_health_table(manifest: RunManifest) -> list[str]:
    """The manifest page's judge health: per notebook, what its judge's answers were worth, flagged where more than
    a fifth were unusable."""
    rows = manifest.judge_health
    if not rows:
        return []
    lines = [
        "## Judge health",
        "",
        "An answer is usable when it parsed; an unparsed answer (not in the format asked for) or a failed call is not. "
        "⚠ marks a notebook where more than a fifth of the answers were unusable: its results rest on fewer judgments "
        "than it asked for. Cache hits count like any answer.",
        "",
        "| notebook | usable of judged | unparsed / errors | cache hits | most common reason |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:  # five columns: the page is read on a laptop, and a wider table wraps every cell
        usable = f"{row['parsed']} of {row['judgments']}" + (" ⚠" if row["flagged"] else "")
        lines.append(
            f"| {row['notebook']} | {usable} | {row['unparsed']} / {row['errors']} | {row['cache_hits']} | "
            f"{_reason_cell(row)} |"
        )
    return lines


def _plan_beside_actual(manifest: RunManifest) -> list[str]:
    """The manifest page's table of planned and measured calls, tokens, cost and time per notebook."""
    actual = {r["notebook"]: r for r in (manifest.actual or {}).get("notebooks", [])}
    plan = {r["notebook"]: r for r in (manifest.plan or {}).get("notebooks", [])}
    if not actual:
        return []
    lines = [
        "## Judge usage" + (": plan beside actual" if plan else ""),
        "",
        "Paid calls exclude cache hits. "
        + (
            "The plan was made by `python -m recjudge_utils.book plan` before the run; its completion tokens are "
            "estimates."
            if plan
            else "Plan a run before paying with `python -m recjudge_utils.book plan`."
        ),
        "",
        "| notebook | calls (plan / actual) | prompt tokens (plan / actual) | completion tokens (plan / actual) "
        "| cost USD (plan / actual) | hours (plan / actual) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]

    def pair(p: dict[str, Any] | None, a: dict[str, Any], key: str, fmt: str) -> str:
        left = format(p[key], fmt) if p is not None and p.get(key) is not None else "-"
        return f"{left} / {format(a[key], fmt)}"

    for nb, a in actual.items():
        p = plan.get(nb)
        lines.append(
            f"| {nb} | {pair(p, a, 'calls', 'd')} | {pair(p, a, 'prompt_tokens', ',d')} | "
            f"{pair(p, a, 'completion_tokens', ',d')} | {pair(p, a, 'cost_usd', '.4f')} | "
            f"{pair(p, a, 'hours', '.3f')} |"
        )
    return lines
