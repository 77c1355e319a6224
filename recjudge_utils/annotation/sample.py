"""A run's judgments of one kind as annotation units, and a random sample of them stratified by system.

A *unit* is what one person labels once: a judged (user, item) pair (``scores``), one system's judged list for one
user (``lists``) or one judged duel of two systems for one user, both presentation orders together (``duels``). Its
*strata* are the systems it counts for: the systems whose top-k list for that user holds the item (a pair two
systems recommended counts for both), the list's system, or the duel's pair of systems. The judge's label of a
unit is its parsed answer (for a duel, the two orders merged conservatively: orders that disagree are a tie, as
SAER and the arena adjudicate them); a unit the judge left unparsed has no label and is not in any population.

Chapter 1 judges pairs that are in no system's list, each under several prompt templates: its pairs are one stratum
(:data:`ALL_PAIRS`), and a pair is one unit, labelled by people on the 5-level scale and shown to them as one
template showed it to the judge (the one named, else the first judged one in :data:`SHOWN_FIRST`), whose answer is
the unit's judge label (a pair that template left unparsed is not in the population).

:func:`draw_sample` draws, per stratum, a simple random sample without replacement of ``per_system`` units (all of
them when fewer), so each stratum's labelled units are a simple random sample of that system's judged units: what
the prediction-powered estimate of that system needs (:mod:`recjudge_utils.annotation.ppi`). A unit drawn in two
strata is one task, labelled once. The sample, each task's inclusion probability in each of its strata, and the
judge's labels of every population unit are written to ``<run>/<notebook>/annotation/<kind>-sample.json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recjudge_utils.annotation.chapter_record import chapter_folds, chapter_parameters, judgment_records
from recjudge_utils.annotation.kinds import KINDS, kind_named
from recjudge_utils.data._common import DataFormatError
from recjudge_utils.lists import read_lists
from recjudge_utils.metrics.pairwise import TIE, conservative

__all__ = [
    "ALL_PAIRS",
    "SAMPLE_SCHEMA",
    "SHOWN_FIRST",
    "AnnotationSample",
    "Task",
    "Unit",
    "chosen_template",
    "draw_sample",
    "is_of_kind",
    "load_units",
    "pair_of_task",
    "read_sample",
    "sample_path",
    "score_task_id",
    "write_sample",
]

SAMPLE_SCHEMA = "recjudge-annotation-sample/1"
#: top-k of the lists a chapter judged serendipity on, when its parameters in the run manifest do not say
_DEFAULT_TOP_K = {"02_rs_reevaluation": 20, "07_your_recommenders": 5}
#: chapters whose judged pairs are in no system's list (chapter 1 judges a dataset's labelled pairs): one stratum
_WITHOUT_LISTS = frozenset({"01_serendipity_prompt_selection"})
ALL_PAIRS = "all pairs"
#: the template a pair several templates judged is shown as, when none is named: the first of these judged (the
#: rubric describing every level first; LtM's last step last, as its case holds the judge's answers to steps 1-2)
SHOWN_FIRST = ("serendipity/ls", "serendipity/cot", "serendipity/base", "serendipity/ltm/serendipity")


@dataclass
class Unit:
    """One labelable unit of a run: its id, strata, the judge's label (None: unparsed), what the judge saw, and the
    simulated judge's truth when the run recorded one (None otherwise)."""

    task_id: str
    strata: list[str]
    judge_label: str | None
    user: int
    rubric: str
    case: str
    truth: str | None = None
    #: for a duel, the systems shown as list A and list B
    shown: dict[str, str] = field(default_factory=dict)


@dataclass
class Task:
    """A sampled unit: its id, the strata it was drawn in with its inclusion probability in each, and what the
    person sees (the judge's answer is not among it)."""

    task_id: str
    strata: list[str]
    inclusion_probability: dict[str, float]
    user: int
    rubric: str
    case: str
    shown: dict[str, str] = field(default_factory=dict)


@dataclass
class AnnotationSample:
    """A stratified random sample of a run's units of one kind, with the population it was drawn from."""

    run: str
    notebook: str
    kind: str
    template: str
    seed: int
    per_system: int
    tasks: list[Task]
    #: per stratum: population (usable units), sampled, inclusion_probability, unparsed (units left out)
    strata: dict[str, dict[str, float]]
    #: per stratum, the ids of its population units
    members: dict[str, list[str]]
    #: the judge's label of every population unit
    judge_labels: dict[str, str]
    #: the simulated judge's truth per unit, when the run recorded it (simulated annotators start from it)
    truth: dict[str, str] = field(default_factory=dict)
    schema: str = SAMPLE_SCHEMA

    @property
    def task_ids(self) -> set[str]:
        return {t.task_id for t in self.tasks}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def sample_path(run_dir: Path, notebook: str, kind: str) -> Path:
    """Where the sample of ``kind`` drawn from ``notebook``'s judgments is recorded."""
    return Path(run_dir) / notebook / "annotation" / f"{kind}-sample.json"


