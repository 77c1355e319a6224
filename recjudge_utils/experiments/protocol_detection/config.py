"""The chapter's sizes (:class:`DetectionConfig`) and the constants its studies and tables share: the paper's
numbers the studies are set against, the Arena protocols and the panel conditions compared, the interval names."""

from __future__ import annotations

from dataclasses import dataclass

PAPER_MAES = (0.847, 1.014)  # GPT-4o-mini, CoT and LtM, serendipity paper Table 1
PAPER_PAIRS = 2150
#: the two Arena protocols set against the truth: the paper's (tested list always first) and SAER-style adjudication
ARENA_PROTOCOLS = ("single order (paper)", "both orders, adjudicated")
#: the panel study's judges, in the table's order
PANEL_CONDITIONS = ("one judge", "panel of 3, independent errors", "panel of 3, one shared bias")
WILSON, BOOT = "95% Wilson", "95% percentile bootstrap"


@dataclass(frozen=True)
class DetectionConfig:
    """Sizes of the chapter; the defaults run in about two minutes on 2 cores."""

    noise_levels: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0)
    coverage_noise: float = 1.0
    coverage_sizes: tuple[int, ...] = (10, 30, 100, 300)
    repeats: int = 400
    n_boot: int = 400
    power_sizes: tuple[int, ...] = (25, 50, 100, 200, 400, 800, 1600)
    biases: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4)
    neglects: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
    arena_users: int = 300
    saer_customers: int = 150
    annotator_noise: float = 0.7
    reeval_users: int = 150
    reeval_noise: tuple[float, ...] = (0.0, 1.0, 2.0, 3.0)
    user_sizes: tuple[int, ...] = (5, 10, 20, 40, 80, 150)
    panel_noise: float = 0.5
    panel_bias: float = 0.3
    panel_offset: float = 0.5
    panel_unparseable: float = 0.02  # every judge's too: the panels' exclusions are exercised, not assumed
    panel_customers: int = 900
    seed: int = 0
