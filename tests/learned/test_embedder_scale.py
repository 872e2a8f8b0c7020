"""e5 against MiniLM: the trained selectors' cosine features on the pool's common scale, not the embedder's.

``tests/data/embedder_scale/pools.npz`` holds three HotpotQA dev pools (20 titled paragraphs each)
embedded by the packaged MiniLM and by multilingual-e5-small (``make_pools.py`` beside it). e5's
cosines sit far higher (relevance about 0.8 against 0.4), so raw features differ by 0.2-0.5 between
the two embedders; on the common scale (:class:`~diverse_core.trained.scale.PoolScale`) the
pool's mean of each cosine feature differs by less than 0.1.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from diverse_core import sweep
from diverse_core.adaptive.features import FEATURE_NAMES, set_features
from diverse_core.learned import QueryState, feature_names
from diverse_core.trained.candidates import candidate_features
from diverse_core.trained.scale import PoolScale
from diverse_core.validation import prepare_inputs

POOLS = Path(__file__).resolve().parents[1] / "data" / "embedder_scale" / "pools.npz"
#: The learned features read from cosines (the others are ranks, counts and differences).
COSINE_COLUMNS = ("rel", "red_better", "sim_top1", "sim_topk", "centrality", "pool_top1", "sim_max", "sim_mean",
                  "qdc_max")
#: adaptive's set features read from cosines.
SET_COLUMNS = ("rel_mean", "rel_min", "red_mean", "red_max", "cover_top", "cover_pool")


def _preps() -> list[dict[str, object]]:
    z = np.load(POOLS)
    n = len(json.loads(str(z["meta"])))
    return [{emb: prepare_inputs(z[f"{emb}_query_{i}"].astype(np.float64), z[f"{emb}_units_{i}"].astype(np.float64),
                                 5, None) for emb in ("minilm", "e5")} for i in range(n)]


def _learned_rows(prep: object, scaled: bool) -> np.ndarray:
    st = QueryState.build(prep)  # type: ignore[arg-type]
    if not scaled:
        raw = candidate_features(st.unit, st.cos_q, st.k)
        st = QueryState(raw, st.unit, st.cos_q, st.cos_q, st.k, None)
    return st.rows([int(np.argmax(st.relevance))])


@pytest.mark.parametrize("pool", range(3))
def test_learned_features_read_e5_and_minilm_alike(pool: int) -> None:
    preps = _preps()[pool]
    raw_gap = float(np.mean(preps["e5"].relevance) - np.mean(preps["minilm"].relevance))  # type: ignore[attr-defined]
    assert raw_gap > 0.3  # the two embedders' cosine scales differ
    cols = [feature_names(False).index(c) for c in COSINE_COLUMNS]
    for scaled, check in ((False, lambda d: d > 0.2), (True, lambda d: d < 0.1)):
        e5, minilm = (_learned_rows(preps[emb], scaled)[:, cols].mean(axis=0) for emb in ("e5", "minilm"))
        gap = np.abs(e5 - minilm)
        assert all(check(d) for d in gap), dict(zip(COSINE_COLUMNS, gap.round(3), strict=True))


@pytest.mark.parametrize("pool", range(3))
def test_adaptive_set_features_read_e5_and_minilm_alike(pool: int) -> None:
    preps = _preps()[pool]
    cols = [FEATURE_NAMES.index(c) for c in SET_COLUMNS]
    out = {}
    for emb, prep in preps.items():
        sw = sweep("gmmr", prep.query, prep.candidates, 5, values=[0.3, 0.7, 1.0])  # type: ignore[attr-defined]
        unit, rel = prep.candidates, prep.relevance  # type: ignore[attr-defined]
        out[emb] = {scaled: set_features(sw.values, sw.indices, unit, rel,
                                         **({"scale": PoolScale.of_pool(unit, rel)} if scaled else {}))[:, cols]
                    for scaled in (False, True)}
    raw, scaled = (np.abs(out["e5"][s] - out["minilm"][s]).mean(axis=0) for s in (False, True))
    assert np.all(raw > 0.1) and np.all(scaled < 0.1) and np.all(scaled < raw / 2)


def _with_format(path: Path, fmt: int) -> None:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["format"] = fmt
    arrays["meta"] = np.array(json.dumps(meta))
    with path.open("wb") as fh:
        np.savez(fh, **arrays)


def test_a_model_trained_on_raw_cosines_asks_to_be_retrained(tmp_path: Path) -> None:
    from diverse_core.adaptive import AdaptiveSelector
    from diverse_core.errors import InvalidParameterError
    from diverse_core.learned import LearnedSelector

    learned = LearnedSelector.default("paragraphs").save(tmp_path / "learned.npz")
    adaptive = AdaptiveSelector.default().save(tmp_path / "adaptive.npz")
    assert LearnedSelector.load(learned).info == LearnedSelector.default("paragraphs").info  # the current format loads
    _with_format(Path(learned), 1)  # written before the common scale
    _with_format(Path(adaptive), 2)
    with pytest.raises(InvalidParameterError, match="format=1.*retrain"):
        LearnedSelector.load(learned)
    with pytest.raises(InvalidParameterError, match="format 2.*retrain"):
        AdaptiveSelector.load(adaptive)



def test_adaptive_set_features_read_relevance_on_any_scale() -> None:
    """Relevance from another scorer (cross-encoder-like logits beyond [-1, 1]): the same set features once
    the pool's own scale is read, with the sets held fixed."""
    prep = _preps()[0]["minilm"]
    unit, rel = prep.candidates, prep.relevance  # type: ignore[attr-defined]
    sw = sweep("gmmr", prep.query, unit, 5, values=[0.3, 0.7, 1.0])  # type: ignore[attr-defined]
    logits = 12.0 * rel - 3.0
    want = set_features(sw.values, sw.indices, unit, rel, scale=PoolScale.of_pool(unit, rel))
    got = set_features(sw.values, sw.indices, unit, logits, scale=PoolScale.of_pool(unit, logits))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
