"""Splitting interactions into training and evaluation data, in one place: :mod:`.temporal` (the serendipity paper's
global time split and RecSys Arena's per-user last-n split) and :mod:`.export` (chapter 2's split written to a
folder, for training a recommender elsewhere and judging its lists in chapter 7)."""
