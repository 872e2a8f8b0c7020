"""One diversity knob for every method (issue 36 item 4) and one registry (item 3)."""

from __future__ import annotations

import ast
from pathlib import Path

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import ConflictingParametersError, InvalidParameterError
from diverse_core.registry import DIVERSITY, MethodSpec, get_method, with_diversity

ROOT = Path(__file__).resolve().parents[2]
MAPPED = [m for m in dc.available_methods() if (get_method(m).diversity or MethodSpec("x", print)).param]
UNMAPPED = [m for m in dc.available_methods() if m not in MAPPED]
GRID = np.linspace(0.0, 1.0, 41)


def _pools(count: int = 200, n: int = 40, d: int = 16) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(36)
    out = []
    for _ in range(count):
        q = rng.normal(size=d)
        # candidates spread around the query at random distances: some near, many far
        c = rng.normal(size=(n, d)) + 0.8 * q / np.linalg.norm(q) * rng.uniform(0, 3, size=(n, 1))
        out.append((q, c))
    return out


def _mean_pairwise(c: np.ndarray) -> float:
    u = c / np.linalg.norm(c, axis=1, keepdims=True)
    g = u @ u.T
    m = len(u)
    return float((g.sum() - np.trace(g)) / (m * (m - 1)))


def test_every_builtin_method_declares_how_it_reads_diversity() -> None:
    assert len(dc.available_methods()) == 12
    for name in dc.available_methods():
        mapping = get_method(name).diversity
        assert mapping is not None, name
        assert mapping.formula, name
    assert set(UNMAPPED) == {"topk"}  # no trade-off: every diversity gives the top-k
    assert get_method("topk").diversity.constant


@pytest.mark.parametrize("method", MAPPED)
def test_mapping_is_monotone_and_spans_the_native_range(method: str) -> None:
    spec = get_method(method)
    native = np.array([spec.diversity_params({DIVERSITY: float(v)})[spec.param] for v in GRID])
    steps = np.diff(native)
    assert np.all(steps >= 0) or np.all(steps <= 0)  # monotone one way
    assert native[0] != native[-1]
    for v in native:  # every mapped value is accepted by the method's own checks
        spec.resolve_params({spec.param: float(v)})


@pytest.mark.parametrize("method", dc.available_methods())
def test_direction_over_200_random_pools(method: str) -> None:
    """0 -> 0.5 -> 1: the picks' mean relevance and mean pairwise similarity never rise."""
    rel = {0.0: [], 0.5: [], 1.0: []}
    sim = {0.0: [], 0.5: [], 1.0: []}
    for q, c in _pools():
        for v in rel:
            sel = dc.select(method, q, c, 8, diversity=v)
            rel[v].append(sel.relevance.mean())
            sim[v].append(_mean_pairwise(c[sel.indices]))
    r = [float(np.mean(rel[v])) for v in (0.0, 0.5, 1.0)]
    s = [float(np.mean(sim[v])) for v in (0.0, 0.5, 1.0)]
    assert r[0] >= r[1] >= r[2], r
    assert s[0] >= s[1] >= s[2], s
    if method in UNMAPPED:  # topk: a constant map, the same picks at every value
        assert r[0] == r[2] and s[0] == s[2]
    else:
        assert r[0] > r[2] and s[0] > s[2]  # the knob does something


def test_diversity_zero_is_topk_for_the_methods_that_reach_pure_relevance() -> None:
    for q, c in _pools(20):
        top = dc.select("topk", q, c, 8).indices.tolist()
        for method in ("mmr", "gmmr", "vendi", "dpp", "msd", "cover", "ssd", "gist"):
            assert dc.select(method, q, c, 8, diversity=0.0).indices.tolist() == top, method


def test_native_name_wins_when_both_agree_and_conflict_is_typed() -> None:
    q, c = _pools(1)[0]
    sel = dc.select("gmmr", q, c, 5, diversity=0.25, lambda_mult=0.75)
    assert sel.params == {"lambda_mult": 0.75}
    with pytest.raises(ConflictingParametersError, match="lambda_mult"):
        dc.select("gmmr", q, c, 5, diversity=0.25, lambda_mult=0.5)
    with pytest.raises(ConflictingParametersError, match="sigma"):
        dc.select("dartboard", q, c, 5, diversity=1.0, sigma=0.1)
    assert issubclass(ConflictingParametersError, InvalidParameterError)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.5", True])
def test_out_of_range_diversity_is_a_typed_error(bad: object) -> None:
    q, c = _pools(1)[0]
    for method in ("gmmr", "vendi", "cover"):
        with pytest.raises(InvalidParameterError, match="diversity"):
            dc.select(method, q, c, 5, diversity=bad)


