"""SAER (Liu et al., SIGIR '26): customer context, pointwise and pairwise LLM judges, adversarial pairs.

Everything here is pure (no LLM calls): building the customer context the paper describes, rendering
the versioned prompt files in ``recjudge_utils/prompts/saer/<domain>/``, strict parsers for the two
answer formats, the position swap and its mapping back to algorithms, and the adversarial pairs.
``recjudge_utils.saer_experiment`` sends the requests through ``JudgeClient`` and builds the tables.

**Customer context and honest substitutes.** The paper compiles six months of purchase history
(titles, brands, categories, ratings) plus recent searches, recent clicks and browsed categories.
Public data has no searches or clicks, so each missing field is either replaced by the closest
substitute the data *does* have, named as such, or shown as "not available" (``SUBSTITUTIONS``):

=====================  ================================================  =============================================
SAER field             Amazon Beauty (``ecommerce``)                      MovieLens stand-in (``movies``)
=====================  ================================================  =============================================
purchase history       reviewed products, 3-5 stars, 180-day window      movies rated 3-5 stars, 180-day window
recent searches        not available (no search logs published)          not available (no search logs)
recent clicks          products reviewed 1-2 stars ("bought, disliked")   movies rated 1-2 stars ("watched, disliked")
browsed categories     categories of the 5 latest reviews                 genres of the 5 latest ratings
=====================  ================================================  =============================================

The window ends at the customer's last interaction; the prompt shows at most ``max_history``
history items (newest first) so it fits a small model's context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from recjudge_utils.agreement import TIE
from recjudge_utils.client import JudgeRequest, ParseError

CATEGORIES: tuple[str, ...] = ("Good Match", "Partial Match", "Poor Match")
VERSIONS: tuple[str, ...] = ("v1", "v2", "v3")
VERSION_NAMES = {"v1": "generic", "v2": "over-specified rubric", "v3": "SAER refined"}
SET_LABELS: tuple[str, str, str] = ("Set 1", "Set 2", TIE)
DOMAINS = ("ecommerce", "movies")

SUBSTITUTIONS: dict[str, dict[str, str]] = {
    "ecommerce": {
        "purchase history (6 months)": "products the customer reviewed with 3-5 stars in the 180 days before "
        "their last review (a review is the closest public proxy for a purchase)",
        "recent searches": "not available: Amazon's public review data has no search logs",
        "recent clicks": "stand-in: products the customer reviewed with 1-2 stars in the window (bought but disliked)",
        "browsed categories": "stand-in: categories of the customer's 5 most recent reviews",
    },
    "movies": {
        "purchase history (6 months)": "stand-in: movies the customer rated 3-5 stars in the 180 days before "
        "their last rating (ratings used as purchases)",
        "recent searches": "not available: MovieLens has no search logs",
        "recent clicks": "stand-in: movies the customer rated 1-2 stars in the window (viewed but disliked)",
        "browsed categories": "stand-in: genres of the customer's 5 most recent ratings",
    },
}


def domain_for(dataset_name: str) -> str:
    """Prompt set for a dataset: the e-commerce set for Amazon data, the movie set otherwise."""
    return "ecommerce" if dataset_name.lower().startswith("amazon") else "movies"


# -- items ---------------------------------------------------------------------------------------
def _as_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, float) and np.isnan(value):
        return []
    if isinstance(value, Sequence | np.ndarray):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [str(value)]


def _clip(text: str, n: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


@dataclass(frozen=True)
class Catalogue:
    """Item id -> short display text (title, brand, categories) used in prompts."""

    titles: dict[int, str]
    categories: dict[int, list[str]]
    brands: dict[int, str]

    @classmethod
    def from_items(cls, items: pd.DataFrame, max_title: int = 70) -> Catalogue:
        """Titles (missing titles become "untitled product <asin>"), brands, and ``genres`` as categories
        (movie genres; for Amazon the loader's leaf categories)."""
        frame = items.drop_duplicates("item")
        ids = [int(i) for i in frame["item"]]
        fallback = frame["asin"].astype(str).tolist() if "asin" in frame.columns else [str(i) for i in ids]
        years = frame["year"].tolist() if "year" in frame.columns else [None] * len(ids)
        titles = {}
        for i, t, fb, y in zip(ids, frame["title"].tolist(), fallback, years, strict=True):
            ok = isinstance(t, str) and t.strip()
            title = _clip(t, max_title) if ok else f"untitled product {fb}"
            if ok and y is not None and not pd.isna(y) and not re.search(r"\(\d{4}\)\s*$", title):
                title = f"{title} ({int(y)})"  # RecBole's ML-100K titles lack the year the original files carry
            titles[i] = title
        cats = {}
        if "genres" in frame.columns:
            cats = {i: _as_list(c) for i, c in zip(ids, frame["genres"].tolist(), strict=True)}
        brands = {}
        if "brand" in frame.columns:
            brands = {
                i: _clip(b, 30)
                for i, b in zip(ids, frame["brand"].tolist(), strict=True)
                if isinstance(b, str) and b.strip()
            }
        return cls(titles=titles, categories=cats, brands=brands)

    def title(self, item: int) -> str:
        return self.titles.get(int(item), f"item {int(item)}")

    def line(self, item: int, max_categories: int = 3) -> str:
        """ "Title | Brand | Cat1, Cat2" (brand and categories where the catalogue has them)."""
        parts = [self.title(item)]
        if int(item) in self.brands:
            parts.append(self.brands[int(item)])
        cats = self.categories.get(int(item), [])
        if cats:
            parts.append(", ".join(cats[-max_categories:]))
        return " | ".join(parts)


# -- customer context ----------------------------------------------------------------------------
@dataclass(frozen=True)
class CustomerContext:
    """What the judge sees about one customer (see the module docstring for the substitutes)."""

    user: int
    domain: str
    window_start: int
    window_end: int
    history: tuple[tuple[int, float, int], ...]  # (item, rating, timestamp) liked, newest first
    disliked: tuple[tuple[int, float, int], ...]  # rated 1-2 stars in the window, newest first
    recent_categories: tuple[str, ...]
    n_window: int  # interactions in the window before truncation to max_history

    def render(self, catalogue: Catalogue, history_only: bool = False) -> str:
        """Prompt text; ``history_only`` keeps just the purchase history (the generic v1 prompt)."""
        movies = self.domain == "movies"
        what = "Movies watched and liked (rated 3-5 stars)" if movies else "Purchase history (reviewed 3-5 stars)"
        lines = [f"{what}, last 6 months, newest first:"]
        for item, rating, ts in self.history:
            lines.append(f"- {_date(ts)} | {catalogue.line(item)} | {rating:g} stars")
        if not self.history:
            lines.append("- (none)")
        if history_only:
            return "\n".join(lines)
        dis = "Watched but disliked (rated 1-2 stars)" if movies else "Bought but disliked (reviewed 1-2 stars)"
        lines.append(f"{dis}: " + ("; ".join(catalogue.title(i) for i, _, _ in self.disliked) or "none"))
        lines.append("Recent searches: not available in this data")
        what_cat = "genres" if movies else "categories"
        lines.append(
            f"Recently browsed {what_cat} (from the 5 latest): " + (", ".join(self.recent_categories) or "none")
        )
        return "\n".join(lines)


def _date(ts: int) -> str:
    return datetime.fromtimestamp(int(ts), tz=UTC).strftime("%Y-%m-%d")


def build_context(
    interactions: pd.DataFrame,
    catalogue: Catalogue,
    user: int,
    domain: str,
    window_days: int = 180,
    max_history: int = 10,
    like_threshold: float = 3.0,
    n_recent_categories: int = 5,
) -> CustomerContext:
    """The customer's context over the ``window_days`` before their last interaction."""
    rows = interactions.loc[interactions["user"] == user]
    if rows.empty:
        raise ValueError(f"customer {user} has no interactions")
    end = int(rows["timestamp"].max())
    start = end - window_days * 86400
    rows = rows.loc[rows["timestamp"] >= start]
    rows = rows.assign(_pos=np.arange(len(rows))).sort_values(["timestamp", "_pos"], ascending=False, kind="stable")
    triples = [
        (int(i), float(r), int(t)) for i, r, t in zip(rows["item"], rows["rating"], rows["timestamp"], strict=True)
    ]
    liked = [x for x in triples if x[1] >= like_threshold]
    disliked = [x for x in triples if x[1] < like_threshold]
    cats: list[str] = []
    counts: dict[str, int] = {}
    for item, _, _ in triples[:n_recent_categories]:
        for c in catalogue.categories.get(item, [])[-2:]:
            if c not in counts:
                cats.append(c)
            counts[c] = counts.get(c, 0) + 1
    cats.sort(key=lambda c: -counts[c])
    return CustomerContext(
        user=int(user),
        domain=domain,
        window_start=start,
        window_end=end,
        history=tuple(liked[:max_history]),
        disliked=tuple(disliked[:3]),
        recent_categories=tuple(cats[:6]),
        n_window=len(triples),
    )


def render_list(items: Sequence[int], catalogue: Catalogue) -> str:
    """Numbered recommendation list, 1-based (the numbers FLAGGED ITEMS refers to)."""
    return "\n".join(f"{k}. {catalogue.line(i)}" for k, i in enumerate(items, start=1))


# -- prompt files --------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptTemplate:
    """One versioned prompt file: fixed messages (instructions + few-shot) and a per-customer turn."""

    template_id: str  # e.g. "saer/movies/pointwise_v3"
    version: str  # file revision, goes into the cache key
    mode: str  # "pointwise" | "pairwise"
    prompt_version: str  # "v1" | "v2" | "v3"
    history_only: bool
    fixed: tuple[dict, ...]
    final: str  # per-customer user turn with <<CONTEXT>>, <<LIST>> / <<SET_1>>, <<SET_2>>
    n_examples: int = field(default=0)

    def messages(self, **slots: str) -> tuple[dict, ...]:
        text = self.final
        for key, value in slots.items():
            marker = f"<<{key.upper()}>>"
            if marker not in text:
                raise KeyError(f"{self.template_id}: no slot {marker}")
            text = text.replace(marker, value)
        leftover = re.findall(r"<<[A-Z_0-9]+>>", text)
        if leftover:
            raise KeyError(f"{self.template_id}: unfilled slots {leftover}")
        return (*self.fixed, {"role": "user", "content": text})


_BLOCK = re.compile(r"^=== (system|user|assistant|final) ===[ \t]*$", re.MULTILINE)


def parse_template_text(text: str, template_id: str) -> PromptTemplate:
    """Parse a prompt file: ``key: value`` header lines, then ``=== role ===`` blocks."""
    head, _, body = text.partition("\n---\n")
    meta = {}
    for line in head.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition(":")
            meta[key.strip()] = value.strip()
    for key in ("version", "mode", "prompt_version", "history_only"):
        if key not in meta:
            raise ValueError(f"{template_id}: header lacks '{key}:'")
    parts = _BLOCK.split(body)
    blocks = [(parts[i], parts[i + 1].strip("\n")) for i in range(1, len(parts), 2)]
    if not blocks or blocks[-1][0] != "final":
        raise ValueError(f"{template_id}: the last block must be '=== final ==='")
    fixed = tuple({"role": role, "content": content.strip()} for role, content in blocks[:-1])
    if any(b[0] == "final" for b in blocks[:-1]):
        raise ValueError(f"{template_id}: only one final block allowed")
    return PromptTemplate(
        template_id=template_id,
        version=meta["version"],
        mode=meta["mode"],
        prompt_version=meta["prompt_version"],
        history_only=meta["history_only"].lower() == "true",
        fixed=fixed,
        final=blocks[-1][1].strip(),
        n_examples=sum(1 for r, _ in blocks[:-1] if r == "assistant"),
    )


@cache
def load_template(domain: str, mode: str, version: str) -> PromptTemplate:
    """``prompts/saer/<domain>/<mode>_<version>.md`` via importlib.resources."""
    if domain not in DOMAINS:
        raise ValueError(f"domain must be one of {DOMAINS}, not {domain!r}")
    if mode not in ("pointwise", "pairwise"):
        raise ValueError(f"mode must be 'pointwise' or 'pairwise', not {mode!r}")
    if version not in VERSIONS:
        raise ValueError(f"prompt version must be one of {VERSIONS}, not {version!r}")
    name = f"{mode}_{version}.md"
    text = resources.files("recjudge_utils").joinpath("prompts", "saer", domain, name).read_text(encoding="utf-8")
    tpl = parse_template_text(text, f"saer/{domain}/{mode}_{version}")
    if tpl.mode != mode or tpl.prompt_version != version:
        raise ValueError(f"{tpl.template_id}: header says {tpl.mode}/{tpl.prompt_version}")
    return tpl


# -- requests ------------------------------------------------------------------------------------
POINTWISE_MAX_TOKENS = 160  # the few-shot answers are 40-80 tokens
PAIRWISE_MAX_TOKENS = 120


def pointwise_request(
    tpl: PromptTemplate, context: CustomerContext, items: Sequence[int], catalogue: Catalogue, metadata: dict
) -> JudgeRequest:
    msgs = tpl.messages(
        context=context.render(catalogue, tpl.history_only),
        list=render_list(items, catalogue),
        n_items=str(len(items)),
    )
    return JudgeRequest(
        messages=msgs,
        template_id=tpl.template_id,
        template_version=tpl.version,
        max_tokens=POINTWISE_MAX_TOKENS,
        metadata=metadata,
    )


def pairwise_request(
    tpl: PromptTemplate,
    context: CustomerContext,
    set_1: Sequence[int],
    set_2: Sequence[int],
    catalogue: Catalogue,
    metadata: dict,
) -> JudgeRequest:
    msgs = tpl.messages(
        context=context.render(catalogue, tpl.history_only),
        set_1=render_list(set_1, catalogue),
        set_2=render_list(set_2, catalogue),
    )
    return JudgeRequest(
        messages=msgs,
        template_id=tpl.template_id,
        template_version=tpl.version,
        max_tokens=PAIRWISE_MAX_TOKENS,
        metadata=metadata,
    )


# -- parsers -------------------------------------------------------------------------------------
_FIELD = re.compile(r"^[ \t>*_#-]*(REASONING|CATEGORY|FLAGGED ITEMS|VERDICT)[*_ \t]*:[*_]*[ \t]*(.*)$", re.I | re.M)


def _fields(text: str) -> dict[str, str]:
    """Field name -> value of the FIRST answer block (a model that goes on to invent another
    example after its answer repeats REASONING:, which ends the first block). A field given twice
    inside the block with different values is ambiguous and raises ParseError."""
    if text is None or not text.strip():
        raise ParseError("empty answer")
    matches = list(_FIELD.finditer(text))
    if not matches:
        raise ParseError("no REASONING/CATEGORY/FLAGGED ITEMS/VERDICT field")
    out: dict[str, str] = {}
    for k, m in enumerate(matches):
        name = m.group(1).upper()
        end = matches[k + 1].start() if k + 1 < len(matches) else len(text)
        value = (m.group(2) + text[m.end() : end]).strip()
        if name == "REASONING" and "REASONING" in out:
            break  # a second answer block begins: ignore it
        if name in out and _norm(out[name]) != _norm(value):
            raise ParseError(f"{name} given twice with different values")
        out.setdefault(name, value)
    return out


def _norm(value: str) -> str:
    value = re.sub(r"[*_`\"'\[\]<>]", "", value)
    value = value.strip().rstrip(".!").strip()
    return " ".join(value.lower().split())


@dataclass(frozen=True)
class PointwiseVerdict:
    reasoning: str
    category: str
    flagged: tuple[int, ...]


def parse_category(value: str) -> str:
    """Exactly one of CATEGORIES (case, markdown and a trailing full stop tolerated)."""
    first_line = value.strip().splitlines()[0] if value.strip() else ""
    norm = _norm(first_line)
    for cat in CATEGORIES:
        if norm == cat.lower():
            return cat
    found = [c for c in CATEGORIES if c.lower() in norm]
    if len(found) > 1:
        raise ParseError(f"ambiguous CATEGORY {first_line!r}")
    if len(found) == 1 and re.fullmatch(rf"{found[0].lower()}\s*(\(.*\))?", norm):
        return found[0]
    raise ParseError(f"CATEGORY {first_line!r} is not one of {list(CATEGORIES)}")


def parse_flagged(value: str, n_items: int) -> tuple[int, ...]:
    """Item numbers 1..n_items ("3, 7", "#3 (title), #7", "None"); anything else raises ParseError."""
    first_line = value.strip().splitlines()[0] if value.strip() else ""
    norm = _norm(first_line)
    if norm in ("none", "n/a", "na", "no", "no items", "none flagged", "-", "[]", ""):
        if norm == "":
            raise ParseError("FLAGGED ITEMS is empty (expected item numbers or None)")
        return ()
    # drop parenthesised titles, then every comma/semicolon/'and' separated token must start with a number
    stripped = re.sub(r"\([^)]*\)", "", first_line)
    tokens = [t.strip() for t in re.split(r",|;|\band\b", stripped) if t.strip()]
    numbers = []
    for tok in tokens:
        m = re.match(r"^[*_\[]*(?:item\s*)?#?\s*(\d+)\b", tok, re.I)
        if not m:
            raise ParseError(f"FLAGGED ITEMS entry {tok!r} is not an item number")
        k = int(m.group(1))
        if not 1 <= k <= n_items:
            raise ParseError(f"FLAGGED ITEMS number {k} outside 1..{n_items}")
        numbers.append(k)
    return tuple(sorted(set(numbers)))


def parse_pointwise(text: str, n_items: int = 10) -> PointwiseVerdict:
    """Strict parser for REASONING / CATEGORY / FLAGGED ITEMS (all three required)."""
    fields = _fields(text)
    for name in ("REASONING", "CATEGORY", "FLAGGED ITEMS"):
        if name not in fields:
            raise ParseError(f"missing {name}")
    reasoning = fields["REASONING"].strip()
    if not reasoning:
        raise ParseError("empty REASONING")
    return PointwiseVerdict(
        reasoning, parse_category(fields["CATEGORY"]), parse_flagged(fields["FLAGGED ITEMS"], n_items)
    )


@dataclass(frozen=True)
class PairwiseVerdict:
    reasoning: str
    verdict: str  # "Set 1" | "Set 2" | "Tie"


def parse_verdict(value: str) -> str:
    first_line = value.strip().splitlines()[0] if value.strip() else ""
    norm = _norm(first_line)
    table = {"set 1": "Set 1", "set 2": "Set 2", "tie": TIE, "set1": "Set 1", "set2": "Set 2"}
    if norm in table:
        return table[norm]
    m = re.fullmatch(r"(set ?[12]|tie)( is better| wins)?( \(.*\))?", norm)
    if m:
        return table[m.group(1)]
    raise ParseError(f"VERDICT {first_line!r} is not one of Set 1 / Set 2 / Tie")


def parse_pairwise(text: str) -> PairwiseVerdict:
    """Strict parser for REASONING / VERDICT (both required; VERDICT exactly Set 1, Set 2 or Tie)."""
    fields = _fields(text)
    for name in ("REASONING", "VERDICT"):
        if name not in fields:
            raise ParseError(f"missing {name}")
    if not fields["REASONING"].strip():
        raise ParseError("empty REASONING")
    return PairwiseVerdict(fields["REASONING"].strip(), parse_verdict(fields["VERDICT"]))


# -- swap and adjudication -----------------------------------------------------------------------
def map_verdict(verdict: str | None, set_1: str, set_2: str) -> str | None:
    """Set label -> algorithm name ("Tie" stays "Tie", None stays None)."""
    if verdict is None:
        return None
    return {"Set 1": set_1, "Set 2": set_2, TIE: TIE}[verdict]


def adjudicate_swap(first: str | None, second: str | None) -> str | None:
    """Both presentation orders agree -> that verdict; otherwise a position-dependent tie."""
    if first is None or second is None:
        return None
    return first if first == second else TIE


# -- adversarial pairs ---------------------------------------------------------------------------
def adversarial_pairs(users: Sequence[int], algorithms: Sequence[str], seed: int = 0) -> pd.DataFrame:
    """One blind case per customer: genuine list vs the same algorithm's list for another customer.

    Algorithms are assigned in equal shares (as the paper's 50/50), the decoy customer is drawn
    uniformly from the *other* customers, and the genuine list's position (Set 1 or Set 2) is random;
    all with ``numpy.random.default_rng(seed)``.
    """
    users = [int(u) for u in users]
    if len(users) < 2:
        raise ValueError("adversarial pairs need at least two customers")
    if len(set(users)) != len(users):
        raise ValueError("customers must be distinct")
    rng = np.random.default_rng(seed)
    algs = [algorithms[k % len(algorithms)] for k in range(len(users))]
    algs = [algs[k] for k in rng.permutation(len(users))]
    rows = []
    for k, user in enumerate(users):
        others = [u for u in users if u != user]
        decoy = others[int(rng.integers(len(others)))]
        rows.append(
            {"user": user, "algorithm": algs[k], "decoy_user": decoy, "genuine_position": int(rng.integers(1, 3))}
        )
    return pd.DataFrame(rows)


def adversarial_outcome(verdict: str | None, genuine_position: int) -> str | None:
    """ "correct" (genuine list chosen), "wrong" (decoy chosen), "tie"; None when unparsed."""
    if verdict is None:
        return None
    if verdict == TIE:
        return "tie"
    return "correct" if verdict == f"Set {genuine_position}" else "wrong"
