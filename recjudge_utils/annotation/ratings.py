"""The judge against the users' own held-out ratings: real people's judgments, but not a random sample of them.

Chapters 2 and 7 judge (user, recommended item) pairs on the 5-level serendipity scale, showing the judge the user's
history up to the end of the training slices of one fold of the temporal split
(:func:`~recjudge_utils.splitting.export.temporal_fold`). Some of those items the user went on to rate *after* that
cut: a real person's verdict on the very item, which the judge never saw. :func:`judge_against_ratings` finds them
and sets the judge's answer against the rating:

* **which pairs**: the judged pairs (the chosen template's last record per pair, as
  :func:`~recjudge_utils.annotation.sample.load_units` reads them) whose user rated the item strictly after the
  chapter's training cut (``timestamp > train_end``, the ``future`` both chapters hand their judge), at any rating
  value, not only the positives; a pair rated at or before the cut, or never, is not used; a pair rated twice after
  it counts with its first held-out rating;
* **which cut**: the fold(s) the chapter's lists were made for, read from the run's record of the notebook (the
  parameters cell of its executed copy ``<run>/executed/<notebook>.ipynb`` with the values the runner injected, and
  the run manifest's parameters over both): chapter 7's ``fold``, chapter 2's ``folds`` (folds ``0 .. folds-1``);
  never guessed (no record: a ValueError saying to pass ``folds=``). With several folds a pair takes the latest cut
  of the folds whose lists (``<run>/lists/fold<f>/``) hold it: a rating after it is after every cut the pair can
  have been judged at (the log keeps one judgment per pair and records no fold);
* **what is compared**: the judge's serendipity score, and, when the template records a relevance step (CoT's
  ``relevance`` field, LtM's ``ltm/relevance`` stage), that step too, against the rating: Spearman's rho (scipy) with
  a percentile-bootstrap CI, the judge's mean answer on items rated >= the dataset's positive threshold (4 for
  MovieLens) and below it with their difference, each with a bootstrap CI
  (:func:`~recjudge_utils.metrics.intervals.bootstrap_ci`) that resamples users with all their pairs (one user's
  pairs are not independent), and the coverage: the share of judged pairs with a
  held-out rating (Wilson CI, :func:`~recjudge_utils.metrics.intervals.wilson`).

The ratings are labelled as ratings, not annotations: users choose what they rate (and rate what they liked enough
to watch), so the rated pairs are not a random sample of the judged ones, and a rating says whether the user liked
the item, not whether it was serendipitous (the relevance step is the fairer comparison). A simulated judge
answers from a truth built from these same ratings (:func:`~recjudge_utils.protocols.truth.reevaluation_truth`), so on
a simulated run the comparison measures its noise, which the result's notes say.

When nothing can be compared (the notebook judged no serendipity scores, the dataset has no ratings, no judged
pair has a held-out rating) the result says why in :attr:`RatingsComparison.why_not`; a run or notebook that does
not exist is a ValueError naming the path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from recjudge_utils.annotation.chapter_record import chapter_folds, chapter_parameters, judgment_records
from recjudge_utils.annotation.sample import chosen_template, is_of_kind
from recjudge_utils.data import Dataset, load_dataset
from recjudge_utils.lists import read_lists
from recjudge_utils.metrics.intervals import bootstrap_ci, wilson
from recjudge_utils.metrics.numbers import number_or_nan
from recjudge_utils.splitting.export import temporal_fold

__all__ = [
    "PAIR_COLUMNS",
    "RATINGS_COLUMNS",
    "REFERENCE",
    "RatingsComparison",
    "judge_against_ratings",
]

#: the columns of :attr:`RatingsComparison.table`
RATINGS_COLUMNS = ["statistic", "what", "value", "low", "high", "n", "interval", "reference"]
#: the columns of :attr:`RatingsComparison.pairs`
PAIR_COLUMNS = ["user", "item", "fold", "cut", "score", "relevance", "rating", "rated_at"]
#: what the judge is compared against, in every row of the table
REFERENCE = "the users' own held-out ratings (real people, not a random sample of the judged pairs)"
SCORE = "serendipity score"
RELEVANCE = "relevance step"
_NO_RELEVANCE = "serendipity score (the template records no relevance step: the score stands in for it)"
_BOOTSTRAP = "percentile bootstrap over users (each resample takes a user with all their pairs)"
#: a cut longer than any list: every listed item counts, whatever its rank
_ANY_RANK = 1_000_000


@dataclass(frozen=True)
class RatingsComparison:
    """The judge of one chapter of a run against the users' held-out ratings.

    ``table``: one row per statistic (:data:`RATINGS_COLUMNS`; empty when :attr:`why_not` says nothing could be
    compared, except the coverage row when there were judged pairs to cover). ``pairs``: the compared pairs
    (:data:`PAIR_COLUMNS`): the judge's ``score`` and ``relevance`` step (NaN when the template records none or the
    answer was unparsed), the ``fold`` whose ``cut`` (its last training timestamp) applied, the user's first
    ``rating`` after the cut and its time ``rated_at``."""

    run: str
    notebook: str
    template: str | None
    dataset: str | None
    #: the folds of the temporal split the chapter's lists were made for, with each one's cut (last training time)
    cuts: dict[int, int]
    #: distinct (user, item) pairs the template judged (parsed or not)
    judged: int
    table: pd.DataFrame
    pairs: pd.DataFrame
    #: None when the judge could be compared; else why not, in words
    why_not: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def compared(self) -> bool:
        """Whether any judged pair was set against a held-out rating."""
        return self.why_not is None

    @property
    def folds(self) -> tuple[int, ...]:
        return tuple(sorted(self.cuts))

    def statistic(self, statistic: str, what: str | None = None) -> pd.Series:
        """The table's one row whose statistic starts with ``statistic`` and whose ``what`` starts with ``what``
        (None: any); KeyError when not exactly one row matches."""
        rows = self.table.loc[self.table["statistic"].str.startswith(statistic)]
        if what is not None:
            rows = rows.loc[rows["what"].str.startswith(what)]
        if len(rows) != 1:
            raise KeyError(f"{len(rows)} rows of statistic {statistic!r} for {what or 'any answer'!r}")
        return rows.iloc[0]


# -- the judged pairs ---------------------------------------------------------------------------------------------


def _parsed(record: Mapping[str, Any]) -> Mapping[str, Any]:
    parsed = record.get("parsed") if record.get("status") == "parsed" else None
    return parsed if isinstance(parsed, Mapping) else {}


def _answer_number(record: Mapping[str, Any], field: str) -> float:
    """A field of the judge's parsed answer as a number; NaN when absent, not a number or infinite (no score)."""
    return number_or_nan(_parsed(record).get(field), finite=True)


