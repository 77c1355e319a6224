"""Shared test fixtures: run-folder isolation, the fake OpenAI server on the path, one scripted judge, and a data folder
with a synthetic MovieLens-100K for the tests that read the dataset from the data folder.

The scripted judge is a backend registered like any other (``backend="scripted"``): a test gives it a
function from a request to the answer text (or an exception, or None for "no answer"), and gets a real
:class:`~recjudge_utils.judge.client.JudgeClient` around it, so every protocol test exercises the real client
path: planning, the cache, deduplication, parsing into ``JudgeResult``, the JSONL log and the usage table.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from recjudge_utils.judge.backends import register_backend
from recjudge_utils.judge.backends.base import Backend, CallOutcome, Deliver, Job, Lookup, PreparedCall
from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.transport import RetryPolicy
from recjudge_utils.judge.types import Completion, JudgeRequest

# tests/ and its folders are not packages, and test modules share toy worlds by importing each other across the
# folders (``from test_experiment_arena import toy_dataset``): every folder goes on the path, tests/ first (its helper
# modules: fake_openai_server, locations, claims, ...)
_TESTS = Path(__file__).parent
sys.path[:0] = [str(_TESTS), *(str(p) for p in sorted(_TESTS.iterdir()) if p.is_dir() and any(p.glob("test_*.py")))]

Answer = Callable[[JudgeRequest], "str | Exception | Completion | None"]


@register_backend("scripted")
class ScriptedBackend(Backend):
    """Answers each request with ``answer(request)``; records every request it was asked."""

    name = "scripted"
    route = "chat"

    instances = 0

    def __init__(self, model: str = "scripted", answer: Answer | None = None, offline: bool = False) -> None:
        ScriptedBackend.instances += 1
        self.api_model = model
        self.model_name = f"scripted judge ({model})"
        # one cache identity per instance: two scripts in one test never read each other's answers
        self.endpoint_id = f"scripted:{model}:{ScriptedBackend.instances}"
        self.price_model = "local"
        self.max_concurrency = 1
        self.answer: Answer = answer or (lambda request: '{"score": 3}')
        self.asked: list[JudgeRequest] = []

    def prepare(self, request: JudgeRequest) -> PreparedCall:
        params: dict[str, object] = {"model": self.api_model, "messages": [dict(m) for m in request.messages]}
        return PreparedCall.for_request(
            request,
            params,
            endpoint=self.endpoint_id,
            model=self.api_model,
            # the scripted answer may read the truth and metadata, so they are part of its key
            extra={"metadata": dict(request.metadata or {}), "truth": repr(request.truth)},
        )

    def complete_many(
        self, jobs: Sequence[Job], *, lookup: Lookup, deliver: Deliver, policy: RetryPolicy, stop: threading.Event
    ) -> None:
        for job in jobs:
            self.asked.append(job.request)
            out = self.answer(job.request)
            if isinstance(out, Exception):
                deliver(job, CallOutcome(job.plan, None, error=str(out), attempts=1))
            elif isinstance(out, Completion):
                deliver(job, CallOutcome(job.plan, out, attempts=1))
            else:
                deliver(job, CallOutcome(job.plan, Completion(out, "stop", 7, 3, route="chat"), attempts=1))


def with_label_probs(text: str, probs: dict[str, float]) -> Completion:
    """A scripted answer that also carries label logprobs (one label token), like a backend with logprobs."""
    tops = [[f" {label}", math.log(p)] for label, p in probs.items() if p > 0]
    first = tops[0]
    return Completion(text, "stop", 7, 3, logprobs=[[first[0], first[1], tops]], route="chat")


class ScriptedJudge(JudgeClient):
    """A real JudgeClient over the scripted backend that also records each ``judge_many`` call (desc, requests)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str | None, list[JudgeRequest]]] = []

    def judge_many(
        self, requests: Sequence[JudgeRequest], parse: Any = None, desc: str | None = None, **kw: Any
    ) -> Any:
        self.calls.append((desc, list(requests)))
        return super().judge_many(requests, parse, desc, **kw)


