"""Recommenders for the notebooks, behind one registry.

``make_recommender(name, **params)`` builds any of them by name; ``RECOMMENDERS`` lists the re-evaluation set (the
tunable ones). Accuracy-oriented: ``bprmf``, ``sasrec``; serendipity-oriented: ``kfn``, ``uaum``, ``desr``,
``purs``; sanity baselines: ``pop``, ``random``. The RecSys Arena models (``fm``, ``deepfm``, ``lightgcn``,
``minilm-content``) and the SAER ones (``cooccurrence``, ``embedding``) are registered as well.

Adding a recommender is one module and one line: the module decorates its class with
``@register_recommender("name", display=..., search_space=..., budgets=...)`` (the name tables show, the TPE search
space if the re-evaluation tunes it, the fixed training settings per experiment and budget), and the line lists the
module in ``REGISTRY``'s ``lazy`` table below. Modules are imported on first use, so importing this package stays
cheap (no torch).

Beside one module per recommender (``pop``, ``random_rs``, ``bprmf``, ``sasrec``, ``kfn``, ``uaum``, ``desr``,
``purs``, ``fm``, ``deepfm``, ``lightgcn``, ``content`` (``minilm-content``), ``cooccurrence``, ``embedding``):

==================  ================================================================================================
module              responsibility
==================  ================================================================================================
``base``            the interface every recommender implements, and the index bookkeeping they share
``training``        getting a fitted recommender: the one path every experiment takes
``budgets``         fixed (untuned) training settings per experiment, budget and recommender
``artifacts``       trained recommenders stored once and shared by every run
``data_needs``      what a recommender needs from a dataset, and which recommenders a dataset can train
``optuna_storage``  Optuna storages any number of processes may open at once (the tuning workers)
``plan_standin``    plan mode without training: a stored artifact, a cheap fit, or a stand-in
==================  ================================================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from recjudge_utils.registry import Registry

from .base import Recommender

if TYPE_CHECKING:
    import optuna

__all__ = [
    "BUDGET_NAMES",
    "DISPLAY_NAMES",
    "RECOMMENDERS",
    "REGISTRY",
    "SEARCH_SPACES",
    "Recommender",
    "RecommenderEntry",
    "make_recommender",
    "recommender_class",
    "register_recommender",
]

_SearchSpace = Callable[["optuna.Trial"], dict[str, Any]]
#: fixed training settings per experiment come in these sizes (see :mod:`.budgets`)
BUDGET_NAMES = ("small", "paper")
R = TypeVar("R", bound=type[Recommender])


@dataclass(frozen=True)
class RecommenderEntry:
    """A registered recommender: its class, its name in tables, its TPE search space, its fixed training settings."""

    cls: type[Recommender]
    display: str
    search_space: _SearchSpace | None = None  # None: not tuned, so not in the re-evaluation set
    budgets: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)  # experiment -> budget -> kw


# The order is the re-evaluation's and the tables' order.
REGISTRY: Registry[RecommenderEntry] = Registry(
    "recommender",
    lazy={
        "pop": f"{__name__}.pop",
        "random": f"{__name__}.random_rs",
        "bprmf": f"{__name__}.bprmf",
        "sasrec": f"{__name__}.sasrec",
        "kfn": f"{__name__}.kfn",
        "uaum": f"{__name__}.uaum",
        "desr": f"{__name__}.desr",
        "purs": f"{__name__}.purs",
        "fm": f"{__name__}.fm",
        "deepfm": f"{__name__}.deepfm",
        "lightgcn": f"{__name__}.lightgcn",
        "minilm-content": f"{__name__}.content",
        "cooccurrence": f"{__name__}.cooccurrence",
        "embedding": f"{__name__}.embedding",
    },
)
DISPLAY_NAMES: Mapping[str, str] = REGISTRY.view(lambda entry: entry.display)
SEARCH_SPACES: Mapping[str, _SearchSpace] = REGISTRY.view(lambda entry: entry.search_space)


def register_recommender(
    name: str,
    *,
    display: str,
    search_space: _SearchSpace | None = None,
    budgets: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> Callable[[R], R]:
    """Class decorator: register a recommender as ``name`` with its display name, search space and budgets."""
    budgets = dict(budgets or {})
    for experiment, sizes in budgets.items():
        if unknown := set(sizes) - set(BUDGET_NAMES):
            raise ValueError(f"{name}: unknown training budget(s) {sorted(unknown)} for {experiment}: {BUDGET_NAMES}")

    def decorate(cls: R) -> R:
        REGISTRY.register(name, RecommenderEntry(cls, display, search_space, budgets))
        return cls

    return decorate


def recommender_class(name: str) -> type[Recommender]:
    """The class registered as ``name`` (any case)."""
    return REGISTRY[name.lower()].cls


def make_recommender(name: str, **params: Any) -> Recommender:
    """Instantiate the recommender registered as ``name`` with keyword hyperparameters (and ``seed``)."""
    return recommender_class(name)(**params)


def __getattr__(name: str) -> tuple[str, ...]:
    # RECOMMENDERS is a tuple (a config default), so it cannot follow the registry like the views above; computing
    # it on access keeps it current and keeps a plain import of this package from importing every model (torch)
    if name == "RECOMMENDERS":
        return tuple(SEARCH_SPACES)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