def write_sample(sample: AnnotationSample, run_dir: Path) -> Path:
    path = sample_path(run_dir, sample.notebook, sample.kind)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sample.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_sample(path: str | Path) -> AnnotationSample:
    """A sample written by :func:`write_sample`; :class:`DataFormatError` naming the file when it is not one."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: not an annotation sample ({exc})") from exc
    if not isinstance(raw, dict) or raw.get("schema") != SAMPLE_SCHEMA:
        raise DataFormatError(f"{path}: not an annotation sample (schema {SAMPLE_SCHEMA!r} expected)")
    tasks = [Task(**t) for t in raw.pop("tasks")]
    return AnnotationSample(tasks=tasks, **raw)


# -- reading a run's judgments ---------------------------------------------------------------------------------


_SCORE_TASK = re.compile(r"scores:u(-?\d+):i(-?\d+)")


def score_task_id(user: int, item: int) -> str:
    """The task id of a judged (user, item) pair: ``scores:u<user>:i<item>``."""
    return f"scores:u{int(user)}:i{int(item)}"


def pair_of_task(task_id: str) -> tuple[int, int] | None:
    """The (user, item) of a :func:`score_task_id`, None for any other id."""
    found = _SCORE_TASK.fullmatch(str(task_id))
    return None if found is None else (int(found[1]), int(found[2]))


def _messages(path: Path, hashes: set[str]) -> dict[str, list[dict[str, str]]]:
    """The recorded messages of the given hashes (the file can be tens of MB: only those lines are parsed)."""
    out: dict[str, list[dict[str, str]]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            found = re.match(r'\{"messages_hash": "([0-9a-f]{64})"', line)
            if found and found.group(1) in hashes:
                out[found.group(1)] = json.loads(line)["messages"]
    return out


def _shown(messages: list[dict[str, str]]) -> tuple[str, str]:
    """(rubric, case): the system message and the last user message, the judged case as the judge saw it; the
    few-shot turns between them are examples, and no message holds the judge's own answer."""
    rubric = next((m["content"] for m in messages if m["role"] == "system"), "")
    case = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    return rubric, case


def _top_k(params: Mapping[str, Any], notebook: str) -> int:
    return int(params.get("top_k") or _DEFAULT_TOP_K.get(notebook, 20))


def _systems_of_pairs(
    lists_dir: Path, top_k: int, systems: Iterable[str] | None = None, folds: Iterable[int] | None = None
) -> dict[tuple[int, int], list[str]]:
    """(user, item) -> the systems whose top-k list for the user holds the item: over the lists of ``folds`` (None:
    every fold's), of ``systems`` (None: every system's). A chapter that judged some systems' lists, or one fold's,
    judged no pair for the others: counting a pair for them would put it in a population the chapter never judged."""
    wanted = None if folds is None else {f"fold{int(f)}" for f in folds}
    folders = sorted(p for p in lists_dir.glob("fold*") if p.is_dir() and (wanted is None or p.name in wanted))
    kept = None if systems is None else {str(s) for s in systems}
    out: dict[tuple[int, int], list[str]] = {}
    for folder in folders or [lists_dir]:
        frame = read_lists(folder, top_k=top_k, allow_short=True).frame()
        for system, user, item in zip(frame["system"], frame["user"], frame["item"], strict=True):
            if kept is not None and str(system) not in kept:
                continue
            listed = out.setdefault((int(user), int(item)), [])
            if system not in listed:
                listed.append(str(system))
    return out


def chosen_template(records: Iterable[Mapping[str, Any]], wanted: str | None, order: tuple[str, ...] = ()) -> str:
    """The template named, the only one judged, or the first judged one in ``order``."""
    found = sorted({str(r["template_id"]) for r in records})
    if wanted is not None:
        if wanted not in found:
            raise ValueError(f"template {wanted!r} not among the judged templates {found}")
        return wanted
    if len(found) != 1 and any(t in found for t in order):
        return next(t for t in order if t in found)
    if len(found) != 1:
        raise ValueError(f"several templates judged this kind ({', '.join(found)}): say which with template=")
    return found[0]


