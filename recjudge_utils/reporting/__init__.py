"""Reporting: what the notebooks show, laid out from numbers the experiments computed. Generic kinds (``cells``,
``tables``, ``figures``, ``callouts``, ``claims``, ``answer_health``), and one module per chapter whose words are
``text/<chapter>.yaml`` (:mod:`recjudge_utils.reporting.text`)."""
