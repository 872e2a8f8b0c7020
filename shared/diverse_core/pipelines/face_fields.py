"""What a pipeline's framework faces report besides its chosen documents, declared once in its
``FACE``: the LangChain and LlamaIndex classes of every built-in pipeline are generated from it
and :data:`~diverse_core.pipeline_names.BUILTIN_PIPELINES`.

Example:
    >>> face = FaceFields(reports=("lambda", "scores"), labels={"scores": "lambda_scores"})
    >>> face.label("scores"), face.label("lambda"), face.retrieval_llm({})
    ('lambda_scores', 'lambda', True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FaceFields"]


def _always(options: Mapping[str, Any]) -> bool:
    return True


@dataclass(frozen=True)
class FaceFields:
    """The face declaration of one pipeline.

    Attributes:
        reports: fields of the run's result (:meth:`~diverse_core.pipelines.PipelineResult.fields`)
            that the LangChain chain returns under their own names and the LlamaIndex query
            engine puts in ``Response.metadata`` as ``<pipeline>_<label>``.
        labels: the metadata label of a reported field where it differs from the field's name.
        on_documents: metadata put on every returned LangChain document: key -> result field.
        retrieval_llm: ``retrieval_llm(options) -> bool``: whether retrieval alone needs an LLM with
            these options (the LlamaIndex faces then default to ``Settings.llm``).
    """

    reports: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    on_documents: Mapping[str, str] = field(default_factory=dict)
    retrieval_llm: Callable[[Mapping[str, Any]], bool] = _always

    def label(self, name: str) -> str:
        """The metadata label of the reported field ``name``."""
        return self.labels.get(name, name)
