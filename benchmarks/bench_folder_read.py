"""Benchmark: ``load_folder_dataset`` on 1 M and 10 M synthetic interactions, as RecBole atomic files and as Parquet.

Writes, to a temporary folder, interactions of ``n / 50`` users (string ids ``u<k>``, so the reader maps them) over a
catalogue of 50,000 items (string ids ``i<k>``, a title and a genre list each), with ratings 1..5 and epoch-second
times, in both layouts: ``bench.inter`` + ``bench.item`` (tab-separated, typed headers) and ``interactions.parquet``
+ ``items.parquet`` (the genres a list column). Each folder is read by ``load_folder_dataset(verbose=False)`` (every
check included) in a fresh subprocess, which reports the seconds the read took, the process's peak resident memory
(``ru_maxrss``) and its peak before the read (the interpreter with pandas, pyarrow and the package imported).
Reading scales linearly when the large / small time ratio is near the size ratio (10); at the ``--small`` sizes the
fixed costs (the catalogue, the reader's buffers) keep the ratio well below that.
Goal (issue 43): 10 M interactions in under 20 s and under 3 GB per layout on 2 cores, 10 M / 1 M ratio under 12.

Run: ``.venv/bin/python benchmarks/bench_folder_read.py`` (1 M and 10 M; writing the 10 M files takes a while and
about 1.5 GB of temporary disk), or ``--small`` for 100 k and 1 M.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

N_ITEMS = 50_000
USERS_PER = 50  # interactions per user on average
GENRES = ("fantasy", "classics", "science-fiction", "romance", "dystopia", "children", "history", "poetry")


def _ids(prefix: str, codes: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(pa.scalar(prefix), pa.array(codes).cast(pa.string()), pa.scalar(""))


def make_tables(n: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    """(interactions, items): ``n`` interactions of ``n / USERS_PER`` users over ``N_ITEMS`` items."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, max(1, n // USERS_PER), size=n)
    items = np.minimum(rng.zipf(1.3, size=n) - 1, N_ITEMS - 1)  # a long tail, as real catalogues have
    inter = pa.table(
        {
            "user_id": _ids("u", users),
            "item_id": _ids("i", items),
            "rating": pa.array(rng.integers(1, 6, size=n).astype("float64")),
            "timestamp": pa.array(rng.integers(1_500_000_000, 1_700_000_000, size=n)),
        }
    )
    codes = np.arange(N_ITEMS)
    picks = rng.integers(0, len(GENRES), size=(N_ITEMS, 2))
    genre_lists = [sorted({GENRES[a], GENRES[b]}) for a, b in picks]
    catalogue = pa.table(
        {
            "item_id": _ids("i", codes),
            "title": _ids("A book called number ", codes),
            "genres": pa.array(genre_lists, type=pa.list_(pa.string())),
        }
    )
    return inter, catalogue


def _write_atomic(path: Path, table: pa.Table, header: list[str]) -> None:
    """A tab-separated atomic file with RecBole's typed header (written by hand: pyarrow would quote it)."""
    path.write_text("\t".join(header) + "\n", encoding="utf-8")
    with open(path, "ab") as fh:
        options = pacsv.WriteOptions(delimiter="\t", quoting_style="none", include_header=False)
        pacsv.write_csv(table, fh, write_options=options)


def write_recbole(folder: Path, inter: pa.Table, catalogue: pa.Table) -> None:
    folder.mkdir()
    _write_atomic(folder / "bench.inter", inter, ["user_id:token", "item_id:token", "rating:float", "timestamp:float"])
    items = pa.table(
        {
            "item_id": catalogue["item_id"],
            "title": catalogue["title"],
            "genres": pc.binary_join(catalogue["genres"], " "),
        }
    )
    _write_atomic(folder / "bench.item", items, ["item_id:token", "title:token_seq", "genres:token_seq"])


def write_parquet(folder: Path, inter: pa.Table, catalogue: pa.Table) -> None:
    folder.mkdir()
    pq.write_table(inter, folder / "interactions.parquet")
    pq.write_table(catalogue, folder / "items.parquet")


def child(folder: str, n: int) -> None:
    """Read one folder and print {seconds, peak_mb, before_mb} as JSON (runs in its own process)."""
    import resource

    from recjudge_utils.data.folder import load_folder_dataset

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    ds = load_folder_dataset(folder, verbose=False)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert len(ds.interactions) == n, (len(ds.interactions), n)
    print(json.dumps({"seconds": seconds, "peak_mb": peak, "before_mb": before}))


def writer(tmp: str, n: int, size: str) -> None:
    """Write both layouts of ``n`` interactions and print {layout: [folder, seconds]} as JSON (own process)."""
    inter, catalogue = make_tables(n)
    out = {}
    for layout, write in (("recbole", write_recbole), ("parquet", write_parquet)):
        folder = Path(tmp) / f"{layout}-{size}"
        started = time.perf_counter()
        write(folder, inter, catalogue)
        out[layout] = [str(folder), time.perf_counter() - started]
    print(json.dumps(out))


def _run(*args: str) -> dict:
    # every step in its own process: a child inherits its parent's peak RSS on Linux, so the parent stays small and
    # the data are generated in a process of their own
    out = subprocess.run([sys.executable, __file__, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(small: bool) -> None:
    sizes = {"100k": 100_000, "1M": 1_000_000} if small else {"1M": 1_000_000, "10M": 10_000_000}
    (lo, _), (hi, _) = sizes.items()
    print(f"load_folder_dataset(verbose=False), one subprocess per folder; {N_ITEMS:,} catalogue items")
    print(f"{'layout':<9}{'interactions':>14}{'write s':>9}{'read s':>9}{'peak RSS MB':>13}{'before read':>13}")
    times: dict[tuple[str, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size, n in sizes.items():
            written = _run("--write", tmp, str(n), size)
            for layout, (folder, seconds) in written.items():
                got = _run("--child", folder, str(n))
                times[size, layout] = got["seconds"]
                print(
                    f"{layout:<9}{n:>14,}{seconds:>9.1f}{got['seconds']:>9.2f}{got['peak_mb']:>13.0f}"
                    f"{got['before_mb']:>13.0f}"
                )
                shutil.rmtree(folder)  # free the disk before the next, larger size is written
    for layout in ("recbole", "parquet"):
        ratio = times[hi, layout] / times[lo, layout]
        print(f"{layout}: read time {hi} / {lo} = {ratio:.2f} (linear: {sizes[hi] / sizes[lo]:.0f})")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "--write":
        writer(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
        parser.add_argument("--small", action="store_true", help="100 k and 1 M interactions instead of 1 M and 10 M")
        main(small=parser.parse_args().small)
