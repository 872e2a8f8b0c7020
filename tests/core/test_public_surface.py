"""``diverse_core`` exports what a newcomer needs (issue 44 item 4); the rest stays in its module,
and the names the package used to export still answer, with a warning that names their module."""

from __future__ import annotations

import importlib

import diverse_core as dc
import pytest

SURFACE = [
    "select", "sweep", "Selection", "Sweep", "available_methods",
    "DiverseRAGError", "InvalidParameterError", "ConflictingParametersError", "UnknownMethodError",
    "AdaptiveSelector", "LearnedSelector",
    "DFRAG", "DRRAG", "DIVA", "VendiRAG",
]

#: Names the package exported before the trim -> the module that holds them.
MOVED = {
    "QUERY": "diverse_core.methods.dartboard",
    "PairScorer": "diverse_core.methods.dartboard",
    "MethodSpec": "diverse_core.registry",
    "get_method": "diverse_core.registry",
    "register_method": "diverse_core.registry",
    "EmptyCandidatesError": "diverse_core.errors",
    "DimensionMismatchError": "diverse_core.errors",
    "NonFiniteInputError": "diverse_core.errors",
    "NonNumericInputError": "diverse_core.errors",
    "ZeroVectorError": "diverse_core.errors",
    "upper_median": "diverse_core.tuning",
    "argmax_upper_median": "diverse_core.tuning",
    "binary_search_sample": "diverse_core.tuning",
    "BinarySearchResult": "diverse_core.tuning",
    "vendi_score": "diverse_core.metrics",
    "jaccard_matrix": "diverse_core.metrics",
    "spearman_rho": "diverse_core.metrics",
}


def test_the_package_exports_about_a_dozen_names_a_newcomer_needs() -> None:
    assert dc.__all__ == SURFACE
    for name in dc.__all__:
        assert getattr(dc, name) is not None
    assert set(SURFACE) <= set(dir(dc))


def test_the_surface_names_are_the_objects_of_their_modules() -> None:
    from diverse_core.adaptive import AdaptiveSelector
    from diverse_core.errors import ConflictingParametersError
    from diverse_core.learned import LearnedSelector
    from diverse_core.pipelines.dfrag import DFRAG
    from diverse_core.pipelines.vendirag import VendiRAG
    from diverse_core.registry import available_methods

    assert dc.AdaptiveSelector is AdaptiveSelector and dc.LearnedSelector is LearnedSelector
    assert dc.ConflictingParametersError is ConflictingParametersError
    assert dc.DFRAG is DFRAG and dc.VendiRAG is VendiRAG
    assert dc.available_methods is available_methods
    assert dc.metrics is importlib.import_module("diverse_core.metrics")  # the module stays reachable


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_name_the_package_no_longer_exports_answers_with_a_warning(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"diverse_core.{name} is deprecated; import it from {MOVED[name]}"):
        value = getattr(dc, name)
    assert value is getattr(importlib.import_module(MOVED[name]), name)
    assert name not in dc.__all__ and name not in dir(dc)


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        dc.nothing_here  # noqa: B018
