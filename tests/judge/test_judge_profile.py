"""What a judge is (:mod:`recjudge_utils.judge.profile`): a profile's options are the options model its backend
declares in the registry, and one rule says whether two profiles are the same judge."""

from __future__ import annotations

import pytest

from recjudge_utils.judge.backends import backend_options_model
from recjudge_utils.judge.loading import load_profile
from recjudge_utils.judge.profile import PROFILE_CLASSES, judge_identity, same_judge


@pytest.mark.parametrize("backend", ["openai", "batch", "embedded", "sim"])
def test_a_profiles_options_are_its_backends_options_model(backend: str) -> None:
    options = PROFILE_CLASSES[backend].model_fields["options"]
    assert options.annotation is backend_options_model(backend)
    assert type(load_profile({"backend": backend, "model": "m" if backend != "embedded" else "local"}).options) is (
        backend_options_model(backend)
    )


def test_the_same_judge_is_the_same_name_and_the_same_answers() -> None:
    sim = load_profile({"name": "s", "backend": "sim", "options": {"noise": 0.5, "seed": 1}})
    faster = load_profile({**sim.to_dict(), "max_concurrency": 4, "retries": 1})
    renamed = load_profile({**sim.to_dict(), "name": "t"})
    reseeded = load_profile({**sim.to_dict(), "options": {"noise": 0.5, "seed": 2}})
    assert same_judge(sim, faster) and same_judge(sim.to_dict(), faster)  # limits change no answer
    assert judge_identity(sim) == judge_identity(renamed) and not same_judge(sim, renamed)
    assert not same_judge(sim, reseeded)
