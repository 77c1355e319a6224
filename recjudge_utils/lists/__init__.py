"""Recommendation lists from outside the book: :func:`read_lists` reads the files RS toolkits write (TREC runs as
ranx, ir_measures and trec_eval read them; LensKit, Microsoft Recommenders and RecBole tables as CSV, TSV or
Parquet; Elliot's headerless TSV) into one checked :class:`RecommendationLists`, refusing with
:class:`ListFormatError` whatever it cannot take as it is (unknown ids, repeated items, short lists, unknown
formats), and :func:`write_trec_run` / :func:`write_trec_runs` write the book's own recommenders' lists as TREC runs
so that they go through the same reader. :mod:`.read` holds the reader, :mod:`.write` the TREC writer.
"""

from recjudge_utils.lists.read import (
    KNOWN_FORMATS,
    ListFormatError,
    RecommendationLists,
    SystemLists,
    read_lists,
)
from recjudge_utils.lists.write import write_trec_run, write_trec_runs

__all__ = [
    "KNOWN_FORMATS",
    "ListFormatError",
    "RecommendationLists",
    "SystemLists",
    "read_lists",
    "write_trec_run",
    "write_trec_runs",
]
