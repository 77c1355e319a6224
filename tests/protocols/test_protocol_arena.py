"""RecSys Arena: prompt rendering, strict verdict parsing, order mapping, adjudication, Q, paper tables, the run.

Judges are the shared scripted judge of conftest.py: a real JudgeClient over a scripted backend."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from domain_words import MOVIE_WORDS

from recjudge_utils.answer_formats.arena_verdicts import (
    OVERALL,
    POSITION_OF_VERDICT,
    aspect_key,
    canonical_verdict,
    parse_absolute,
    parse_pairwise,
)
from recjudge_utils.answer_formats.parsing import ParseError
from recjudge_utils.experiments.arena import arena_table, consistency_table
from recjudge_utils.metrics.pairwise import adjudicate, q_value, wtl_summary
from recjudge_utils.paper_tables import paper_table as _paper_table
from recjudge_utils.prompts import load_prompt
from recjudge_utils.protocols.arena import (
    AbsoluteJudge,
    PairwiseJudge,
    resolve_aspects,
)
from recjudge_utils.protocols.context import arena
from recjudge_utils.protocols.context.arena import ArenaContext
from recjudge_utils.protocols.pairwise import games, outcome_for_position


def paper_table(n: int) -> pd.DataFrame:
    return _paper_table(f"arena_table{n}")


KEYS = [aspect_key(a) for a in resolve_aspects()]


# ------------------------------------------------------------------------------------ fixtures
@pytest.fixture
def items() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            "title": [f"Movie {i}" for i in range(1, 11)],
            "genres": [["Action"], ["Comedy"], ["Drama", "Romance"], ["Horror"], ["Action", "Sci-Fi"]] * 2,
            "year": [1990 + i for i in range(10)],
        }
    )


@pytest.fixture
def train() -> pd.DataFrame:
    # user 1 watched items in a scrambled row order; timestamps decide recency
    return pd.DataFrame(
        {
            "user": [1, 1, 1, 1, 1, 2, 2],
            "item": [5, 1, 9, 3, 7, 2, 4],
            "rating": [4.0] * 7,
            "timestamp": [500, 100, 50, 400, 300, 10, 20],
        }
    )


@pytest.fixture
def users() -> pd.DataFrame:
    return pd.DataFrame({"user": [1], "age": [24], "gender": ["F"], "occupation": ["writer"]})


def _answer(verdicts: dict[str, str], overall: str = "A wins") -> str:
    obj = {k: {"analysis": "fine", "verdict": v} for k, v in verdicts.items()}
    obj[OVERALL] = overall
    return json.dumps(obj)


def _all(v: str) -> dict[str, str]:
    return dict.fromkeys(KEYS, v)


# ------------------------------------------------------------------------------ prompt files
def test_prompt_files_have_versions_and_six_aspects():
    pw = load_prompt("arena/pairwise")
    ab = load_prompt("arena/absolute")
    assert pw.version and ab.version and pw.id == "arena/pairwise" and ab.id == "arena/absolute"
    assert list(pw.get("aspects")) == [
        "Accuracy",
        "Satisfaction",
        "Inspiration",
        "Content Quality",
        "Transparency",
        "Impact on users",
    ]
    assert KEYS == ["accuracy", "satisfaction", "inspiration", "content_quality", "transparency", "impact_on_users"]


def test_resolve_aspects_subset_custom_and_errors():
    assert list(resolve_aspects(["inspiration", "ACCURACY"])) == ["Inspiration", "Accuracy"]
    assert resolve_aspects({"Novelty": "New to me."}) == {"Novelty": "New to me."}
    with pytest.raises(ValueError):
        resolve_aspects(["Serendipity"])
    with pytest.raises(ValueError):
        resolve_aspects({"Overall": "x"})


# ------------------------------------------------------------------------------ rendering
def test_history_is_most_recent_by_timestamp_oldest_first(items, train):
    ctx = ArenaContext(items, train, n_history=3)
    # user 1 timestamps: 9@50, 1@100, 7@300, 3@400, 5@500 -> last three: 7, 3, 5
    assert ctx.history(1) == [7, 3, 5]
    assert ArenaContext(items, train, n_history=10).history(1) == [9, 1, 7, 3, 5]


def test_render_profile_history_and_lists(items, train, users, scripted_judge):
    ctx = ArenaContext(items, train, users, n_history=3, words=MOVIE_WORDS)
    judge = PairwiseJudge(scripted_judge(lambda r: ""), ctx, k=2)
    system, user_msg = judge.messages(1, [2, 4], [8, 10])
    assert system["role"] == "system" and user_msg["role"] == "user"
    # the system message is the role-play sentence alone: no per-user content, no aspects, no answer format
    assert "role of a user" in system["content"]
    assert "Movie" not in system["content"] and "writer" not in system["content"]
    assert "Accuracy" not in system["content"] and '"overall"' not in system["content"]
    text = user_msg["content"]
    # the paper's Figure 2 order: profile -> history -> list A -> list B -> every aspect -> the output (JSON keys)
    marks = ["writer", "recently watched", "Recommender System A are:", "Recommender System B are:"]
    marks += [f"- {name}:" for name in resolve_aspects()]
    marks += ['"accuracy"', '"impact_on_users"', '"overall"', "one short sentence"]
    positions = [text.index(m) for m in marks]
    assert positions == sorted(positions), dict(zip(marks, positions, strict=True))
    assert "24 years old" in text and "writer" in text and "female" in text
    # history: the three most recent, oldest first, with genres and year
    h7, h3, h5 = (text.index(f"Movie {i} (") for i in (7, 3, 5))
    assert h7 < h3 < h5
    assert "Movie 9 (" not in text and "Movie 3 (1992), genres: Drama, Romance" in text
    # lists: as given (cut to k where they were made, never again here), A before B
    a_part, b_part = text.split("Recommender System A are:")[1].split("Recommender System B are:")
    b_part = b_part.split("Please analyze")[0]
    assert "Movie 2 (" in a_part and "Movie 4 (" in a_part and "Movie 8 (" not in a_part
    assert "Movie 8 (" in b_part and "Movie 10 (" in b_part and "Movie 2 (" not in b_part


def test_profile_falls_back_to_history_only(items, train):
    ctx = ArenaContext(items, train, users=None)
    assert "No personal information" in ctx.profile(1)
    partial = pd.DataFrame({"user": [1], "age": [np.nan], "gender": [None], "occupation": ["doctor"]})
    text = ArenaContext(items, train, partial).profile(1)
    assert "doctor" in text and "years old" not in text and "male" not in text


def test_ml1m_age_bucket():
    assert "25-34" in arena.describe_profile({"age": 25}, "ml-1m")
    assert "25 years old" in arena.describe_profile({"age": 25}, "ml-100k")


# ------------------------------------------------------------------------------ strict parsing
def test_parse_well_formed_and_fenced():
    v = {**_all("A wins"), "inspiration": "Tie", "transparency": "B wins"}
    out = parse_pairwise(_answer(v, "Tie"), KEYS)
    assert out["verdicts"]["inspiration"] == "Tie" and out["verdicts"]["transparency"] == "B wins"
    assert out["verdicts"][OVERALL] == "Tie" and out["analysis"]["accuracy"] == "fine"
    fenced = "Here is my evaluation:\n```json\n" + _answer(_all("B wins"), "B wins") + "\n```\n"
    assert parse_pairwise(fenced, KEYS)["verdicts"][OVERALL] == "B wins"
    # case, extra spaces and a final full stop are normalised; plain-string aspects are accepted
    loose = json.dumps({**dict.fromkeys(KEYS, "a  WINS."), "Overall": " tie "})
    assert parse_pairwise(loose, KEYS)["verdicts"] == {**_all("A wins"), OVERALL: "Tie"}


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("A wins", "no JSON"),
        (
            _answer(_all("A wins")).replace('"overall": "A wins"', '"overall": "A wins", "overall": "B wins"'),
            "more than once",
        ),
        (
            _answer(_all("A wins"))
            .replace('"Overall"', '"overall"')
            .replace('"overall": "A wins"', '"Overall": "A wins", "overall": "A wins"'),
            "more than once",
        ),
        (_answer(_all("A wins")) + "\n" + _answer(_all("B wins")), "more than one JSON"),
        (_answer(_all("A wins")) + "\nSo overall, B wins.", "outside"),
        (_answer(_all("A wins")) + "\nI think they tied.", "outside"),
        (_answer({**_all("A wins"), "accuracy": "parties"}), "accuracy"),
        (_answer({**_all("A wins"), "accuracy": "A wins, B wins"}), "accuracy"),
        (_answer({**_all("A wins"), "accuracy": "A wins or Tie"}), "accuracy"),
        (_answer({**_all("A wins"), "accuracy": "Untie"}), "accuracy"),
        (_answer(_all("A wins"), overall="A"), "overall"),
        (json.dumps({k: {"analysis": "x", "verdict": "Tie"} for k in KEYS[:-1]} | {OVERALL: "Tie"}), "missing"),
        (json.dumps(dict.fromkeys(KEYS, "Tie")), "missing"),
        (json.dumps({**dict.fromkeys(KEYS, "Tie"), OVERALL: "Tie", "novelty": "A wins"}), "unexpected"),
        ('{"accuracy": {"verdict": "A wins", "verdict": "B wins"}}', "more than once"),
        (json.dumps({**{k: {"analysis": "x"} for k in KEYS}, OVERALL: "Tie"}), "no verdict"),
        (json.dumps({**dict.fromkeys(KEYS, 1), OVERALL: "Tie"}), "not a string"),
        (_answer(_all("A wins"))[:-20], "JSON"),
        ("[" + _answer(_all("A wins")) + "]", "outside"),
    ],
)
def test_parse_rejects_ambiguous_answers(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_pairwise(text, KEYS)


def test_tie_inside_words_is_not_a_verdict_but_prose_without_verdicts_is_fine():
    # "parties", "properties", "entities" in the analysis or in surrounding prose are not verdicts
    obj = {k: {"analysis": "both parties list similar properties", "verdict": "B wins"} for k in KEYS}
    obj[OVERALL] = "B wins"
    text = "Considering the entities involved:\n" + json.dumps(obj) + "\nThanks for the opportunity."
    assert parse_pairwise(text, KEYS)["verdicts"][OVERALL] == "B wins"
    with pytest.raises(ParseError):
        canonical_verdict("parties")


def test_parse_absolute():
    assert parse_absolute('{"analysis": "ok", "score": 0.75}')["score"] == 0.75
    assert parse_absolute('{"score": "1"}')["score"] == 1.0
    for bad in ('{"score": 1.5}', '{"score": "high"}', '{"analysis": "x"}', '{"score": 0.5, "score": 0.6}', "0.5"):
        with pytest.raises(ParseError):
            parse_absolute(bad)


# --------------------------------------------------------------------- orders and adjudication
def test_outcome_mapping_and_adjudication_rules():
    def outcome_for(verdict: str | None, position: str) -> str | None:  # x shown at position "A" or "B"
        return outcome_for_position(verdict and POSITION_OF_VERDICT[verdict], x_first=position == "A")

    assert outcome_for("A wins", "A") == "win" and outcome_for("A wins", "B") == "lose"
    assert outcome_for("B wins", "B") == "win" and outcome_for("Tie", "B") == "tie"
    assert outcome_for(None, "A") is None
    assert adjudicate("win", "win") == "win" and adjudicate("lose", "lose") == "lose"
    assert adjudicate("tie", "tie") == "tie"
    assert adjudicate("win", "lose") == "tie" and adjudicate("win", "tie") == "tie"
    assert adjudicate("win", None) is None and adjudicate(None, None) is None


def test_judge_both_orders_maps_back_and_measures_position_bias(items, train, users, scripted_judge):
    ctx = ArenaContext(items, train, users)
    recs = {"X": {1: [1, 2, 3, 4, 5], 2: [1, 3, 5, 6, 7]}, "Y": {1: [6, 7, 8, 9, 10], 2: [6, 8, 9, 10, 1]}}
    comparisons = pd.DataFrame({"user": [1, 2], "x": ["X", "X"], "y": ["Y", "Y"]})

    # a judge that always prefers whatever is shown first
    always_a = scripted_judge(lambda req: _answer(_all("A wins"), "A wins"))
    raw = PairwiseJudge(always_a, ctx).judge(comparisons, recs, both_orders=True)
    assert len(raw) == 4 and len(always_a.calls[0][1]) == 4
    first = raw[raw["order"] == "x_first"]
    second = raw[raw["order"] == "y_first"]
    assert (first[OVERALL] == "win").all() and (second[OVERALL] == "lose").all()
    # the y_first request really shows Y's list as A
    req = always_a.calls[0][1][1]
    assert req.metadata["A"] == "Y" and "Movie 6 (" in req.messages[-1]["content"].split("System B are:")[0]
    adj = games(raw, [OVERALL])
    assert (adj[OVERALL] == "tie").all()
    pc = consistency_table(raw)
    overall = pc[pc["x"] == "all"].set_index("measure")["value"]
    assert overall["consistency"] == 0.0 and overall["a_wins_share"] == 1.0

    # a judge that always prefers X's list wherever it is shown
    def prefers_x(req):
        return _answer(
            _all("A wins" if req.metadata["A"] == "X" else "B wins"), "A wins" if req.metadata["A"] == "X" else "B wins"
        )

    raw = PairwiseJudge(scripted_judge(prefers_x), ctx).judge(comparisons, recs)
    adj = games(raw, [OVERALL, "accuracy"])
    assert (adj[OVERALL] == "win").all() and (adj["accuracy"] == "win").all()
    assert consistency_table(raw).iloc[0][["measure", "value"]].tolist() == ["consistency", 1.0]


def test_unparsed_answers_are_kept_and_not_adjudicated(items, train, scripted_judge):
    ctx = ArenaContext(items, train)
    recs = {"X": {1: [1, 2]}, "Y": {1: [3, 4]}}
    answers = iter([_answer(_all("A wins")), "B wins!"])
    raw = PairwiseJudge(scripted_judge(lambda r: next(answers)), ctx, k=2).judge(
        pd.DataFrame({"user": [1], "x": ["X"], "y": ["Y"]}), recs
    )
    assert list(raw["status"]) == ["parsed", "unparsed"]
    assert pd.isna(raw.iloc[1][OVERALL]) and "JSON" in raw.iloc[1]["reason"]
    adj = games(raw, [OVERALL])
    assert pd.isna(adj.iloc[0][OVERALL])
    summary = wtl_summary(list(adj[OVERALL]))
    assert (summary["n"] == 0).all() and (summary["n_unjudged"] == 1).all()


def test_absolute_judge_scores_each_list(items, train, scripted_judge):
    ctx = ArenaContext(items, train, words=MOVIE_WORDS)
    recs = {"X": {1: [1, 2], 2: [3]}, "Y": {1: [3, 4], 2: [5]}}
    client = scripted_judge(lambda r: '{"analysis": "ok", "score": 0.5}' if r.metadata["model"] == "X" else "nope")
    out = AbsoluteJudge(client, ctx, k=2).score([1, 2], recs)
    assert len(out) == 4
    assert (out.loc[out["model"] == "X", "score"] == 0.5).all()
    assert (
        out.loc[out["model"] == "Y", "score"].isna().all()
        and (out.loc[out["model"] == "Y", "status"] == "unparsed").all()
    )
    text = client.calls[0][1][0].messages[-1]["content"]
    assert "Recommender System B" not in text
    marks = ["recently watched", "recommender system are:", "- Accuracy:", "- Impact on users:", "between 0 and 1"]
    assert [text.index(m) for m in marks] == sorted(text.index(m) for m in marks)  # the pairwise prompt's order


# ------------------------------------------------------------------------------- statistics
def test_q_value_and_summary():
    assert q_value(6, 2, 2) == 2.0
    assert q_value(3, 0, 0) == float("inf") and np.isnan(q_value(0, 0, 0))
    summary = wtl_summary(["win"] * 6 + ["tie"] * 2 + ["lose"] * 2, n_boot=500).set_index("measure")
    assert summary["value"].to_dict() == {"win": 60.0, "tie": 20.0, "lose": 20.0, "Q": 2.0}
    assert (summary["low"] <= summary["value"]).all() and (summary["value"] <= summary["high"]).all()
    assert summary.loc["win", "high"] - summary.loc["win", "low"] > 10  # ten samples cannot pin a win rate down


def test_arena_table_ranks_by_q():
    frame = pd.DataFrame(
        {
            "x": ["P"] * 4 + ["R"] * 4,
            "y": ["FM"] * 8,
            OVERALL: ["win", "win", "win", "lose", "win", "lose", "lose", "tie"],
        }
    )
    t = arena_table(frame, n_boot=200).set_index(["x", "measure"])
    assert t.loc[("P", "Q"), "value"] == 3.0 and t.loc[("R", "Q"), "value"] == pytest.approx(2 / 3)
    assert (t.loc["P", "rank"] == 1).all() and (t.loc["R", "rank"] == 2).all()
    assert arena_table(frame.iloc[:0]).empty  # no comparison: no row, the same columns


def test_q_from_paper_table2_percentages_matches_their_q():
    t2 = paper_table(2)
    assert len(t2) == 24
    recomputed = [q_value(r.win, r.tie, r.lose) for r in t2.itertuples()]
    diff = np.abs(np.array(recomputed) - t2["q"].to_numpy())
    typo = (t2["llm"] == "DeepSeek-V2.5") & (t2["rs"] == "DeepFM") & (t2["dataset"] == "MovieLens")
    # every row but one agrees within the rounding of the printed percentages (0.05 points)
    assert (diff[~typo.to_numpy()] < 2e-3).all()
    # the documented typo: that row repeats NRMS's percentages (Q 2.1898) but prints 1.7680
    assert diff[typo.to_numpy()][0] > 0.4
    # the ranks printed are the ranks of Q within each LLM x dataset block
    for _, block in t2.groupby(["llm", "dataset"]):
        assert list(block["q"].rank(ascending=False).astype(int)) == list(block["rank"])


def test_paper_table4_q_and_table1_3_shapes():
    t4 = paper_table(4)
    recomputed = np.array([q_value(r.win, r.tie, r.lose) for r in t4.itertuples()])
    assert np.abs(recomputed - t4["q"].to_numpy()).max() < 2e-3
    assert paper_table(1).shape == (10, 4) and paper_table(3).shape == (6, 4)
    with pytest.raises(FileNotFoundError):
        paper_table(5)


def test_paper_table3_p_values_follow_from_r_with_four_models():
    # with n = 4 points Pearson's r is uniform under the null, so p = 1 - |r|
    t3 = paper_table(3)
    assert np.allclose(t3["p"], 1 - t3["r"].abs(), atol=2e-4)
