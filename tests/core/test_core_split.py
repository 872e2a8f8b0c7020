"""The core modules split by job (issue 36): every old import path still hands out the same
objects, and the one helper for process-wide defaults made on first use."""

from __future__ import annotations

import importlib
import threading
import time

import pytest
from diverse_core._lazy import ProcessDefault

#: old module -> {name: the module that now defines it}
MOVED = {
    "diverse_core.validation": {
        "check_k": "diverse_core.param_checks",
        "check_unit_interval": "diverse_core.param_checks",
        "check_positive": "diverse_core.param_checks",
        "check_non_negative": "diverse_core.param_checks",
        "check_values": "diverse_core.param_checks",
        "check_renyi_order": "diverse_core.param_checks",
        "ORDER_ONE_ATOL": "diverse_core.param_checks",
        "as_real_array": "diverse_core.array_checks",
        "brief_repr": "diverse_core.array_checks",
        "unit_rows": "diverse_core.row_norms",
        "row_dots": "diverse_core.row_norms",
    },
    "diverse_core.embedding_cache": {
        "EmbeddingCache": "diverse_core.embedding_cache.cache",
        "InFlight": "diverse_core.embedding_cache.inflight",
        "wait_for": "diverse_core.embedding_cache.inflight",
        "await_for": "diverse_core.embedding_cache.inflight",
        "KnownAt": "diverse_core.embedding_cache.vectors",
        "ModelCaches": "diverse_core.embedding_cache.per_model",
        "model_caches": "diverse_core.embedding_cache.per_model",
        "cache_key": "diverse_core.embedding_cache.per_model",
        "clear_model_caches": "diverse_core.embedding_cache.per_model",
        "STRONG_LIMIT": "diverse_core.embedding_cache.per_model",
    },
    "diverse_core.llm.local": {
        "REBUILD_HINT": "diverse_core.llm.native_probe",
    },
}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_import_paths_hand_out_the_moved_objects(old: str) -> None:
    module = importlib.import_module(old)
    for name, new in MOVED[old].items():
        assert getattr(module, name) is getattr(importlib.import_module(new), name), (old, name)
    for name in module.__all__:  # every listed name is there
        getattr(module, name)


def test_the_package_re_exports_follow_the_submodules_lists() -> None:
    import diverse_core
    import diverse_core.llm as llm
    from diverse_core import metrics
    from diverse_core.llm import base, errors, managed, openai_llm, structured

    assert not set(metrics.__all__) & set(diverse_core.__all__)  # the set metrics stay in their module
    for module in (base, errors, managed, openai_llm):
        assert set(module.__all__) <= set(llm.__all__), module.__name__
    for name in ("Message", "OutputSchema", "decode_json", "token_budget", "refusal_from_error"):
        assert name in structured.__all__
    for package in (diverse_core, llm, structured):
        assert len(package.__all__) == len(set(package.__all__)), package.__name__  # each name once
        for name in package.__all__:
            getattr(package, name)


def test_a_process_default_is_made_once_even_by_concurrent_first_callers() -> None:
    made: list[int] = []

    def slow() -> object:
        time.sleep(0.05)
        made.append(1)
        return object()

    default = ProcessDefault(slow)
    start = threading.Barrier(8)
    got: list[object] = []

    def call() -> None:
        start.wait()
        got.append(default.get())

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 8 and all(g is got[0] for g in got)


def test_a_process_default_whose_factory_fails_is_tried_again() -> None:
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise FileNotFoundError("not there yet")
        return "made"

    default = ProcessDefault(flaky)
    with pytest.raises(FileNotFoundError):
        default.get()
    assert default.get() == "made" and default.get() == "made" and len(calls) == 2
