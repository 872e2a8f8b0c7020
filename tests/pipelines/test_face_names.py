"""Issue 36 item 5 (names): one spelling per concept across the faces, the old names kept as
deprecated aliases that warn on every access and hand back the very same object."""

from __future__ import annotations

import importlib
import warnings

import pytest

ALIASES = [
    # (module, old name, new name)
    ("langchain_diverse", "METADATA_KEYS", "SELECTION_METADATA_KEYS"),
    ("langchain_diverse.selection", "METADATA_KEYS", "SELECTION_METADATA_KEYS"),
]


def _module(name: str) -> object:
    pytest.importorskip("langchain_core" if name.startswith("langchain") else "llama_index.core")
    return importlib.import_module(name)


@pytest.mark.parametrize("module, old, new", ALIASES)
def test_old_name_warns_and_is_the_new_object(module: str, old: str, new: str) -> None:
    mod = _module(module)
    for _ in range(2):  # every access warns (the alias is never cached in the module)
        with pytest.warns(DeprecationWarning, match=rf"{module}\.{old} is deprecated; use {module}\.{new}"):
            value = getattr(mod, old)
        assert value is getattr(mod, new)
    assert old not in mod.__dict__
    assert old not in getattr(mod, "__all__", ())


@pytest.mark.parametrize("module, old, new", ALIASES)
def test_from_import_of_the_old_name_warns(module: str, old: str, new: str) -> None:
    _module(module)
    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning):
        exec(f"from {module} import {old}", namespace)  # noqa: S102 - the import statement users write
    assert namespace[old] is getattr(importlib.import_module(module), new)


@pytest.mark.parametrize("module, old, new", ALIASES)
def test_new_name_does_not_warn(module: str, old: str, new: str) -> None:
    mod = _module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert getattr(mod, new) is not None
        assert new in dir(mod)


def test_both_faces_share_the_metadata_keys_name() -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    import langchain_diverse
    import llamaindex_diverse

    for face in (langchain_diverse, llamaindex_diverse):
        assert "SELECTION_METADATA_KEYS" in face.__all__
        assert {"selection_score", "selection_rank", "selection_method", "selection_params"} <= set(
            face.SELECTION_METADATA_KEYS
        )


def test_every_pipeline_face_spells_its_pipeline_as_the_core_does() -> None:
    """``<core class name>Retriever`` (and ``QueryEngine``) for every pipeline in both faces."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from diverse_core.pipelines.dfrag import DFRAG
    from diverse_core.pipelines.diva import DIVA
    from diverse_core.pipelines.drrag import DRRAG
    from diverse_core.pipelines.vendirag import VendiRAG

    import langchain_diverse
    import llamaindex_diverse

    for core in (DFRAG, DIVA, DRRAG, VendiRAG):
        lc = getattr(langchain_diverse, f"{core.__name__}Retriever")
        li = getattr(llamaindex_diverse, f"{core.__name__}Retriever")
        engine = getattr(llamaindex_diverse, f"{core.__name__}QueryEngine")
        assert lc.pipeline_class is core and li.pipeline_class is core
        assert engine.retriever_class is li
