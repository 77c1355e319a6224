"""The one registry helper: lookup, suggestions, lazy modules, and a recommender added by one module alone."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recjudge_utils import recommenders
from recjudge_utils.data.fetch import REGISTRY as DATASETS
from recjudge_utils.judge.backends import BACKENDS
from recjudge_utils.recommenders.budgets import training_budget
from recjudge_utils.recommenders.training import tune
from recjudge_utils.registry import Registry, UnknownNameError, suggestion

# A recommender as a contributor would add one: a module of its own, nothing edited elsewhere.
TOY_MODULE = '''
import numpy as np
import pandas as pd

from recjudge_utils.recommenders import register_recommender
from recjudge_utils.recommenders.base import Recommender


@register_recommender(
    "toy",
    display="Toy",
    search_space=lambda t: {"boost": t.suggest_float("boost", 0.0, 1.0)},
    budgets={"arena": {"small": {"boost": 0.5}}},
)
class Toy(Recommender):
    """Popularity plus a constant: enough to fit, score and tune."""

    name = "toy"

    def __init__(self, boost: float = 0.0, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.boost = boost

    def _fit(self, train: pd.DataFrame, items: pd.DataFrame | None) -> None:
        pass

    def _score_known(self, user_rows: np.ndarray) -> np.ndarray:
        return np.tile(self.popularity.astype(np.float64) + self.boost, (len(user_rows), 1))
'''


@pytest.fixture
def toy_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Import the toy module from a temporary folder; the registry is restored afterwards."""
    monkeypatch.setattr(recommenders.REGISTRY, "_entries", dict(recommenders.REGISTRY._entries))
    monkeypatch.setattr(recommenders.REGISTRY, "_order", list(recommenders.REGISTRY._order))
    (tmp_path / "toy_recommender.py").write_text(TOY_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("toy_recommender")
    yield "toy"
    sys.modules.pop("toy_recommender", None)


def test_a_new_recommender_is_buildable_listed_and_tunable(toy_module: str) -> None:
    train = pd.DataFrame({"user": [0, 0, 1, 1, 2], "item": [0, 1, 1, 2, 0], "rating": 5.0, "timestamp": range(5)})
    valid = pd.DataFrame({"user": [0, 1], "item": [2, 0], "rating": 5.0, "timestamp": 9})
    model = recommenders.make_recommender(toy_module, boost=0.25).fit(train)
    assert model.recommend(np.array([0]), k=1).shape == (1, 1)
    assert recommenders.DISPLAY_NAMES[toy_module] == "Toy"
    assert toy_module in recommenders.RECOMMENDERS  # tunable, so in the re-evaluation set
    assert training_budget("arena", "small")[toy_module] == {"boost": 0.5}
    result = tune(toy_module, train, valid, n_trials=2, seed=0)
    assert result.n_trials == 2 and 0.0 <= result.params["boost"] <= 1.0


def test_the_toy_recommender_is_gone_after_its_test() -> None:
    assert "toy" not in recommenders.REGISTRY and "toy" not in recommenders.RECOMMENDERS


@pytest.mark.parametrize(
    ("registry", "typo", "meant"),
    [(recommenders.REGISTRY, "bprm", "bprmf"), (BACKENDS, "openia", "openai"), (DATASETS, "ml-10k", "ml-100k")],
)
def test_unknown_names_list_the_known_ones_and_suggest_the_closest(registry: Registry, typo: str, meant: str) -> None:
    with pytest.raises(KeyError) as info:
        registry[typo]
    assert isinstance(info.value, UnknownNameError)
    message = str(info.value)
    assert message.startswith(f"unknown {registry.kind} {typo!r}; known: ")
    assert message.endswith(f"(did you mean {meant!r}?)")


def test_make_recommender_ignores_case_and_suggests_too() -> None:
    assert recommenders.recommender_class("KFN") is recommenders.recommender_class("kfn")
    with pytest.raises(KeyError, match=r"unknown recommender 'sasrek'.*did you mean 'sasrec'"):
        recommenders.make_recommender("SASRek")


def test_lazy_names_are_listed_without_import_and_keep_their_order() -> None:
    registry: Registry[str] = Registry("thing", lazy={"b": "nonexistent.module.b", "a": "nonexistent.module.a"})
    registry.register("c", "third")
    assert list(registry) == ["b", "a", "c"] and "a" in registry and len(registry) == 3
    assert registry["c"] == "third"
    with pytest.raises(ModuleNotFoundError):
        registry["a"]


def test_a_taken_name_refuses_another_entry() -> None:
    registry: Registry[str] = Registry("thing")
    registry.register("x", "one")
    registry.register("x", "one")  # the same entry again (a module imported twice) is fine
    with pytest.raises(ValueError, match="thing 'x' is already registered"):
        registry.register("x", "two")


def test_a_listed_module_must_register_its_name() -> None:
    registry: Registry[str] = Registry("thing", lazy={"x": "recjudge_utils.registry"})
    with pytest.raises(LookupError, match=r"recjudge_utils\.registry is listed for thing 'x' but does not register it"):
        registry["x"]


def test_views_follow_the_registry() -> None:
    registry: Registry[tuple[str, int | None]] = Registry("pair")
    lengths = registry.view(lambda entry: entry[1])
    registry.register("a", ("a", 1))
    registry.register("b", ("b", None))
    assert dict(lengths) == {"a": 1} and "b" not in lengths
    registry.register("c", ("c", 3))
    assert list(lengths) == ["a", "c"]


def test_suggestion() -> None:
    assert suggestion("n_usres", ["n_users", "n_items"]) == " (did you mean 'n_users'?)"
    assert suggestion("zzz", ["n_users"]) == ""
