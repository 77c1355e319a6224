"""Agreement between labelers and the SAER adjudication rules, as reusable pure functions.

A *labeler* is anything that assigns one label per case: a prompt version, a judge model, one
presentation order of a pairwise comparison, a human annotator. Two labelers are compared with
raw agreement and Cohen's quadratic weighted kappa over a fixed ordinal label order
(``weighted_kappa`` below). Missing labels (``None``/NaN, e.g. an unparsed judge
answer) are never imputed: the case is left out of that comparison and ``n`` says how many remain.

Adjudication rules from the SAER paper (Section 3.4):

* pointwise, *strict*: when labelers disagree the harsher label wins (Good vs Poor -> Poor);
* pairwise, *conservative*: when labelers (or the two presentation orders) prefer different
  sides, the verdict is a tie.

Human labels CSV schema (``load_human_labels``), one row per (case, annotator)::

    user,algorithm,annotator,label
    17,co-occurrence,A,Partial Match        # task "pointwise": label in POINTWISE_LABELS
    17,,A,co-occurrence                      # task "pairwise": label = winning algorithm or "Tie"

``user`` is the customer id used by the run, ``algorithm`` names the list for pointwise rows
(empty for pairwise rows), ``annotator`` is any string, ``label`` the annotator's verdict.
Lines starting with ``#`` are comments.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

from recjudge_utils.metrics.intervals import bootstrap_ci
from recjudge_utils.metrics.pairwise import TIE, conservative, is_missing

#: Pointwise categories from harshest to most lenient (the ordinal order used by kappa).
POINTWISE_LABELS: tuple[str, ...] = ("Poor Match", "Partial Match", "Good Match")


def weighted_kappa(
    a: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray, labels: Sequence[Any], weights: str = "quadratic"
) -> float:
    """Cohen's kappa between two labelers over a fixed, ordered label set (quadratic weights by default).

    Returns NaN when kappa is undefined (for example both labelers always give the same single label).
    """
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"weighted_kappa: {len(a)} labels vs {len(b)} labels")
    unknown = (set(a) | set(b)) - set(labels)
    if unknown:
        raise ValueError(f"weighted_kappa: labels {sorted(map(str, unknown))} not in {list(labels)}")
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = cohen_kappa_score(a, b, labels=list(labels), weights=weights if weights != "none" else None)
    return float(kappa)


@dataclass(frozen=True)
class Agreement:
    """Raw agreement and quadratic weighted kappa between two labelers on ``n`` shared cases."""

    n: int
    raw: float
    kappa: float
    raw_ci: tuple[float, float] = (float("nan"), float("nan"))
    kappa_ci: tuple[float, float] = (float("nan"), float("nan"))


def _paired(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"labelers must label the same cases: {len(a)} vs {len(b)} labels")
    keep = [i for i in range(len(a)) if not (is_missing(a[i]) or is_missing(b[i]))]
    return [a[i] for i in keep], [b[i] for i in keep]


def raw_agreement(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Share of cases (both labelled) where the two labelers give the same label; NaN if none."""
    x, y = _paired(a, b)
    if not x:
        return float("nan")
    return float(np.mean([p == q for p, q in zip(x, y, strict=True)]))


def kappa(a: Sequence[Any], b: Sequence[Any], labels: Sequence[Any], weights: str = "quadratic") -> float:
    """Weighted Cohen's kappa over the cases both labelers labelled (NaN when undefined)."""
    x, y = _paired(a, b)
    if not x:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn warns when kappa is undefined; we return NaN
        return weighted_kappa(x, y, labels=labels, weights=weights)


