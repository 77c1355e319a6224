"""Chapter 6's numbers: every run folder under ``runs/`` read back, and what the chapter compares across them.

A run's judge is the one its ``manifest.json`` names (the runner's, written before its first notebook, or an ad-hoc
run's, written when a notebook executed outside the runner opens its judge). A ``results.json`` made by another judge
than the manifest's is left out of the run and listed in :attr:`StoredRun.foreign`; a folder without a manifest has
an unknown judge rather than one guessed from its files. :func:`compare` computes, once, everything the chapter
shows: the items each judge labelled, the agreement between every two judges on the items both labelled and among
all the judges of one kind (raw agreement and Krippendorff's alpha, with percentile-bootstrap CIs), the measures
judges are ranked on and each run's answer health. Every row keeps its run's ``kind`` (``simulated`` or ``llm``), and
judges are compared with judges of their own kind only, so no table sets the simulated judge beside an LLM. A panel
run's members (chapter 1's ``member_scores`` items) are set beside their panel by :func:`panel_members`: each one's
and the panel's weighted kappa with g and the tokens each cost; the members' agreement among themselves
(Krippendorff's alpha) is :func:`panel_agreement`'s. The chapter judges nothing itself, so it has no
``run(judge, dataset, config)``.

**One agreement family.** Judges agreeing with one another are measured by Krippendorff's alpha throughout, for two
judges or any number, with gaps (:func:`~recjudge_utils.metrics.agreement.krippendorff_alpha_ci`): ordinal for ordered
labels (serendipity levels, SAER's Poor < Partial < Good Match: ranked, their spacing unknown), nominal for pairwise
verdicts (an adjudicated tie means the two presentation orders disagreed, not a preference halfway between a win and
a loss). Quadratic weighted kappa stays where one labeler is set against the reference g (a panel's members and the
panel against the users' label, as chapter 1 reports kappa). **Repeated units.** Where one unit is judged again (a
(user, item) under several prompt templates, a SAER list under several prompt versions, a comparison in both
orders), the bootstrap resamples the units, each with all its judgments (:data:`REPEATED_BY`), not the rows: rows of
one unit are not independent, and resampling them as if they were gives intervals too narrow.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recjudge_utils.experiments.results import RESULTS_FILE, USAGE_FILE, read_results
from recjudge_utils.judge.records import UNUSABLE_SHARE_FLAG
from recjudge_utils.judge.usage import summed_usage
from recjudge_utils.metrics.agreement import krippendorff_alpha_ci, raw_agreement_ci, weighted_kappa_ci
from recjudge_utils.metrics.numbers import number_or_nan
from recjudge_utils.paper_tables import paper_table
from recjudge_utils.paths import MANIFEST_FILE, RUN_DIR_ENV, runs_dir, shown_path
from recjudge_utils.protocols.pointwise_score import TEMPLATES

__all__ = [
    "ALPHA_METRICS",
    "REPEATED_BY",
    "UNKNOWN_JUDGE",
    "Comparison",
    "StoredRun",
    "compare",
    "load_runs",
    "panel_agreement",
    "panel_members",
    "short_judge_name",
    "this_run_folder",
]

#: how a run folder without a manifest names its judge: its files do not say who made all of them
UNKNOWN_JUDGE = "unknown (no manifest)"

#: label orders per kind of item (``<notebook>/<items key>``): the labels agreement is computed on, in their order
_ORDERS: dict[str, list[Any]] = {
    "01_serendipity_prompt_selection/scores": [1, 2, 3, 4, 5],
    "02_rs_reevaluation/scores": [1, 2, 3, 4, 5],
    "03_recsys_arena/pairwise": ["lose", "tie", "win"],
    "04_saer/pointwise": ["Poor Match", "Partial Match", "Good Match"],
    "04_saer/adversarial": ["wrong", "tie", "correct"],
    "07_your_recommenders/scores": [1, 2, 3, 4, 5],
    "07_your_recommenders/saer_labels": ["Poor Match", "Partial Match", "Good Match"],
}

#: Krippendorff's alpha's metric per kind of item: ordinal for ordered labels (scores, SAER labels), nominal for
#: pairwise verdicts (a tie after adjudication is two orders that disagreed, not a preference halfway)
ALPHA_METRICS: dict[str, str] = {kind: "nominal" if kind in ("03_recsys_arena/pairwise", "04_saer/adversarial")
                                 else "ordinal" for kind in _ORDERS}  # fmt: skip

#: the levels of an item's identity under which one unit is judged again (a prompt template, a SAER prompt version,
#: a presentation order, a fold): the unit is the identity without them, and agreement CIs resample units
REPEATED_BY: tuple[str, ...] = ("template", "prompt_version", "order", "fold")

#: the notebooks whose results the chapter lays out
_NOTEBOOKS = ("01_serendipity_prompt_selection", "02_rs_reevaluation", "03_recsys_arena", "04_saer",
              "07_your_recommenders")  # fmt: skip
#: notebooks that judge with simulated judges of their own whatever the run's judge: not a judge's results to compare
_OWN_JUDGES = ("05_protocols_detect",)

#: the measures judges are compared on (notebook, metric, the column naming the case, factor to %), in the
#: chapter's order; all but MAE are the headline shares
_MEASURES = (
    ("01_serendipity_prompt_selection", "acc3", "template", 100.0),
    ("01_serendipity_prompt_selection", "mae", "template", 1.0),
    ("03_recsys_arena", "win_pct", "x", 1.0),
    ("04_saer", "position_consistency_pct", None, 1.0),
    ("04_saer", "adversarial_correct_pct", "evaluator", 1.0),
)


@dataclass
class StoredRun:
    """One run folder: its manifest and the results of its notebooks made by the manifest's judge."""

    name: str
    manifest: dict[str, Any]
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    folder: Path | None = None
    #: how tables and legends name this run: the judge, plus the run's name when several runs share that judge
    shown_as: str = ""
    #: notebook -> judge of a ``results.json`` made by another judge than the manifest's (left out of the tables)
    foreign: dict[str, str] = field(default_factory=dict)

    @property
    def judge_profile(self) -> dict[str, Any] | None:
        judge = self.manifest.get("judge")
        return judge if isinstance(judge, dict) and judge.get("name") else None

    @property
    def judge(self) -> str:
        """The judge's model as its results describe it (its profile's model before any result is written)."""
        profile = self.judge_profile
        if profile is None:
            return UNKNOWN_JUDGE
        for res in self.results.values():  # every result left is the manifest judge's
            return str(res["judge"]["model_name"])
        return str(profile.get("model") or profile["name"])

    @property
    def profile(self) -> str:
        profile = self.judge_profile
        return str(profile["name"]) if profile else UNKNOWN_JUDGE

    @property
    def kind(self) -> str:
        """``simulated`` or ``llm``."""
        for res in self.results.values():
            return str(res["judge"]["kind"])
        return "simulated" if (self.judge_profile or {}).get("backend") == "sim" else "llm"

    @property
    def status(self) -> str:
        """``running``, ``ok``, ``failed``, ``adhoc`` (a notebook run outside the runner) or ``no manifest``."""
        if not self.manifest:
            return "no manifest"
        if self.manifest.get("adhoc"):
            return "adhoc"
        if "status" in self.manifest:
            return str(self.manifest["status"])
        # written by a runner before manifests had a status: only at the end of the run
        return "failed" if self.failed else "ok"

    @property
    def failed(self) -> list[str]:
        """The notebooks the manifest records as failed."""
        return [nb["notebook"] for nb in self.manifest.get("notebooks", []) if nb.get("status") == "failed"]

    @property
    def label(self) -> str:
        """The run and its judge's short name, as agreement tables name a judge."""
        return f"{self.name}: {short_judge_name(self.judge)}"

    @property
    def short(self) -> str:
        return self.shown_as or short_judge_name(self.judge)

    def usage(self) -> dict[str, Any]:
        """The sum of its notebooks' ``usage.json`` (what their last execution cost,
        :func:`~recjudge_utils.judge.usage.summed_usage`); cost None when none priced."""
        usage = [
            json.loads(p.read_text(encoding="utf-8"))
            for p in sorted((self.folder or runs_dir() / self.name).glob(f"*/{USAGE_FILE}"))
            if p.parent.name in self.results
        ]
        return summed_usage(usage)


