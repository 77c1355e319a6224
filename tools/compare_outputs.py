"""Compare what two executions of the chapters show a reader, output by output.

``python -m tools.compare_outputs BEFORE AFTER`` takes two folders of executed notebooks (e.g.
``runs/default/executed`` of two commits) and lists, per notebook, every displayed output (tables, Markdown,
figures, plain results; streams apart) in order, and what differs:

* a table compares by its caption and cell texts (pandas Styler HTML, read with Beautiful Soup), so a change of
  styling alone is reported as such and not as a lost table;
* Markdown and plain text compare exactly, after the random ids pandas gives a Styler are made equal;
* a figure compares by its PNG bytes (identical), else by its pixel size (redrawn), else it is missing.

The exit status is 1 when an output of BEFORE has no counterpart in AFTER or any text differs, so a refactor that
means to change nothing can be checked in one command. Streams (progress bars, timings) are counted, not compared.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import struct
import sys
from base64 import b64decode
from dataclasses import dataclass
from pathlib import Path

from recjudge_utils._extras import optional_imports

__all__ = ["Output", "compare", "main", "outputs"]

_STYLER_ID = re.compile(r"T_[0-9a-f]{5}")
_ADDRESS = re.compile(r"0x[0-9a-f]{6,}")
_GLUED = "application/papermill.record/"
#: headers of columns holding wall time
_TIMING = re.compile(r"(?i)(seconds|time \(s\)|wall.*|s)")
_NUMBER = re.compile(r"[0-9.,]+( s)?")


@dataclass(frozen=True)
class Output:
    """One displayed output: its kind (table, markdown, figure, text) and what a reader gets from it."""

    kind: str
    content: str
    detail: str = ""  # a table's full HTML, a figure's pixel size


def _table(html: str) -> str:
    """Caption and cell texts, with the cells of timing columns (wall time differs between any two executions)
    replaced by ``(time)``."""
    with optional_imports("book"):
        from bs4 import BeautifulSoup
    soup = BeautifulSoup(html, "html.parser")
    caption = soup.find("caption")
    rows = [[c.get_text(" ", strip=True) for c in tr.find_all(["th", "td"])] for tr in soup.find_all("tr")]
    timing = {i for r in rows for i, cell in enumerate(r) if _TIMING.fullmatch(cell)}
    shown = [" | ".join("(time)" if i in timing and r is not rows[0] and _NUMBER.fullmatch(c) else c
                        for i, c in enumerate(r)) for r in rows]  # fmt: skip
    return "\n".join([f"caption: {caption.get_text(' ', strip=True) if caption else ''}", *shown])


def _png_size(data: bytes) -> str:
    width, height = struct.unpack(">II", data[16:24])
    return f"{width}x{height}"


def outputs(path: Path) -> list[Output]:
    """The displayed outputs of one executed notebook, in order (streams and errors left out)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found: list[Output] = []
    for cell in nb.get("cells", []):
        for out in cell.get("outputs", []):
            # glued outputs (myst_nb.glue) carry papermill's record prefix on their MIME types
            data = {k.removeprefix(_GLUED): v for k, v in (out.get("data") or {}).items()}
            if "image/png" in data:
                png = b64decode("".join(data["image/png"]))
                found.append(Output("figure", hashlib.sha256(png).hexdigest(), _png_size(png)))
            elif "text/html" in data and "<table" in "".join(data["text/html"]):
                html = _STYLER_ID.sub("T_x", "".join(data["text/html"]))
                found.append(Output("table", _table(html), html))
            elif "text/markdown" in data:
                found.append(Output("markdown", _STYLER_ID.sub("T_x", "".join(data["text/markdown"]))))
            elif "text/plain" in data:
                found.append(Output("text", _ADDRESS.sub("0x…", "".join(data["text/plain"]))))
    return found


def _diff(a: str, b: str) -> str:
    lines = difflib.unified_diff(a.splitlines(), b.splitlines(), "before", "after", lineterm="", n=1)
    return "\n".join(list(lines)[2:])


def compare(before: Path, after: Path, out: list[str]) -> bool:
    """Compare the notebooks of two folders into ``out`` (lines); True when nothing a reader sees was lost."""
    same = True
    for nb in sorted(before.glob("*.ipynb")):
        other = after / nb.name
        if not other.exists():
            out.append(f"{nb.name}: missing after")
            same = False
            continue
        a, b = outputs(nb), outputs(other)
        matcher = difflib.SequenceMatcher(a=[(o.kind, o.content) for o in a], b=[(o.kind, o.content) for o in b])
        counts: dict[str, int] = {}
        notes: list[str] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for same_a, same_b in zip(a[i1:i2], b[j1:j2], strict=True):
                    key = f"identical {same_a.kind}" + (" (style differs)" if same_a.detail != same_b.detail else "")
                    counts[key] = counts.get(key, 0) + 1
                continue
            olds, news = a[i1:i2], b[j1:j2]
            for k in range(max(len(olds), len(news))):
                o: Output | None = olds[k] if k < len(olds) else None
                p: Output | None = news[k] if k < len(news) else None
                if o and p and o.kind == p.kind == "figure":
                    counts["figure redrawn"] = counts.get("figure redrawn", 0) + 1
                    notes.append(f"  figure #{i1 + k}: redrawn ({o.detail} -> {p.detail})")
                elif o and p and o.kind == p.kind:
                    counts[f"changed {o.kind}"] = counts.get(f"changed {o.kind}", 0) + 1
                    notes.append(f"  {o.kind} #{i1 + k} changed:\n" + _diff(o.content, p.content))
                    same = False
                elif o:
                    counts[f"lost {o.kind}"] = counts.get(f"lost {o.kind}", 0) + 1
                    notes.append(f"  {o.kind} #{i1 + k} lost:\n    " + o.content[:300].replace("\n", "\n    "))
                    same = False
                elif p:
                    counts[f"new {p.kind}"] = counts.get(f"new {p.kind}", 0) + 1
                    notes.append(f"  {p.kind} (after #{j1 + k}) new:\n    " + p.content[:300].replace("\n", "\n    "))
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        out.append(f"{nb.name}: {len(a)} outputs before, {len(b)} after: {summary}")
        out.extend(notes)
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="folder of executed notebooks (before)")
    parser.add_argument("after", type=Path, help="folder of executed notebooks (after)")
    args = parser.parse_args(argv)
    for folder in (args.before, args.after):
        if not folder.is_dir():
            print(f"error: {folder} is not a folder of executed notebooks", file=sys.stderr)
            return 2
    lines: list[str] = []
    same = compare(args.before, args.after, lines)
    print("\n".join(lines))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
