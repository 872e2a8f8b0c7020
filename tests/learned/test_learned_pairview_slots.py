"""The pair view's one marker pass (issue 35, session 14, second pass): names, title words and the
question's words lined up together, from the question's ids joined into the pool.

Hand-built answers where one word is a name, a title word and a question term at once (the case the
shared pass must number once), question words no text holds, and the thread's marker array left
all-zero after every call (the contract of :func:`~diverse_core.textmarks.marker_array`).
"""

from __future__ import annotations

import numpy as np
from diverse_core.learned import pair_view
from diverse_core.learned.pairview import _Pool
from diverse_core.textfeatures import _question_columns, facts_cache
from diverse_core.textmarks import marker_array
from hypothesis import given, settings
from hypothesis import strategies as st
from pairview_reference import reference_pair_view
from test_learned_pairview_lineup import QUESTIONS, SHOWN, _texts, assert_same


def _marker_is_clean() -> bool:
    mark = marker_array(1)
    return not mark.any()


def test_a_word_that_is_a_name_a_title_word_and_a_question_term() -> None:
    texts = ["Dune: Dune is a novel by Herbert.", "Herbert: Herbert wrote Dune in Tacoma.", "Tacoma: a city."]
    pv = pair_view("Who wrote Dune in Tacoma?", texts)
    assert pv.view.terms == ("dune", "tacoma", "wrote")
    assert pv.view.term_hits.astype(int).tolist() == [[1, 0, 0], [1, 1, 1], [0, 1, 0]]
    # names outside the question's terms: Herbert (texts 0 and 1) only ("Dune", "Tacoma" are terms)
    assert pv.shared is not None
    assert pv.shared.totals.tolist() == [1.0, 1.0, 0.0]
    assert pv.shared.columns.tolist() == [[1.0], [1.0], [0.0]]
    assert pv.view.other_names.astype(int).tolist() == [[1], [1], [0]]
    assert pv.names_shared.tolist() == [[np.log1p(1.0), np.log1p(1.0), 0.0], [np.log1p(1.0), np.log1p(1.0), 0.0],
                                        [0.0, 0.0, 0.0]]
    # bodies: text 0 holds "dune" and "herbert", text 1 also "tacoma", text 2 ("a city.") no title word
    assert pv.title_in.tolist() == [[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]
    assert _marker_is_clean()


def test_question_words_no_text_holds_each_get_a_column_of_their_own() -> None:
    texts = ["Alien: a film by Ridley Scott.", "Ridley Scott: born in South Shields."]
    pv = pair_view("Did Zanzibar Quux or Ridley Scott film Alien?", texts)
    assert pv.view.terms == pv.view.names == ("alien", "quux", "ridley", "scott", "zanzibar")  # "film": a stop word
    assert pv.view.term_hits.astype(int).tolist() == [[1, 0, 1, 1, 0], [0, 0, 1, 1, 0]]
    assert pv.view.name_hits.astype(int).tolist() == [[1, 0, 1, 1, 0], [0, 0, 1, 1, 0]]
    # names outside the question: none in text 0, "south" and "shields" in text 1 (no one else holds them)
    assert pv.shared is not None and pv.shared.totals.tolist() == [0.0, 2.0] and pv.shared.columns.shape == (2, 0)
    assert pv.view.other_names.astype(int).tolist() == [[0, 0], [1, 1]]
    assert _marker_is_clean()


def test_the_pool_joins_names_titles_and_the_question_in_one_array() -> None:
    cache = facts_cache()
    facts = cache.get_many(["Dune: Herbert wrote it.", "Tacoma: a City."], marks=True)
    q = np.array([7, -1], dtype=np.int64)
    pool = _Pool.stack(facts, None, q.tobytes())
    names = np.concatenate([f.name_ids for f in facts])
    titles = np.concatenate([f.title_ids for f in facts])
    assert (pool.names, pool.titles) == (names.shape[0], titles.shape[0])
    assert pool.wanted.tolist() == [*names.tolist(), *titles.tolist(), 7, -1]
    assert pool.name_rows.tolist() == [i for i, f in enumerate(facts) for _ in f.name_ids]
    assert pool.words.tolist() == [w for f in facts for w in (f.marks >> 4).tolist()]  # type: ignore[operator]
    empty = _Pool.stack([], None, q.tobytes())
    assert empty.wanted.tolist() == [7, -1] and empty.words.shape == (0,)


def test_question_columns_are_a_read_only_index_array() -> None:
    words, cols = _question_columns(("alien", "scott"), ("Alien", "Scott"))
    assert words == ("alien", "scott", "Alien", "Scott") and cols.dtype == np.intp and cols.tolist() == [2, 3]
    assert not cols.flags.writeable


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.integers(0, 30), st.sampled_from(QUESTIONS), st.booleans())
def test_the_marker_stays_clean_and_the_view_matches_the_reference(seed: int, n: int, question: str,
                                                                    with_names: bool) -> None:
    rng = np.random.default_rng(seed)
    texts = _texts(rng, n)
    names = [SHOWN[int(k)] for k in rng.integers(0, len(SHOWN), size=n)] if with_names else None
    assert_same(pair_view(question, texts, names=names), reference_pair_view(question, texts, None, names))
    assert _marker_is_clean()
