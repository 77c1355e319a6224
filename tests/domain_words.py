"""Domain words the prompt tests render with: the MovieLens cards', a books card's, SAER's products', and the movie
words no other domain's prompt may contain."""

from __future__ import annotations

import re

from recjudge_utils.data.domain import DomainWords

MOVIE_WORDS = DomainWords(item="movie", items="movies", consumed="watched", platform="movie")
BOOK_WORDS = DomainWords(item="book", items="books", consumed="read", platform="book")
PRODUCT_WORDS = DomainWords(item="product", items="products", consumed="bought", platform="online shop")
#: a movie word anywhere in a text, case-insensitive ("Film-Noir" and "viewing history" included)
MOVIE_WORD = re.compile(r"movie|film|watched|viewing|cinema", re.IGNORECASE)