def test_topk_takes_every_value_and_stays_topk() -> None:
    q, c = _pools(1)[0]
    top = dc.select("topk", q, c, 5).indices.tolist()
    for v in (0.0, 0.5, 1.0):
        assert dc.select("topk", q, c, 5, diversity=v).indices.tolist() == top
    sweep = dc.sweep("topk", q, c, 5, values=[0.0, 0.5, 1.0], over="diversity")
    assert sweep.param == "diversity" and sweep.indices.tolist() == [top] * 3
    with pytest.raises(InvalidParameterError, match="diversity"):
        dc.select("topk", q, c, 5, diversity=1.5)
    with pytest.raises(InvalidParameterError, match="diversity=2.0"):
        dc.sweep("topk", q, c, 5, values=[0.0, 2.0], over="diversity")
    with pytest.raises(InvalidParameterError, match="trade-off"):
        dc.sweep("topk", q, c, 5, values=[0.0, 1.0])


@pytest.mark.parametrize("method", ["adaptive", "learned"])
def test_trained_selectors_keep_their_choice_at_none_and_half_and_reach_topk_at_zero(method: str) -> None:
    for q, c in _pools(20):
        native = dc.select(method, q, c, 8)
        assert dc.select(method, q, c, 8, diversity=None).indices.tolist() == native.indices.tolist()
        assert dc.select(method, q, c, 8, diversity=0.5).indices.tolist() == native.indices.tolist()
        assert dc.select(method, q, c, 8, diversity=0.0).indices.tolist() == dc.select("topk", q, c, 8).indices.tolist()
    for bad in (-0.1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(InvalidParameterError, match="diversity"):
            dc.select(method, q, c, 5, diversity=bad)


def test_adaptive_maps_diversity_through_its_predicted_lambda() -> None:
    for q, c in _pools(10):
        predicted = dc.select("adaptive", q, c, 8).details["lambda_mult"]
        for d, want in ((0.0, 1.0), (0.25, 0.5 * (1.0 + predicted)), (0.5, predicted), (1.0, 0.1)):
            sel = dc.select("adaptive", q, c, 8, diversity=d)
            assert sel.details["predicted_lambda"] == predicted
            assert sel.details["lambda_mult"] == pytest.approx(want, abs=1e-12)
            assert sel.indices.tolist() == dc.select("gmmr", q, c, 8, lambda_mult=want).indices.tolist()


def test_sweep_over_diversity_matches_select() -> None:
    q, c = _pools(1)[0]
    values = [0.0, 0.3, 0.5, 1.0]
    for method in MAPPED:
        sw = dc.sweep(method, q, c, 6, values, over="diversity")
        assert sw.param == "diversity"
        for i, v in enumerate(values):
            assert sw.indices[i].tolist() == dc.select(method, q, c, 6, diversity=v).indices.tolist(), (method, v)
        assert sw.selection(1).params["diversity"] == 0.3
    with pytest.raises(InvalidParameterError, match="diversity is swept"):
        dc.sweep("gmmr", q, c, 6, values, over="diversity", diversity=0.2)
    with pytest.raises(InvalidParameterError, match="lambda_mult is swept"):
        dc.sweep("gmmr", q, c, 6, values, over="diversity", lambda_mult=0.2)
    with pytest.raises(InvalidParameterError, match="diversity must be in"):
        dc.sweep("gmmr", q, c, 6, [0.5, 2.0], over="diversity")
    with pytest.raises(InvalidParameterError, match="over must be"):
        dc.sweep("gmmr", q, c, 6, values, over="sigma")


def test_with_diversity_folds_and_rejects_a_second_different_value() -> None:
    assert with_diversity(None, None) == {}
    assert with_diversity({"diversity": 0.3}, 0.3) == {"diversity": 0.3}
    with pytest.raises(ConflictingParametersError):
        with_diversity({"diversity": 0.3}, 0.4)


def test_one_registry_every_builtin_method_registers_in_one_module() -> None:
    from diverse_core.builtin_methods import BUILTIN

    assert sorted(m.SPEC.name for m in BUILTIN) == dc.available_methods()
    for path in (ROOT / "shared" / "diverse_core").rglob("*.py"):
        if path.name == "builtin_methods.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", getattr(n.func, "attr", None)) == "register_method"
                 and isinstance(n.args[0] if n.args else None, ast.Attribute)
                 and n.args[0].attr == "SPEC"]
        assert not calls, f"{path} registers a built-in SPEC outside builtin_methods.py"


def test_methods_index_shows_the_registered_mapping() -> None:
    text = (ROOT / "docs" / "methods" / "index.md").read_text(encoding="utf-8")
    table = text.split("| method | `diversity` maps to |", 1)[1].split("\n\n", 1)[0]
    shown: dict[str, str] = {}
    for line in table.strip().splitlines()[1:]:
        names, formula = (cell.strip() for cell in line.strip("|").split("|"))
        for name in names.split(","):
            shown[name.strip().strip("`")] = formula
    assert shown == {m: get_method(m).diversity.formula for m in dc.available_methods()}
