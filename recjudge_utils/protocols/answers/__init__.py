"""Answer formats: for each format a prompt can declare, its strict parser and the text of a well-formed answer.

================================  ==========================================  =================================
``answer_format``                  module                                      used by
================================  ==========================================  =================================
``json_levels``                    :mod:`.json_levels`                         serendipity score (Base/LS/CoT/LtM)
``arena_pairwise``                 :mod:`.arena_verdicts`                      RecSys Arena pairwise
``json_list_score``                :mod:`.arena_verdicts`                      RecSys Arena absolute score
``saer_list_label``                :mod:`.saer_fields`                         SAER pointwise label
``saer_pairwise``                  :mod:`.saer_fields`                         SAER pairwise and adversarial
================================  ==========================================  =================================

The formatters write few-shot answers and the simulated judge's answers, so the real parsers read them.
"""
