"""Prompt selection for the serendipity judge (paper: serendipity-llm-judge, Sections 3-4, Table 1).

``run(judge, pairs, PromptSelectionConfig(...))``: draw few-shot examples (two per level), sample the judged pairs
from the *other* users (no leakage), score every judged pair with every template, compute MAE and three-class
accuracy with CIs (and kappa) per template, the constant baselines any judge must beat, select the template with
the lowest MAE (an unparsed answer counted at its worst possible error, so a template cannot win by failing to
answer; with every answer parsed this is the paper's rule), and test it against each other template on the same
pairs. A run in which no template produced a parsed answer selects none (``selected is None``) and says so.
Every number the chapter shows is computed here (each template against the best constant predictor, score counts,
the data's g beside the paper's); :mod:`recjudge_utils.reporting.prompt_selection` lays them out.

``run(..., reference=read_reference(labels_file, run_dir))`` selects on people's labels instead of the data's g, as
the paper selects on Serendipity-2018's user-annotated g: every pair is judged as without them, then Table 1, the
constant baselines, the tests and the selection are computed on the labelled pairs only, against their annotators'
consensus (the median label). The labels are read and checked against the sample of this chapter's pairs recorded in
the run (``python -m recjudge_utils.annotation export``) before anything is judged, and a labelled pair this
execution does not judge is refused before any judge call too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from recjudge_utils.annotation.agreement_with_people import consensus
from recjudge_utils.annotation.read_labels import Labels, read_labels
from recjudge_utils.annotation.sample import pair_of_task, read_sample, sample_path
from recjudge_utils.data import SerendipityPairs
from recjudge_utils.data._common import DataFormatError
from recjudge_utils.data.serendipity2018 import PAPER_G_COUNTS
from recjudge_utils.experiments.run import Result, Run, result
from recjudge_utils.judge.types import Judge
from recjudge_utils.judge.usage import template_usage
from recjudge_utils.metrics import judge_scores as js
from recjudge_utils.metrics.pairwise import paired_difference
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.paths import shown_path
from recjudge_utils.prompts import Message
from recjudge_utils.protocols.few_shot import sample_eval_pairs, select_few_shot_examples
from recjudge_utils.protocols.pointwise_score import (
    TEMPLATES,
    MemberScores,
    SerendipityJudge,
    save_selected_template,
    template_stages,
)

__all__ = [
    "NOTEBOOK",
    "PaperChoice",
    "PromptSelectionConfig",
    "PromptSelectionRun",
    "Reference",
    "g_counts",
    "read_reference",
    "run",
    "save_selection",
    "select_template",
    "template_tests",
]


@dataclass(frozen=True)
class PromptSelectionConfig:
    """Demo defaults; paper scale is ``n_pairs=None``: every pair of the users no few-shot example comes from (the
    paper judged all 2,150 pairs; the example users' pairs are left out here, so fewer are judged)."""

    templates: tuple[str, ...] = TEMPLATES
    n_pairs: int | None = 10
    n_history: int = 10
    n_shots: int = 10
    seed: int = 0
    n_boot: int = 2000

    def __post_init__(self) -> None:
        object.__setattr__(self, "templates", tuple(self.templates))
        unknown = set(self.templates) - set(TEMPLATES)
        if unknown:
            raise ValueError(f"unknown templates {sorted(unknown)}; choose from {TEMPLATES}")
        if self.n_shots % 5:
            raise ValueError("n_shots must be a multiple of 5 (the same number of examples for every score level)")
        if self.n_history < 1:
            raise ValueError("n_history must be >= 1")


#: the chapter's folder in a run: its judgments, and the sample of its pairs people label
NOTEBOOK = "01_serendipity_prompt_selection"


@dataclass(frozen=True)
class Reference:
    """People's labels in place of the data's g: each labelled (user, item) pair's consensus level (the median of
    its annotators' labels), the file they were read from (as shown), the annotators and the labels read, and whether
    every annotator is a simulated one (never to be shown as people's labels)."""

    levels: Mapping[tuple[int, int], int]
    source: str
    n_annotators: int
    n_labels: int
    simulated: bool

    @classmethod
    def of_labels(cls, labels: Labels) -> Reference:
        """The consensus of labels read against a sample of chapter 1's pairs (task ids ``scores:u<user>:i<item>``)."""
        levels: dict[tuple[int, int], int] = {}
        for task_id, label in consensus(labels, "scores").items():
            pair = pair_of_task(str(task_id))
            if pair is None:
                raise DataFormatError(f"{labels.source}: task {task_id!r}: not a judged (user, item) pair")
            levels[pair] = int(label)
        if not levels:
            raise DataFormatError(
                f"{labels.source}: no pair is labelled ({labels.skipped} annotations skipped): nothing to select on"
            )
        n_annotators = len(labels.annotators)
        return cls(levels, shown_path(labels.source), n_annotators, len(labels.frame), labels.simulated)

    def of(self, pairs: pd.DataFrame) -> list[int]:
        """The consensus level of every row of ``pairs`` (columns user, item), each a labelled pair."""
        return [self.levels[(int(u), int(i))] for u, i in zip(pairs["user"], pairs["item"], strict=True)]

    def holds(self, pairs: pd.DataFrame) -> np.ndarray:
        """Which rows of ``pairs`` (columns user, item) are labelled pairs."""
        keys = zip(pairs["user"], pairs["item"], strict=True)
        return np.array([(int(u), int(i)) in self.levels for u, i in keys], dtype=bool)

    def to_json(self) -> dict[str, Any]:
        return {"reference": "people's labels (consensus: the median label)", "source": self.source,
                "pairs": len(self.levels), "annotators": self.n_annotators, "labels": self.n_labels,
                "simulated": self.simulated}  # fmt: skip


def read_reference(labels: str | Path, run_dir: str | Path) -> Reference:
    """People's labels of chapter 1's pairs (a Label Studio JSON export or a filled CSV sheet), read and checked
    against the sample of the chapter's pairs recorded in the run folder ``run_dir``: a bad file is refused
    (:class:`~recjudge_utils.data._common.DataFormatError` naming the file, the task or line and the problem)."""
    path, recorded = Path(labels), sample_path(Path(run_dir), NOTEBOOK, "scores")
    if not path.is_file():
        raise DataFormatError(f"{path}: no such labels file")
    if not recorded.is_file():
        raise DataFormatError(
            f"{path}: the run records no sample of chapter 1's pairs ({shown_path(recorded)} is missing): labels are "
            f"read against the sample they label; draw it from this run's chapter 1 judgments with python -m "
            f"recjudge_utils.annotation export {Path(run_dir).name} --notebook {NOTEBOOK} --kind scores "
            "--per-system N --out DIR"
        )
    return Reference.of_labels(read_labels(path, read_sample(recorded)))


def _refuse_unjudged(reference: Reference, eval_pairs: pd.DataFrame, cfg: PromptSelectionConfig) -> None:
    """ValueError naming the labelled pairs this execution does not judge (before any judge call)."""
    judged = set(zip(eval_pairs["user"].astype(int), eval_pairs["item"].astype(int), strict=True))
    missing = sorted(set(reference.levels) - judged)
    if missing:
        shown = ", ".join(f"user {u} item {i}" for u, i in missing[:5]) + (", ..." if len(missing) > 5 else "")
        raise ValueError(
            f"{reference.source}: {len(missing)} of the {len(reference.levels)} labelled pairs are not among the "
            f"{len(eval_pairs)} pairs this execution judges ({shown}): the sample was drawn from the judgments of an "
            "execution that judged other pairs (n_pairs, n_shots and seed choose them, on the same data; here "
            f"n_pairs={cfg.n_pairs}, n_shots={cfg.n_shots}, seed={cfg.seed}): rerun with the parameters that judged "
            "them, and the cache answers them"
        )


@dataclass(frozen=True)
class PaperChoice:
    """The template the paper's Table 1 gives the lowest MAE for its first model (GPT-4o-mini), and that MAE."""

    template: str
    model: str
    mae: float


def _paper_choice() -> PaperChoice:
    """The paper's finding this chapter checks, read from its Table 1."""
    paper = paper_table("serendipity_table1")
    model = str(paper["model"].iloc[0])
    first = paper[paper["model"] == model].set_index("template")["mae"].astype(float)
    return PaperChoice(str(first.idxmin()), model, float(first.min()))


def g_counts(counts: pd.Series, paper: dict[int, int] = PAPER_G_COUNTS) -> pd.DataFrame:
    """Pairs per level of g (``counts``, indexed by level) and in total with their percentages, beside the paper's
    (columns pairs, pct, paper_pairs, paper_pct; index the levels as text, then ``total``)."""
    frame: dict[str, list[float]] = {}
    for prefix, n in (("", counts.reindex(list(paper), fill_value=0).astype(int)), ("paper_", pd.Series(paper))):
        frame[f"{prefix}pairs"] = [*(int(v) for v in n), int(n.sum())]
        frame[f"{prefix}pct"] = [*(100 * n / n.sum()), 100.0]
    return pd.DataFrame(frame, index=pd.Index([*(str(k) for k in paper), "total"], name="g"))


def _best_constant(baselines: pd.DataFrame, metric: str) -> tuple[str, int, float]:
    rows = baselines.loc[baselines["measure"] == metric].set_index("predictor")
    values = rows["value"].astype(float)
    name = str(values.idxmin() if metric == "mae" else values.idxmax())
    return name, int(rows.loc[name, "level"]), float(values[name])


#: the headline measures per template and how each interval is made (acc3: a share over a few pairs, the Wilson
#: interval, as a bootstrap one collapses when every answer agrees)
_RESULTS = {"mae": "95% percentile bootstrap", "acc3": "95% Wilson", "kappa_qw": "95% percentile bootstrap",
            "unparsed_rate": None}  # fmt: skip


@dataclass(kw_only=True)
class PromptSelectionRun(Run):
    """Everything one run produced; the notebook shows it through the reporting module."""

    experiment: ClassVar[str] = "prompt_selection"

    config: PromptSelectionConfig
    data: SerendipityPairs
    examples: pd.DataFrame
    #: the pairs every number is computed on, g their reference: every judged pair and its data's g, or with
    #: people's labels the labelled ones and their consensus (the data's g kept as ``data_g``)
    eval_pairs: pd.DataFrame
    scores: dict[str, pd.DataFrame]  # per template, one row per pair of ``eval_pairs``, in its order
    #: per template and measure (:func:`~recjudge_utils.metrics.judge_scores.summarize_templates`: MAE, acc3 and
    #: kappa with CIs, unparsed rate, ...), then ``mae_selection`` (:func:`select_template`'s key) and
    #: ``mae_expected_gain`` (the expected score's MAE minus the argmax's on the same pairs)
    summary: pd.DataFrame
    usage: pd.DataFrame  # per template: calls, tokens, cost and judge time (``template_usage``), and ``wall_s``
    #: the constant predictors on the same pairs, per ``predictor`` and ``level`` (the score it always answers) the
    #: measures of :func:`~recjudge_utils.metrics.judge_scores.summarize_predictions`
    baselines: pd.DataFrame
    selected: str | None  # None: no template produced a single parsed answer
    overlapping: list[str]  # templates whose MAE CI overlaps the selected one's
    template_tests: pd.DataFrame  # the selected template against each other one (see :func:`template_tests`)
    #: per template (the index): its MAE minus the best constant predictor's, paired over the ``n`` pairs it parsed
    #: (value, low, high: percentile bootstrap; NaN with fewer than two parsed)
    versus_constant: pd.DataFrame
    judging: pd.DataFrame  # per template: pairs, calls, cache_hits, status (count per status), prompt versions
    distribution: pd.DataFrame  # :func:`~recjudge_utils.metrics.judge_scores.score_distribution` of g and scores
    confusions: dict[str, pd.DataFrame]  # per template: g against the score, unparsed answers last
    g_counts: pd.DataFrame  # the data's pairs per level of g beside the paper's (:func:`g_counts`)
    paper_choice: PaperChoice
    #: a panel's members, per template, judged pair and member: its score (None: none parsed) and the tokens of its
    #: calls (cache hits included); empty for a single judge (:class:`MemberScores`)
    member_scores: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: people's labels the selection was made on (None: the data's g)
    reference: Reference | None = None
    #: every pair this execution judged (None: ``eval_pairs``, as without people's labels)
    judged_pairs: pd.DataFrame | None = None

    @property
    def truth(self) -> np.ndarray:
        """The reference of the evaluated pairs (the data's g, or people's consensus), aligned with every template's
        scores."""
        return self.eval_pairs["g"].to_numpy(dtype=float)

    @property
    def judged(self) -> pd.DataFrame:
        """Every pair this execution judged, with the data's g."""
        return self.eval_pairs if self.judged_pairs is None else self.judged_pairs

    @property
    def n_pool(self) -> int:
        """Pairs of the users no few-shot example comes from: the pool the judged pairs are drawn from."""
        return int((~self.data.pairs["user"].isin(set(self.examples["user"]))).sum())

    @property
    def n_example_users(self) -> int:
        return int(self.examples["user"].nunique())

    @property
    def n_judged_users(self) -> int:
        return int(self.judged["user"].nunique())

    @property
    def mean_g(self) -> float:
        """The mean reference of the evaluated pairs."""
        return float(self.truth.mean())

    @property
    def examples_show_rule(self) -> bool:
        """On a stand-in whose g is min(relevance, unexpectedness), the CoT and LtM examples show both levels."""
        return not self.data.is_real and set(self.examples["aux_source"]) == {"data"}

    @property
    def judged_g(self) -> dict[int, int]:
        """The judged pairs per level of the data's g."""
        return {int(k): int(v) for k, v in self.judged["g"].value_counts().sort_index().items()}

    @property
    def mae_ci_width(self) -> float:
        """The mean width of the templates' MAE CIs (NaN when none has one)."""
        mae = self.measure("mae")
        width = (mae["high"] - mae["low"]).astype(float)
        return float(width.mean()) if width.notna().any() else float("nan")

    def measure(self, name: str) -> pd.DataFrame:
        """One measure of :attr:`summary` per template (the index, in the run's order): value, low, high, n."""
        return js.measure_by(self.summary, name, "template")

    def levels_used(self, template: str) -> list[int]:
        """The score levels the template's parsed answers used, in order."""
        return sorted(int(v) for v in self.scores[template]["score"].dropna().unique())

    def best_constant(self, metric: str = "mae") -> tuple[str, int, float]:
        """The constant predictor with the lowest MAE (``"mae"``) or the highest ``"acc3"``: name, level, value."""
        return _best_constant(self.baselines, metric)

    def example_messages(self, template: str = "cot") -> tuple[Message, ...]:
        """What the judge is sent for the first judged pair: the system prompt, the few-shot turns, the pair last."""
        cfg = self.config
        scorer = SerendipityJudge(
            None,  # type: ignore[arg-type]  # rendering only: no judge is called
            template=template, examples=self.examples, n_history=cfg.n_history, seed=cfg.seed, words=self.data.domain,
        )  # fmt: skip
        first = self.judged.iloc[0]
        return scorer.messages(first["history"], first["item"], self.data.items)

    def results(self) -> list[Result]:
        """Per template: MAE (bootstrap CI), accuracy (Wilson CI), kappa (bootstrap CI), unparsed; the selection."""
        out = []
        for t, rows in self.summary.groupby("template", sort=False):
            by = rows.set_index("measure")
            for measure, interval in _RESULTS.items():
                r = by.loc[measure]
                out.append(result(measure, r["value"], r["low"], r["high"], r["n"], interval, template=str(t)))
        if self.selected is not None:
            out.append(result("selected", float(TEMPLATES.index(self.selected)), template=self.selected))
        return out

    def items(self) -> dict[str, list[dict[str, Any]]]:
        """Every template's score of every judged pair (None when unparsed), with the pair's g; a panel's also each
        member's (``member_scores``: its score, the pair's g and the member's tokens)."""
        members = {"member_scores": self.member_scores.to_dict("records")} if len(self.member_scores) else {}
        return members | {
            "scores": [
                {
                    "template": t,
                    "user": int(u),
                    "item": int(i),
                    "label": None if np.isnan(s) else int(s),
                    "truth": int(g),
                }
                for t, frame in self.scores.items()
                for u, i, s, g in zip(frame["user"], frame["item"], frame["score"], self.eval_pairs["g"], strict=True)
            ]
        }


