"""Optuna storages by URL, opened so that any number of processes may create the same study at the same moment.

A storage URL is either an Optuna RDB URL (``sqlite:///...``, ``postgresql://...``, ``mysql://...``: passed to
Optuna unchanged; the choice for several machines) or a journal file (``journal:///abs/path/optuna.log``,
``journal://relative.log`` or a plain path ending ``.log``): Optuna's ``JournalStorage`` on a
``JournalFileBackend``, an append-only log guarded by a symlink lock, safe for several processes on one machine or
on a shared file system (NFS) where SQLite's locking is not.

Two workers starting together both create the RDB schema and the study: one of them loses the race with an
integrity or "already exists" error (``alembic_version.version_num`` on SQLite; a duplicate ``pg_type`` row on
PostgreSQL). :func:`create_or_load_study` opens the storage and creates the study, or loads it when it exists,
retrying on exactly those errors, so no worker ever fails because another one started at the same moment.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from recjudge_utils._extras import optional_imports

with optional_imports("recommenders"):
    import optuna
    from optuna.storages import BaseStorage, JournalStorage, RDBStorage
    from optuna.storages.journal import JournalFileBackend

__all__ = [
    "JOURNAL_SCHEME",
    "complete_trials",
    "create_or_load_study",
    "journal_path",
    "journal_url",
    "open_storage",
]

T = TypeVar("T")
JOURNAL_SCHEME = "journal://"
#: database errors another process's simultaneous creation of the same schema or study causes (and SQLite's lock)
_RACE = re.compile(r"already exists|unique constraint|duplicate|integrityerror|database is locked", re.IGNORECASE)
_ATTEMPTS = 12
_opened: dict[str, BaseStorage] = {}  # one storage per URL and process: a journal is replayed once, then followed


def journal_path(url: str) -> Path | None:
    """The log file of a journal URL (``journal://PATH`` or a plain path ending ``.log``); None for an RDB URL."""
    if url.startswith(JOURNAL_SCHEME):
        return Path(url.removeprefix(JOURNAL_SCHEME))
    if "://" not in url and url.endswith(".log"):
        return Path(url)
    return None


def journal_url(path: Path | str) -> str:
    """The journal URL of a log file (absolute: workers started elsewhere find the same file)."""
    return f"{JOURNAL_SCHEME}{Path(path).resolve()}"


def _is_race(exc: BaseException) -> bool:
    with optional_imports("recommenders"):
        import sqlalchemy.exc  # optuna's RDB storage depends on it; imported here so journal-only use need not load it

    if isinstance(exc, sqlalchemy.exc.IntegrityError | optuna.exceptions.DuplicatedStudyError):
        return True
    return isinstance(exc, sqlalchemy.exc.OperationalError | sqlalchemy.exc.ProgrammingError) and bool(
        _RACE.search(str(exc))
    )


def _retrying(action: Callable[[], T]) -> T:
    """``action()``, again after a short random pause while it fails because another process raced it."""
    for attempt in range(_ATTEMPTS):
        try:
            return action()
        except Exception as exc:
            if attempt == _ATTEMPTS - 1 or not _is_race(exc):
                raise
            # random, growing pauses: two processes that collided once do not collide again in lockstep
            time.sleep(random.uniform(0.05, 0.2) * (1.5**attempt))
    raise AssertionError("unreachable")


def open_storage(url: str) -> BaseStorage:
    """The storage behind ``url`` (journal file or RDB URL), opened once per process; schema races retried."""
    if url in _opened:
        return _opened[url]
    path = journal_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        storage: BaseStorage = JournalStorage(JournalFileBackend(str(path)))
    elif "://" in url:
        # SQLite: wait for a busy database instead of failing after 5 s (several local workers write to it)
        kwargs = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {}
        storage = _retrying(lambda: RDBStorage(url, engine_kwargs=kwargs))
    else:
        raise ValueError(
            f"Optuna storage {url!r}: give an RDB URL (sqlite:///FILE, postgresql://USER@HOST/DB, mysql://...), "
            f"a journal file (journal:///PATH/optuna.log) or a path ending .log"
        )
    _opened[url] = storage
    return storage


def create_or_load_study(url: str | None, study_name: str | None, sampler: optuna.samplers.BaseSampler) -> optuna.Study:
    """The maximising study ``study_name`` in the storage at ``url`` (created, or loaded when another process
    created it first); in memory when ``url`` is None."""
    if url is None:
        return optuna.create_study(direction="maximize", sampler=sampler)
    storage = open_storage(url)
    return _retrying(
        lambda: optuna.create_study(
            direction="maximize", sampler=sampler, storage=storage, study_name=study_name, load_if_exists=True
        )
    )


def complete_trials(url: str, study_name: str) -> int | None:
    """How many trials of ``study_name`` are complete in the storage at ``url`` (None: no such study)."""
    storage = open_storage(url)
    try:
        study_id = storage.get_study_id_from_name(study_name)
    except KeyError:
        return None
    return len(storage.get_all_trials(study_id, deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
