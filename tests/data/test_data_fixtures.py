"""The data fixtures on disk are byte-for-byte what make_fixtures.py writes, in the published encodings."""

from __future__ import annotations

import gzip
import importlib.util

from locations import FIXTURES

FIX = FIXTURES / "data"


def _generator():
    spec = importlib.util.spec_from_file_location("make_fixtures", FIX / "make_fixtures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_fixtures_match_generator() -> None:
    expected = _generator().expected_files()
    assert expected, "generator produced nothing"
    for path, payload in expected.items():
        assert path.is_file(), f"missing fixture {path}; run python tests/fixtures/data/make_fixtures.py"
        assert path.read_bytes() == payload, f"{path} differs from make_fixtures.py output"


def test_encodings_and_separators_are_the_published_ones() -> None:
    u_item = (FIX / "ml-100k" / "u.item").read_bytes()
    assert "Misérables".encode("latin-1") in u_item and "Misérables".encode() not in u_item
    assert u_item.split(b"\n")[0].count(b"|") == 23  # 5 fields + 19 genre flags
    assert b"::" in (FIX / "ml-1m" / "ratings.dat").read_bytes()
    assert "Misérables".encode("latin-1") in (FIX / "ml-1m" / "movies.dat").read_bytes()
    assert (FIX / "ml-100k-recbole" / "ml-100k.inter").read_bytes().startswith(b"user_id:token\titem_id:token\t")
    movies = (FIX / "serendipity-2018" / "movies.csv").read_text(encoding="utf-8").splitlines()
    assert movies[1].startswith('"1","Toy Story (1995)"') and '""The Voice""' in movies[1]
    for gz in FIX.rglob("*.gz"):
        raw = gz.read_bytes()
        assert raw[:2] == b"\x1f\x8b", gz
        gzip.decompress(raw)
    news = (FIX / "mind" / "train" / "news.tsv").read_text(encoding="utf-8").splitlines()
    assert all(line.count("\t") == 7 for line in news) and '[{"Label"' in news[0]
