"""The shipped learned models' picks on fixed pools are pinned (issue 35: the warm path changed, the outputs must not).

The figures were written by the code before the incremental set state and the one-array
pool words (commit cb40eff): every pick and every score must stay the same.
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
    (0, 'chunks', 'text'): ([18, 32, 35, 19, 21, 16], [0.9392543799372899, 0.5622949061578507, 0.20967877160211856, 0.9064545441266939, 0.6396301033151692, 0.6411922956170457]),
    (0, 'chunks', 'embedding'): ([19, 35, 5, 32, 13, 36], [0.9186265591165741, 0.6839798507898487, 0.5393104477385587, 0.4930038798007988, 0.3278054178230381, 0.3212006862503749]),
    (0, 'chunks', 'sources'): ([18, 19, 14, 13, 2, 24], [0.9392543799372899, 0.5578782036770593, 0.940642943894086, 0.8842247450427029, 0.37465256013221504, 0.34205827170289027]),
    (0, 'paragraphs', 'text'): ([24, 18, 35, 19, 32, 21], [0.6009866375633677, 0.399285699814845, 0.3024593142468674, 0.9108550010999537, 0.6800043721020598, 0.47541449030190175]),
    (0, 'paragraphs', 'embedding'): ([35, 19, 5, 32, 8, 18], [0.9450395329763097, 0.7027301356607655, 0.5608931486799614, 0.4765904239512031, 0.23375073209788813, 0.20052102385641146]),
    (0, 'paragraphs', 'sources'): ([24, 18, 6, 14, 19, 22], [0.6009866375633677, 0.6815049494075832, 0.4457381095637846, 0.7476005485037055, 0.7082439748529822, 0.2879906845331999]),
    (1, 'chunks', 'text'): ([25, 12, 14, 33, 2, 22], [0.9563383476209633, 0.8137509060549725, 0.9514883780666167, 0.8710799316707621, 0.36149624476841585, 0.7820417669360488]),
    (1, 'chunks', 'embedding'): ([14, 33, 2, 22, 21, 18], [0.9481915003786487, 0.7210896575415694, 0.6633067766600634, 0.5202754478552707, 0.41049041249893675, 0.34250477144301433]),
    (1, 'chunks', 'sources'): ([25, 6, 2, 14, 33, 22], [0.9563383476209633, 0.4309709804668891, 0.9647316946792313, 0.9424052984450414, 0.8829114116252531, 0.8103028492645412]),
    (1, 'paragraphs', 'text'): ([25, 18, 16, 33, 22, 14], [0.6198010113135679, 0.4505549574769549, 0.5003629688650657, 0.5969547948006516, 0.20904614678401193, 0.1964246016500058]),
    (1, 'paragraphs', 'embedding'): ([14, 33, 2, 22, 21, 26], [0.9642596666475193, 0.7384797078344989, 0.591839504027741, 0.4821682874965837, 0.42069544355378546, 0.24933061558863667]),
    (1, 'paragraphs', 'sources'): ([25, 14, 2, 33, 22, 10], [0.6198010113135679, 0.2170967824487511, 0.7904354194923126, 0.6332106644496646, 0.6206009367106184, 0.35029313049067196]),
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
