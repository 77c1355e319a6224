"""Persistent on-disk cache of raw judge responses (SQLite in WAL mode).

One row per finished chat completion, committed immediately, so a process killed with SIGKILL
loses at most the calls that were still in flight. Only successful responses are stored (errors
are never cached); the raw text is kept, so a changed parser never needs new calls.

The key (:func:`cache_key`) is a SHA-256 over everything that changes the answer: the endpoint
identity (base URL, or ``local:<gguf sha256>`` for the embedded model; never the API key), the model,
the messages, temperature, seed, max_tokens, the response format (with its JSON schema), the
logprob settings, and the prompt template id and version.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["JudgeCache", "cache_key", "messages_hash"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    created REAL NOT NULL,
    endpoint TEXT NOT NULL,
    model TEXT NOT NULL,
    template_id TEXT,
    template_version TEXT,
    response TEXT NOT NULL
)
"""


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def messages_hash(messages: Any) -> str:
    """SHA-256 of the canonical JSON of a message list."""
    return hashlib.sha256(_canonical(list(messages)).encode("utf-8")).hexdigest()


def cache_key(
    *,
    endpoint: str,
    model: str,
    messages: Any,
    temperature: float | None,
    seed: int | None,
    max_tokens: int | None,
    response_format: dict | None,
    template_id: str,
    template_version: str,
    extra: dict | None = None,
) -> str:
    """Cache key: SHA-256 over everything that changes the answer (never the API key)."""
    payload = {
        "endpoint": endpoint,
        "model": model,
        "messages": list(messages),
        "temperature": None if temperature is None else float(temperature),
        "seed": seed,
        "max_tokens": None if max_tokens is None else int(max_tokens),
        "response_format": response_format,
        "template_id": template_id,
        "template_version": str(template_version),
        "extra": extra or {},
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


class JudgeCache:
    """Thread-safe SQLite (WAL) store of ``key -> response dict``; every put is its own commit."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against process crashes (SIGKILL) in WAL mode; only an OS crash can lose the tail.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.execute(_SCHEMA)

    def get(self, key: str) -> dict | None:
        """The stored answer under ``key``, or None."""
        with self._lock:
            row = self._conn.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def get_many(self, keys: list[str]) -> dict[str, dict]:
        """The stored answers of the keys that have one."""
        out: dict[str, dict] = {}
        uniq = list(dict.fromkeys(keys))
        with self._lock:
            for i in range(0, len(uniq), 500):
                chunk = uniq[i : i + 500]
                marks = ",".join("?" * len(chunk))
                for k, r in self._conn.execute(f"SELECT key, response FROM responses WHERE key IN ({marks})", chunk):
                    out[k] = json.loads(r)
        return out

    def put(
        self,
        key: str,
        response: dict,
        *,
        endpoint: str,
        model: str,
        template_id: str | None = None,
        template_version: str | None = None,
    ) -> None:
        """Store one successful response and commit at once."""
        data = json.dumps(response, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, created, endpoint, model, template_id, template_version,"
                " response) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, time.time(), endpoint, model, template_id, template_version, data),
            )

    def put_many(self, rows: list[tuple[str, dict, str, str, str | None, str | None]]) -> None:
        """Store many responses ``(key, response, endpoint, model, template_id, template_version)`` in ONE
        transaction: all of them or, on any error, none."""
        now = time.time()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO responses (key, created, endpoint, model, template_id, template_version,"
                    " response) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [(k, now, e, m, t, v, json.dumps(r, ensure_ascii=False)) for k, r, e, m, t, v in rows],
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
