"""Metrics, one concern per module.

=================  ==============================================================================
module             what it measures
=================  ==============================================================================
``ranking``        precision, recall, NDCG@k over hit matrices (vectorised)
``offline``        RecSys Arena's offline metrics: per-user AUC, URD diversity, Pearson r
``judge_scores``   a five-level judge against ground truth: MAE, three-class accuracy, confusion
``agreement``      agreement between labelers: raw agreement, weighted kappa, strict adjudication
``pairwise``       pairwise verdicts: swap adjudication, position consistency, Win/Tie/Lose, Q
``intervals``      the bootstrap confidence intervals every module uses
=================  ==============================================================================
"""