def run_dataset(manifest: Mapping[str, Any]) -> str:
    """The dataset a run was made on: its ``dataset`` parameter (or a chapter's ``NN:dataset``), else the chapters'
    default, ``ml-100k``."""
    params = manifest.get("parameters") or {}
    given = [str(v) for k, v in params.items() if k == "dataset" or k.endswith(":dataset")]
    return given[0] if given else "ml-100k"


def load_runs(root: Path | None = None, same_dataset_as: Path | None = None) -> list[StoredRun]:
    """Every run folder under ``runs/`` with at least one ``results.json`` of its manifest's judge, by name.

    ``same_dataset_as``: a run folder; runs made on another dataset are left out (judges are compared on the same
    items), one printed line naming them."""
    root = root or runs_dir()
    wanted = None
    if same_dataset_as is not None and (same_dataset_as / MANIFEST_FILE).exists():
        wanted = run_dataset(json.loads((same_dataset_as / MANIFEST_FILE).read_text(encoding="utf-8")))
    out, other_data = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.exists() else []:
        results = {p.parent.name: read_results(p) for p in sorted(folder.glob(f"*/{RESULTS_FILE}"))
                   if p.parent.name not in _OWN_JUDGES}  # fmt: skip
        if not results:
            continue
        manifest_path = folder / MANIFEST_FILE
        manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else {}
        if wanted is not None and (dataset := run_dataset(manifest)) != wanted:
            other_data.append(f"{folder.name} ({shown_path(dataset)})")
            continue
        run = StoredRun(folder.name, manifest, {}, folder)
        for notebook, res in results.items():
            made_by = res["judge"].get("name")
            if run.judge_profile is not None and made_by != run.profile:
                run.foreign[notebook] = str(made_by)
            else:
                run.results[notebook] = res
        if run.results:
            out.append(run)
    if other_data:
        print(f"left out, made on another dataset than {shown_path(wanted or '')}: run {', run '.join(other_data)}")
    shorts = [short_judge_name(run.judge) for run in out]
    for run, short in zip(out, shorts, strict=True):
        run.shown_as = short if shorts.count(short) == 1 else f"{short} [run {run.name}]"
    return out


