"""The warm path of the learned selector: no file lookup per call, the per-text check and the inline pick."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from diverse_core.adaptive.inputs import text_inputs
from diverse_core.errors import InvalidParameterError
from diverse_core.learned import LearnedSelector, QueryState, pair_view
from diverse_core.learned.greedy import _product_picks, _row_picks
from diverse_core.validation import prepare_inputs


def test_default_model_is_not_looked_up_on_disk_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    first = LearnedSelector.default()
    looked: list[Path] = []
    real = Path.is_file

    def counting(self: Path) -> bool:
        looked.append(self)
        return real(self)

    monkeypatch.setattr(Path, "is_file", counting)
    assert all(LearnedSelector.default() is first for _ in range(3))
    assert looked == []  # a stat per call is a syscall that lets every waiting thread run


class _Text(str):
    pass


def test_text_check_accepts_str_subclasses_and_refuses_other_entries() -> None:
    assert text_inputs("q?", [_Text("a"), "b"], 2) == ("q?", [_Text("a"), "b"])
    for bad in (["a", 1], [b"a", "b"], ["a", None]):
        with pytest.raises(InvalidParameterError, match="texts must be a sequence of strings"):
            text_inputs("q?", bad, 2)
    with pytest.raises(InvalidParameterError, match="texts must be a sequence of strings"):
        text_inputs("q?", "ab", 2)


@pytest.mark.parametrize("seed", range(6))
def test_exact_ties_pick_the_first_lowest_as_the_row_path_does(seed: int) -> None:
    """Duplicated candidates give exactly equal logits: the inline pick must take the same one as the row path."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(6, 8))
    cands = np.concatenate([base, base])  # candidate i and i + 6: equal relevance, equal features
    texts = [f"T{i % 3}: word{i % 4} Name{i % 2}" for i in range(6)] * 2
    prep = prepare_inputs(rng.normal(size=8), cands, 5, None)
    state = QueryState.build(prep, pair_view("Which Name0 word1?", texts))
    model = LearnedSelector.default().variants["text"].step
    folded = model.folded
    assert folded is not None
    picks, probs = _product_picks(state, folded, None, 0.0, False) or (None, None)
    row_picks, row_probs = _row_picks(state, model, None, 0.0, False)
    assert picks is not None and picks.tolist() == row_picks.tolist()
    assert np.allclose(probs, row_probs, rtol=0, atol=1e-12)
