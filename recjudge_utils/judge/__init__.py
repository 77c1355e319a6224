"""The judge stage: every LLM call goes through :class:`JudgeClient`.

=====================  ====================================================================================
module                 responsibility
=====================  ====================================================================================
``types``              the seams: ``JudgeRequest``, ``Completion``, ``JudgeResult`` (``to_row()``), ``Judge``
``client``             ``JudgeClient``: cache, dedupe, parsing, accounting, over a backend
``backends/``          who answers, registered by name: ``openai``, ``embedded``, ``batch``, ``sim``
``transport``          retries with backoff, and which errors are retryable
``cache``              the SQLite answer cache and its key
``records``            the JSONL judgment log of a run (written and read) and the answers' health
``usage``              usage and cost counted in one place: calls, fresh or cached, tokens, seconds, dollars
``logprobs``           label distributions and expected scores from token logprobs
``pricing``            token prices and the dollar cost of tokens
``embedded_server``    the embedded model's llama-server process (one per process, on loopback)
``llama_build``        llama-server and llama-bench built once per machine, and the model, in the user cache
``profile``            what a judge is: the profile schema (common fields + its backend's options), its identity
``loading``            where a judge comes from: profiles by name, path or mapping; ``open_judge``, ``client_for``
``profiles_cli``       ``recjudge profiles``: check profiles, write their JSON Schema
``planning``           plan mode: every request recorded, none sent
``panel``              judge panels: a client of member clients, one record per judgment with every member's answer
``aggregation``        how a panel combines its members' parsed answers, per answer format (majority, mean, median)
=====================  ====================================================================================

The truth a request carries, ``ParseError`` and every answer format (its parser and the simulated judge's renderer)
live below this stage, in :mod:`recjudge_utils.answer_formats`; the chat ``Message`` in :mod:`recjudge_utils.prompts`.
"""

from recjudge_utils.judge.client import JudgeClient
from recjudge_utils.judge.types import Completion, Judge, JudgeError, JudgeRequest, JudgeResult

__all__ = ["Completion", "Judge", "JudgeClient", "JudgeError", "JudgeRequest", "JudgeResult"]
