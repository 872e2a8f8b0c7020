"""The one LangChain face of every LLM pipeline: a retriever and a question-answering Runnable.

Each built-in pipeline's retriever (``DFRAGRetriever``, ...) is generated here
(:func:`retriever_class`) from the pipeline's ``OPTIONS`` (pydantic fields) and ``FACE``
(``document_fields`` and ``chain_keys``); ``create_<name>_chain`` is :func:`create_pipeline_chain`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, ClassVar

from diverse_core.embedder_check import check_embedder
from diverse_core.errors import InvalidParameterError
from diverse_core.pipeline_names import face_attribute
from diverse_core.pipelines import Pipeline, PipelineResult, get_pipeline
from diverse_core.pipelines.options import face_options
from diverse_core.validation import check_k
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, PrivateAttr

from .llm import LangChainLLM, as_backend
from .selection import (
    RELEVANCE_SCORE,
    SELECTION_METHOD,
    SELECTION_PARAMS,
    SELECTION_RANK,
    SELECTION_SCORE,
)
from .sources import LangChainSource

__all__ = ["PipelineRetriever", "create_pipeline_chain", "retriever_class", "PIPELINE_WARNINGS", "PIPELINE_REASON"]

#: Metadata key: what fell back or failed in the run (empty list when nothing did).
PIPELINE_WARNINGS = "pipeline_warnings"
#: Metadata key: why the pipeline chose this document (its ``ChosenDocument.reason``).
PIPELINE_REASON = "pipeline_reason"
#: The retriever's fields handed to every pipeline's constructor besides its own options.
_CALL_POLICY = ("k", "max_concurrency", "timeout", "max_retries", "llm_kwargs")


class PipelineRetriever(BaseRetriever):
    """Run an LLM pipeline over a vector store or a retriever; return its chosen documents.

    Subclasses set ``pipeline_class``, whose ``OPTIONS`` become fields (every field not defined
    here goes to the pipeline's constructor). Returned documents are copies whose metadata carries
    ``relevance_score``, ``selection_score``, ``selection_rank``, ``selection_method`` (the
    pipeline's name), ``selection_params`` (why it was chosen, with ``k``), ``pipeline_reason``,
    ``pipeline_warnings`` and the ``document_fields``. Every LLM call is a child run of the
    retriever's (or the chain's) run.

    Args:
        llm: a LangChain chat model / LLM, or any core text backend (``None`` for pipelines
            whose retrieval needs no LLM).
        vectorstore: the store searched for candidates (give this or ``base_retriever``).
        base_retriever: any retriever whose results are the candidates (or ``vectorstore``).
        embeddings: embeds queries and candidates (default: the store's embeddings).
        k: documents to return (per call: ``invoke(q, k=3)``).
        fetch_k: candidates per search.
        search_kwargs: extra arguments for the store search.
        max_concurrency: LLM calls in flight at once.
        timeout: seconds per LLM call.
        max_retries: retries of a failed LLM call.
        llm_kwargs: per-role extra arguments for the LLM calls.

    Example:
        >>> from langchain_diverse import DFRAGRetriever
        >>> issubclass(DFRAGRetriever, PipelineRetriever)
        True
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    pipeline_class: ClassVar[type[Pipeline]]
    #: Metadata put on every returned document: key -> a field of the run's result
    #: (:meth:`~diverse_core.pipelines.PipelineResult.fields`).
    document_fields: ClassVar[Mapping[str, str]] = {}
    #: Fields of the run's result added to the chain's output under their own names.
    chain_keys: ClassVar[tuple[str, ...]] = ()

    llm: Any = None
    vectorstore: VectorStore | None = None
    base_retriever: BaseRetriever | None = None
    embeddings: Embeddings | None = None
    k: int = 5
    fetch_k: int = 50
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    max_concurrency: int = 4
    timeout: float | None = 120.0
    max_retries: int = 3
    llm_kwargs: dict[str, dict[str, Any]] = Field(default_factory=dict)

    _pipeline: Pipeline = PrivateAttr()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Runs before pydantic collects the fields: add one per declared option.
        super().__init_subclass__(**kwargs)
        pipeline = cls.__dict__.get("pipeline_class")
        if pipeline is None:
            return
        own = cls.__dict__.get("__annotations__")
        if own is None:
            own = {}
            cls.__annotations__ = own
        inherited = getattr(cls, "__pydantic_fields__", {})
        for option in face_options(pipeline.OPTIONS):
            if option.name in own or option.name in cls.__dict__ or option.name in inherited:
                continue
            own[option.name] = option.type
            setattr(cls, option.name, option.default)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        if check_k(self.k) > self.fetch_k:
            raise InvalidParameterError(f"fetch_k must be >= k; got fetch_k={self.fetch_k!r}, k={self.k!r}")
        self._source(None)  # checks the store / retriever / embeddings now
        keywords = {name: getattr(self, name) for name in (*_CALL_POLICY, *self.pipeline_options())}
        self._pipeline = self.pipeline_class(as_backend(self.llm), **keywords)
        if (trained := self._pipeline.trained_method) is not None:
            check_embedder(*trained, self.embeddings or getattr(self.vectorstore, "embeddings", None))

    @classmethod
    def pipeline_options(cls) -> tuple[str, ...]:
        """The fields a subclass declared: the pipeline's own options."""
        return tuple(name for name in cls.model_fields if name not in PipelineRetriever.model_fields)

    @property
    def pipeline(self) -> Pipeline:
        """The core pipeline this retriever runs."""
        return self._pipeline

    # -- hooks a pipeline's face may override ----------------------------------
    @classmethod
    def result_metadata(cls, result: PipelineResult) -> dict[str, Any]:
        """Extra metadata put on every returned document (default: ``document_fields``)."""
        values = result.fields(tuple(cls.document_fields.values()))
        return {key: values[name] for key, name in cls.document_fields.items()}

    # -- plumbing ----------------------------------------------------------------
    def _source(self, callbacks: Any) -> LangChainSource:
        return LangChainSource(
            vectorstore=self.vectorstore,
            base_retriever=self.base_retriever,
            embeddings=self.embeddings,
            fetch_k=self.fetch_k,
            search_kwargs=self.search_kwargs,
            callbacks=callbacks,
        )

    def _call_kwargs(self, callbacks: Any) -> dict[str, Any]:
        uses_langchain = any(isinstance(m.inner, LangChainLLM) for m in self._pipeline.llms.models())
        return {"callbacks": callbacks} if uses_langchain and callbacks is not None else {}

    def _documents(self, result: PipelineResult) -> list[Document]:
        extra = self.result_metadata(result)
        out = []
        for doc in result.documents:
            original = doc.payload if isinstance(doc.payload, Document) else Document(page_content=doc.text)
            meta = dict(original.metadata)
            meta.update(
                {
                    RELEVANCE_SCORE: doc.relevance,
                    SELECTION_SCORE: doc.score,
                    SELECTION_RANK: doc.rank,
                    SELECTION_METHOD: result.pipeline,
                    SELECTION_PARAMS: {**doc.reason, "k": len(result.documents)},
                    PIPELINE_REASON: dict(doc.reason),
                    PIPELINE_WARNINGS: list(result.warnings),
                    **extra,
                }
            )
            out.append(Document(page_content=original.page_content, metadata=meta, id=original.id))
        return out

    def run_pipeline(
        self, query: str, *, generate: bool = False, callbacks: Any = None, k: int | None = None
    ) -> tuple[PipelineResult, list[Document]]:
        """Run the pipeline; the full result and the chosen documents."""
        result = self._pipeline.run(
            query, self._source(callbacks), generate=generate, k=k, call_kwargs=self._call_kwargs(callbacks)
        )
        return result, self._documents(result)

    async def arun_pipeline(
        self, query: str, *, generate: bool = False, callbacks: Any = None, k: int | None = None
    ) -> tuple[PipelineResult, list[Document]]:
        """Asynchronous :meth:`run_pipeline`."""
        result = await self._pipeline.arun(
            query, self._source(callbacks), generate=generate, k=k, call_kwargs=self._call_kwargs(callbacks)
        )
        return result, self._documents(result)

    @staticmethod
    def _call_k(kwargs: dict[str, Any]) -> int | None:
        unknown = sorted(set(kwargs) - {"k"})
        if unknown:
            raise InvalidParameterError(f"unknown per-call option(s) {unknown}; accepted: ['k']")
        return kwargs.get("k")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self.run_pipeline(query, callbacks=run_manager.get_child(), k=self._call_k(kwargs))[1]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return (await self.arun_pipeline(query, callbacks=run_manager.get_child(), k=self._call_k(kwargs)))[1]

    def as_chain(self) -> Runnable[Any, dict[str, Any]]:
        """A Runnable ``question -> {answer, context, trace, warnings, cost, result, ...}``."""
        return create_pipeline_chain(self)


def _question(inputs: Any) -> str:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, dict):
        for key in ("question", "query", "input"):
            if isinstance(inputs.get(key), str):
                return str(inputs[key])
    raise InvalidParameterError(
        f"input must be a question string or a dict with 'question'; got {type(inputs).__name__}"
    )


def create_pipeline_chain(retriever: PipelineRetriever) -> Runnable[Any, dict[str, Any]]:
    """A Runnable that answers a question (a string or ``{"question": ...}``) with the retriever's
    pipeline end to end: ``answer``, ``context`` (the chosen documents), ``trace``, ``warnings``,
    ``cost``, ``result`` (the full result) and the pipeline's ``chain_keys``.

    Example:
        >>> chain = create_pipeline_chain(retriever)  # doctest: +SKIP
        >>> chain.invoke("Where was the author of Dracula born?")["answer"]  # doctest: +SKIP
    """

    def output(result: PipelineResult, docs: list[Document]) -> dict[str, Any]:
        return {
            "answer": result.answer,
            "context": docs,
            "trace": list(result.trace),
            "warnings": list(result.warnings),
            "cost": result.cost.to_dict(),
            "result": result,
            **result.fields(retriever.chain_keys),
        }

    def invoke(inputs: Any, config: RunnableConfig) -> dict[str, Any]:
        return output(*retriever.run_pipeline(_question(inputs), generate=True, callbacks=config.get("callbacks")))

    async def ainvoke(inputs: Any, config: RunnableConfig) -> dict[str, Any]:
        return output(
            *await retriever.arun_pipeline(_question(inputs), generate=True, callbacks=config.get("callbacks"))
        )

    return RunnableLambda(invoke, afunc=ainvoke, name=retriever.pipeline_class.name)


@cache
def retriever_class(name: str) -> type[PipelineRetriever]:
    """The LangChain retriever of the pipeline ``name`` (made on first use from its ``FACE``).

    Example:
        >>> sorted(retriever_class("diva").document_fields)
        ['diva_interpretations', 'diva_usefulness']
    """
    pipeline = get_pipeline(name)
    face = pipeline.FACE
    keys = ", ".join(f"``{key}``" for key in face.on_documents) or "nothing more"
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": (
            f"Retrieve ``fetch_k`` candidates, then return the documents {pipeline.__name__} chooses "
            f"(:class:`~{pipeline.__module__}.{pipeline.__name__}`, whose options are this retriever's "
            f"fields; the shared ones as in :class:`PipelineRetriever`). Documents also carry {keys}; "
            f"the chain (:meth:`~PipelineRetriever.as_chain`) adds {', '.join(face.reports)}."
        ),
        "pipeline_class": pipeline,
        "document_fields": dict(face.on_documents),
        "chain_keys": face.reports,
    }
    return type(PipelineRetriever)(f"{pipeline.__name__}Retriever", (PipelineRetriever,), namespace)


def __getattr__(attr: str) -> Any:
    """``<Class>Retriever`` and ``create_<name>_chain`` of every built-in pipeline, made on first use."""
    return face_attribute(__name__, attr, {"{cls}Retriever": retriever_class,
                                           "create_{name}_chain": lambda name: create_pipeline_chain})