def _quadratic_kappa_codes(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """Quadratic weighted kappa on integer codes 0..k-1 (fast path for the bootstrap; the point
    estimate goes through ``stats.weighted_kappa``, and the tests check the two agree)."""
    observed = np.zeros((k, k))
    np.add.at(observed, (x, y), 1.0)
    n = observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    idx = np.arange(k)
    weights = (idx[:, None] - idx[None, :]) ** 2 / max((k - 1) ** 2, 1)
    denom = float((weights * expected).sum())
    if denom == 0.0:
        return float("nan")
    return 1.0 - float((weights * observed).sum()) / denom


def agreement(
    a: Sequence[Any],
    b: Sequence[Any],
    labels: Sequence[Any],
    n_boot: int = 1000,
    seed: int = 0,
) -> Agreement:
    """Raw agreement and quadratic kappa with percentile-bootstrap CIs (cases resampled)."""
    x, y = _paired(a, b)
    n = len(x)
    if n == 0:
        return Agreement(0, float("nan"), float("nan"))
    codes = {lab: i for i, lab in enumerate(labels)}
    unknown = (set(x) | set(y)) - set(codes)
    if unknown:
        raise ValueError(f"labels {sorted(map(str, unknown))} not in {list(labels)}")
    xa = np.array([codes[v] for v in x])
    ya = np.array([codes[v] for v in y])
    idx = list(range(len(labels)))
    raw_pt, raw_lo, raw_hi = bootstrap_ci((xa, ya), lambda p, q: float(np.mean(p == q)), n_boot=n_boot, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined kappa -> NaN without sklearn's warning
        k = weighted_kappa(xa, ya, labels=idx)
    if np.isnan(k) or n < 2:
        k_ci = (float("nan"), float("nan"))
    else:
        k_labels = len(labels)
        _, k_lo, k_hi = bootstrap_ci(
            (xa, ya), lambda p, q: _quadratic_kappa_codes(p, q, k_labels), n_boot=n_boot, seed=seed
        )
        k_ci = (k_lo, k_hi)
    return Agreement(n=n, raw=raw_pt, kappa=k, raw_ci=(raw_lo, raw_hi), kappa_ci=k_ci)


def strict_adjudicate(*labelers: Sequence[Any], order: Sequence[str] = POINTWISE_LABELS) -> list[Any]:
    """Per case, the harshest label any labeler gave (``order`` runs harshest first).

    A case with any missing label stays missing (None): the consensus of an incomplete panel is unknown.
    """
    if not labelers:
        raise ValueError("strict_adjudicate needs at least one labeler")
    n = len(labelers[0])
    if any(len(lab) != n for lab in labelers):
        raise ValueError("all labelers must label the same cases")
    rank = {lab: i for i, lab in enumerate(order)}
    out: list[Any] = []
    for case in zip(*labelers, strict=True):
        if any(is_missing(v) for v in case):
            out.append(None)
            continue
        unknown = [v for v in case if v not in rank]
        if unknown:
            raise ValueError(f"label {unknown[0]!r} not in {list(order)}")
        out.append(min(case, key=rank.__getitem__))
    return out


def pairwise_order(first: str, second: str, tie: str = TIE) -> tuple[str, str, str]:
    """Ordinal order for kappa on pairwise verdicts: ``second`` wins < tie < ``first`` wins."""
    return (second, tie, first)


# -- human labels -------------------------------------------------------------------------------
HUMAN_COLUMNS = ("user", "algorithm", "annotator", "label")


def load_human_labels(path: str | Path, task: str, algorithms: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a human-label CSV (schema in the module docstring) and validate it for ``task``.

    ``task`` is ``"pointwise"`` (labels must be POINTWISE_LABELS) or ``"pairwise"`` (labels must be
    one of ``algorithms`` or "Tie"). Returns the rows with columns user, algorithm, annotator, label.
    """
    frame = pd.read_csv(path, comment="#", dtype={"algorithm": str, "annotator": str, "label": str})
    return validate_human_labels(frame, task, algorithms, source=str(path))


def validate_human_labels(
    frame: pd.DataFrame, task: str, algorithms: Sequence[str] | None = None, source: str = "human labels"
) -> pd.DataFrame:
    """Check columns, label values and duplicates; raise ValueError naming the offending row."""
    missing = set(HUMAN_COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"{source}: missing columns {sorted(missing)} (need {list(HUMAN_COLUMNS)})")
    if task not in ("pointwise", "pairwise"):
        raise ValueError(f"task must be 'pointwise' or 'pairwise', not {task!r}")
    out = frame.loc[:, list(HUMAN_COLUMNS)].copy()
    out["user"] = out["user"].astype("int64")
    out["annotator"] = out["annotator"].astype(str)
    out["label"] = out["label"].astype(str).str.strip()
    out["algorithm"] = out["algorithm"].fillna("").astype(str).str.strip()
    if task == "pointwise":
        allowed = set(POINTWISE_LABELS)
        if (out["algorithm"] == "").any():
            row = int(np.flatnonzero((out["algorithm"] == "").to_numpy())[0])
            raise ValueError(f"{source}: row {row + 1}: pointwise rows need an algorithm")
    else:
        if algorithms is None:
            raise ValueError("pairwise human labels need the algorithm names")
        allowed = {*algorithms, TIE}
    bad = ~out["label"].isin(sorted(allowed))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"{source}: row {row + 1}: label {out['label'].iloc[row]!r} not in {sorted(allowed)}")
    keys = ["user", "algorithm", "annotator"]
    dup = out.duplicated(keys)
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise ValueError(f"{source}: row {row + 1}: duplicate label for {out.loc[out.index[row], keys].to_dict()}")
    return out.reset_index(drop=True)


def compare_with_humans(
    judge: pd.DataFrame,
    humans: pd.DataFrame,
    labels: Sequence[str],
    task: str,
    judge_name: str = "judge",
    n_boot: int = 1000,
    seed: int = 0,
) -> pd.DataFrame:
    """Agreement rows: each annotator pair, the judge vs each annotator, the judge vs the consensus.

    ``judge`` has columns user, algorithm (pointwise; "" for pairwise) and label. The consensus is
    the strict adjudication (pointwise) or the conservative merge (pairwise) of all annotators, as
    in the paper's Tables 1-2. Only cases labelled by every annotator and the judge count.
    """
    keys = ["user", "algorithm"]
    judge = judge.assign(algorithm=judge["algorithm"].fillna("").astype(str))
    wide = humans.pivot(index=keys, columns="annotator", values="label")
    annotators = list(wide.columns)
    merged = wide.join(judge.set_index(keys)["label"].rename("__judge__"), how="inner")
    rows = []

    def add(name_a: str, name_b: str, a: Sequence[Any], b: Sequence[Any]) -> None:
        res = agreement(a, b, labels, n_boot=n_boot, seed=seed)
        rows.append(
            {
                "labeler_a": name_a,
                "labeler_b": name_b,
                "n": res.n,
                "raw_agreement": res.raw,
                "raw_low": res.raw_ci[0],
                "raw_high": res.raw_ci[1],
                "kappa_w": res.kappa,
                "kappa_low": res.kappa_ci[0],
                "kappa_high": res.kappa_ci[1],
            }
        )

    for i, a in enumerate(annotators):
        for b in annotators[i + 1 :]:
            add(f"human {a}", f"human {b}", merged[a].tolist(), merged[b].tolist())
    for a in annotators:
        add(judge_name, f"human {a}", merged["__judge__"].tolist(), merged[a].tolist())
    cols = [merged[a].tolist() for a in annotators]
    if task == "pointwise":
        consensus = strict_adjudicate(*cols, order=labels)
        rule = "strict adjudication"
    else:
        consensus = conservative(*cols)
        rule = "conservative merge"
    add(judge_name, f"human consensus ({rule})", merged["__judge__"].tolist(), consensus)
    return pd.DataFrame(rows)
