"""A tiny run folder for the annotation tests: chapter 7's three kinds of judgment for a few users and systems,
written as the judgment log writes them (judgments.jsonl, messages.jsonl) with the lists chapter 2 hands over.

Every judgment's answer and truth are drawn from a seeded generator; ``JUDGE_MARK`` is in every answer the judge
gave (and in no message), so a test can check that no exported file holds one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

NOTEBOOK = "07_your_recommenders"
SYSTEMS = ("alpha", "beta", "gamma")
USERS = tuple(range(1, 13))
TOP_K = 3
JUDGE_MARK = "JUDGE-ANSWER-MARK"
LEVELS = ("Poor Match", "Partial Match", "Good Match")


def _digest(messages: list[dict[str, str]]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def make_run(root: Path, seed: int = 0, unparsed_every: int = 7) -> Path:
    """runs/<name> under ``root`` with chapter 7's judgments of every kind; returns the run folder."""
    rng = np.random.default_rng(seed)
    run = root / "world"
    folder = run / NOTEBOOK
    folder.mkdir(parents=True)
    lists = run / "lists" / "fold0"
    lists.mkdir(parents=True)
    records: list[dict[str, object]] = []
    messages: dict[str, list[dict[str, str]]] = {}
    count = 0

    def judged(template: str, metadata: dict[str, object], parsed: object, truth: dict[str, object], case: str) -> None:
        nonlocal count
        count += 1
        convo = [
            {"role": "system", "content": f"Rubric of {template}: judge carefully."},
            {"role": "user", "content": "an example case"},
            {"role": "assistant", "content": "an example answer"},
            {"role": "user", "content": case},
        ]
        digest = _digest(convo)
        messages[digest] = convo
        status = "unparsed" if count % unparsed_every == 0 else "parsed"
        records.append(
            {
                "template_id": template,
                "metadata": metadata,
                "status": status,
                "parsed": parsed if status == "parsed" else None,
                "raw_response": f"{JUDGE_MARK} {json.dumps(parsed)}",
                "truth": truth,
                "messages_hash": digest,
            }
        )

    items = {s: {u: [int(i) for i in rng.choice(40, TOP_K, replace=False)] for u in USERS} for s in SYSTEMS}
    for system in SYSTEMS:
        with open(lists / f"{system}.trec", "w", encoding="utf-8") as fh:
            for user in USERS:
                for rank, item in enumerate(items[system][user], start=1):
                    fh.write(f"{user} Q0 {item} {rank} {TOP_K + 1 - rank} {system}\n")
    pairs = sorted({(u, i) for s in SYSTEMS for u in USERS for i in items[s][u]})
    for user, item in pairs:
        truth = int(rng.integers(1, 6))
        score = int(np.clip(truth + rng.integers(-1, 2), 1, 5))
        judged(
            "serendipity/ls",
            {"user": user, "item": item, "template": "ls", "stage": "ls"},
            {"score": score},
            {"kind": "score", "levels": {"score": truth}},
            f"History of user {user}. Candidate item {item}.",
        )
    for system in SYSTEMS:
        for user in USERS:
            level = int(rng.integers(0, 3))
            judged(
                "saer/movies/pointwise_v3",
                {"user": user, "system": system, "prompt_version": "v3", "task": "pointwise"},
                {"category": LEVELS[int(rng.integers(0, 3))], "reasoning": JUDGE_MARK},
                {"kind": "label", "level": level, "labels": list(LEVELS)},
                f"User {user}, list of {system}.",
            )
    for x, y in (("alpha", "beta"), ("alpha", "gamma")):
        for user in USERS:
            first, second = sorted(rng.random(2))
            for order, (a, b) in (("x_first", (x, y)), ("y_first", (y, x))):
                verdict = str(rng.choice(["A wins", "B wins", "Tie"]))
                pref = {"first": first, "second": second} if a == x else {"first": second, "second": first}
                judged(
                    "arena/pairwise",
                    {"user": user, "A": a, "B": b, "x": x, "y": y, "order": order},
                    {"verdicts": {"overall": verdict}, "analysis": {"overall": JUDGE_MARK}},
                    {"kind": "preference", **pref},
                    f"User {user}. List A: {a}. List B: {b}.",
                )
    with open(folder / "judgments.jsonl", "w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps(record) + "\n")
    with open(folder / "messages.jsonl", "w", encoding="utf-8") as fh:
        for digest, convo in messages.items():
            fh.write(json.dumps({"messages_hash": digest, "messages": convo}) + "\n")
    (run / "manifest.json").write_text(
        json.dumps({"notebooks": [{"notebook": f"{NOTEBOOK}.ipynb", "parameters": {"top_k": TOP_K}}]}),
        encoding="utf-8",
    )
    return run
