"""One warning per process when a trained method meets an embedder it was not trained on (issue 45)."""

from __future__ import annotations

import logging

import pytest
from diverse_core import embedder_check
from diverse_core.embedder_check import (
    check_embedder,
    embedder_name,
    same_embedder,
    trained_embedders,
)
from diverse_core.learned import LearnedSelector


class Named:
    def __init__(self, **attrs: object) -> None:
        self.__dict__.update(attrs)


@pytest.fixture(autouse=True)
def _fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedder_check, "_WARNED", set())


def test_the_name_comes_from_the_usual_attributes() -> None:
    assert embedder_name(Named(model_name="BAAI/bge-small-en-v1.5")) == "BAAI/bge-small-en-v1.5"
    assert embedder_name(Named(model="text-embedding-3-small")) == "text-embedding-3-small"
    assert embedder_name(Named(model_id="all-MiniLM-L6-v2")) == "all-MiniLM-L6-v2"
    assert embedder_name(Named(model_name="  ", model=3)) is None
    assert embedder_name(object()) is None


@pytest.mark.parametrize(("a", "b", "same"), [
    ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2", True),
    ("ALL-minilm-l6-v2", "all-MiniLM-L6-v2", True),
    ("intfloat/multilingual-e5-small", "multilingual-e5-small-q4", True),
    ("multilingual-e5-small", "all-MiniLM-L6-v2", False),
    ("all-MiniLM-L12-v2", "all-MiniLM-L6-v2", False),
    ("text-embedding-3-small", "text-embedding-3-large", False),
])
def test_same_embedder(a: str, b: str, same: bool) -> None:
    assert same_embedder(a, b) is same


def test_the_shipped_models_were_trained_on_minilm_and_the_learned_defaults_validated_on_e5() -> None:
    assert trained_embedders("learned", {}) == {"all-MiniLM-L6-v2", "multilingual-e5-small"}
    assert trained_embedders("learned", {"model": "chunks-notitle"}) == {"all-MiniLM-L6-v2"}
    assert trained_embedders("adaptive", {}) == {"all-MiniLM-L6-v2"}
    assert trained_embedders("gmmr", {"lambda_mult": 0.5}) == frozenset()


def test_another_embedder_is_warned_once_per_method(caplog: pytest.LogCaptureFixture) -> None:
    bge = Named(model_name="BAAI/bge-small-en-v1.5")
    e5 = Named(model_name="intfloat/multilingual-e5-small")
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        first = check_embedder("learned", {}, bge)
        again = check_embedder("learned", {"model": "chunks"}, Named(model_name="bge-small-en-v1.5"))
        validated = check_embedder("learned", {}, e5)  # the default models held their gains with e5
        other_method = check_embedder("adaptive", {}, e5)  # adaptive did not
    assert first is not None and "all-MiniLM-L6-v2" in first and "bge-small-en-v1.5" in first
    assert again is None and validated is None
    assert other_method is not None and "adaptive" in other_method and "multilingual-e5-small" in other_method
    assert [r.getMessage() for r in caplog.records] == [first, other_method]


def test_no_warning_for_the_training_embedder_an_unnamed_one_or_a_plain_method(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="diverse_core"):
        assert check_embedder("learned", {}, Named(model_name="sentence-transformers/all-MiniLM-L6-v2")) is None
        assert check_embedder("learned", {}, object()) is None
        assert check_embedder("gmmr", {}, Named(model_name="BAAI/bge-small-en-v1.5")) is None
    assert caplog.records == []


def test_a_model_of_your_own_is_checked_against_its_own_card(tmp_path) -> None:  # type: ignore[no-untyped-def]
    shipped = LearnedSelector.default()
    path = LearnedSelector(shipped.variants, shipped.config,
                           {**shipped.info, "embedder": "multilingual-e5-small-q4", "validated_embedders": []},
                           ).save(tmp_path / "e5.npz")
    assert trained_embedders("learned", {"model": str(path)}) == {"multilingual-e5-small-q4"}
    assert check_embedder("learned", {"model": str(path)}, Named(model_name="intfloat/multilingual-e5-small")) is None
    assert check_embedder("learned", {"model": str(path)}, Named(model_name="all-MiniLM-L6-v2")) is not None