def short_judge_name(description: str) -> str:
    """The judge's name without its details in parentheses ("SmolLM2-135M-Instruct (Q4_1 GGUF, ...)" ->
    "SmolLM2-135M-Instruct")."""
    return description.split(" (", 1)[0].strip() or description


def this_run_folder() -> Path | None:
    """The run folder of the process executing this chapter (the book runner's ``RECJUDGE_RUN_DIR``), else None."""
    folder = os.environ.get(RUN_DIR_ENV)
    return Path(folder) if folder else None


def _rows(runs: Sequence[StoredRun], notebook: str) -> pd.DataFrame:
    """The results rows of one notebook, every run's, with its run, judge, kind and data."""
    return pd.DataFrame(
        [
            {"run": run.name, "judge": run.shown_as or run.judge, "kind": run.kind, "data": res["data"], **r,
             **r["group"]}
            for run in runs
            if (res := run.results.get(notebook)) is not None
            for r in res["results"]
        ]
    )  # fmt: skip


def _items(runs: Sequence[StoredRun]) -> dict[str, dict[str, pd.Series]]:
    """kind of item -> judge (its run's label) -> labels indexed by the item's identity."""
    out: dict[str, dict[str, pd.Series]] = {}
    for run in runs:
        for notebook, res in run.results.items():
            for kind, items in res.get("items", {}).items():
                if not items or kind == MEMBER_ITEMS:  # a panel's members: set beside their panel (panel_members)
                    continue
                frame = pd.DataFrame(items)
                series = frame.set_index([c for c in frame.columns if c not in ("label", "truth")])["label"]
                out.setdefault(f"{notebook}/{kind}", {})[run.label] = series[~series.index.duplicated()]
    return out


