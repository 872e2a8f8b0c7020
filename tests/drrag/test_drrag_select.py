"""DR-RAG selection (QDC / CFS / CIS, fill) on hand-built cases, a slow reference and invariants."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.pipelines.drrag.select import DrragSelection, default_k1, select_drrag
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pair_scorer(accept: set[tuple[str, str]], calls: list[int] | None = None):  # type: ignore[no-untyped-def]
    """A scorer accepting exactly the given ordered pairs (probability 1 / 0)."""

    def score(xs: Sequence[str], ys: Sequence[str]) -> list[float]:
        if calls is not None:
            calls.append(len(xs))
        return [1.0 if (x, y) in accept or (y, x) in accept else 0.0 for x, y in zip(xs, ys, strict=True)]

    return score


# --- hand-built corpus: the bridge document is found only through the concatenated search ---

CORPUS = {
    # 4-d toy "embeddings": axis 0 = the question's topic, 1 = the entity in the bridge hop,
    # 2 and 3 = unrelated topics.
    "film": np.array([0.6, 0.8, 0.0, 0.0]),  # mentions the question topic and the entity
    "near1": np.array([0.55, 0.0, 0.835, 0.0]),
    "near2": np.array([0.54, 0.0, 0.0, 0.842]),
    "near3": np.array([0.5, 0.0, 0.866, 0.0]),
    "bridge": np.array([0.3, 0.954, 0.0, 0.0]),  # about the entity; weak on the question topic
    "noise": np.array([0.0, 0.0, 0.6, 0.8]),
}


def search(query: np.ndarray, corpus: dict[str, np.ndarray]) -> list[str]:
    q = query / np.linalg.norm(query)
    ids = list(corpus)
    sims = np.array([corpus[d] @ q / np.linalg.norm(corpus[d]) for d in ids])
    return [ids[i] for i in np.argsort(-sims, kind="stable")]


def test_qdc_finds_bridge_document_ranked_below_k() -> None:
    question = np.array([1.0, 0.0, 0.0, 0.0])
    ranking = search(question, CORPUS)
    k = 2
    assert ranking.index("bridge") >= 4  # the question alone ranks it well below k
    hits = [search(question + CORPUS[d], CORPUS) for d in ranking[:1]]  # question + that document
    sel = select_drrag(ranking, hits, k=k, k1=1, m=3, mode="qdc")
    assert sel.ids == ("film", "bridge")
    assert sel.picks[1].stage == 2 and sel.picks[1].source == "film"
    assert sel.picks[1].probability is None


def test_default_k1_is_half_k_rounded_up() -> None:
    assert [default_k1(k) for k in (1, 2, 3, 4, 6)] == [1, 1, 2, 2, 3]


def test_cfs_adds_nothing_for_stage1_doc_whose_hits_are_all_rejected() -> None:
    ranking = ["a", "b", "c", "d", "e"]
    hits = [["a", "x", "y"], ["b", "z", "w"]]
    calls: list[int] = []
    sel = select_drrag(ranking, hits, k=4, mode="cfs", scorer=pair_scorer({("b", "w")}, calls))
    assert sel.ids == ("a", "b", "w")  # "a" adds nothing; "b" adds its accepted hit
    assert sel.picks[2].source == "b" and sel.picks[2].probability == 1.0
    assert set(sel.rejected) == {"x", "y", "z"}
    assert calls == [4]  # one batched classifier call for all examined pairs


def test_cfs_takes_the_first_accepted_new_hit_and_skips_chosen() -> None:
    ranking = ["a", "b", "c"]
    hits = [["a", "p", "q"], ["b", "p", "q", "r"]]
    accept = {("a", "p"), ("a", "q"), ("b", "p"), ("b", "r")}
    sel = select_drrag(ranking, hits, k=4, m=4, mode="cfs", scorer=pair_scorer(accept))
    # "p" is taken by "a"; "b" skips it and q (rejected) and takes "r".
    assert sel.ids == ("a", "b", "p", "r")
    every = select_drrag(ranking, hits, k=5, k1=2, m=4, mode="cfs", per_doc="all", scorer=pair_scorer(accept))
    assert every.ids == ("a", "b", "p", "q", "r")


def test_cfs_examines_only_m_hits_not_chosen_yet() -> None:
    hits = [["a", "b", "x", "y"]]
    accept = pair_scorer({("a", "y")})
    assert select_drrag(["a", "b"], hits, k=2, k1=1, m=1, mode="cfs", scorer=accept).ids == ("a",)
    # "b" is not a stage-1 document here (k1=1), so it takes the one examined slot at m=1.
    assert select_drrag(["a", "c"], hits, k=2, k1=1, m=2, mode="cfs", scorer=accept).ids == ("a",)
    assert select_drrag(["a", "c"], hits, k=2, k1=1, m=3, mode="cfs", scorer=accept).ids == ("a", "y")
    # The stage-1 document itself (first hit of its own search) does not use up a slot.
    assert select_drrag(["a", "c"], [["a", "y"]], k=2, k1=1, m=1, mode="cfs", scorer=accept).ids == ("a", "y")


def test_cis_drops_a_rejected_document() -> None:
    ranking = ["a", "b", "c"]
    hits = [["a", "x", "y"], ["b", "z"]]
    qdc = select_drrag(ranking, hits, k=4, mode="qdc")
    assert qdc.ids == ("a", "b", "x", "z")
    # x pairs positively with b (not its own source): kept under eq. 3; z with nobody: dropped.
    cis = select_drrag(ranking, hits, k=4, mode="cis", scorer=pair_scorer({("b", "x")}))
    assert cis.ids == ("a", "b", "x")
    assert cis.rejected == ("z",)
    assert cis.picks[2].probability == 1.0


def test_cis_pairwise_rule_and_stage1_protection() -> None:
    ranking = ["a", "b", "c"]
    hits = [["a", "x"], ["b", "z"]]
    accept = {("x", "z")}
    # Eq. 3: nothing pairs with a stage-1 document, so both stage-2 documents go.
    assert select_drrag(ranking, hits, k=4, mode="cis", scorer=pair_scorer(accept)).ids == ("a", "b")
    # Pairwise rule: x and z support each other; the stage-1 documents are protected.
    pw = select_drrag(ranking, hits, k=4, mode="cis", cis_rule="pairwise", scorer=pair_scorer(accept))
    assert pw.ids == ("a", "b", "x", "z")
    # Unprotected: a and b have no positive pair and are dropped.
    un = select_drrag(
        ranking, hits, k=4, mode="cis", cis_rule="pairwise", protect_stage1=False, scorer=pair_scorer(accept)
    )
    assert un.ids == ("x", "z")


def test_fill_tops_up_from_the_ranking() -> None:
    ranking = ["a", "b", "x", "c", "d"]
    hits = [["a", "x"], ["b", "y"]]
    sel = select_drrag(ranking, hits, k=4, mode="cfs", scorer=pair_scorer(set()), fill=True)
    # x was rejected only as a partner of "a": CFS leaves it eligible for fill.
    assert sel.ids == ("a", "b", "x", "c")
    assert set(sel.rejected) == {"x", "y"}
    assert [p.filled for p in sel.picks] == [False, False, True, True]
    # CIS removed x (no stage-1 document accepts it): fill does not bring it back.
    cis = select_drrag(ranking, hits, k=4, mode="cis", scorer=pair_scorer(set()), fill=True)
    assert cis.ids == ("a", "b", "c", "d")
    no_fill = select_drrag(ranking, hits, k=4, mode="cfs", scorer=pair_scorer(set()))
    assert no_fill.ids == ("a", "b")
    short = select_drrag(["a", "b"], hits, k=4, mode="cfs", scorer=pair_scorer(set()), fill=True)
    assert short.ids == ("a", "b")  # nothing left to fill from


def test_repeated_ids_count_once() -> None:
    hits = [["x", "x", "y"], ["a", "z"], ["b", "y"]]  # row 1 belongs to the repeated "a"
    sel = select_drrag(["a", "a", "b"], hits, k=5, k1=2, m=3, mode="qdc", per_doc="all")
    assert sel.ids == ("a", "b", "x", "y")


def test_picks_carry_their_stage_and_mode() -> None:
    sel = select_drrag(["a", "b"], [["a", "c"], ["b", "d"]], k=4, mode="qdc")
    assert [p.stage for p in sel.picks] == [1, 1, 2, 2]
    assert all(p.mode == "qdc" for p in sel.picks)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"k1": 0}, "k1=0"),
        ({"k1": 5}, "k1=5"),
        ({"m": 0}, "m=0"),
        ({"threshold": 1.5}, "threshold=1.5"),
        ({"mode": "xyz"}, "mode='xyz'"),
        ({"per_doc": "some"}, "per_doc='some'"),
        ({"cis_rule": "any"}, "cis_rule='any'"),
        ({"mode": "cfs", "scorer": None}, "scorer=None"),
        ({"k": 0}, "k=0"),
    ],
)
def test_bad_parameters_raise_typed_errors_naming_the_value(kwargs: dict[str, object], needle: str) -> None:
    args: dict[str, object] = {"k": 4, "mode": "qdc", **kwargs}
    with pytest.raises(InvalidParameterError, match=needle.replace("(", r"\(").replace(".", r"\.")):
        select_drrag(["a", "b"], [["a"], ["b"]], **args)  # type: ignore[arg-type]


def test_too_few_hit_rows_and_bad_scorer_output() -> None:
    with pytest.raises(DimensionMismatchError, match="hits has 1 rows"):
        select_drrag(["a", "b"], [["a"]], k=4, mode="qdc")
    with pytest.raises(DimensionMismatchError, match="scorer returned 1"):
        select_drrag(["a", "b"], [["a", "x"], ["b", "y"]], k=4, mode="cfs", scorer=lambda xs, ys: [0.5])


# --- slow reference, written as plainly as the paper's Algorithm 1 and equations ---


def reference(
    ranking: list[str],
    hits: list[list[str]],
    k: int,
    k1: int,
    m: int,
    mode: str,
    accept: set[tuple[str, str]],
    fill: bool,
    per_doc: str,
    rule: str,
    protect: bool,
) -> list[str]:
    ok = lambda x, y: (x, y) in accept or (y, x) in accept  # noqa: E731
    stage1 = ranking[:k1][:k]
    cnt = list(stage1)
    rejected: set[str] = set()
    for i, d in enumerate(stage1):
        if len(cnt) >= k:
            break
        window = [h for h in hits[i] if h not in cnt][:m]  # m hits not chosen yet
        for h in window:
            if mode == "cfs" and not ok(d, h):
                rejected.add(h)
        taken = 0
        for h in window:
            if len(cnt) >= k or (per_doc == "first" and taken == 1):
                break
            if mode != "cfs" or ok(d, h):
                cnt.append(h)
                taken += 1
    rejected -= set(cnt)
    dropped: set[str] = set()
    if mode == "cis":
        n1 = len(stage1)
        keep = []
        for x, d in enumerate(cnt):
            if x < n1 and protect:
                keep.append(d)
                continue
            # eq. 3 judges a stage-2 document against the stage-1 ones; otherwise all others
            partners = cnt[:n1] if rule == "stage1" and x >= n1 else [e for e in cnt if e != d]
            if any(ok(d, e) for e in partners):
                keep.append(d)
            else:
                dropped.add(d)
        cnt = keep
    if fill:
        for d in ranking:
            if len(cnt) >= k:
                break
            if d not in cnt and d not in dropped:
                cnt.append(d)
    return cnt


@st.composite
def cases(draw):  # type: ignore[no-untyped-def]
    n_docs = draw(st.integers(3, 9))
    docs = [f"d{i}" for i in range(n_docs)]
    ranking = draw(st.permutations(docs))
    k = draw(st.integers(1, 6))
    k1 = draw(st.integers(1, k))
    m = draw(st.integers(1, 5))
    hits = [draw(st.lists(st.sampled_from(docs), min_size=0, max_size=6, unique=True)) for _ in range(k1)]
    pairs = [(a, b) for a in docs for b in docs if a < b]
    accept = set(draw(st.lists(st.sampled_from(pairs), max_size=len(pairs), unique=True)))
    mode = draw(st.sampled_from(["qdc", "cfs", "cis"]))
    fill = draw(st.booleans())
    per_doc = draw(st.sampled_from(["first", "all"]))
    rule = draw(st.sampled_from(["stage1", "pairwise"]))
    protect = draw(st.booleans())
    return ranking, hits, k, k1, m, mode, accept, fill, per_doc, rule, protect


@SETTINGS
@given(cases())
def test_matches_slow_reference_and_invariants(case) -> None:  # type: ignore[no-untyped-def]
    ranking, hits, k, k1, m, mode, accept, fill, per_doc, rule, protect = case
    sel: DrragSelection[str] = select_drrag(
        ranking,
        hits,
        k,
        k1=k1,
        m=m,
        mode=mode,
        scorer=pair_scorer(accept),
        fill=fill,
        per_doc=per_doc,
        cis_rule=rule,
        protect_stage1=protect,
    )
    ids = list(sel.ids)
    assert ids == reference(ranking, hits, k, k1, m, mode, accept, fill, per_doc, rule, protect)
    assert len(ids) == len(set(ids)) <= k
    stages = [p.stage for p in sel.picks if not p.filled]
    assert stages == sorted(stages)  # stage-1 documents first
    if mode != "cis" or protect:
        assert ids[: min(k1, k)] == ranking[: min(k1, k)]
    for p in sel.picks:
        if p.stage == 2:
            assert p.source in ranking[:k1]
            assert p.doc_id in hits[ranking[:k1].index(p.source)]
            if mode == "cfs":
                assert (p.source, p.doc_id) in accept or (p.doc_id, p.source) in accept
    if fill:
        dropped = set(sel.rejected) if mode == "cis" else set()
        assert len(ids) >= min(k, len(set(ranking) - dropped))
