"""The warm path of the learned selector: no file lookup per call, the per-text check."""

from __future__ import annotations

from pathlib import Path

import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.learned import LearnedSelector
from diverse_core.trained.inputs import text_inputs


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
