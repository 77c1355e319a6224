"""Reporting: what the notebooks show, laid out from numbers the experiments computed. Generic kinds (``cells``,
``tables``, ``figures``, ``callouts``, ``claims``, ``answer_health``), and one module per chapter. Captions are the
notebooks'; headers, labels and fixed sentences are written in the chapter's module; the words its run chooses between
(claims, notes shown only for some runs) and the paper's text are ``text/<chapter>.yaml``
(:mod:`recjudge_utils.reporting.text`):

======================  ==============================================================================================
module                  chapter
======================  ==============================================================================================
``introduction``        the introduction: the data at a glance, one judgment in detail
``prompt_selection``    1: Table 1 beside the paper, figures, verdicts and takeaways its CIs allow
``reevaluation``        2: the split, tuning, Table 3 beside the paper, accuracy against serendipity
``arena``               3: RecSys Arena's Tables 1-4 beside the paper's, position bias, transparency
``saer``                4: SAER's Tables 1-3 beside the paper's, agreement, time and cost, the kappa exercise
``protocol_detection``  5: what each protocol detects, one function per study
``judges_compared``     6: every run present, judge beside judge and beside the papers' multi-LLM tables
``your_recommenders``   7: your lists under three protocols, whether they agree, what each costs
``validate_judge``      8: the judge against people's labels, and estimates using both
``judge_saw``           what the judge saw (templates, domain words, item fields), for every chapter
======================  ==============================================================================================
"""
