"""The shipped learned models' picks on fixed pools are pinned (issue 35: the warm path changed, the outputs must not).

The figures were first written by the code before the incremental set state and the one-array
pool words (commit cb40eff); re-pinned when the features moved to the pool's common scale and the
models were retrained (session 20, ``trained.scale``): every pick and every score must stay the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.learned import LearnedSelector
from diverse_core.text import facts_cache

WORDS = ["river", "bridge", "Paris", "Lyon", "novel", "author", "born", "1921", "France", "Seine", "film", "Dune",
         "Herbert", "Tacoma", "desert", "planet", "spice", "museum", "Louvre", "painting"]
QUESTION = "Where was the author of Dune born, near which river in France?"


def _pool(seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=16)
    c = rng.normal(size=(40, 16)) + 0.7 * q * rng.uniform(0, 2, size=(40, 1))
    titles = ["Dune", "Paris", "Herbert", "Louvre", "Seine", ""]
    texts = []
    for i in range(40):
        body = " ".join(rng.choice(WORDS, size=rng.integers(4, 12)))
        t = titles[i % len(titles)]
        texts.append(f"{t}: {body}." if t else body + ".")
    return q, c, texts


PINNED = {
    (0, 'chunks', 'embedding'): ([19, 36, 13, 18, 32, 14], [0.31309966840196346, 0.1356205760083026, 0.1116651572161154, 0.0904331207406723, 0.0780207450747698, 0.06988916314513506]),
    (0, 'chunks', 'sources'): ([18, 14, 19, 13, 37, 15], [0.7090124778957025, 0.1531325747451005, 0.6466364002211238, 0.5228745865063198, 0.42421712161754793, 0.33243473562003284]),
    (0, 'chunks', 'text'): ([18, 14, 21, 16, 13, 26], [0.7090124778957025, 0.1531325747451005, 0.6593527297844074, 0.7497226236839266, 0.530704003594266, 0.043825471972094715]),
    (0, 'paragraphs', 'embedding'): ([35, 19, 32, 5, 18, 36], [0.10676152835654883, 0.06607456557912433, 0.053486882092838445, 0.05071799131887286, 0.03733915957209212, 0.031451512830660014]),
    (0, 'paragraphs', 'sources'): ([4, 6, 14, 30, 19, 18], [0.3424700474954984, 0.4194532284373255, 0.45302670479526347, 0.26685480459647404, 0.22062632037807947, 0.21596660058927797]),
    (0, 'paragraphs', 'text'): ([4, 19, 24, 14, 21, 18], [0.3424700474954984, 0.4833465365500598, 0.39407744266336825, 0.30868056326539556, 0.20687339579700567, 0.22685503018382483]),
    (1, 'chunks', 'embedding'): ([27, 18, 2, 25, 15, 29], [0.33746134583466053, 0.1560843881482012, 0.11691058886697726, 0.11110218071167886, 0.0885825289870641, 0.07713585899040216]),
    (1, 'chunks', 'sources'): ([25, 30, 27, 10, 15, 21], [0.8371083876808862, 0.5343264951235462, 0.5101078801030937, 0.43182658494553844, 0.41388498417727526, 0.39154932772864204]),
    (1, 'chunks', 'text'): ([25, 30, 16, 27, 37, 10], [0.8371083876808862, 0.5343264951235462, 0.6110685323268003, 0.5166343294205291, 0.044428197090738586, 0.038294477104209045]),
    (1, 'paragraphs', 'embedding'): ([14, 33, 2, 21, 22, 15], [0.12439806847716103, 0.06433606986417127, 0.054235495549782395, 0.049655518678336, 0.041550548614390975, 0.034100498170324366]),
    (1, 'paragraphs', 'sources'): ([25, 30, 10, 14, 15, 27], [0.47473992849733104, 0.19220253730760176, 0.21747780770088018, 0.3354959567319883, 0.1785563335477154, 0.12589824325761514]),
    (1, 'paragraphs', 'text'): ([25, 30, 16, 15, 37, 22], [0.47473992849733104, 0.19220253730760176, 0.220884643817918, 0.1548458484186834, 0.10821244741456358, 0.0575055181373148]),
}


@pytest.mark.parametrize("key", sorted(PINNED))
@pytest.mark.parametrize("warm", [False, True])
def test_shipped_models_give_the_pinned_picks(key: tuple[int, str, str], warm: bool) -> None:
    seed, model, variant = key
    q, c, texts = _pool(seed)
    if not warm:
        facts_cache().clear()
    kwargs: dict[str, object] = {"question": QUESTION, "texts": texts}
    if variant == "sources":
        kwargs.update(sources=[f"s{i % 7}" for i in range(40)],
                      names=[None if i % 4 else "Frank Herbert" for i in range(40)])
    else:
        kwargs["variant"] = variant
    choice = LearnedSelector.default(model).choose(q, c, 6, **kwargs)  # type: ignore[arg-type]
    indices, scores = PINNED[key]
    assert choice.indices.tolist() == indices
    np.testing.assert_allclose(choice.scores, scores, rtol=0, atol=1e-12)
