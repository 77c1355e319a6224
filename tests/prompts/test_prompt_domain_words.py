"""Every prompt speaks the dataset's language (issue 43, item 2): rendered with a books card's words or the neutral
words, no prompt holds a movie word; rendered with MovieLens's words, the words appear; SAER picks its prompt set by
the words."""

from __future__ import annotations

import pandas as pd
import pytest
from domain_words import BOOK_WORDS, MOVIE_WORD, MOVIE_WORDS, PRODUCT_WORDS

from recjudge_utils.data.domain import NEUTRAL_DOMAIN, DomainWords
from recjudge_utils.prompts import PromptTemplate, list_prompts, load_prompt, parse_prompt
from recjudge_utils.protocols.context.saer import Catalogue, build_context, saer_variant, substitutions
from recjudge_utils.protocols.saer import few_shot_answers, load_template, pointwise_request

#: the SAER movie set is MovieLens's own: it is only ever chosen for movie words (test_saer_variant_by_words)
SPEAKS_ANY_DOMAIN = [p for p in list_prompts() if not p.startswith("saer/movies/")]
OTHER_DOMAINS = {"books": BOOK_WORDS, "neutral": NEUTRAL_DOMAIN}


def _rendered(tpl: PromptTemplate, words: DomainWords) -> str:
    """Every message of ``tpl`` rendered with ``words`` and a placeholder in each other slot."""
    slots: dict[str, object] = {name: "<slot>" for name in tpl.slots}
    slots["domain"] = words
    return "\n".join(m["content"] for m in tpl.render(**slots))


@pytest.mark.parametrize("prompt_id", SPEAKS_ANY_DOMAIN)
def test_every_prompt_takes_the_dataset_words(prompt_id: str) -> None:
    assert "domain" in load_prompt(prompt_id).slots


@pytest.mark.parametrize("prompt_id", SPEAKS_ANY_DOMAIN)
@pytest.mark.parametrize("words", OTHER_DOMAINS.values(), ids=OTHER_DOMAINS.keys())
def test_no_movie_word_outside_movies(prompt_id: str, words: DomainWords) -> None:
    text = _rendered(load_prompt(prompt_id), words)
    assert not MOVIE_WORD.search(text), MOVIE_WORD.findall(text)
    assert words.items in text or words.item in text


@pytest.mark.parametrize("prompt_id", [p for p in SPEAKS_ANY_DOMAIN if not p.startswith("saer/")])
def test_movielens_words_appear(prompt_id: str) -> None:
    text = _rendered(load_prompt(prompt_id), MOVIE_WORDS)
    assert MOVIE_WORDS.item in text  # "movie" or "movies"
    if "{{ domain.consumed }}" in "".join(b.source for b in load_prompt(prompt_id).blocks):
        assert MOVIE_WORDS.consumed in text


@pytest.mark.parametrize("prompt_id", ["arena/pairwise", "arena/absolute"])
def test_arena_role_play_takes_platform_item_and_verb(prompt_id: str) -> None:
    movies = _rendered(load_prompt(prompt_id), MOVIE_WORDS)
    assert "a user of a movie recommendation platform" in movies
    assert "recently watched the following movies" in movies
    neutral = _rendered(load_prompt(prompt_id), NEUTRAL_DOMAIN)
    assert "a user of an online recommendation platform" in neutral  # "an" before a vowel
    assert "recently interacted with the following items" in neutral


def test_introduction_names_the_candidate_in_the_words() -> None:
    books = _rendered(load_prompt("introduction/fit"), BOOK_WORDS)
    assert "a book fits" in books and "recently read" in books and "Candidate book:" in books


def test_saer_variant_by_words() -> None:
    assert saer_variant(MOVIE_WORDS) == "movies"
    assert saer_variant(DomainWords(item="Film", items="films", consumed="watched")) == "movies"
    for words in (BOOK_WORDS, PRODUCT_WORDS, NEUTRAL_DOMAIN):
        assert saer_variant(words) == "ecommerce"