def template_tests(scores: dict[str, pd.DataFrame], truth: np.ndarray, selected: str, seed: int) -> pd.DataFrame:
    """The selected template against each other one, on the pairs both parsed: McNemar's exact test on three-class
    correctness (statsmodels), the paired MAE difference with its bootstrap CI (``MAE difference``, ``low``,
    ``high``), and Holm-adjusted p-values over the comparisons (``multipletests``)."""
    best = scores[selected]["score"].to_numpy(dtype=float)
    rows = []
    for t, frame in scores.items():
        if t == selected:
            continue
        other = frame["score"].to_numpy(dtype=float)
        both = ~np.isnan(best) & ~np.isnan(other)
        if both.sum() < 2:
            rows.append({"selected": selected, "other": t, "n both parsed": int(both.sum())})
            continue
        right_a = np.sign(best[both] - 3) == np.sign(truth[both] - 3)
        right_b = np.sign(other[both] - 3) == np.sign(truth[both] - 3)
        table = [
            [int(np.sum(right_a & right_b)), int(np.sum(right_a & ~right_b))],
            [int(np.sum(~right_a & right_b)), int(np.sum(~right_a & ~right_b))],
        ]
        test = mcnemar(table, exact=True)
        diff = paired_difference(np.abs(best[both] - truth[both]), np.abs(other[both] - truth[both]), seed=seed)
        rows.append(
            {"selected": selected, "other": t, "n both parsed": int(both.sum()),
             "only selected right": table[0][1], "only other right": table[1][0], "McNemar p": float(test.pvalue),
             "MAE difference": diff.value, "low": diff.low, "high": diff.high}
        )  # fmt: skip
    out = pd.DataFrame(rows)
    if "McNemar p" in out and out["McNemar p"].notna().any():
        ok = out["McNemar p"].notna()
        out.loc[ok, "Holm-adjusted p"] = multipletests(out.loc[ok, "McNemar p"], method="holm")[1]
    return out


