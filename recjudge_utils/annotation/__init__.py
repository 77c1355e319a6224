"""Is the judge good enough? People's labels out and in, their agreement with the judge, and estimates using both.

One module per step:

* :mod:`~recjudge_utils.annotation.kinds`: the three kinds of task (serendipity ``scores``, SAER ``lists``,
  ``duels``) and their rubrics' labels;
* :mod:`~recjudge_utils.annotation.sample`: a run's judgments of one kind as units, and a random sample of them
  stratified by system, recorded in the run with each task's inclusion probability;
* :mod:`~recjudge_utils.annotation.label_studio` and :mod:`~recjudge_utils.annotation.sheet`: the sample as a Label
  Studio import (tasks and labelling configuration) and as a CSV sheet; :mod:`~recjudge_utils.annotation.export`
  does all three (``python -m recjudge_utils.annotation export``);
* :mod:`~recjudge_utils.annotation.read_labels`: a Label Studio export or a filled sheet back, checked;
* :mod:`~recjudge_utils.annotation.agreement_with_people`: people among themselves, the judge against them;
* :mod:`~recjudge_utils.annotation.ppi`: human-only, judge-only and prediction-powered system estimates (needs
  ``ppi-python``, in the ``book`` extra; imported only there, so the rest works with the base install);
* :mod:`~recjudge_utils.annotation.ranking`: the systems ranked under each estimate, and chapter 7's decisions on
  the estimates;
* :mod:`~recjudge_utils.annotation.ratings`: the judge against the users' own held-out ratings (real people's, not a
  random sample);
* :mod:`~recjudge_utils.annotation.simulated_annotators`: simulated people of known noise, through the same files;
* :mod:`~recjudge_utils.annotation.chapter_record`: what a run records of one of its chapters (the parameters it ran
  with, the judgments of its latest execution), which the sample and chapter 8 read.
"""

from recjudge_utils.annotation.export import Exported, export_tasks
from recjudge_utils.annotation.kinds import KINDS, Kind, kind_named
from recjudge_utils.annotation.read_labels import Labels, read_label_studio, read_labels, read_sheet
from recjudge_utils.annotation.sample import AnnotationSample, read_sample, sample_path

__all__ = [
    "KINDS",
    "AnnotationSample",
    "Exported",
    "Kind",
    "Labels",
    "export_tasks",
    "kind_named",
    "read_label_studio",
    "read_labels",
    "read_sample",
    "read_sheet",
    "sample_path",
]
