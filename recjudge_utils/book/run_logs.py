"""What a run's notebooks' judgment logs say after an execution: what each notebook used and what its answers were
worth, for the run manifest (``actual`` and ``judge_health``), the terminal and the run's report.

Usage (:func:`actual_usage`) is summed by :mod:`recjudge_utils.judge.usage`, as every usage table is; judge health
(:func:`judge_health`) counts per notebook how many answers parsed, how many did not (with the most common reasons)
and how many calls failed, flagged where more than a fifth of the answers were unusable. Both read the log lines an
execution appended (:func:`log_offsets`: a rerun into the same run appends to the logs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from recjudge_utils.judge.records import UNUSABLE_SHARE_FLAG, read_jsonl, reason_kind
from recjudge_utils.judge.usage import records_usage, with_total

__all__ = ["actual_usage", "health_from_logs", "health_line", "judge_health", "log_offsets"]


def actual_usage(run_folder: Path, offsets: Mapping[str, int], seconds: Mapping[str, float]) -> pd.DataFrame:
    """Per notebook and in total, from the judgment logs written by this execution (lines after ``offsets``):
    judgments, paid calls, cache hits, errors, unparsed (``budget_spent``: of which the output budget ran out before an
    answer), tokens (reasoning tokens are part of the completion tokens) and cost of the paid calls
    (:func:`~recjudge_utils.judge.usage.records_usage`), and wall time."""
    rows = [
        {
            "notebook": nb,
            **records_usage(read_jsonl(run_folder / nb / "judgments.jsonl", start)),
            "hours": float(seconds.get(nb, 0.0)) / 3600,
        }
        for nb, start in offsets.items()
    ]
    return with_total(pd.DataFrame(rows)) if rows else pd.DataFrame(rows)


def log_offsets(run_folder: Path, notebooks: Iterable[str]) -> dict[str, int]:
    """Lines already in each notebook's judgment log (a rerun into the same run appends to it)."""
    out = {}
    for nb in notebooks:
        path = run_folder / nb / "judgments.jsonl"
        if path.exists():
            with open(path, encoding="utf-8") as fh:
                out[nb] = sum(1 for _ in fh)
        else:
            out[nb] = 0
    return out


#: reasons kept per notebook and kind (unparsed, error) in the manifest
_HEALTH_REASONS = 3
#: the client marks the extra request that asks a judge to repair an unparsed answer (``repair: true`` profiles)
_REPAIR_MARK = "+repair"


def _health_row(notebook: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    repairs = [r for r in records if _REPAIR_MARK in str(r.get("template_version") or "")]
    asked = [r for r in records if _REPAIR_MARK not in str(r.get("template_version") or "")]
    status = Counter(str(r.get("status")) for r in asked)
    repaired = sum(r.get("status") == "parsed" for r in repairs)
    # a repaired answer is usable: the notebook got the repair's parse in place of the unparsed original
    parsed, unparsed = status["parsed"] + repaired, max(0, status["unparsed"] - repaired)
    errors = status["error"]
    judgments = len(asked)
    unparsed_reasons = Counter(reason_kind(r.get("reason"), "unparsed") for r in asked if r.get("status") == "unparsed")
    error_reasons = Counter(reason_kind(r.get("reason"), "error") for r in asked if r.get("status") == "error")
    share = (unparsed + errors) / judgments if judgments else 0.0
    row = {
        "notebook": notebook,
        "judgments": judgments,
        "parsed": parsed,
        "unparsed": unparsed,
        "errors": errors,
        "cache_hits": sum(bool(r.get("cache_hit")) for r in asked),
        "repaired": repaired,
        "unusable_share": round(share, 4),
        "flagged": share > UNUSABLE_SHARE_FLAG,
        "unparsed_reasons": [[k, n] for k, n in unparsed_reasons.most_common(_HEALTH_REASONS)],
        "error_reasons": [[k, n] for k, n in error_reasons.most_common(_HEALTH_REASONS)],
    }
    if any("panel" in r for r in asked):  # a judge panel: how often each member's own answer was unusable
        excluded = Counter(
            str(e.get("member"))
            for r in asked
            for e in (r.get("panel") or {}).get("excluded") or []
            if e.get("status") != "parsed"
        )
        row["member_unusable"] = [[m, n] for m, n in sorted(excluded.items())]
    return row


def judge_health(run_folder: Path, offsets: Mapping[str, int]) -> list[dict[str, Any]]:
    """Per notebook, from the judgment log lines after ``offsets`` (this execution's): judgments, parsed, unparsed
    and errors (cache hits count like any answer: a cached answer parsed or not), cache hits, answers repaired,
    the unusable share, whether it is flagged (more than :data:`UNUSABLE_SHARE_FLAG`) and the most common reasons
    (:func:`reason_kind`) of the unparsed answers and of the failed calls."""
    return [_health_row(nb, read_jsonl(run_folder / nb / "judgments.jsonl", start)) for nb, start in offsets.items()]


def _most(count: int, what: str, reasons: list[list[Any]]) -> str:
    if not count:
        return ""
    if not reasons:
        return f"{count} {what}"
    reason, n = reasons[0]
    return f"{count} {what}: {reason}" if n == count else f"{count} {what}, {n} of them: {reason}"


def health_line(row: Mapping[str, Any]) -> str:
    """The terminal's line for a notebook: ``04_saer 0 of 12 answers usable (12 unparsed: no JSON object)``."""
    causes = [
        _most(int(row["unparsed"]), "unparsed", row.get("unparsed_reasons") or []),
        _most(int(row["errors"]), "errors" if row["errors"] != 1 else "error", row.get("error_reasons") or []),
        ", ".join(f"{m} {n}" for m, n in row.get("member_unusable") or []),
    ]
    if causes[-1]:
        causes[-1] = "panel members' unusable answers: " + causes[-1]
    detail = "; ".join(c for c in causes if c)
    line = f"{row['notebook']} {row['parsed']} of {row['judgments']} answers usable"
    return f"{line} ({detail})" if detail else line


def health_from_logs(run_folder: Path, actual: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Judge health of a finished run whose manifest predates it: each notebook's last ``judgments`` log lines (the
    manifest's actual usage counts those of its last execution)."""
    offsets = {}
    for row in actual:
        nb = str(row.get("notebook"))
        if nb == "TOTAL":
            continue
        total = log_offsets(run_folder, [nb])[nb]
        offsets[nb] = max(0, total - int(row.get("judgments") or 0))
    return judge_health(run_folder, offsets)