def _score_units(
    records: list[dict[str, Any]], systems: Mapping[tuple[int, int], list[str]] | None
) -> list[tuple[Unit, str]]:
    """One unit per judged pair: its strata the systems whose lists hold it (``systems`` None: :data:`ALL_PAIRS`)."""
    out = []
    for r in records:
        meta = r["metadata"]
        user, item = int(meta["user"]), int(meta["item"])
        parsed = r.get("parsed") if r.get("status") == "parsed" else None
        score = parsed.get("score") if isinstance(parsed, dict) else None
        truth = (r.get("truth") or {}).get("levels", {}).get("score")
        unit = Unit(
            score_task_id(user, item),
            [ALL_PAIRS] if systems is None else list(systems.get((user, item), [])),
            None if score is None else str(int(score)),
            user,
            "",
            "",
            None if truth is None else str(int(truth)),
        )
        out.append((unit, r["messages_hash"]))
    return out


def _list_units(records: list[dict[str, Any]]) -> list[tuple[Unit, str]]:
    labels = KINDS["lists"].labels
    out = []
    for r in records:
        meta = r["metadata"]
        system = str(meta.get("system") or meta.get("algorithm"))
        parsed = r.get("parsed") if r.get("status") == "parsed" else None
        category = parsed.get("category") if isinstance(parsed, dict) else None
        truth = r.get("truth") or {}
        level = truth.get("level")
        unit = Unit(
            f"lists:u{int(meta['user'])}:{system}",
            [system],
            category if category in labels else None,
            int(meta["user"]),
            "",
            "",
            None if level is None else list(truth.get("labels") or labels)[int(level)],
        )
        out.append((unit, r["messages_hash"]))
    return out


def _duel_order(r: Mapping[str, Any]) -> tuple[str, str, str, str, str | None, str | None]:
    """(x, y, first shown, second shown, winner or Tie or None, truth winner or Tie or None) of one judged order."""
    meta = r["metadata"]
    parsed = r.get("parsed") if r.get("status") == "parsed" else None
    if "set_1" in meta:  # SAER pairwise: Set 1 / Set 2 / Tie
        first, second = str(meta["set_1"]), str(meta["set_2"])
        x, y = sorted((first, second))
        verdict = parsed.get("verdict") if isinstance(parsed, dict) else None
        winner = {"Set 1": first, "Set 2": second, TIE: TIE}.get(str(verdict))
    else:  # the arena: the overall verdict, A wins / B wins / Tie
        first, second, x, y = str(meta["A"]), str(meta["B"]), str(meta["x"]), str(meta["y"])
        verdicts = parsed.get("verdicts") if isinstance(parsed, dict) else None
        verdict = verdicts.get("overall") if isinstance(verdicts, dict) else None
        winner = {"A wins": first, "B wins": second, TIE: TIE}.get(str(verdict))
    truth = r.get("truth") or {}
    truth_winner = None
    if truth.get("kind") == "preference":
        a, b = float(truth["first"]), float(truth["second"])
        truth_winner = first if a > b else second if b > a else TIE
    return x, y, first, second, winner, truth_winner


def _duel_units(records: list[dict[str, Any]]) -> list[tuple[Unit, str]]:
    orders: dict[tuple[int, str, str], list[tuple[dict[str, Any], tuple[Any, ...]]]] = {}
    for r in records:
        meta = r["metadata"]
        if meta.get("task", "pairwise") != "pairwise" or ("set_1" not in meta and "A" not in meta):
            continue  # SAER's adversarial duels pit a user against a decoy, not two systems
        info = _duel_order(r)
        orders.setdefault((int(meta["user"]), info[0], info[1]), []).append((r, info))
    out = []
    for (user, x, y), judged in sorted(orders.items()):
        # the order showing x first is the one a person sees: list A is x, list B is y
        shown_record = next((r for r, info in judged if info[2] == x), judged[0][0])
        first = next(info[2] for r, info in judged if r is shown_record)
        a_name, b_name = (x, y) if first == x else (y, x)
        winners = [info[4] for _, info in judged]
        merged = conservative(*[[w] for w in winners])[0] if all(w is not None for w in winners) else None
        if merged is None and any(w is not None for w in winners):
            merged = next(w for w in winners if w is not None)  # one order unparsed: the other decides
        label = None if merged is None else TIE if merged == TIE else ("A" if merged == a_name else "B")
        truths = [info[5] for _, info in judged if info[5] is not None]
        truth = None if not truths else TIE if truths[0] == TIE else ("A" if truths[0] == a_name else "B")
        unit = Unit(f"duels:u{user}:{x}|{y}", [f"{x} vs {y}"], label, user, "", "", truth, {"A": a_name, "B": b_name})
        out.append((unit, shown_record["messages_hash"]))
    return out


def is_of_kind(record: Mapping[str, Any], kind: str) -> bool:
    template = str(record.get("template_id", ""))
    task = (record.get("metadata") or {}).get("task")
    if kind == "scores":
        stage = (record.get("metadata") or {}).get("stage", "")
        return template.startswith("serendipity/") and stage in ("base", "ls", "cot", "ltm/serendipity")
    if kind == "lists":
        return template.startswith("saer/") and task == "pointwise"
    return template == "arena/pairwise" or (template.startswith("saer/") and task == "pairwise")


