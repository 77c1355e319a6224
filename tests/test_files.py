"""Atomic writes: the new content whole, or the old content and no temporary file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from recjudge_utils.files import atomic_write, atomic_write_bytes, atomic_write_text


def test_text_and_bytes_replace_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    atomic_write_text(path, "old ✓\n")
    assert path.read_text(encoding="utf-8") == "old ✓\n"
    atomic_write_text(path, "new\n")
    assert path.read_text(encoding="utf-8") == "new\n"
    atomic_write_bytes(tmp_path / "a.bin", b"\x00\x01")
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "manifest.json"]  # no temporary file left


@pytest.mark.parametrize("mode", ["w", "wb"])
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary_file(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError, match="crash"), atomic_write(path, mode) as fh:  # type: ignore[arg-type]
        fh.write("half of the n" if mode == "w" else b"half of the n")
        fh.flush()  # the half is on disk, in the temporary file
        raise RuntimeError("crash")
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]


def test_a_failed_first_write_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), atomic_write(tmp_path / "new.txt") as fh:
        fh.write("x")
        raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def test_the_temporary_file_is_beside_the_target_and_can_be_checked_before_it_replaces_it(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    with atomic_write(path, "wb") as fh:
        fh.write(b"data")
        fh.flush()
        written = Path(fh.name)
        assert written.parent == tmp_path and written.read_bytes() == b"data" and not path.exists()
    assert path.read_bytes() == b"data" and not written.exists()


def test_the_file_gets_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0)
    os.umask(umask)
    atomic_write_text(tmp_path / "shared.txt", "x")
    assert stat.S_IMODE((tmp_path / "shared.txt").stat().st_mode) == 0o666 & ~umask
