"""recjudge_utils: LLM-as-a-judge evaluation of recommender systems.

The package behind the recjudge notebooks: one caching judge client, dataset loaders,
recommenders, prompts and metrics for three papers (serendipity judge, RecSys Arena, SAER).
"""

__version__ = "0.1.0"