@pytest.mark.parametrize("mode", ["pointwise", "pairwise"])
def test_saer_ecommerce_examples_only_for_products(mode: str) -> None:
    """The e-commerce v3 file's worked examples are beauty products: shown to products, left out for books."""
    tpl = load_template("ecommerce", mode, "v3")
    assert len(few_shot_answers(tpl, PRODUCT_WORDS)) == (5 if mode == "pointwise" else 3)
    assert few_shot_answers(tpl, BOOK_WORDS) == []
    products = _rendered(tpl, PRODUCT_WORDS)
    assert "Beauty & Personal Care" in products and "curling iron" in products
    books = _rendered(tpl, BOOK_WORDS)
    assert "curling" not in books and "Beauty" not in books and "product" not in books
    assert "book recommendation lists" in books


def _toy_catalogue() -> tuple[pd.DataFrame, Catalogue]:
    items = pd.DataFrame({"item": [1, 2, 3], "title": ["Dune", "Emma", "Ulysses"], "genres": [["SF"], ["Novel"], []]})
    inter = pd.DataFrame({"user": [7, 7, 7], "item": [1, 2, 3], "rating": [5.0, 4.0, 1.0], "timestamp": [1, 2, 3]})
    return inter, Catalogue.from_items(items)


@pytest.mark.parametrize("version", ["v1", "v2", "v3"])
def test_saer_request_for_books_has_no_movie_word(version: str) -> None:
    inter, catalogue = _toy_catalogue()
    context = build_context(inter, catalogue, 7, BOOK_WORDS)
    assert context.domain == "ecommerce" and context.words == BOOK_WORDS
    tpl = load_template(context.domain, "pointwise", version)
    request = pointwise_request(tpl, context, [1, 2], catalogue, {})
    text = "\n".join(m["content"] for m in request.messages)
    assert not MOVIE_WORD.search(text), MOVIE_WORD.findall(text)
    assert "Books read and liked (rated 3-5 stars)" in text  # the context heading in the card's words
    assert "Ulysses" in text or version == "v1"  # v1 shows the liked history only, Ulysses is disliked


def test_saer_context_headings_keep_each_papers_words() -> None:
    inter, catalogue = _toy_catalogue()
    movies = build_context(inter, catalogue, 7, MOVIE_WORDS).render(catalogue)
    assert movies.startswith("Movies watched and liked") and "Recently browsed genres" in movies
    products = build_context(inter, catalogue, 7, PRODUCT_WORDS).render(catalogue)
    assert products.startswith("Purchase history (reviewed 3-5 stars)") and "Bought but disliked" in products
    neutral = build_context(inter, catalogue, 7, NEUTRAL_DOMAIN).render(catalogue)
    assert not MOVIE_WORD.search(neutral) and "Interacted with but disliked" in neutral


def test_saer_substitutions_in_the_words() -> None:
    books = " ".join(substitutions(BOOK_WORDS).values())
    assert "books" in books and not MOVIE_WORD.search(books) and "Amazon" not in books
    assert "MovieLens" in " ".join(substitutions(MOVIE_WORDS).values())
    assert "Amazon" in " ".join(substitutions(PRODUCT_WORDS).values())


def test_fixed_turn_rendering_to_nothing_is_left_out() -> None:
    head = "---\nid: t\nversion: 1\ndescription: d\nanswer_format: json_levels\n---\n"
    body = (
        "=== system ===\nS\n=== user ===\n{% if domain.item == 'product' %}example{% endif %}\n"
        "=== assistant ===\n{% if domain.item == 'product' %}answer{% endif %}\n=== user ===\n{{ x }}"
    )
    tpl = parse_prompt(head + body, "t")
    assert [m["role"] for m in tpl.render(x="1", domain=PRODUCT_WORDS)] == ["system", "user", "assistant", "user"]
    assert [m["role"] for m in tpl.render(x="1", domain=BOOK_WORDS)] == ["system", "user"]