def run(
    judge: Judge,
    data: SerendipityPairs,
    config: PromptSelectionConfig | None = None,
    reference: Reference | None = None,
) -> PromptSelectionRun:
    """Score the judged pairs with every template and select the one with the lowest MAE: against the data's g, or
    with ``reference`` against people's consensus on the pairs they labelled (every one of which this execution must
    judge: ValueError before any judge call otherwise)."""
    cfg = config or PromptSelectionConfig()
    examples = select_few_shot_examples(data.pairs, data.items, n_per_level=cfg.n_shots // 5, seed=cfg.seed)
    example_users = set(examples["user"])
    judged = sample_eval_pairs(data.pairs, cfg.n_pairs, exclude_users=example_users, seed=cfg.seed)
    if set(judged["user"]) & example_users:
        raise AssertionError("few-shot leakage: a judged user is also an example user")
    if reference is not None:
        _refuse_unjudged(reference, judged, cfg)

    judged_scores: dict[str, pd.DataFrame] = {}
    wall: dict[str, float] = {}
    members = MemberScores(judge)
    for t in cfg.templates:
        started = time.perf_counter()
        scorer = SerendipityJudge(
            members, template=t, examples=examples, n_history=cfg.n_history, seed=cfg.seed, words=data.domain
        )
        judged_scores[t] = scorer.score(judged, data.items)
        wall[t] = time.perf_counter() - started

    # what every number is computed on: the judged pairs and their g, or the labelled ones and people's consensus
    eval_pairs, scores, member_scores = judged, judged_scores, members.frame(judged)
    if reference is not None:
        on = reference.holds(judged)
        eval_pairs = judged[on].assign(data_g=judged.loc[on, "g"], g=reference.of(judged[on]))
        scores = {t: f[on].reset_index(drop=True) for t, f in judged_scores.items()}
        if len(member_scores):
            member_scores = member_scores[reference.holds(member_scores)]
            member_scores = member_scores.assign(truth=reference.of(member_scores))
    truth = eval_pairs["g"].to_numpy(dtype=float)
    summary = js.summarize_templates(scores, truth, n_boot=cfg.n_boot, seed=cfg.seed)
    summary = _with_selection_keys(summary, scores, truth)
    usage = template_usage(scores).assign(wall_s=pd.Series(wall).round(1))

    rest = data.pairs.loc[~data.pairs.index.isin(judged.index), "g"]
    majority = int(rest.value_counts().sort_index().idxmax())
    levels = {f"constant {majority} (majority g of unjudged pairs)": majority, "constant 3 (neutral)": 3}
    baselines = pd.concat(
        [
            js.summarize_predictions(
                js.constant_predictions(truth, lv), truth, n_boot=cfg.n_boot, seed=cfg.seed
            ).assign(predictor=name, level=lv)[["predictor", "level", *js.MEASURE_COLUMNS]]
            for name, lv in levels.items()
        ],
        ignore_index=True,
    )
    _, floor, _ = _best_constant(baselines, "mae")
    versus = {t: _versus_constant(f["score"], truth, floor, cfg.n_boot, cfg.seed) for t, f in scores.items()}
    judging = [
        {"template": t, "pairs": len(f), "calls": int(f["n_calls"].sum()), "cache_hits": int(f["cache_hits"].sum()),
         "status": f["status"].value_counts().to_dict(), "versions": {s.name: s.version for s in template_stages(t)}}
        for t, f in judged_scores.items()
    ]  # fmt: skip

    selected, overlapping = select_template(summary)
    return PromptSelectionRun(
        config=cfg,
        judge_name=judge.model_name,
        data_label=data.display_label,
        timings={f"judge {t}": s for t, s in wall.items()},
        data=data,
        examples=examples,
        eval_pairs=eval_pairs,
        scores=scores,
        summary=summary,
        usage=usage,
        baselines=baselines,
        selected=selected,
        overlapping=overlapping,
        template_tests=template_tests(scores, truth, selected, cfg.seed) if selected else pd.DataFrame(),
        versus_constant=pd.DataFrame.from_dict(versus, orient="index"),
        judging=pd.DataFrame(judging).set_index("template"),
        distribution=js.score_distribution(scores, truth),
        confusions={t: js.confusion_frame(f["score"], truth) for t, f in scores.items()},
        g_counts=g_counts(data.g_distribution()),
        paper_choice=_paper_choice(),
        member_scores=member_scores,
        reference=reference,
        judged_pairs=None if reference is None else judged,
    )


def _versus_constant(score: pd.Series, truth: np.ndarray, level: int, n_boot: int, seed: int) -> dict[str, float]:
    """The MAE of ``score`` minus that of always answering ``level``, paired over the ``n`` parsed pairs, with its
    percentile-bootstrap CI (value, low, high; the interval below 0 favours the judge)."""
    s = score.to_numpy(dtype=float)
    ok = ~np.isnan(s)
    d = paired_difference(np.abs(s[ok] - truth[ok]), np.abs(level - truth[ok]), n_boot=n_boot, seed=seed)
    return {"value": d.value, "low": d.low, "high": d.high, "n": int(ok.sum())}


def _with_selection_keys(summary: pd.DataFrame, scores: Mapping[str, pd.DataFrame], truth: np.ndarray) -> pd.DataFrame:
    """``summary`` with two measures more per template, after its others: ``mae_selection`` (every pair, an unparsed
    answer at its worst error: :func:`select_template`'s key) and, where the template has expected scores,
    ``mae_expected_gain`` (their MAE minus the argmax's on the same pairs)."""
    frames = []
    for t, frame in scores.items():
        rows = summary.loc[summary["template"] == t]
        by = rows.set_index("measure")
        extra = [(t, "mae_selection", js.mae_unparsed_at_worst(frame["score"], truth), np.nan, np.nan, len(frame))]
        if "mae_expected" in by.index:
            expected, argmax = by.loc["mae_expected"], by.loc["mae_argmax_same"]
            extra.append((t, "mae_expected_gain", expected["value"] - argmax["value"], np.nan, np.nan, expected["n"]))
        frames += [rows, pd.DataFrame(extra, columns=summary.columns)]
    return pd.concat(frames, ignore_index=True).astype(summary.dtypes.to_dict()) if frames else summary


def select_template(summary: pd.DataFrame) -> tuple[str | None, list[str]]:
    """The template with the lowest selection MAE (unparsed answers at their worst error; ties: the parsed MAE, then
    the unparsed rate) among those with a parsed answer, and the templates whose MAE CI overlaps its; ``(None, [])``
    when no template produced a parsed answer."""
    value = summary.pivot(index="template", columns="measure", values="value")
    mae = js.measure_by(summary, "mae", "template")
    parsed = mae.index[mae["n"] > 0]
    ranked = value.loc[parsed].sort_values(["mae_selection", "mae", "unparsed_rate"])
    if ranked.empty:
        return None, []
    best = mae.loc[ranked.index[0]]
    overlapping = [str(t) for t in ranked.index[1:] if mae.loc[t, "low"] <= best["high"]]
    return str(ranked.index[0]), overlapping


def save_selection(run: PromptSelectionRun, path: str | Path | None = None) -> Path:
    """Write the selected template (with its MAE, judge, data and examples) where notebook 2 reads it; with none
    selected, the record says why and which template the later chapters use instead."""
    cfg = run.config
    if run.selected is None:
        return save_selected_template(
            None,
            path,
            reason=f"no template produced a parsed answer ({len(run.eval_pairs)} pairs x {len(run.scores)} templates)",
            judge_model=run.judge_name,
            data=run.data_label,
        )
    mae, value = run.measure("mae").loc[run.selected], run.measure("unparsed_rate").loc[run.selected, "value"]
    return save_selected_template(
        run.selected,
        path,
        mae=float(mae["value"]),
        mae_ci=[float(mae["low"]), float(mae["high"])],
        acc3=float(run.measure("acc3").loc[run.selected, "value"]),
        unparsed_rate=float(value),
        judge_model=run.judge_name,
        data=run.data_label,
        data_is_real=bool(run.data.is_real),
        n_pairs=len(run.eval_pairs),
        **({} if run.reference is None else {"n_judged": len(run.judged), "reference": run.reference.to_json()}),
        n_shots=int(cfg.n_shots),
        n_history=int(cfg.n_history),
        seed=int(cfg.seed),
        examples=run.examples[["user", "item", "g", "relevance", "unexpectedness"]].to_dict("records"),
    )
