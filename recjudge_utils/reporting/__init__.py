"""Reporting: what the notebooks show, computed in the package.

``display`` (data labels, the small-judge warning, the usage footer, captioned tables), ``paper`` (the papers'
tables, transcribed in ``recjudge_utils/paper_tables/``), and one module per experiment with its tables beside
the paper, its figures and the sentences generated from the numbers.
"""
