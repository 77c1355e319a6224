"""The judge stage: every LLM call goes through :class:`JudgeClient`.

=====================  ====================================================================================
module                 responsibility
=====================  ====================================================================================
``types``              the seams: ``JudgeRequest``, ``Completion``, ``JudgeResult`` (``to_row()``), ``Judge``
``truth``              what an experiment attaches as the right answer (for the simulated judge)
``client``             ``JudgeClient``: cache, dedupe, parsing, accounting, over a backend
``backends/``          who answers, registered by name: ``openai``, ``embedded``, ``batch``, ``sim``
``transport``          retries with backoff, and which errors are retryable
``cache``              the SQLite answer cache and its key
``records``            the JSONL judgment log of a run and the usage table
``parsing``            tolerant JSON recovery from answers (linear time)
``logprobs``           label distributions and expected scores from token logprobs
``pricing``            token prices and the cost of a call
``embedded_server``    the llama.cpp server process of the embedded model
``profiles``           judge profiles (YAML): which backend, model, endpoint, limits and prices
=====================  ====================================================================================
"""

from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.parsing import ParseError
from recjudge_utils.judge.truth import LabelTruth, ListScoreTruth, PreferenceTruth, ScoreTruth, Truth
from recjudge_utils.judge.types import Completion, Judge, JudgeError, JudgeRequest, JudgeResult, Message

__all__ = [
    "Completion",
    "Judge",
    "JudgeClient",
    "JudgeError",
    "JudgeRequest",
    "JudgeResult",
    "LabelTruth",
    "ListScoreTruth",
    "Message",
    "ParseError",
    "PreferenceTruth",
    "ScoreTruth",
    "Truth",
]