def _relevance_steps(records: Sequence[Mapping[str, Any]], chosen: Sequence[Mapping[str, Any]]) -> dict[Any, float]:
    """(user, item) -> the judge's relevance step, when the template records one: the ``relevance`` field of the
    chosen records' own answers (CoT), else the answer of the same chain's ``.../relevance`` stage (LtM). Empty when
    there is none."""
    own = {(int(r["metadata"]["user"]), int(r["metadata"]["item"])): _answer_number(r, "relevance") for r in chosen}
    if any(not math.isnan(v) for v in own.values()):
        return own
    chains = {(r.get("metadata") or {}).get("template") for r in chosen}
    steps = {}
    for r in records:
        meta = r.get("metadata") or {}
        if str(meta.get("stage", "")).endswith("/relevance") and meta.get("template") in chains:
            steps[(int(meta["user"]), int(meta["item"]))] = _answer_number(r, "relevance")
    return steps if any(not math.isnan(v) for v in steps.values()) else {}


def _judged_frame(records: Sequence[Mapping[str, Any]], chosen: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per judged (user, item) pair: the judge's score and relevance step (NaN: unparsed or not recorded)."""
    steps = _relevance_steps(records, chosen)
    rows = {}
    for r in chosen:
        user, item = int(r["metadata"]["user"]), int(r["metadata"]["item"])
        rows[(user, item)] = (user, item, _answer_number(r, "score"), steps.get((user, item), math.nan))
    frame = pd.DataFrame(list(rows.values()), columns=["user", "item", "score", "relevance"])
    return frame.astype({"user": "int64", "item": "int64", "score": "float64", "relevance": "float64"})


def _pair_folds(run_dir: Path, folds: Sequence[int], judged: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Per judged pair, the fold whose cut applies: the only fold, or with several the latest of the folds whose
    lists hold the pair (every fold's lists missing or silent on the pair: the latest fold of all)."""
    if len(folds) == 1:
        return np.full(len(judged), folds[0], dtype=np.int64), []
    latest: dict[tuple[int, int], int] = {}
    read = []
    for fold in sorted(folds):
        folder = run_dir / "lists" / f"fold{fold}"
        if not folder.is_dir():
            continue
        frame = read_lists(folder, top_k=_ANY_RANK, allow_short=True).frame()
        read.append(fold)
        for user, item in zip(frame["user"], frame["item"], strict=True):
            latest[(int(user), int(item))] = fold
    last = max(folds)
    out = np.array([latest.get((int(u), int(i)), last) for u, i in judged[["user", "item"]].itertuples(index=False)])
    notes = [
        f"{len(folds)} folds: each pair takes the latest cut of the folds whose lists hold it (lists read for folds "
        f"{read or 'none'}; {int(sum((int(u), int(i)) not in latest for u, i in judged[['user', 'item']].values))} "
        f"pairs in no list take fold {last}'s), so its rating is after every cut it can have been judged at"
    ]
    return out.astype(np.int64), notes


def _held_out(judged: pd.DataFrame, interactions: pd.DataFrame) -> pd.DataFrame:
    """The judged pairs the user rated strictly after the pair's cut, with the first such rating and its time."""
    rated = interactions[["user", "item", "rating", "timestamp"]].merge(judged[["user", "item", "cut"]])
    rated = rated.loc[rated["timestamp"] > rated["cut"]]
    rated = rated.sort_values(["user", "item", "timestamp"], kind="mergesort").drop_duplicates(["user", "item"])
    rated = rated.rename(columns={"timestamp": "rated_at"})
    return judged.merge(rated[["user", "item", "rating", "rated_at"]], on=["user", "item"], how="inner")


# -- the statistics -----------------------------------------------------------------------------------------------


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho (scipy); NaN for fewer than two pairs or a constant column (undefined there)."""
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(stats.spearmanr(x, y).statistic)


def _mean_difference(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    def difference(answer: np.ndarray, rating: np.ndarray) -> float:
        liked = rating >= threshold
        if liked.all() or not liked.any():
            return math.nan
        return float(answer[liked].mean() - answer[~liked].mean())

    return difference


def _row(statistic: str, what: str, value: float, low: float, high: float, n: int, interval: str) -> dict[str, Any]:
    return dict(zip(RATINGS_COLUMNS, (statistic, what, value, low, high, n, interval, REFERENCE), strict=True))


def _answer_rows(
    what: str, answer: np.ndarray, rating: np.ndarray, users: np.ndarray, threshold: float, n_boot: int, seed: int
) -> list[dict[str, Any]]:
    """Spearman's rho, the mean answer on liked and on other rated items, and their difference (bootstrap CIs that
    resample users: one user's pairs share the user's taste and the judge's reading of their history)."""
    nan = math.nan
    n = len(answer)
    rows = []
    if n >= 2:
        rho, low, high = bootstrap_ci((answer, rating), _rho, n_boot=n_boot, seed=seed, clusters=users)
    else:
        rho, low, high = nan, nan, nan
    rows.append(_row("Spearman's rho (judge vs rating)", what, rho, low, high, n, _BOOTSTRAP))
    cut = f"{threshold:g}"
    liked = rating >= threshold
    for name, mask in ((f"mean judge answer, rating >= {cut}", liked), (f"mean judge answer, rating < {cut}", ~liked)):
        values = answer[mask]
        point = bootstrap_ci(values, n_boot=n_boot, seed=seed, clusters=users[mask]) if len(values) else (nan, nan, nan)
        rows.append(_row(name, what, *point, len(values), _BOOTSTRAP))
    both = liked.any() and (~liked).any()
    difference = (
        bootstrap_ci((answer, rating), _mean_difference(threshold), n_boot=n_boot, seed=seed, clusters=users)
        if both
        else (nan, nan, nan)
    )
    rows.append(_row(f"difference of means (rating >= {cut} minus < {cut})", what, *difference, n, _BOOTSTRAP))
    return rows


def _undefined(what: str, answer: np.ndarray, rating: np.ndarray) -> list[str]:
    """Why rho is undefined, in words, when it is (a constant column, fewer than two pairs)."""
    if len(answer) < 2:
        return [f"{what}: Spearman's rho is undefined on {len(answer)} pair"]
    if np.ptp(answer) == 0:
        return [f"{what}: Spearman's rho is undefined: the judge answered {answer[0]:g} on all {len(answer)} pairs"]
    if np.ptp(rating) == 0:
        return [f"{what}: Spearman's rho is undefined: all {len(rating)} held-out ratings are {rating[0]:g}"]
    return []


def _coverage_row(rated: int, judged: int) -> dict[str, Any]:
    low, high = wilson(float(rated), judged)
    share = rated / judged if judged else math.nan
    return _row("coverage: judged pairs with a held-out rating", "judged pairs", share, low, high, judged, "Wilson")


# -- the comparison -----------------------------------------------------------------------------------------------


def _has_ratings(dataset: Dataset) -> bool:
    inter = dataset.interactions
    if "rating" not in inter.columns or math.isinf(dataset.positive_threshold):
        return False
    values = pd.to_numeric(inter["rating"], errors="coerce").dropna()
    return len(values) > 0 and values.nunique() > 1


def _nothing(
    base: Mapping[str, Any], why: str, rows: Iterable[dict[str, Any]] = (), notes: Sequence[str] = ()
) -> RatingsComparison:
    return RatingsComparison(
        **base,
        table=pd.DataFrame(list(rows), columns=RATINGS_COLUMNS),
        pairs=pd.DataFrame(columns=PAIR_COLUMNS),
        why_not=why,
        notes=tuple(notes),
    )


def judge_against_ratings(
    run_dir: str | Path,
    notebook: str,
    *,
    template: str | None = None,
    dataset: Dataset | str | None = None,
    folds: int | Sequence[int] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> RatingsComparison:
    """The judge's serendipity scores (and relevance step, when recorded) of ``notebook`` in the run at ``run_dir``
    against the users' own ratings of the judged items after the chapter's training cut (see the module docstring).

    ``template``: the judged template (``serendipity/cot``; None: the only one). ``dataset``: the dataset the chapter
    judged (a :class:`~recjudge_utils.data.Dataset` or a name or folder for
    :func:`~recjudge_utils.data.load_dataset`; None: the run's record of the notebook's ``dataset`` parameter).
    ``folds``: the fold(s) of the temporal split the chapter's lists were made for (None: the run's record of the
    notebook's ``fold`` / ``folds``). ValueError for a run or notebook that does not exist (naming the path), several
    templates without ``template=``, or a run that does not record the split and none given.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"{run_dir}: no such run folder")
    path = run_dir / notebook / "judgments.jsonl"
    if not path.is_file():
        raise ValueError(f"{path}: no judgments (is the run or notebook name right?)")
    records = judgment_records(run_dir, notebook)
    base: dict[str, Any] = {
        "run": run_dir.name,
        "notebook": notebook,
        "template": None,
        "dataset": None,
        "cuts": {},
        "judged": 0,
    }
    scores = [r for r in records if is_of_kind(r, "scores")]
    if not scores:
        kinds = [k for k in ("lists", "duels") if any(is_of_kind(r, k) for r in records)]
        found = f"it judged {' and '.join(kinds)}" if kinds else "it holds no judgment of a known kind"
        return _nothing(
            base,
            f"{path}: no serendipity scores (kind 'scores') to set against a rating: {found}, and a rating is of one "
            "(user, item) pair",
        )
    picked = chosen_template(scores, template)
    chosen = [r for r in scores if r["template_id"] == picked]
    judged = _judged_frame(records, chosen)
    base.update(template=picked, judged=len(judged))

    params, sources = chapter_parameters(run_dir, notebook)
    notes: list[str] = []
    if isinstance(dataset, Dataset):
        ds = dataset
        recorded = params.get("dataset")
        if recorded is not None and str(recorded) != ds.name:
            notes.append(f"the run records dataset {recorded!r}; compared against {ds.name!r} as given")
    else:
        name = dataset if dataset is not None else params.get("dataset")
        if name is None:
            raise ValueError(
                f"{run_dir}: the run records no dataset parameter of {notebook} (read: {sources or 'nothing'}): "
                "pass dataset="
            )
        ds = load_dataset(str(name), verbose=False)
    base["dataset"] = ds.name
    if not _has_ratings(ds):
        return _nothing(
            base,
            f"{ds.name} has no ratings (implicit feedback: every interaction is a positive): nothing to set the "
            "judge's scores against",
        )

    if folds is None:
        found_folds = chapter_folds(params)
        if found_folds is None:
            raise ValueError(
                f"{run_dir}: the run does not record which fold(s) of the temporal split {notebook}'s lists were "
                f"made for (read: {sources or 'no manifest entry, no executed notebook'}): pass folds="
            )
        fold_list = found_folds
        notes.append(f"fold(s) {list(fold_list)} and dataset from {'; '.join(sources)}")
    else:
        fold_list = (int(folds),) if isinstance(folds, int | np.integer) else tuple(int(f) for f in folds)
        if not fold_list:
            raise ValueError("folds= names no fold")
    cuts = {f: int(temporal_fold(ds, f).train_end) for f in sorted(set(fold_list))}
    base["cuts"] = cuts
    pair_folds, fold_notes = _pair_folds(run_dir, sorted(cuts), judged)
    notes += fold_notes
    judged = judged.assign(fold=pair_folds, cut=[cuts[int(f)] for f in pair_folds])
    rated = _held_out(judged, ds.interactions)
    rated = rated.sort_values(["user", "item"], kind="mergesort").reset_index(drop=True)[PAIR_COLUMNS]
    coverage = _coverage_row(len(rated), len(judged))
    if any(str(r.get("model")) == "sim" or str(r.get("route")) == "sim" for r in chosen):
        notes.append(
            "a simulated judge: it answers from a truth built from these very held-out ratings (relevance level = "
            "the rating; protocols.truth.reevaluation_truth), so the agreement measures its noise, not insight"
        )
    if rated.empty:
        return _nothing(
            base,
            f"none of the {len(judged)} judged pairs has a rating by its user after the training cut "
            f"({', '.join(f'fold {f}: {c}' for f, c in cuts.items())})",
            [coverage],
            notes,
        )
    unparsed = int(rated["score"].isna().sum())
    if unparsed:
        notes.append(
            f"{unparsed} pairs with a held-out rating have no parsed score and are left out of the score's rows"
        )
    scored = rated.loc[rated["score"].notna()]
    if scored.empty:
        why = f"the judge left all {len(rated)} judged pairs with a held-out rating unparsed"
        return _nothing(base, why, [coverage], notes)
    threshold = ds.positive_threshold
    rows = [coverage]
    steps = bool(rated["relevance"].notna().any())
    compared = [(SCORE if steps else _NO_RELEVANCE, "score", scored)]
    if steps:
        compared.append((RELEVANCE, "relevance", rated.loc[rated["relevance"].notna()]))
    for what, column, frame in compared:
        answer, rating = frame[column].to_numpy(float), frame["rating"].to_numpy(float)
        users = frame["user"].to_numpy()
        rows += _answer_rows(what, answer, rating, users, threshold, n_boot, seed)
        notes += _undefined(what, answer, rating)
    return RatingsComparison(
        **base, table=pd.DataFrame(rows, columns=RATINGS_COLUMNS), pairs=rated, why_not=None, notes=tuple(notes)
    )
