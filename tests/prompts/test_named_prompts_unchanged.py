"""What the judge reads of an item (issue 43): a folder dataset's prompts show its card's ``items.describe`` line, the
one ``data check`` says the judge sees, in every protocol; the datasets known by name render every prompt byte for byte
as before the card road (hashes pinned from commit 95857a3 in fixtures/named_prompt_hashes.json)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import pytest
from domain_words import MOVIE_WORD
from locations import FIXTURES

from recjudge_utils.data import Dataset
from recjudge_utils.data.amazon import load_amazon_beauty
from recjudge_utils.data.examples import write_books
from recjudge_utils.data.folder import check_report, item_texts, judge_item_texts, load_folder_dataset
from recjudge_utils.data.goodreads import load_goodreads
from recjudge_utils.data.mind import load_mind
from recjudge_utils.data.movielens import load_ml1m, load_ml100k
from recjudge_utils.prompts import Message
from recjudge_utils.protocols.arena import AbsoluteJudge, PairwiseJudge
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.context.saer import Catalogue, build_context, saer_variant
from recjudge_utils.protocols.pointwise_score import TEMPLATES, SerendipityJudge
from recjudge_utils.protocols.saer import VERSIONS, load_template, pairwise_request, pointwise_request

DATA = FIXTURES / "data"
PINNED = json.loads((FIXTURES / "named_prompt_hashes.json").read_text(encoding="utf-8"))["sha256_16"]

NAMED: dict[str, Callable[[], Dataset]] = {
    "ml-100k": lambda: load_ml100k(DATA / "ml-100k", verbose=False),
    "ml-100k-recbole": lambda: load_ml100k(DATA / "ml-100k-recbole", verbose=False),
    "ml-1m": lambda: load_ml1m(DATA / "ml-1m", verbose=False),
    "goodreads": lambda: load_goodreads(DATA / "goodreads", verbose=False),
    "amazon-beauty": lambda: load_amazon_beauty(DATA / "amazon-beauty", verbose=False),
    "mind": lambda: load_mind(DATA / "mind", verbose=False),
}


def render_all(
    ds: Dataset, n_users: int = 3, lists: tuple[list[int], list[int]] | None = None
) -> dict[str, tuple[Message, ...]]:
    """Every protocol's prompts for the first ``n_users`` users, built as the chapters build them (the item lines
    from :func:`judge_item_texts`): each serendipity template's stages, Arena's pairwise and absolute prompts, and
    SAER's pointwise and pairwise prompts of every version, for the dataset's SAER variant. ``lists``: the two lists
    shown (default: the three lowest and the three highest item ids); the serendipity candidate is each item of the
    first list when ``lists`` is given, else the highest item id."""
    texts = judge_item_texts(ds)
    items = sorted(int(i) for i in ds.items["item"])
    known = set(items)
    inter = ds.interactions if "rating" in ds.interactions.columns else ds.interactions.assign(rating=5.0)
    users = sorted(int(u) for u in inter["user"].unique())[:n_users]
    list_a, list_b = lists if lists is not None else (items[:3], items[-3:])
    candidates = list_a if lists is not None else [items[-1]]
    key = str(ds.extra.get("pin_key", ds.name))
    out: dict[str, tuple[Message, ...]] = {}
    for u in users:
        mine = inter.loc[inter["user"] == u].sort_values("timestamp")
        history = [int(i) for i in mine["item"] if int(i) in known]
        for template in TEMPLATES:
            judge = SerendipityJudge(None, template=template, words=ds.domain, texts=texts)  # type: ignore[arg-type]
            for stage in range(len(judge.stages)):
                for candidate in candidates:
                    at = f"{key}/u{u}/serendipity/{template}/{stage}" + (f"/c{candidate}" if lists else "")
                    previous = {"relevance": 3, "unexpectedness": 4}
                    out[at] = judge.messages(history, candidate, ds.items, stage=stage, previous=previous)
        context = ArenaContext(ds.items, inter, ds.users, n_history=5, dataset=ds.name, words=ds.domain, texts=texts)
        pairwise = PairwiseJudge(None, context, k=3)  # type: ignore[arg-type]
        out[f"{key}/u{u}/arena/pairwise"] = pairwise.messages(u, list_a, list_b)
        absolute = AbsoluteJudge(None, context, k=3)  # type: ignore[arg-type]
        out[f"{key}/u{u}/arena/absolute"] = absolute.request(u, list_a).messages
        catalogue = Catalogue.from_items(ds.items, texts=texts)
        customer = build_context(inter, catalogue, u, ds.domain)
        variant = saer_variant(ds.domain)
        for version in VERSIONS:
            tpl = load_template(variant, "pointwise", version)
            out[f"{key}/u{u}/saer/pointwise_{version}"] = pointwise_request(
                tpl, customer, list_a, catalogue, {}
            ).messages
            tpl = load_template(variant, "pairwise", version)
            request = pairwise_request(tpl, customer, list_a, list_b, catalogue, {})
            out[f"{key}/u{u}/saer/pairwise_{version}"] = request.messages
    return out


def digest(messages: tuple[Message, ...]) -> str:
    return hashlib.sha256(json.dumps(list(messages), sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.parametrize("key", NAMED)
def test_named_datasets_render_every_prompt_as_before(key: str) -> None:
    ds = NAMED[key]()
    ds.extra["pin_key"] = key
    assert judge_item_texts(ds) is None  # a named dataset keeps each protocol's own item line
    rendered = {k: digest(m) for k, m in render_all(ds).items()}
    pinned = {k: v for k, v in PINNED.items() if k.startswith(f"{key}/")}
    assert len(rendered) == 42 and rendered.keys() == pinned.keys()
    changed = [k for k in pinned if rendered[k] != pinned[k]]
    assert not changed, f"{len(changed)} prompts render differently from before, first {changed[:3]}"


@pytest.fixture(scope="module")
def books(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return load_folder_dataset(write_books(tmp_path_factory.mktemp("books") / "shelf"), verbose=False)


def test_books_prompts_show_what_data_check_says_the_judge_sees(books: Dataset) -> None:
    """For every item ``data check`` samples: its line as the report prints it appears in every protocol's prompt
    that lists it, with the author the card describes; no prompt holds a movie word."""
    report = check_report(books)
    popular = books.interactions["item"].value_counts().sort_index(kind="stable")
    sample = [int(i) for i in popular.sort_values(ascending=False, kind="stable").index[:3]]
    lines = item_texts(books, sample)
    assert judge_item_texts(books) is not None
    authors = books.items.set_index("item")["author"]
    for item, line in lines.items():
        assert line in report and str(authors[item]) in line
    others = [int(i) for i in books.items["item"] if int(i) not in sample][:3]
    rendered = render_all(books, lists=(sample, others))
    for protocol in ("serendipity", "arena", "saer"):
        texts = [
            "\n".join(m["content"] for m in messages) for key, messages in rendered.items() if f"/{protocol}/" in key
        ]
        assert texts, protocol
        for text in texts:
            assert not MOVIE_WORD.search(text), (protocol, MOVIE_WORD.findall(text))
        whole = "\n".join(texts)
        for item, line in lines.items():
            assert line in whole, (protocol, line)
            assert str(authors[item]) in whole, (protocol, authors[item])


def test_card_line_keeps_the_cards_order_and_cap(books: Dataset) -> None:
    card = books.extra["card"]
    assert card.items.describe == ["book_title", "author", "shelves", "year"]
    texts = judge_item_texts(books)
    assert texts is not None
    row = books.items.iloc[0]
    line = texts[int(row["item"])]
    assert len(line) <= card.items.max_chars
    at = [line.find(str(row["title"])), line.find(str(row["author"])), line.find(str(row["genres"][0]))]
    at.append(line.find(str(int(row["year"]))))
    assert -1 not in at and at == sorted(at), (line, at)
