"""Serendipity-2018 (GroupLens ``serendipity-sac2018``; Kotkov, Konstan, Zhao & Veijalainen, SAC 2018).

Files (UTF-8 CSV with a header row): ``answers.csv`` (userId, movieId, rating, timestamp, predictedRating,
s1..s8, q, and eight derived TRUE/FALSE serendipity flags; statement answers are 1..5 or ``NA`` = "don't
remember"), ``movies.csv`` (every value double-quoted: movieId, title, releaseDate, directedBy, starring, imdbId,
tmdbId, genres with genres separated by commas) and ``training.csv`` (userId, movieId, rating, timestamp: all
other ratings of the users, 9,997,850 rows).

Ground truth g (Tokutake et al., CIKM 2025, Section 4.1): "the average of the five-level responses to the six
serendipity questions in the dataset rounded to the nearest integer". The survey has eight statements; the six
that define the dataset's serendipity variants are s1-s6 (the README's derived flags combine exactly these):

* s1 "The first time I heard of this movie was when MovieLens suggested it to me." (novelty, strict)
* s2 "MovieLens influenced my decision to watch this movie." (novelty, motivational)
* s3 "I expected to enjoy this movie before watching it for the first time." (unexpectedness to be relevant)
* s4 "This is the type of movie I would not normally discover on my own ..." (unexpectedness to be found)
* s5 "This movie is different (e.g., in style, genre, topic) from the movies I usually watch." (implicit)
* s6 "I was (or, would have been) surprised that MovieLens picked this movie to recommend to me." (to be recommended)

s7 ("I am glad I watched this movie", enjoyment/relevance) and s8 ("... broadened my preferences", an outcome) are
not serendipity components and are left out. So g = round-half-up(mean of the answered s1..s6), **answers used as
given** (:data:`G_REVERSE_KEYED` is empty). s3 runs the other way: agreeing with it says the movie was *expected*
to be enjoyable, and the dataset's own flags use it as "s3 < 3". The paper nevertheless describes a plain "average
of the five-level responses" and names no reversal, so the book follows its words; the unexpectedness step score
below is the book's own construction and does reverse s3, because it must measure unexpectedness. Which rule (and
which rounding of a .5 mean) the paper applied can only be read off the real answers: :func:`g_rule_check` counts g
under each rule beside the paper's counts, :data:`PAPER_G_COUNTS` (2,150 pairs), and the loader prints it (and keeps
it in ``extra["g_rule_check"]``). ``NA`` answers are skipped; a pair with no answered s1..s6 has no g and is
excluded (counted in ``extra``).

Step scores for the CoT and LtM few-shot examples (which show a relevance and an unexpectedness score beside g)
are derived from the data, never copied from g: **relevance** = the user's own rating of the movie on the five-level
scale (half stars rounded half up), **unexpectedness** = round-half-up mean of the answered unexpectedness statements
the dataset's own definitions use: 6 - s3 (s3 "I expected to enjoy it" is the opposite of unexpected), s4, s5, s6
(:data:`UNEXPECTEDNESS_STATEMENTS`); a pair with none of them answered gets the neutral level 3.

History: the user's last ``n_history`` rated movies (from training.csv plus the user's other answers.csv ratings)
with a timestamp strictly before the judged rating, oldest first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..paths import shown_path
from ._common import DataFormatError, SerendipityPairs, read_delimited, require_file, round_half_up
from .card import named_card
from .fetch import DatasetSpec, Download, register_dataset

SERENDIPITY_STATEMENTS: tuple[str, ...] = ("s1", "s2", "s3", "s4", "s5", "s6")
_ALL_STATEMENTS: tuple[str, ...] = ("s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8")
PAPER_G_COUNTS: dict[int, int] = {1: 321, 2: 1022, 3: 586, 4: 208, 5: 13}
#: statements g reverses (6 - answer): none, the paper's "average of the five-level responses" (see the module doc)
G_REVERSE_KEYED: tuple[str, ...] = ()
#: statements behind the unexpectedness step score, with their direction (s3 is reverse-keyed)
_UNEXPECTEDNESS_STATEMENTS: tuple[str, ...] = ("s3", "s4", "s5", "s6")
LABEL = str(named_card("serendipity-2018").label)
TERMS = (
    "Serendipity-2018 terms: research use only; no redistribution; no endorsement implied; cite Denis Kotkov, "
    "Joseph A. Konstan, Qian Zhao, and Jari Veijalainen. 2018. Investigating Serendipity in Recommender Systems "
    "Based on Real User Feedback. SAC 2018. https://doi.org/10.1145/3167132.3167276"
)


def serendipity_ground_truth(
    answers: pd.DataFrame,
    statements: Sequence[str] = SERENDIPITY_STATEMENTS,
    reverse_keyed: Sequence[str] = G_REVERSE_KEYED,
    half_even: bool = False,
) -> tuple[pd.Series, pd.Series]:
    """(g as nullable Int64 1..5, unrounded mean) from the statement answers (NaN = not answered).

    ``reverse_keyed`` statements enter as 6 - answer. Rounding is half up (2.5 -> 3), "to the nearest integer";
    ``half_even`` rounds a .5 mean to the even neighbour instead (Python's ``round``, 2.5 -> 2), for
    :func:`g_rule_check` only.
    """
    vals = answers[list(statements)].astype("float64").copy()
    for s in reverse_keyed:
        vals[s] = 6.0 - vals[s]
    mean = vals.mean(axis=1, skipna=True)
    # a .5 mean (an integer sum over an even count) is exact in floating point, so both roundings see the tie
    rounded = np.round(mean.to_numpy()) if half_even else round_half_up(mean.to_numpy())
    g = pd.Series(rounded, index=answers.index).astype("Int64")
    return g, mean


#: the rules :func:`g_rule_check` compares: name -> (reverse-keyed statements, round half to even)
_G_RULES: dict[str, tuple[tuple[str, ...], bool]] = {
    "as given, half up (the book's)": ((), False),
    "as given, half to even": ((), True),
    "s3 reversed, half up": (("s3",), False),
    "s3 reversed, half to even": (("s3",), True),
}


def g_rule_check(answers: pd.DataFrame, paper: dict[int, int] = PAPER_G_COUNTS) -> pd.DataFrame:
    """The g counts of ``answers`` (columns s1..s6) under each rule of :data:`G_RULES`, beside ``paper``'s.

    One row per rule: the pairs at each level (columns ``g=1`` .. ``g=5``), ``n`` (pairs with a g), ``pairs_off``
    (the counts scaled to the paper's total, how many pairs would have to change level to give the paper's counts:
    0 = exactly its distribution) and a chi-square goodness-of-fit test against the paper's shares (scipy
    ``chisquare``). Only the real answers can say which rule the paper used; the stand-in has no statements to check.
    """
    levels = range(1, 6)
    expected = np.array([paper[level] for level in levels], dtype=float)
    rows: list[dict[str, Any]] = []
    for name, (reverse, half_even) in _G_RULES.items():
        g, _ = serendipity_ground_truth(answers, reverse_keyed=reverse, half_even=half_even)
        counts = g.dropna().astype(int).value_counts().reindex(levels, fill_value=0).to_numpy(dtype=float)
        n = counts.sum()
        row: dict[str, Any] = {"rule": name, **{f"g={lv}": int(c) for lv, c in zip(levels, counts, strict=True)}}
        row["n"] = int(n)
        if n:
            row["pairs_off"] = 0.5 * float(np.abs(counts / n * expected.sum() - expected).sum())
            test = stats.chisquare(counts, expected / expected.sum() * n)
            row["chi2"], row["chi2_p"] = float(test.statistic), float(test.pvalue)
        rows.append(row)
    rows.append({"rule": "paper (Sec. 4.1)", **{f"g={lv}": int(paper[lv]) for lv in levels}, "n": int(expected.sum())})
    return pd.DataFrame(rows).set_index("rule")


def _step_scores(answers: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """(relevance, unexpectedness) step scores 1..5 from the data (see the module doc; unexpectedness may be NaN)."""
    relevance = pd.Series(np.clip(round_half_up(answers["rating"].to_numpy(dtype=float)), 1, 5), index=answers.index)
    _, mean = serendipity_ground_truth(answers, _UNEXPECTEDNESS_STATEMENTS, reverse_keyed=("s3",))
    unexpectedness = pd.Series(round_half_up(mean.to_numpy()), index=answers.index)
    return relevance.astype("int64"), unexpectedness


def _movies(path: Path) -> pd.DataFrame:
    cols = ["movieId", "title", "releaseDate", "directedBy", "starring", "imdbId", "tmdbId", "genres"]
    raw = read_delimited(
        path, ",", cols, header=True, quoting_none=False, numeric={"movieId": "int"}, required=["movieId"]
    )
    return pd.DataFrame(
        {
            "item": raw["movieId"].astype("int64"),
            "title": raw["title"].fillna("").astype(str),
            "genres": [
                [g.strip() for g in str(x).split(",") if g.strip()] if isinstance(x, str) else [] for x in raw["genres"]
            ],
            "release_date": raw["releaseDate"],
            "directed_by": raw["directedBy"],
            "starring": raw["starring"],
        }
    )


def _training(path: Path, users: set[int], chunksize: int = 2_000_000) -> pd.DataFrame:
    """Ratings of ``users`` from training.csv, read in chunks; values of kept rows are validated with line numbers."""
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().strip().split(",")
    need = ["userId", "movieId", "rating", "timestamp"]
    if any(c not in header for c in need):
        raise DataFormatError(f"{path}: header (line 1) {header} lacks one of {need}")
    typed = {"userId": "int64", "movieId": "int64", "rating": "float64", "timestamp": "int64"}
    try:  # fast path: a well-formed file parses straight into numbers
        parts = [
            chunk[chunk["userId"].isin(users)]
            for chunk in pd.read_csv(path, usecols=need, dtype=typed, chunksize=chunksize)
        ]
        if parts:
            return pd.concat(parts, ignore_index=True)[need].astype(typed)
    except (ValueError, TypeError, pd.errors.ParserError):
        pass  # the careful path below names the offending line
    keep = {str(u) for u in users}
    parts = []
    offset = 2  # line number of the first data row
    try:
        reader = pd.read_csv(path, usecols=need, dtype=str, keep_default_na=False, chunksize=chunksize)
        for chunk in reader:
            sel = chunk[chunk["userId"].isin(keep)]
            for col, kind in (("userId", "int"), ("movieId", "int"), ("rating", "float"), ("timestamp", "int")):
                v = pd.to_numeric(sel[col], errors="coerce")
                if v.isna().any():
                    pos = int(np.flatnonzero(v.isna().to_numpy())[0])
                    line = offset + int(sel.index[pos]) - int(chunk.index[0])
                    raise DataFormatError(
                        f"{path}: line {line}: column {col!r} should be {kind} but is {sel[col].iloc[pos]!r}"
                    )
                sel = sel.assign(**{col: v})
            parts.append(sel)
            offset += len(chunk)
    except pd.errors.ParserError as exc:
        raise DataFormatError(f"{path}: cannot parse as CSV: {exc}") from exc
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=need)
    return out.astype({"userId": "int64", "movieId": "int64", "rating": "float64", "timestamp": "int64"})


def load_serendipity2018(folder: Path, n_history: int = 10, verbose: bool = True) -> SerendipityPairs:
    """Judged pairs with g (see the module doc) and histories from the real Serendipity-2018 files."""
    folder = Path(folder)
    answers_path = require_file(folder / "answers.csv", "serendipity-2018")
    answers = read_delimited(
        answers_path,
        ",",
        ["userId", "movieId", "rating", "timestamp", *_ALL_STATEMENTS],
        header=True,
        quoting_none=False,
        na_values=["NA"],
        numeric={
            "userId": "int",
            "movieId": "int",
            "rating": "float",
            "timestamp": "int",
            **dict.fromkeys(_ALL_STATEMENTS, "float"),
        },
        required=["userId", "movieId", "rating", "timestamp"],
    )
    for s in _ALL_STATEMENTS:
        vals = answers[s]
        bad = vals.notna() & ~vals.isin([1.0, 2.0, 3.0, 4.0, 5.0])
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataFormatError(
                f"{answers_path}: line {row + 2}: statement {s} must be 1..5 or NA, got {vals.iloc[row]}"
            )
    g, g_mean = serendipity_ground_truth(answers)
    relevance, unexpectedness = _step_scores(answers)
    items = _movies(require_file(folder / "movies.csv", "serendipity-2018"))
    training = _training(require_file(folder / "training.csv", "serendipity-2018"), set(answers["userId"].tolist()))
    ratings = pd.concat(
        [training, answers[["userId", "movieId", "rating", "timestamp"]]], ignore_index=True
    ).sort_values(["userId", "timestamp", "movieId"], kind="stable")
    by_user = {
        u: (grp["timestamp"].to_numpy(), grp["movieId"].to_numpy()) for u, grp in ratings.groupby("userId", sort=False)
    }
    histories = []
    for u, ts in zip(answers["userId"].to_numpy(), answers["timestamp"].to_numpy(), strict=True):
        uts, uitems = by_user[u]
        k = int(np.searchsorted(uts, ts, side="left"))
        histories.append([int(x) for x in uitems[max(0, k - n_history) : k]])
    pairs = pd.DataFrame(
        {
            "user": answers["userId"].astype("int64"),
            "item": answers["movieId"].astype("int64"),
            "g": g,
            "g_mean": g_mean,
            "relevance": relevance,
            "unexpectedness": unexpectedness,
            "history": histories,
            "rating": answers["rating"],
            "timestamp": answers["timestamp"].astype("int64"),
            **{s: answers[s] for s in _ALL_STATEMENTS},
        }
    )
    n_without = int(pairs["g"].isna().sum())
    pairs = pairs[pairs["g"].notna()].reset_index(drop=True)
    pairs["g"] = pairs["g"].astype("int64")
    # no unexpectedness statement answered: the neutral level, never a copy of g
    pairs["unexpectedness"] = pairs["unexpectedness"].fillna(3).astype("int64")
    n_short = int((pairs["history"].map(len) < n_history).sum())
    source = (
        f"GroupLens Serendipity-2018 (serendipity-sac2018) files in {shown_path(folder)}; g = round-half-up mean of "
        f"answered {', '.join(SERENDIPITY_STATEMENTS)}; history = last {n_history} ratings before the judged one. "
        f"{TERMS}"
    )
    result = SerendipityPairs(
        pairs=pairs,
        items=items,
        label=LABEL,
        is_real=True,
        source=source,
        domain=named_card("serendipity-2018").domain_words,
        extra={
            "n_without_answers": n_without,
            "n_short_history": n_short,
            "paper_g_counts": PAPER_G_COUNTS,
            "g_rule_check": g_rule_check(answers),
            "users_of": "serendipity-2018",  # the survey's own user ids, not those of any MovieLens release
        },
    )
    if verbose:
        print(
            f"Loaded {LABEL}: {len(pairs):,} pairs ({n_without} without any s1..s6 answer excluded, "
            f"{n_short} with a history shorter than {n_history})."
        )
        print(f"g counts: {result.g_distribution().to_dict()}; paper: {PAPER_G_COUNTS}")
        check = result.extra["g_rule_check"]
        print("g under each rule (pairs_off: pairs that would have to change level to give the paper's counts):")
        print(check[[f"g={level}" for level in range(1, 6)] + ["n", "pairs_off"]].to_string())
        print(f"Source: {source}")
    return result


register_dataset(
    DatasetSpec(
        name="serendipity-2018",
        title="Serendipity-2018 (GroupLens serendipity-sac2018; Kotkov et al. SAC 2018)",
        homepage="https://grouplens.org/datasets/serendipity-2018/",
        terms="GroupLens/Jyväskylä: research use, no redistribution, cite Kotkov et al. 2018",
        file_sets=(("answers.csv", "movies.csv", "training.csv"),),
        downloads=(
            Download(
                "https://files.grouplens.org/datasets/serendipity-sac2018/serendipity-sac2018.zip",
                "serendipity-sac2018.zip",
                unzip=True,
            ),
        ),
        notes="Without it, load_serendipity_pairs() returns the labelled ML-100K proxy stand-in.",
    )
)
