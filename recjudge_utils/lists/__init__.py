"""Recommendation lists: one shape, a reader and a writer. :mod:`.types` holds the shape every protocol takes,
:class:`RecommendationLists` (every system's lists, cut once to ``top_k``) and the mapping it exposes,
:data:`ListsBySystem`; :mod:`.read` holds :func:`read_lists`, which reads the files RS toolkits write (TREC runs as
ranx, ir_measures and trec_eval read them; LensKit, Microsoft Recommenders and RecBole tables as CSV, TSV or Parquet;
Elliot's headerless TSV) into one checked :class:`RecommendationLists`, refusing with :class:`ListFormatError`
whatever it cannot take as it is (unknown ids, repeated items, short lists, unknown formats); :mod:`.write` holds
:func:`write_trec_run` / :func:`write_trec_runs`, which write the book's own recommenders' lists as TREC runs so that
they go through the same reader.
"""

from recjudge_utils.lists.read import KNOWN_FORMATS, ListFormatError, read_lists
from recjudge_utils.lists.types import ListsBySystem, RecommendationLists, SystemLists, lists_frame
from recjudge_utils.lists.write import write_trec_run, write_trec_runs

__all__ = [
    "KNOWN_FORMATS",
    "ListFormatError",
    "ListsBySystem",
    "RecommendationLists",
    "SystemLists",
    "lists_frame",
    "read_lists",
    "write_trec_run",
    "write_trec_runs",
]