def load_units(
    run_dir: str | Path,
    notebook: str,
    kind: str,
    template: str | None = None,
    lists_dir: str | Path | None = None,
    top_k: int | None = None,
) -> tuple[str, list[Unit]]:
    """(template, units) of ``kind`` in ``notebook``'s judgments of the run in ``run_dir``.

    For ``scores`` the systems of a (user, item) pair come from the lists the chapter judged: ``lists_dir`` (default:
    the run's ``lists/``, chapter 2's hand-over to chapter 7), cut to ``top_k`` (default: the chapter's parameter in
    the run manifest, else its default); chapter 1 judged no list, and its pairs are one stratum, :data:`ALL_PAIRS`
    (``lists_dir`` and ``top_k`` are not used), each pair shown as ``template`` (default: the first judged one in
    :data:`SHOWN_FIRST`) showed it."""
    run_dir = Path(run_dir)
    kind_named(kind)
    folder = run_dir / notebook
    records = [r for r in judgment_records(run_dir, notebook) if is_of_kind(r, kind)]
    if not records:
        raise ValueError(f"{folder / 'judgments.jsonl'}: no judgment of kind {kind!r}")
    order = SHOWN_FIRST if notebook in _WITHOUT_LISTS else ()
    chosen = (
        chosen_template(records, template, order)
        if kind != "duels"
        else ",".join(sorted({r["template_id"] for r in records}))
    )
    if kind != "duels":
        records = [r for r in records if r["template_id"] == chosen]
    if kind == "scores" and notebook in _WITHOUT_LISTS:
        units = _score_units(records, None)
    elif kind == "scores":
        params, _ = chapter_parameters(run_dir, notebook)
        k = top_k or _top_k(params, notebook)
        source = Path(lists_dir) if lists_dir else run_dir / "lists"
        systems = params.get("systems") if not lists_dir else None
        folds = chapter_folds(params) if not lists_dir else None
        units = _score_units(records, _systems_of_pairs(source, k, systems, folds))
        orphans = [u.task_id for u, _ in units if not u.strata]
        if orphans:  # a stratum would silently lose them: the lists are not the ones the chapter judged
            raise ValueError(
                f"{len(orphans)} judged pairs (first {orphans[0]!r}) are in no system's top-{k} list in {source}: "
                "give the lists the chapter judged (--lists) and their cut (--top-k)"
            )
    elif kind == "lists":
        units = _list_units(records)
    else:
        units = _duel_units(records)
    messages = _messages(folder / "messages.jsonl", {h for _, h in units})
    for unit, digest in units:
        unit.rubric, unit.case = _shown(messages.get(digest, []))
    return chosen, [u for u, _ in units]


def draw_sample(
    units: list[Unit], *, per_system: int, seed: int, run: str, notebook: str, kind: str, template: str
) -> AnnotationSample:
    """Per stratum, ``per_system`` of its usable units (all when fewer) drawn without replacement, in a seeded
    random order: each stratum's draw is a simple random sample of that system's judged units."""
    if per_system < 1:
        raise ValueError(f"per_system must be at least 1, got {per_system}")
    rng = np.random.default_rng(seed)
    by_id = {u.task_id: u for u in units}
    members: dict[str, list[str]] = {}
    unparsed: dict[str, int] = {}
    for unit in units:
        for stratum in unit.strata:
            if unit.judge_label is None:
                unparsed[stratum] = unparsed.get(stratum, 0) + 1
            else:
                members.setdefault(stratum, []).append(unit.task_id)
    strata: dict[str, dict[str, float]] = {}
    drawn: dict[str, dict[str, float]] = {}
    for stratum in sorted(members):
        population = sorted(members[stratum])
        members[stratum] = population
        n = min(per_system, len(population))
        probability = n / len(population)
        for index in sorted(rng.choice(len(population), size=n, replace=False)):
            drawn.setdefault(population[int(index)], {})[stratum] = probability
        strata[stratum] = {
            "population": len(population),
            "sampled": n,
            "inclusion_probability": probability,
            "unparsed": unparsed.get(stratum, 0),
        }
    tasks = [
        Task(
            tid,
            sorted(p),
            dict(sorted(p.items())),
            by_id[tid].user,
            by_id[tid].rubric,
            by_id[tid].case,
            by_id[tid].shown,
        )
        for tid, p in sorted(drawn.items())
    ]
    judge_labels = {u.task_id: u.judge_label for u in units if u.judge_label is not None}
    truth = {u.task_id: u.truth for u in units if u.truth is not None and u.judge_label is not None}
    return AnnotationSample(
        run, notebook, kind, template, seed, per_system, tasks, strata, members, judge_labels, truth
    )
