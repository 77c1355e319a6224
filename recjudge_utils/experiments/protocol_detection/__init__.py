"""What each protocol detects, shown with the simulated judge (a judge of known quality; never an LLM): chapter 5.

``run(judge, data, config)`` takes the chapter's simulated judge (a client opened from a simulated-judge profile)
and derives each study's judges from it (:func:`sweep_judges`): the same run folder, cache and mode, with exactly
the error model the study sweeps. Every judgment goes through the judge client with the ``sim`` backend (cached,
logged, counted like any LLM call); the Monte Carlo parts then resample the judged items, so repeated samples cost
no further calls. One study per module:

======================  ===========================================================================================
module                  study
======================  ===========================================================================================
``noise``               MAE, three-class accuracy and kappa against the sim's known score noise, beside the MAE the
                        error model implies (the truth line)
``coverage``            how often the bootstrap CI of the MAE (and the Wilson CI of the accuracy) holds the
                        population value, over repeated samples of n pairs
``separation``          judged pairs needed to tell two templates apart whose MAEs differ as the paper's CoT and LtM
                        do (0.847 vs 1.014), by simulation and by statsmodels' power function
``arena_bias``          the paper's single-order Arena protocol (tested model always shown first) against both orders
                        adjudicated, against the truth, as position bias grows
``saer_safeguards``     adversarial detection against context neglect, swap consistency against position bias, and
                        SAER's strict (pointwise) and conservative (pairwise) adjudication of two annotators
``reevaluation_noise``  how judge noise shrinks the Avg.Score@k and P_ser@k gaps between two recommenders, and how
                        many judged users order them correctly 95% of the time
``panels``              one judge against a panel of three with independent errors and a panel of three sharing one
                        score offset (each a panel profile opened like any judge): accuracy, kappa, mean error and
                        position consistency with CIs, and the calls each asked
======================  ===========================================================================================

Beside them: ``config`` (the chapter's sizes and shared constants), ``judges`` (the studies' judges derived from the
chapter's) and ``chapter`` (the datasets, :func:`run` and the :class:`DetectionRun` it returns).
"""

from recjudge_utils.experiments.protocol_detection.arena_bias import against_truth, arena_config, arena_position_bias
from recjudge_utils.experiments.protocol_detection.chapter import DetectionData, DetectionRun, run
from recjudge_utils.experiments.protocol_detection.config import (
    ARENA_PROTOCOLS,
    PANEL_CONDITIONS,
    PAPER_MAES,
    PAPER_PAIRS,
    DetectionConfig,
)
from recjudge_utils.experiments.protocol_detection.coverage import ci_coverage
from recjudge_utils.experiments.protocol_detection.judges import panel_of, sweep_judges
from recjudge_utils.experiments.protocol_detection.noise import expected_mae, implied_in_ci, serendipity_noise
from recjudge_utils.experiments.protocol_detection.panels import judge_panels
from recjudge_utils.experiments.protocol_detection.reevaluation_noise import (
    ReevalDetection,
    reevaluation_config,
    reevaluation_noise,
)
from recjudge_utils.experiments.protocol_detection.saer_safeguards import SaerDetection, saer_config, saer_protocols
from recjudge_utils.experiments.protocol_detection.separation import Separation, pairs_to_separate

__all__ = [
    "ARENA_PROTOCOLS",
    "PANEL_CONDITIONS",
    "PAPER_MAES",
    "PAPER_PAIRS",
    "DetectionConfig",
    "DetectionData",
    "DetectionRun",
    "ReevalDetection",
    "SaerDetection",
    "Separation",
    "against_truth",
    "arena_config",
    "arena_position_bias",
    "ci_coverage",
    "expected_mae",
    "implied_in_ci",
    "judge_panels",
    "pairs_to_separate",
    "panel_of",
    "reevaluation_config",
    "reevaluation_noise",
    "run",
    "saer_config",
    "saer_protocols",
    "serendipity_noise",
    "sweep_judges",
]
