"""The before/after check of what the chapters show: a lost or changed output fails it, a restyled table or a
redrawn figure does not."""

from __future__ import annotations

import json
import struct
import zlib
from base64 import b64encode
from pathlib import Path

from tools.compare_outputs import main, outputs


def _png(width: int, shade: int) -> str:
    """A tiny valid grey PNG of ``width`` x 1 pixels."""
    raw = b"".join(b"\x00" + bytes([shade]) * width for _ in range(1))
    chunk = lambda kind, data: (  # noqa: E731
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, 1, 8, 0, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")
    return b64encode(png).decode()


def _table(caption: str, cell: str, style: str = "") -> str:
    return (
        f'<style type="text/css">#T_1a2b3 td {{{style}}}</style><table id="T_1a2b3"><caption>{caption}</caption>'
        f"<tr><th>x</th></tr><tr><td>{cell}</td></tr></table>"
    )


def _notebook(folder: Path, outputs_: list[dict[str, object]], name: str = "01_x.ipynb") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cells = [{"cell_type": "code", "source": "", "metadata": {}, "outputs": [o], "execution_count": 1}
             for o in outputs_]  # fmt: skip
    path = folder / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


def _md(text: str) -> dict[str, object]:
    return {"output_type": "display_data", "data": {"text/markdown": text, "text/plain": "x"}, "metadata": {}}


def _html(html: str) -> dict[str, object]:
    return {"output_type": "execute_result", "data": {"text/html": html, "text/plain": "x"}, "metadata": {}}


def _fig(png: str, glued: bool = True) -> dict[str, object]:
    prefix = "application/papermill.record/" if glued else ""
    return {"output_type": "display_data", "data": {f"{prefix}image/png": png}, "metadata": {}}


def test_outputs_reads_tables_markdown_and_glued_figures(tmp_path: Path) -> None:
    path = _notebook(tmp_path, [_md("- a"), _html(_table("Table 1", "0.5 [0.1, 0.9]")), _fig(_png(3, 0))])
    kinds = [o.kind for o in outputs(path)]
    assert kinds == ["markdown", "table", "figure"]
    assert outputs(path)[1].content == "caption: Table 1\nx\n0.5 [0.1, 0.9]"
    assert outputs(path)[2].detail == "3x1"


def test_same_outputs_pass_and_restyling_or_redrawing_is_not_a_loss(tmp_path: Path, capsys) -> None:
    _notebook(tmp_path / "a", [_md("- a"), _html(_table("T", "1", "color: red")), _fig(_png(3, 0))])
    _notebook(tmp_path / "b", [_md("- a"), _html(_table("T", "1", "padding: 1em")), _fig(_png(4, 9), glued=False)])
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    printed = capsys.readouterr().out
    assert "1 identical table (style differs)" in printed and "1 figure redrawn" in printed


def test_a_lost_or_changed_output_fails(tmp_path: Path, capsys) -> None:
    _notebook(tmp_path / "a", [_md("- a"), _md("- b"), _html(_table("T", "1"))])
    _notebook(tmp_path / "lost", [_md("- a"), _html(_table("T", "1"))])
    _notebook(tmp_path / "changed", [_md("- a"), _md("- b"), _html(_table("T", "2"))])
    assert main([str(tmp_path / "a"), str(tmp_path / "lost")]) == 1
    assert "markdown #1 lost" in capsys.readouterr().out
    assert main([str(tmp_path / "a"), str(tmp_path / "changed")]) == 1
    out = capsys.readouterr().out
    assert "table #2 changed" in out and "-1" in out and "+2" in out


def test_a_missing_notebook_or_folder_fails(tmp_path: Path) -> None:
    _notebook(tmp_path / "a", [_md("- a")])
    (tmp_path / "b").mkdir()
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert main([str(tmp_path / "a"), str(tmp_path / "nowhere")]) == 2