def _units(index: pd.Index) -> list[Any] | None:
    """The unit of each item (its identity without the :data:`REPEATED_BY` levels), or None when every item is a
    unit of its own (the row bootstrap is then the unit bootstrap)."""
    names = [n for n in index.names if n is not None]
    kept = [n for n in names if n not in REPEATED_BY]
    if not kept or len(kept) == len(names):
        return None
    units = list(zip(*(index.get_level_values(n) for n in kept), strict=True))
    return units if len(set(units)) < len(units) else None


def _pairwise_agreement(
    items: Mapping[str, Mapping[str, pd.Series]], kinds: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Between every two labelers of one kind (``kinds``: labeler -> ``simulated`` or ``llm``; None: all one kind), per
    kind of item with an order, on the items both labelled within it: raw agreement and Krippendorff's alpha
    (:data:`ALPHA_METRICS`; ``alpha``, ``se``, ``low``, ``high``, and ``dropped`` of ``n_boot`` resamples where alpha
    was undefined) with their 95 % percentile-bootstrap CIs over the units (:func:`_units`), 2000 resamples, seed 0."""
    rows = []
    for kind, by_judge in items.items():
        order = _ORDERS.get(kind)
        if order is None:
            continue
        for a, b in combinations(by_judge, 2):
            if (judges := _kind_of(kinds, a)) != _kind_of(kinds, b):
                continue  # the simulated judge is never set beside an LLM
            both = pd.concat([by_judge[a], by_judge[b]], axis=1, keys=["a", "b"], join="inner").dropna()
            both = both[both["a"].isin(order) & both["b"].isin(order)]
            row: dict[str, Any] = {"kind": judges, "items": kind, "judge A": a, "judge B": b,
                                   "n both labelled": len(both), "metric": ALPHA_METRICS[kind]}  # fmt: skip
            if len(both) >= 2:
                units, pair = _units(both.index), [both["a"].tolist(), both["b"].tolist()]
                alpha = krippendorff_alpha_ci(pair, order, ALPHA_METRICS[kind], n_boot=2000, seed=0, clusters=units)
                raw = raw_agreement_ci(pair[0], pair[1], n_boot=2000, seed=0, clusters=units)
                row |= {"alpha": alpha.value, "se": alpha.se, "low": alpha.low, "high": alpha.high,
                        "dropped": alpha.dropped, "n_boot": alpha.n_boot, "units": len(set(units or both.index)),
                        "raw_agreement": raw[0], "raw_low": raw[1], "raw_high": raw[2]}  # fmt: skip
            rows.append(row)
    return pd.DataFrame(rows, columns=["kind", "items", "judge A", "judge B", "n both labelled", "metric", "alpha",
                                       "se", "low", "high", "dropped", "n_boot", "units", "raw_agreement", "raw_low",
                                       "raw_high"])  # fmt: skip


def _all_judges(items: Mapping[str, Mapping[str, pd.Series]], kinds: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Krippendorff's alpha over every labeler of one kind (``kinds`` as in :func:`_pairwise_agreement`) of a kind of
    item, three or more of them, on the items two or more of them labelled (alpha takes the gaps), with its CI over
    the units as there (``dropped`` of ``n_boot`` resamples undefined)."""
    rows = []
    for kind, labelers in items.items():
        order = _ORDERS.get(kind)
        for judges in dict.fromkeys(_kind_of(kinds, name) for name in labelers):
            by_judge = {name: labels for name, labels in labelers.items() if _kind_of(kinds, name) == judges}
            if order is None or len(by_judge) < 3:
                continue
            frame = pd.concat(by_judge, axis=1, join="outer")
            frame = frame.where(frame.isin(order))  # a label outside the order: left out, never imputed
            alpha = krippendorff_alpha_ci([frame[judge].tolist() for judge in frame.columns], order,
                                          ALPHA_METRICS[kind], n_boot=2000, seed=0,
                                          clusters=_units(frame.index))  # fmt: skip
            if alpha.n >= 2:
                rows.append({"kind": judges, "items": kind, "judges": len(by_judge), "n labelled twice": alpha.n,
                             "metric": ALPHA_METRICS[kind], "alpha": alpha.value, "low": alpha.low,
                             "high": alpha.high, "dropped": alpha.dropped, "n_boot": alpha.n_boot})  # fmt: skip
    return pd.DataFrame(rows, columns=["kind", "items", "judges", "n labelled twice", "metric", "alpha", "low", "high",
                                       "dropped", "n_boot"])  # fmt: skip


def _kind_of(kinds: Mapping[str, str] | None, labeler: str) -> str:
    return "" if kinds is None else kinds.get(labeler, "llm")


#: chapter 1's items holding a panel's members' scores (:class:`~recjudge_utils.experiments.prompt_selection.
#: PromptSelectionRun`), and the serendipity levels they take
MEMBER_ITEMS, _LEVELS = "member_scores", _ORDERS["01_serendipity_prompt_selection/scores"]


def _panel_runs(runs: Sequence[StoredRun]) -> list[tuple[StoredRun, dict[str, Any]]]:
    """The panel runs with chapter 1's member scores, each with its chapter 1 items."""
    chapter_1 = [(run, run.results.get("01_serendipity_prompt_selection", {}).get("items", {})) for run in runs]
    return [(run, items) for run, items in chapter_1 if items.get(MEMBER_ITEMS)]


def panel_members(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """Per panel run with chapter 1's member scores, one row per member and one for the panel (``panel`` True, last):
    quadratic weighted kappa with g (``kappa``, ``low``, ``high``: percentile bootstrap over the judged (user, item)
    pairs, each with its every template's scores, 2000 resamples, seed 0), scores (``n``), the tokens of its calls (the
    panel's: its members' summed) and their multiple of a member's mean (``tokens_x``). The members' agreement among
    themselves is :func:`panel_agreement`'s."""
    rows = []
    for run, items in _panel_runs(runs):
        members = pd.DataFrame(items[MEMBER_ITEMS])
        panel = pd.DataFrame(items["scores"]).assign(member="", tokens=np.nan)
        for name, frame in [*members.groupby("member", sort=False), ("", panel)]:
            ok = frame.dropna(subset=["label"])
            pairs = list(zip(ok["user"], ok["item"], strict=True))
            kappa = weighted_kappa_ci(ok["truth"].astype(int), ok["label"].astype(int), _LEVELS, n_boot=2000, seed=0,
                                      clusters=pairs)  # fmt: skip
            rows.append({"run": run.name, "judge": run.shown_as or run.judge, "kind": run.kind, "labeler": name,
                         "panel": not name, "n": kappa.n, "kappa": kappa.value, "low": kappa.low, "high": kappa.high,
                         "tokens": (frame if name else members)["tokens"].sum()})  # fmt: skip
    out = pd.DataFrame(rows, columns=["run", "judge", "kind", "labeler", "panel", "n", "kappa", "low", "high",
                                      "tokens"])  # fmt: skip
    return out.assign(tokens_x=out["tokens"] / out.groupby("run")["tokens"].transform(lambda t: t.iloc[:-1].mean()))


def panel_agreement(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """Per panel run with chapter 1's member scores, its members' agreement among themselves: Krippendorff's ordinal
    alpha (``alpha``, ``low``, ``high``: percentile bootstrap over the (user, item) pairs, each with all its templates,
    2000 resamples, seed 0), ``n`` the scores two or more members gave, ``units`` their pairs, ``dropped`` of
    ``n_boot`` resamples where alpha was undefined. Ordinal, because the levels are ranked but nothing says 1 to 2 is
    as far as 4 to 5 (interval alpha assumed so), and a nominal coefficient would count 2 against 3 as fully as 1
    against 5. By pair, because the templates pool the same (user, item) up to four times: resampling the rows would
    take those copies for independent pairs."""
    rows = []
    for run, items in _panel_runs(runs):
        members = pd.DataFrame(items[MEMBER_ITEMS])
        wide = members.pivot_table(index=["template", "user", "item"], columns="member", values="label", sort=False)
        units = list(zip(wide.index.get_level_values("user"), wide.index.get_level_values("item"), strict=True))
        a = krippendorff_alpha_ci([wide[m].tolist() for m in wide.columns], _LEVELS, "ordinal", n_boot=2000, seed=0,
                                  clusters=units)  # fmt: skip
        kept = [u for u, *labels in zip(units, *(wide[m] for m in wide.columns), strict=True)
                if sum(pd.notna(v) for v in labels) >= 2]  # fmt: skip
        rows.append({"run": run.name, "kind": run.kind, "alpha": a.value, "low": a.low, "high": a.high, "n": a.n,
                     "units": len(set(kept)), "dropped": a.dropped, "n_boot": a.n_boot})  # fmt: skip
    return pd.DataFrame(rows, columns=["run", "kind", "alpha", "low", "high", "n", "units", "dropped", "n_boot"])


def _measures(rows: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every judge's estimate of each measure (:data:`_MEASURES`): ``metric``, ``case`` (template, recommender,
    prompt), ``baseline`` (chapter 3's), ``prompt`` (the prompt version), ``judge``, ``kind``, ``value``, ``low``,
    ``high`` (shares in %), ``order`` (where a headline's row goes); each case's rows in the order of the runs, rows
    without a value left out."""
    out = []
    for notebook, metric, column, scale in _MEASURES:
        if (frame := rows[notebook]).empty:
            continue
        picked = frame[frame["metric"] == metric]
        if metric == "win_pct":  # after position-swap adjudication, as chapter 3 reports it
            picked = picked[picked["source"] == "adjudicated"]
        for r in picked.to_dict("records"):
            case = str(r[column]) if column else ""
            prompt = case.rsplit("(", 1)[-1].rstrip(")") if column == "evaluator" else ""  # "generic prompt (v1)"
            rank = (TEMPLATES.index(case) if case in TEMPLATES else 9) if column == "template" else prompt
            out.append({"metric": metric, "case": case, "baseline": r.get("y", "") if metric == "win_pct" else "",
                        "prompt": prompt, "judge": r["judge"], "kind": r["kind"],
                        **{k: number_or_nan(r.get(k)) * scale for k in ("value", "low", "high")},
                        "order": (notebook[:2], str(rank))})  # fmt: skip
    columns = ["metric", "case", "baseline", "prompt", "judge", "kind", "value", "low", "high", "order"]
    frame = pd.DataFrame(out, columns=columns)
    return frame.dropna(subset=["value"]).reset_index(drop=True)


def _health(runs: Sequence[StoredRun]) -> pd.DataFrame:
    """Per run and judging notebook: answers asked (cache hits included), answers parsed, and whether more than a
    fifth were unusable (as the run manifest flags a notebook)."""
    rows = []
    for run in runs:
        for notebook, res in sorted(run.results.items()):
            counts = res.get("judgments") or {}
            n, parsed = int(counts.get("n") or 0), int(counts.get("parsed") or 0)
            if n:
                rows.append({"run": run.name, "notebook": notebook, "n": n, "parsed": parsed,
                             "flagged": n - parsed > UNUSABLE_SHARE_FLAG * n})  # fmt: skip
    frame = pd.DataFrame(rows, columns=["run", "notebook", "n", "parsed", "flagged"])
    return frame.astype({"n": int, "parsed": int, "flagged": bool})  # typed when empty too: a mask stays a mask


@dataclass
class Comparison:
    """Everything chapter 6 shows, computed once from the runs it compares."""

    runs: list[StoredRun]
    #: the folder of the run executing the chapter (:func:`this_run_folder`), which the page calls "this run"
    current: Path | None
    #: notebook -> its results rows, every run's (``run``, ``judge``, ``kind``, ``data`` and the result's fields)
    rows: dict[str, pd.DataFrame]
    #: kind of item -> labeler -> labels, the items agreement is computed on
    items: dict[str, dict[str, pd.Series]]
    #: every two judges of one kind: raw agreement and Krippendorff's alpha (:func:`_pairwise_agreement`)
    agreement: pd.DataFrame
    #: every judge of one kind, three or more: Krippendorff's alpha (:func:`_all_judges`)
    all_judges: pd.DataFrame
    #: each panel run's members beside the panel (:func:`panel_members`)
    members: pd.DataFrame
    #: each panel run's members' agreement among themselves (:func:`panel_agreement`)
    panel_agreement: pd.DataFrame
    #: every judge's estimate of the measures the chapter ranks judges on (:func:`_measures`)
    measures: pd.DataFrame
    health: pd.DataFrame

    @property
    def headlines(self) -> pd.DataFrame:
        """The headline shares in % (the measures but MAE), in the chapter's order; the runs' order within a row."""
        shares = self.measures[self.measures["metric"] != "mae"]
        return shares.sort_values("order", kind="stable").drop(columns="order").reset_index(drop=True)

    def chapter(self, number: int) -> pd.DataFrame:
        """The results rows of chapter ``number``'s notebook (empty when no run has them)."""
        return next(rows for notebook, rows in self.rows.items() if int(notebook[:2]) == number)

    @property
    def stand_ins(self) -> dict[str, list[str]]:
        """notebook -> the stand-in data its runs ran on (data labels that say "stand-in"), by notebook."""
        out: dict[str, set[str]] = {}
        for run in self.runs:
            for notebook, res in run.results.items():
                if "stand-in" in res["data"].lower():
                    out.setdefault(notebook, set()).add(res["data"])
        return {notebook: sorted(labels) for notebook, labels in sorted(out.items())}

    def arena_paper(self, table: str) -> pd.DataFrame:
        """The rows of the Arena paper's ``table`` for the datasets chapter 3's runs compare with: MIND for a MIND
        run, else MovieLens (the closer domain for ratings data, and the paper's only other dataset)."""
        datasets = {"MIND" if "MIND" in str(label) else "MovieLens" for label in self.chapter(3).get("data", [])}
        paper = paper_table(table)
        return paper[paper["dataset"].isin(datasets or {"MovieLens"})]

    def of_kind(self, frame: str, kind: str) -> pd.DataFrame:
        """``agreement``, ``all_judges``, ``members`` or ``panel_agreement`` of the judges of one kind only
        (``simulated`` or ``llm``)."""
        rows = getattr(self, frame)
        return rows[rows["kind"] == kind]

    def is_current(self, run: StoredRun) -> bool:
        here, folder = self.current, run.folder
        return here is not None and folder is not None and folder.resolve() == here.resolve()


def compare(runs: Sequence[StoredRun], current: Path | None = None) -> Comparison:
    """The comparison of ``runs`` (:func:`load_runs`, or a selection of them); ``current`` is this run's folder."""
    items, kinds = _items(runs), {run.label: run.kind for run in runs}
    rows = {notebook: _rows(runs, notebook) for notebook in _NOTEBOOKS}
    return Comparison(list(runs), current, rows, items, _pairwise_agreement(items, kinds), _all_judges(items, kinds),
                      panel_members(runs), panel_agreement(runs), _measures(rows), _health(runs))  # fmt: skip
