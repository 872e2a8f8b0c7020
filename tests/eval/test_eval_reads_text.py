"""The harness hands the question and the candidate texts to methods that read text (``reads_text``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core import registry
from diverse_core.adaptive import load_selector
from diverse_core.eval import BenchConfig, parse_method, run_benchmark
from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord
from diverse_core.registry import MethodSpec, register_method
from diverse_core.validation import PreparedInputs

TEXT_PROBE, PLAIN_PROBE = "_reads_text_probe", "_plain_probe"


def _bench() -> Benchmark:
    rng = np.random.default_rng(1)
    b = CorpusBuilder()
    ids = [b.add(f"Title {i}", f"Person{i} met Person{(i + 1) % 20} in City{i % 4}. Fact {i}.") for i in range(20)]
    recs = []
    for q in range(4):
        gold = tuple(rng.choice(ids, size=2, replace=False).tolist())
        recs.append(QARecord(f"q{q}", f"Where did Person{q} meet Person{q + 1}?", ("City0",), gold, ()))
    return Benchmark("toytext", tuple(recs), b.docs, ("paragraphs",), "recall")


@pytest.fixture
def probes() -> Iterator[dict[str, list[dict[str, Any]]]]:
    seen: dict[str, list[dict[str, Any]]] = {TEXT_PROBE: [], PLAIN_PROBE: []}

    def text_run(prep: PreparedInputs, *, question: Any = None, texts: Any = None) -> Any:
        choice = load_selector(None).choose_prepared(prep, question=question, texts=texts)
        seen[TEXT_PROBE].append(
            {"question": question, "texts": texts, "unit": np.array(prep.candidates), "variant": choice.variant}
        )
        return choice.indices, choice.scores

    def plain_run(prep: PreparedInputs, **params: Any) -> Any:
        seen[PLAIN_PROBE].append(params)
        return np.arange(prep.k, dtype=np.int64), np.zeros(prep.k)

    register_method(MethodSpec(TEXT_PROBE, text_run, {"question": None, "texts": None}, reads_text=True))
    register_method(MethodSpec(PLAIN_PROBE, plain_run, {}))
    try:
        yield seen
    finally:
        for name in (TEXT_PROBE, PLAIN_PROBE):
            registry._REGISTRY.pop(name, None)


def test_runner_passes_question_and_texts_only_to_methods_that_read_text(
    tmp_path: Path, fake_embedder: Any, make_fake: Any, probes: dict[str, list[dict[str, Any]]]
) -> None:
    bench = _bench()
    cfg = BenchConfig(
        tasks=[("toytext", "paragraphs")], benchmarks={"toytext": bench},
        methods=[parse_method(TEXT_PROBE), parse_method(PLAIN_PROBE), parse_method("adaptive")],
        k=3, fetch_k=8, embedder=fake_embedder, model_name="fake", cache_dir=tmp_path / "cache",
        out_dir=None, results_md=None, progress=False,
    )
    res = run_benchmark(cfg)
    assert TEXT_PROBE in registry.available_methods()  # removed again by the fixture
    calls = probes[TEXT_PROBE]
    assert [c["question"] for c in calls] == [r.question for r in bench.records]
    for c in calls:
        assert isinstance(c["texts"], list) and len(c["texts"]) == 8
        assert all(isinstance(t, str) for t in c["texts"])
        # the texts are the candidates' own, in the candidates' order
        np.testing.assert_allclose(make_fake()(c["texts"]), c["unit"], atol=1e-6)
    assert probes[PLAIN_PROBE] == [{}] * len(bench.records)  # no question/texts for the others
    by = {s.method: s for s in res.tasks[0].settings}
    # "adaptive" got the same question and texts as the probe (which ran the text variant on them)
    assert by["adaptive"].picks == by[TEXT_PROBE].picks
    assert [c["variant"] for c in calls] == ["text"] * len(bench.records)
