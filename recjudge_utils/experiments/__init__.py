"""Experiments: one module per chapter's experiment, each ``run(judge, data, config) -> Run`` (:mod:`.run`), with
the numbers it computed written to ``results.json`` (:mod:`.results`).

========================  ============================================================================================
module                    experiment
========================  ============================================================================================
``introduction``          the introduction's one judgment, end to end
``prompt_selection``      chapter 1: the serendipity judge's prompt selection (Base, LS, CoT, LtM)
``reevaluation``          chapter 2: recommenders re-evaluated for accuracy and serendipity
``arena``                 chapter 3: RecSys Arena, pairwise and absolute judging beside offline metrics
``transparency``          chapter 3's transparency experiment: can the judge see which features a model used?
``saer``                  chapter 4: SAER's pointwise, pairwise and adversarial judging of two recommenders
``kappa_exercise``        chapter 4's classroom exercise: weighted kappa worked by hand
``protocol_detection``    chapter 5: what each protocol detects, with the simulated judge (one study per module)
``judges_compared``       chapter 6: every run under ``runs/`` read back and compared
``your_recommenders``     chapter 7: your own lists, three protocols side by side, and whether they agree
``validate_judge``        chapter 8: a run's judgments against people's labels of a random sample of them
``steps``                 steps chapters 2 and 7 share: judged users, shown lists, the serendipity judge's scores
``run``                   the one shape every experiment has (``Run``, ``Result``)
``results``               ``results.json``: every headline number, in one documented schema
========================  ============================================================================================
"""
