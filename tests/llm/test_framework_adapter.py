"""The framework-neutral half of the LangChain and LlamaIndex adapters (``FrameworkAdapter``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from diverse_core.llm import Completion, StructuredOutputUnsupported
from diverse_core.llm.adapter import FrameworkAdapter


class Refused(Exception):
    status_code = 400


class Toy(FrameworkAdapter):
    def __init__(self, methods: Any = None) -> None:
        self.copies: list[str] = []
        self._adapt("model", methods, detect=lambda m: ("json_schema", "tool_calling"), native=lambda m: m == "model")

    def _reply(self, out: Any, method: str, start: float) -> Completion:
        return Completion(json.dumps(out))

    def quiet(self, model: str) -> str:
        self.copies.append(model)
        return f"{model} without retries"


def test_methods_are_detected_unless_given_and_checked() -> None:
    assert Toy().structured_methods == ("json_schema", "tool_calling") and Toy().native_async
    assert Toy(["json_object"]).structured_methods == ("json_object",)
    assert Toy(()).structured_methods == ()
    for bad in ("json_schema", ["xml"]):
        with pytest.raises(ValueError, match="structured_methods"):
            Toy(bad)
    with pytest.raises(StructuredOutputUnsupported):
        Toy(["json_object"])._check_method("json_schema")


def test_a_method_is_probed_on_the_quiet_copy_until_it_has_worked() -> None:
    toy = Toy()
    assert toy._model_for("json_schema", "model", toy.quiet) == "model without retries"
    assert toy._model_for("tool_calling", "model", toy.quiet) == "model without retries"
    assert toy.copies == ["model"]  # built once
    assert toy._settled({"a": 1}, "json_schema", 0.0).text == '{"a": 1}'
    assert toy._model_for("json_schema", "model", toy.quiet) == "model"
    assert toy._model_for("tool_calling", "model", toy.quiet) == "model without retries"


def test_a_refusal_becomes_unsupported_and_anything_else_is_raised_as_it_is() -> None:
    toy = Toy()
    with pytest.raises(StructuredOutputUnsupported) as caught:
        toy._failed(Refused("response_format json_schema is not supported"), "json_schema", 0.0)
    assert caught.value.method == "json_schema"
    boom = RuntimeError("worker crashed")
    with pytest.raises(RuntimeError) as raised:
        toy._failed(boom, "json_schema", 0.0)
    assert raised.value is boom
    assert "json_schema" not in toy._proven


@pytest.mark.parametrize("face, cls", [("langchain_diverse.llm", "LangChainLLM"),
                                       ("llamaindex_diverse.llm", "LlamaIndexLLM")])
def test_both_framework_adapters_stand_on_it(face: str, cls: str) -> None:
    assert issubclass(getattr(pytest.importorskip(face), cls), FrameworkAdapter)
