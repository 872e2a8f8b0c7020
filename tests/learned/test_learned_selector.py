"""The learned set selector: greedy known answers, slow reference, training, save/load, typed errors."""

from __future__ import annotations

from pathlib import Path

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.learned import (
    LearnedExample,
    LearnedSelector,
    QueryState,
    StepModels,
    TrainConfig,
    cross_validate,
    feature_names,
    fit_step_models,
    greedy_picks,
    load_learned,
    pair_view,
    step_rows,
)
from diverse_core.trained.gold import GoldModel
from diverse_core.validation import prepare_inputs
from hypothesis import given, settings
from hypothesis import strategies as st


def _model(text: bool, **weights: float) -> GoldModel:
    names = feature_names(text)
    w = np.zeros(len(names))
    for name, value in weights.items():
        w[names.index(name)] = value
    return GoldModel(np.zeros(len(names)), np.ones(len(names)), w, 0.0, names)


def _prep(n: int = 10, k: int = 3, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    return prepare_inputs(rng.normal(size=8), rng.normal(size=(n, 8)), k, None)


# ----------------------------------------------------------------------------- greedy


def test_relevance_only_model_is_top_k() -> None:
    prep = _prep()
    picks, probs = greedy_picks(QueryState.build(prep), _model(False, rel=5.0))
    assert picks.tolist() == np.argsort(-prep.relevance, kind="stable")[:3].tolist()
    assert np.all(np.diff(probs) <= 0)


def test_same_source_penalty_skips_a_second_window_of_a_picked_passage() -> None:
    # three candidates, 0 and 1 are windows of one passage, both more relevant than 2
    q = np.array([1.0, 0.0, 0.0])
    c = np.array([[1.0, 0.1, 0.0], [1.0, 0.0, 0.1], [0.6, 0.8, 0.0]])
    texts = ["Alien: window one", "Alien: window two", "Ridley Scott: a director"]
    prep = prepare_inputs(q, c, 2, None)
    state = QueryState.build(prep, pair_view("Who directed Alien?", texts))
    assert greedy_picks(state, _model(True, rel=5.0))[0].tolist() == [0, 1]
    assert greedy_picks(state, _model(True, rel=5.0, same_source=-20.0))[0].tolist() == [0, 2]


def test_k_at_least_n_returns_every_candidate_once() -> None:
    prep = _prep(n=4, k=9)
    picks, _ = greedy_picks(QueryState.build(prep), _model(False, sim_max=-1.0))
    assert sorted(picks.tolist()) == [0, 1, 2, 3]


def test_ties_go_to_the_more_relevant_candidate() -> None:
    prep = _prep(n=6, k=6)
    picks, probs = greedy_picks(QueryState.build(prep), _model(False))  # every probability 0.5
    assert np.allclose(probs, 0.5)
    assert picks.tolist() == np.argsort(-prep.relevance, kind="stable").tolist()


def test_first_model_scores_only_the_first_pick() -> None:
    prep = _prep()
    first = _model(False, rel=-5.0)  # the least relevant first
    picks, _ = greedy_picks(QueryState.build(prep), _model(False, rel=5.0), first)
    order = np.argsort(-prep.relevance, kind="stable")
    assert picks[0] == order[-1] and picks[1:].tolist() == order[:2].tolist()


def _slow_greedy(state: QueryState, model: GoldModel) -> list[int]:
    """Reference: score candidates one at a time, plain Python comparisons."""
    picks: list[int] = []
    rel = state.relevance
    for _ in range(min(state.k, state.n)):
        rows = state.rows(picks)
        best, best_key = -1, None
        for j in range(state.n):
            if j in picks:
                continue
            z = float(((rows[j] - model.mean) / model.scale) @ model.weights + model.bias)
            p = 1.0 / (1.0 + np.exp(-z))
            key = (p, rel[j], -j)
            if best_key is None or key[0] > best_key[0] + 1e-12 or (
                abs(key[0] - best_key[0]) <= 1e-12 and key[1:] > best_key[1:]
            ):
                best, best_key = j, key
        picks.append(best)
    return picks


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 12), k=st.integers(1, 6))
def test_greedy_matches_slow_reference(seed: int, n: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    prep = prepare_inputs(rng.normal(size=5), rng.normal(size=(n, 5)), k, None)
    texts = [f"T{int(rng.integers(0, 3))}: word{int(rng.integers(0, 4))} Name{int(rng.integers(0, 3))}" for _ in range(n)]
    state = QueryState.build(prep, pair_view("Which Name0 word1?", texts))
    names = feature_names(True)
    model = GoldModel(np.zeros(len(names)), np.ones(len(names)), rng.normal(size=len(names)), 0.1, names)
    assert greedy_picks(state, model)[0].tolist() == _slow_greedy(state, model)


# ----------------------------------------------------------------------------- training


def _planted(n_q: int = 40, n: int = 20, seed: int = 0) -> tuple[list, list, list, list, list]:  # type: ignore[type-arg]
    """Questions whose two gold passages are the candidates whose text names the question's subject."""
    rng = np.random.default_rng(seed)
    qs, cs, gs, questions, texts = [], [], [], [], []
    for i in range(n_q):
        q = rng.normal(size=12)
        c = rng.normal(size=(n, 12))
        gold = rng.choice(n, size=2, replace=False)
        g = np.full(n, -1)
        g[gold] = [0, 1]
        t = [f"Page{j}: filler words number {j}" for j in range(n)]
        for pos, j in enumerate(gold):
            t[j] = f"Page{j}: Subject{i} facts part {pos}"
        qs.append(q)
        cs.append(c)
        gs.append(g)
        questions.append(f"What about Subject{i}?")
        texts.append(t)
    return qs, cs, gs, questions, texts


def test_fit_recovers_a_planted_text_signal() -> None:
    qs, cs, gs, questions, texts = _planted()
    sel = LearnedSelector.fit(qs[:30], cs[:30], gs[:30], k=2, questions=questions[:30], texts=texts[:30],
                              config=TrainConfig(rounds=2))
    assert sorted(sel.variants) == ["embedding", "text"]
    for i in range(30, 40):
        choice = sel.choose(qs[i], cs[i], 2, question=questions[i], texts=texts[i])
        assert choice.variant == "text"
        assert sorted(choice.indices.tolist()) == sorted(np.flatnonzero(gs[i] >= 0).tolist())


def test_fit_is_deterministic_and_save_load_round_trips(tmp_path: Path) -> None:
    qs, cs, gs, questions, texts = _planted(n_q=15)
    a = LearnedSelector.fit(qs, cs, gs, k=3, questions=questions, texts=texts,
                            config=TrainConfig(rounds=2, split_first=True), info={"note": "t"})
    b = LearnedSelector.fit(qs, cs, gs, k=3, questions=questions, texts=texts,
                            config=TrainConfig(rounds=2, split_first=True), info={"note": "t"})
    pa, pb = a.save(tmp_path / "a.npz"), b.save(tmp_path / "b.npz")
    assert pa.read_bytes() == pb.read_bytes()
    c = LearnedSelector.load(pa)
    assert c.config == a.config and c.info == a.info
    for name in a.variants:
        assert c.variants[name].first is not None
        np.testing.assert_array_equal(c.variants[name].step.weights, a.variants[name].step.weights)
    for i in range(3):
        for kw in ({}, {"question": questions[i], "texts": texts[i]}):
            x, y = a.choose(qs[i], cs[i], 3, **kw), c.choose(qs[i], cs[i], 3, **kw)  # type: ignore[arg-type]
            assert x.indices.tolist() == y.indices.tolist() and np.allclose(x.scores, y.scores)
    out = dc.select("learned", qs[0], cs[0], 3, model=str(pa), question=questions[0], texts=texts[0])
    assert out.indices.tolist() == a.choose(qs[0], cs[0], 3, question=questions[0], texts=texts[0]).indices.tolist()


def test_step_rows_label_only_uncovered_gold() -> None:
    prep = _prep(n=5, k=3)
    ex = LearnedExample(QueryState.build(prep), np.array([0, 0, 1, -1, -1]), 2)
    xs, ys, first = step_rows(ex, np.array([0, 3, 1]))
    assert first == [True, False, False]
    assert ys[0].tolist() == [1, 1, 1, 0, 0]  # nothing picked: every gold candidate is new
    assert ys[1].tolist() == [0, 1, 0, 0]  # after 0: the other window of passage 0 adds nothing
    assert ys[2].tolist() == [0, 1, 0]  # candidates 1, 2, 4 remain
    assert [x.shape[0] for x in xs] == [5, 4, 3]
    assert ex.recall(np.array([0, 1, 3])) == 0.5


def test_cross_validate_reports_every_question() -> None:
    qs, cs, gs, questions, texts = _planted(n_q=12)
    exs = [LearnedExample(QueryState.build(prepare_inputs(q, c, 2, None), pair_view(qq, t)), g, 2)
           for q, c, g, qq, t in zip(qs, cs, gs, questions, texts, strict=True)]
    res = cross_validate(exs, TrainConfig(rounds=1), folds=3)
    assert res.per_question.shape == (12,) and res.mean == pytest.approx(res.per_question.mean())
    assert res.mean > 0.9  # the planted signal is learnable out of fold


def test_shipped_models_load_with_both_variants() -> None:
    from diverse_core.learned import DEFAULT_MODELS

    shipped = [p for p in DEFAULT_MODELS if DEFAULT_MODELS[p].is_file()]
    assert "chunks" in shipped
    for protocol in shipped:
        sel = LearnedSelector.default(protocol)
        assert sorted(sel.variants) == ["embedding", "text"]
        assert sel.info["protocol"] == protocol.removesuffix("-notitle")
        assert sel.info.get("titles", True) is (not protocol.endswith("-notitle"))
    assert {"chunks-notitle", "paragraphs-notitle"} <= set(shipped)


def test_missing_shipped_model_names_the_train_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from diverse_core.learned import selector

    monkeypatch.setitem(selector.DEFAULT_MODELS, "paragraphs", tmp_path / "absent.npz")
    with pytest.raises(FileNotFoundError, match="train learned --protocols paragraphs"):
        LearnedSelector.default("paragraphs")


# ----------------------------------------------------------------------------- errors


def test_typed_errors(tmp_path: Path) -> None:
    sel = LearnedSelector.default()
    prep = _prep(n=6, k=2)
    with pytest.raises(InvalidParameterError, match="texts is None"):
        sel.choose_prepared(prep, question="q?")
    with pytest.raises(InvalidParameterError, match="question is None"):
        sel.choose_prepared(prep, texts=["a"] * 6)
    with pytest.raises(DimensionMismatchError, match="3 texts for 6"):
        sel.choose_prepared(prep, question="q?", texts=["a"] * 3)
    with pytest.raises(InvalidParameterError, match="variant="):
        sel.choose_prepared(prep, variant="best")
    with pytest.raises(InvalidParameterError, match="question and texts are needed"):
        sel.choose_prepared(prep, variant="text")
    with pytest.raises(InvalidParameterError, match="protocol"):
        LearnedSelector.default("windows")
    with pytest.raises(InvalidParameterError, match="no such file"):
        dc.select("learned", np.ones(3), np.eye(3), 2, model=str(tmp_path / "none.npz"))
    # a mistyped shipped name: the error lists the shipped names (the registry check and the selector's loader)
    for call in (lambda: dc.select("learned", np.ones(3), np.eye(3), 2, model="chunk"),
                 lambda: load_learned("chunk")):
        with pytest.raises(InvalidParameterError, match=r"'chunks', 'paragraphs', 'chunks-notitle'.*model='chunk'"):
            call()
    with pytest.raises(InvalidParameterError, match="model must be"):
        dc.select("learned", np.ones(3), np.eye(3), 2, model=3)
    # an adaptive model file is not a learned one
    from diverse_core.adaptive import DEFAULT_MODEL

    with pytest.raises(InvalidParameterError, match="not a learned-selector file"):
        LearnedSelector.load(DEFAULT_MODEL)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(InvalidParameterError, match="not an adaptive model file|not a"):
        LearnedSelector.load(bad)
    for kw in ({"rounds": 0}, {"rounds": True}, {"l2": 0.0}, {"l2": float("nan")}):
        with pytest.raises(InvalidParameterError):
            TrainConfig(**kw)  # type: ignore[arg-type]
    with pytest.raises(DimensionMismatchError, match="one entry per question"):
        LearnedSelector.fit([np.ones(3)], [np.eye(3), np.eye(3)], [np.zeros(3)], k=2)
    with pytest.raises(InvalidParameterError, match="both questions and texts"):
        LearnedSelector.fit([np.ones(3)] * 2, [np.eye(3)] * 2, [np.array([0, -1, -1])] * 2, k=2, questions=["a", "b"])
    with pytest.raises(InvalidParameterError, match="n_gold"):
        LearnedSelector.fit([np.ones(3)] * 2, [np.eye(3)] * 2, [np.array([0, 1, -1])] * 2, k=2, n_gold=[1, 1])
    with pytest.raises(DimensionMismatchError, match="one id per candidate"):
        LearnedExample(QueryState.build(prep), np.zeros(3, dtype=np.int64), 1)
    ex = LearnedExample(QueryState.build(prep), np.array([0, -1, -1, -1, -1, -1]), 1)
    with pytest.raises(InvalidParameterError, match="texts"):
        fit_step_models([ex, ex], TrainConfig(text=True))
    with pytest.raises(InvalidParameterError, match="'embedding' variant"):
        LearnedSelector({"text": StepModels(_model(True))})
    with pytest.raises(InvalidParameterError, match="other features"):
        LearnedSelector({"embedding": StepModels(_model(True))})
    from diverse_core.errors import NonFiniteInputError

    with pytest.raises(NonFiniteInputError, match="non-finite"):
        greedy_picks(QueryState.build(prep), GoldModel(np.zeros(len(feature_names(False))),
                                                       np.ones(len(feature_names(False))),
                                                       np.full(len(feature_names(False)), np.nan), 0.0,
                                                       feature_names(False))).__len__()


def test_many_threads_get_the_same_picks() -> None:
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(4)
    cases = [(rng.normal(size=16), rng.normal(size=(30, 16)), [f"T{j % 5}: word{j} Name{j % 3}" for j in range(30)])
             for _ in range(8)]
    sel = LearnedSelector.default()
    want = [sel.choose(q, c, 5, question="Which Name1?", texts=t).indices.tolist() for q, c, t in cases]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda x: sel.choose(x[0], x[1], 5, question="Which Name1?", texts=x[2]).indices.tolist(),
                            cases * 4))
    assert got == want * 4
