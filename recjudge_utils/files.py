"""Writing a file whole or not at all.

Holds :func:`atomic_write` (a file object whose content replaces the target only when the block ends without an
error) and its two shortcuts :func:`atomic_write_text` and :func:`atomic_write_bytes`. A reader (chapter 6 reading a
run's manifest while it executes, a second kernel loading a stored recommender) then sees the old content or the new,
never half of the new; a write that fails leaves the old file and no temporary file.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]


@contextlib.contextmanager
def atomic_write(path: os.PathLike[str] | str, mode: Literal["w", "wb"] = "w") -> Iterator[IO[Any]]:
    """A file object to write ``path``'s new content into (text in UTF-8 for ``"w"``, bytes for ``"wb"``).

    The content goes to a temporary file beside ``path`` (the same file system: the final rename is atomic, never a
    copy), which replaces ``path`` when the block ends; when the block raises, the temporary file is removed, ``path``
    is left as it was and the error propagates. Its ``name`` is the temporary file's path, for a check of what was
    written (a checksum) before it is published. The parent folder must exist."""
    target = Path(path)
    # a name of its own per write: two processes writing the same file never share a temporary file; created with
    # open() rather than mkstemp so that the file gets the usual permissions (mkstemp's are the owner's only)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    encoding = None if "b" in mode else "utf-8"
    try:
        with open(tmp, mode.replace("w", "x"), encoding=encoding) as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write_text(path: os.PathLike[str] | str, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) whole: see :func:`atomic_write`."""
    with atomic_write(path, "w") as fh:
        fh.write(text)


def atomic_write_bytes(path: os.PathLike[str] | str, data: bytes) -> None:
    """Replace ``path`` with ``data`` whole: see :func:`atomic_write`."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)