@pytest.fixture(autouse=True)
def isolated_runs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own runs folder (cache, logs, artifacts): nothing leaks between tests or into runs/."""
    runs = tmp_path_factory.mktemp("runs")
    monkeypatch.setenv("RECJUDGE_RUNS_DIR", str(runs))
    monkeypatch.delenv("RECJUDGE_RUN_DIR", raising=False)  # an ad-hoc run chosen by an earlier test is not this one's
    return runs


@pytest.fixture
def scripted_judge(tmp_path: Path) -> Iterator[Callable[..., ScriptedJudge]]:
    """``scripted_judge(answer, model="scripted", **client_options) -> JudgeClient`` over the scripted backend."""
    made: list[ScriptedJudge] = []

    def make(answer: Answer, model: str = "scripted", **options: object) -> ScriptedJudge:
        options.setdefault("progress", False)
        options.setdefault("run_dir", tmp_path / f"run-{model}")
        backend = ScriptedBackend(model=model, answer=answer, offline=bool(options.get("offline", False)))
        client = ScriptedJudge(backend, name=model, **options)  # type: ignore[arg-type]
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


#: what :func:`movielens_100k` writes: users who each rate ``per_user`` of ``items`` movies
SYNTHETIC_ML100K = {"users": 60, "items": 80, "per_user": 40}


@pytest.fixture
def movielens_100k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data folder (``RECJUDGE_DATA_DIR`` points at it) whose ``ml-100k/`` holds a synthetic MovieLens-100K in
    RecBole's atomic files, the format ``python -m recjudge_utils.data fetch ml-100k`` extracts.

    :data:`SYNTHETIC_ML100K`: 60 users, each rating 40 of the 80 movies (user u the 40 from movie 7u on, cyclically,
    so every movie is rated), ratings 1-5 and one to three genres per movie drawn from ``default_rng(0)``, one
    rating a minute per user. Large enough for the Serendipity-2018 proxy to fill every level with 10-movie
    histories; deterministic, so a test can pin what it yields."""
    import numpy as np

    from recjudge_utils.data.movielens import ML100K_GENRES

    rng = np.random.default_rng(0)
    n_users, n_items, per_user = SYNTHETIC_ML100K["users"], SYNTHETIC_ML100K["items"], SYNTHETIC_ML100K["per_user"]
    genres = [g for g in ML100K_GENRES if g != "unknown"]
    folder = tmp_path / "data" / "ml-100k"
    folder.mkdir(parents=True)
    inter = ["user_id:token\titem_id:token\trating:float\ttimestamp:float"]
    for u in range(1, n_users + 1):
        for j in range(per_user):
            item = (7 * u + j) % n_items + 1
            inter.append(f"{u}\t{item}\t{int(rng.integers(1, 6))}\t{880_000_000 + 100_000 * u + 60 * j}")
    item_rows = ["item_id:token\tmovie_title:token_seq\trelease_year:token\tclass:token_seq"]
    for i in range(1, n_items + 1):
        chosen = rng.choice(genres, size=int(rng.integers(1, 4)), replace=False)
        item_rows.append(f"{i}\tMovie {i}\t{1990 + i % 10}\t{' '.join(sorted(chosen))}")
    user_rows = ["user_id:token\tage:token\tgender:token\toccupation:token\tzip_code:token"]
    user_rows += [f"{u}\t{20 + u % 40}\t{'MF'[u % 2]}\tother\t{10000 + u:05d}" for u in range(1, n_users + 1)]
    for name, rows in (("ml-100k.inter", inter), ("ml-100k.item", item_rows), ("ml-100k.user", user_rows)):
        (folder / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
    monkeypatch.setenv("RECJUDGE_DATA_DIR", str(folder.parent))
    return folder.parent
