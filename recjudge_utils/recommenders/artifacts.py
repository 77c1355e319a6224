"""Trained recommenders stored once and shared by every run: rerunning the book with another judge retrains nothing.

An artifact is keyed on everything that decides what training produces: the dataset's contents (a hash of its
interactions), the split and fold, the recommender's registry key and the hash of its module's source code, the
search space and trial count, the fixed parameters and the seed. The key fields are written beside the pickled
result (``runs/artifacts/<kind>/<key>.json``), so an artifact says what it is. A code change to a recommender, a
different search space or another seed is another key: stale models are never reused. Writes are atomic (a killed
run leaves no half-written artifact).

In plan mode (``--plan``) the store is only read: a missing artifact becomes the caller's stand-in
(:mod:`recjudge_utils.recommenders.plan_standin`), and nothing is computed, stored or logged.

Every computation is appended to ``runs/artifacts/computed.jsonl`` (kind, key, recommender, seconds, the run
folder): the book runner sums the new lines into the run manifest's ``training_seconds``, so a run says how much
of its time went into training (zero when every model was reused).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import pickle
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from recjudge_utils.files import atomic_write
from recjudge_utils.paths import artifacts_dir
from recjudge_utils.recommenders import recommender_class
from recjudge_utils.recommenders.plan_standin import STORED, note_plan, planning_without_training

__all__ = [
    "ArtifactStore",
    "code_hash",
    "compute_log",
    "dataset_fingerprint",
    "frame_fingerprint",
    "function_hash",
]

T = TypeVar("T")
_COMPUTE_LOG = "computed.jsonl"
_depth = 0  # nesting of get_or_compute calls: a tuned model's inner trainings are not counted twice


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def dataset_fingerprint(interactions: pd.DataFrame) -> str:
    """A hash of the interactions' contents (columns user, item, rating, timestamp where present)."""
    cols = [c for c in ("user", "item", "rating", "timestamp") if c in interactions.columns]
    values = pd.util.hash_pandas_object(interactions[cols], index=False).to_numpy()
    return hashlib.sha256(values.tobytes()).hexdigest()[:20]


def frame_fingerprint(frame: pd.DataFrame) -> str:
    """A hash of any frame's contents (list cells such as genres are hashed through their text)."""
    values = pd.util.hash_pandas_object(frame.astype(str), index=False).to_numpy()
    return hashlib.sha256(values.tobytes()).hexdigest()[:20]


def code_hash(name: str) -> str:
    """A hash of the source file of the recommender registered as ``name`` (and of its base classes' files)."""
    h = hashlib.sha256()
    for cls in recommender_class(name).__mro__:
        module = inspect.getmodule(cls)
        path = getattr(module, "__file__", None)
        if path and "recjudge_utils" in path:
            h.update(Path(path).read_bytes())
    return h.hexdigest()[:16]


def function_hash(fn: Callable[..., Any]) -> str:
    """A hash of a function's bytecode and constants (e.g. a TPE search space)."""
    code = fn.__code__
    return hashlib.sha256(code.co_code + repr(code.co_consts).encode() + repr(code.co_names).encode()).hexdigest()[:16]


class ArtifactStore:
    """``get_or_compute(kind, fields, compute)``: the stored result for ``fields``, or compute and store it."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or artifacts_dir()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(fields: Mapping[str, Any]) -> str:
        """The artifact's name: a hash of its key fields in canonical JSON."""
        return hashlib.sha256(_canonical(fields).encode("utf-8")).hexdigest()[:32]

    def path(self, kind: str, fields: Mapping[str, Any]) -> Path:
        """Where the artifact of ``kind`` with these key fields is (or would be) stored."""
        return self.root / kind / f"{self.key(fields)}.pkl"

    def get(self, kind: str, fields: Mapping[str, Any]) -> Any | None:
        """The stored artifact, or None."""
        path = self.path(kind, fields)
        if not path.is_file():
            return None
        with open(path, "rb") as fh:
            return pickle.load(fh)

    def put(self, kind: str, fields: Mapping[str, Any], value: Any) -> Path:
        """Store ``value`` atomically beside its key fields (nothing in plan mode); returns its path."""
        path = self.path(kind, fields)
        if planning_without_training():  # a plan leaves the store as it found it
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        path.with_suffix(".json").write_text(_canonical(dict(fields)) + "\n", encoding="utf-8")
        return path

    def get_or_compute(
        self,
        kind: str,
        fields: Mapping[str, Any],
        compute: Callable[[], T],
        stand_in: Callable[[], T] | None = None,
    ) -> tuple[T, bool]:
        """(value, True) when stored; else (compute(), False) after storing it. In plan mode
        (:func:`~recjudge_utils.recommenders.plan_standin.planning_without_training`) nothing is computed or
        stored: a missing artifact is ``stand_in()`` (required there)."""
        stored = self.get(kind, fields)
        planning = planning_without_training()
        if planning and stored is not None:
            note_plan(str(fields.get("recommender")), STORED)
        if stored is not None:
            self.hits += 1
            return stored, True
        self.misses += 1
        if planning:
            if stand_in is None:
                raise RuntimeError(f"plan mode trains nothing, and artifact kind {kind!r} has no stand-in")
            return stand_in(), False
        global _depth
        started = time.perf_counter()
        _depth += 1
        try:
            value = compute()
        finally:
            _depth -= 1
        seconds = time.perf_counter() - started
        self.put(kind, fields, value)
        self._log_compute(kind, fields, seconds, nested=_depth > 0)
        return value, False

    def _log_compute(self, kind: str, fields: Mapping[str, Any], seconds: float, nested: bool) -> None:
        if planning_without_training():
            return
        entry = {
            "kind": kind,
            "key": self.key(fields),
            "recommender": fields.get("recommender"),
            "seconds": round(seconds, 3),
            "nested": nested,
            "run_dir": os.environ.get("RECJUDGE_RUN_DIR"),
        }
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / _COMPUTE_LOG, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")

    def count(self, kind: str | None = None) -> int:
        """How many artifacts are stored (of one kind)."""
        folder = self.root / kind if kind else self.root
        return sum(1 for _ in folder.rglob("*.pkl")) if folder.exists() else 0


def compute_log(root: Path | None = None, start: int = 0) -> list[dict[str, Any]]:
    """The artifact computations logged from line ``start`` on (see the module docstring)."""
    path = (root or artifacts_dir()) / _COMPUTE_LOG
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for k, line in enumerate(fh) if k >= start and line.strip()]
