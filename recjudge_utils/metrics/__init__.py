"""Metrics, one concern per module.

====================  =============================================================================================
module                what it measures
====================  =============================================================================================
``ranking``           precision, recall, NDCG@k over hit matrices (vectorised)
``offline``           RecSys Arena's offline metrics: per-user AUC, URD diversity, Pearson r
``judge_scores``      a five-level judge against ground truth: MAE, three-class accuracy, confusion
``agreement``         agreement between labelers: raw agreement, weighted kappa, Fleiss' kappa, strict adjudication
``pairwise``          pairwise verdicts: swap adjudication, position consistency, Win/Tie/Lose, Q
``correlation``       Pearson's r, Spearman's rho with its Fisher-z interval, the range rounding allows
``system_agreement``  Kendall's tau between system rankings (bootstrap CI over users), separated pairs
``serendipity_at_k``  P_ser, N_ser, Avg.Score@k and accuracy per user, their means over folds
``intervals``         the intervals every module uses: percentile bootstrap, Wilson, Fisher z
====================  =============================================================================================
"""
