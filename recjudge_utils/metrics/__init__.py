"""Metrics, one concern per module.

========================  ==============================================================================================
module                    what it measures
========================  ==============================================================================================
``ranking``               precision, recall, NDCG@k over hit matrices (vectorised)
``offline``               RecSys Arena's offline metrics: per-user AUC, URD diversity, Pearson r
``judge_scores``          a five-level judge against ground truth: MAE, three-class accuracy, confusion
``agreement``             agreement between labelers: raw agreement, weighted kappa, Fleiss' kappa, strict adjudication
``pairwise``              pairwise verdicts: swap adjudication, position consistency, Win/Tie/Lose, Q
``correlation``           Pearson's r, Spearman's rho with its Fisher-z interval, the range rounding allows
``system_agreement``      Kendall's tau between system rankings (bootstrap CI over users), uncorrected separated pairs
``system_tests``          paired permutation tests over users, Holm or the randomised Tukey HSD, every system against a
                          baseline, simultaneous CIs, d_z with its CI; no decision below 10 users
``discriminative_power``  Sakai's discriminative power, Voorhees and Buckley's swap rate, users-needed curves
``rank_agreement``        tau_AP, split-half reliability, tau over the pairs both measures decide, the claim tau allows
``power``                 users a rerun needs per pair for 80 % power after the correction (statsmodels' TTestPower)
``beyond_accuracy``       coverage, Gini of exposure, ARP, novelty, intra-list diversity, judge score on popularity
``qrels``                 the judge's item labels as TREC qrels (``user 0 item label``)
``serendipity_at_k``      P_ser, N_ser, Avg.Score@k and accuracy per user, their means over folds
``estimate``              the one shape of a number with its interval: ``Estimate`` (value, low, high, n, method)
``intervals``             the intervals every module uses: percentile bootstrap, Wilson, Fisher z
``numbers``               a float or NaN, a count or None, from whatever a frame or an answer holds
``tournament``            a tournament's ranking from its duels: Bradley-Terry with Davidson's extension for ties
``missingness``           whether unparsed answers fall evenly on the systems (a test of independence)
========================  ==============================================================================================
"""
