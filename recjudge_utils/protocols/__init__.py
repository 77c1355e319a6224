"""Protocols: how a judge is asked, one module per way of asking (the answer formats and their parsers live below,
in :mod:`recjudge_utils.answer_formats`).

=====================  ================================================================================================
module                 protocol
=====================  ================================================================================================
``single``             one request, one judgment: the introduction's question
``pointwise_score``    a five-level score of one (user history, candidate item) pair, in one or more stages
``few_shot``           which labelled pairs the judge is shown as examples, and which it is asked to judge
``pairwise``           a pairwise comparison with a position swap, which RecSys Arena and SAER share
``arena``              RecSys Arena's judges: the pairwise comparison with swap and the absolute list score
``saer``               SAER's judges: a pointwise list label and a pairwise comparison of two lists
``adversarial``        SAER's adversarial test: a customer's genuine list against a decoy, in random position
``truth``              the truth each protocol's requests carry for the simulated judge
``context/``           what each paper's judge is shown about a user and the items, one module per paper
=====================  ================================================================================================
"""
