"""The one LlamaIndex face of every LLM pipeline: a retriever and a query engine, generated for
each built-in pipeline (:func:`retriever_class`, :func:`query_engine_class`) from its ``OPTIONS``
and ``FACE`` (see :mod:`diverse_core.pipelines.face_fields`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from functools import cache
from typing import Any, ClassVar

from diverse_core.embedder_check import check_embedder
from diverse_core.errors import InvalidParameterError
from diverse_core.pipeline_names import face_attribute
from diverse_core.pipelines import Pipeline, PipelineResult, get_pipeline
from diverse_core.pipelines.options import face_options
from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)
from llama_index.core.callbacks import CallbackManager
from llama_index.core.llms import LLM
from llama_index.core.prompts import BasePromptTemplate, PromptTemplate
from llama_index.core.prompts.mixin import PromptMixinType
from llama_index.core.schema import NodeWithScore, QueryBundle

from ._metadata import with_selection_metadata
from .llm import LlamaIndexLLM, as_backend
from .sources import LlamaIndexSource

__all__ = [
    "PipelineRetriever",
    "PipelineQueryEngine",
    "pipeline_response_metadata",
    "retriever_class",
    "query_engine_class",
]


def pipeline_response_metadata(result: PipelineResult, prefix: str) -> dict[str, Any]:
    """The shared fields a query engine puts in ``Response.metadata``: ``<prefix>_warnings``,
    ``<prefix>_cost``, ``<prefix>_trace`` and the full ``<prefix>_result``."""
    return {
        f"{prefix}_warnings": list(result.warnings),
        f"{prefix}_cost": result.cost.to_dict(),
        f"{prefix}_trace": list(result.trace),
        f"{prefix}_result": result,
    }


class PipelineRetriever(BaseRetriever):
    """Run an LLM pipeline over an index or a retriever; return its chosen nodes.

    Subclasses set ``pipeline_class`` (``options``, the keywords accepted, default to its
    ``OPTIONS``; ``response_fields`` are the result fields a query engine reports). Nodes are
    copies carrying ``selection_method`` (the pipeline's name), ``selection_params`` (why the
    node was chosen, with ``k``), ``selection_rank``, ``selection_score`` and ``selection_relevance``.

    Args:
        retriever: a ``BaseRetriever`` (e.g. ``index.as_retriever(similarity_top_k=50)``) or a
            ``VectorStoreIndex`` (searched with ``fetch_k`` hits per search).
        llm: a LlamaIndex ``LLM`` (default ``Settings.llm``) or any core text backend.
        embed_model: embeds queries and nodes lacking an embedding.
        k: nodes to return.
        fetch_k: hits per search of an index.
        max_concurrency: LLM calls in flight at once.
        timeout: seconds per LLM call.
        max_retries: retries of a failed LLM call.
        llm_kwargs: per-role extra arguments for the LLM calls.
        hide_selection_metadata: keep the selection metadata out of LLM/embedding text.
        **options: the pipeline's own options (see the subclass).

    Example:
        >>> from llamaindex_diverse import DFRAGRetriever
        >>> issubclass(DFRAGRetriever, PipelineRetriever)
        True
    """

    pipeline_class: ClassVar[type[Pipeline]]
    options: ClassVar[tuple[str, ...]] = ()
    llm_default_from_settings: ClassVar[bool] = True
    #: Fields of the run's result (:meth:`~diverse_core.pipelines.PipelineResult.fields`) that
    #: ``Response.metadata`` holds as ``<pipeline>_<field>``.
    response_fields: ClassVar[tuple[str, ...]] = ()
    #: The metadata name of a field where it differs from the field's (``{field: name}``).
    response_names: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        pipeline = cls.__dict__.get("pipeline_class")
        if pipeline is not None and "options" not in cls.__dict__:
            cls.options = tuple(o.name for o in face_options(pipeline.OPTIONS))

    def __init__(
        self,
        retriever: Any,
        llm: Any = None,
        *,
        embed_model: BaseEmbedding | None = None,
        k: int = 5,
        fetch_k: int = 50,
        max_concurrency: int = 4,
        timeout: float | None = 120.0,
        max_retries: int = 3,
        llm_kwargs: dict[str, dict[str, Any]] | None = None,
        hide_selection_metadata: bool = True,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **options: Any,
    ) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise InvalidParameterError(
                f"unknown option(s) {unknown} for {type(self).__name__}; accepted: {sorted(self.options)}"
            )
        self._source = LlamaIndexSource(retriever, embed_model=embed_model, fetch_k=fetch_k)
        backend = as_backend(llm) if (llm is not None or self._llm_from_settings(options)) else None
        self._pipeline = self.pipeline_class(
            backend,
            k=k,
            max_concurrency=max_concurrency,
            timeout=timeout,
            max_retries=max_retries,
            llm_kwargs=llm_kwargs,
            **options,
        )
        if (trained := self._pipeline.trained_method) is not None:
            check_embedder(*trained, embed_model or getattr(retriever, "_embed_model", None))
        cm = callback_manager or getattr(retriever, "callback_manager", None) or CallbackManager()
        super().__init__(callback_manager=cm, verbose=verbose)
        self._retriever = retriever
        self.hide_selection_metadata = hide_selection_metadata

    @classmethod
    def _llm_from_settings(cls, options: dict[str, Any]) -> bool:
        """Whether ``llm=None`` means LlamaIndex's ``Settings.llm`` (else: no LLM): when the class
        allows it and retrieval with ``options`` needs an LLM (the pipeline's ``FACE``)."""
        return cls.llm_default_from_settings and cls.pipeline_class.FACE.retrieval_llm(options)

    @classmethod
    def response_metadata(cls, result: PipelineResult) -> dict[str, Any]:
        """What a query engine puts in ``Response.metadata``: the ``response_fields`` as
        ``<pipeline>_<name>``, then the shared ones (:func:`pipeline_response_metadata`)."""
        fields = result.fields(cls.response_fields).items()
        own = {f"{result.pipeline}_{cls.response_names.get(name, name)}": value for name, value in fields}
        return {**own, **pipeline_response_metadata(result, result.pipeline)}

    @property
    def pipeline(self) -> Pipeline:
        """The core pipeline."""
        return self._pipeline

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"retriever": self._retriever} if isinstance(self._retriever, BaseRetriever) else {}

    def _nodes(self, result: PipelineResult) -> list[NodeWithScore]:
        out = []
        for doc in result.documents:
            node = doc.payload
            assert isinstance(node, NodeWithScore)
            out.append(
                with_selection_metadata(
                    node,
                    method=result.pipeline,
                    params={**doc.reason, "k": len(result.documents)},
                    rank=doc.rank,
                    score=float(doc.score) if doc.score is not None else 0.0,
                    relevance=doc.relevance,
                    hide_from_models=self.hide_selection_metadata,
                )
            )
        return out

    def run_pipeline(
        self, query: str | QueryBundle, *, generate: bool = False
    ) -> tuple[PipelineResult, list[NodeWithScore]]:
        """Run the pipeline; the full result and the chosen nodes."""
        text = query.query_str if isinstance(query, QueryBundle) else query
        result = self._pipeline.run(text, self._source, generate=generate)
        return result, self._nodes(result)

    async def arun_pipeline(
        self, query: str | QueryBundle, *, generate: bool = False
    ) -> tuple[PipelineResult, list[NodeWithScore]]:
        """Asynchronous :meth:`run_pipeline`."""
        text = query.query_str if isinstance(query, QueryBundle) else query
        result = await self._pipeline.arun(text, self._source, generate=generate)
        return result, self._nodes(result)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.run_pipeline(query_bundle)[1]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return (await self.arun_pipeline(query_bundle))[1]


class PipelineQueryEngine(BaseQueryEngine):
    """Answer with a pipeline: ``Response.response`` is its answer, ``source_nodes`` its chosen
    nodes, ``metadata`` :meth:`PipelineRetriever.response_metadata`. Prompts go through
    LlamaIndex's ``PromptMixin``. With ``streaming=True`` (pipelines that answer in one call) the
    pipeline runs retrieval only and the answer call is streamed from the LlamaIndex LLM, outside
    the run's cost record.

    Subclasses set ``retriever_class``.
    """

    retriever_class: ClassVar[type[PipelineRetriever]]

    def __init__(
        self,
        retriever: PipelineRetriever,
        callback_manager: CallbackManager | None = None,
        streaming: bool = False,
    ) -> None:
        if not isinstance(retriever, self.retriever_class):
            raise InvalidParameterError(
                f"retriever must be a {self.retriever_class.__name__}; got {type(retriever).__name__} "
                f"(use {type(self).__name__}.from_args to wrap a plain retriever)"
            )
        self._pipeline_retriever = retriever
        self._streaming = bool(streaming)
        super().__init__(callback_manager=callback_manager or retriever.callback_manager)

    @classmethod
    def from_args(cls, retriever: Any, llm: Any = None, *, streaming: bool = False, **kwargs: Any) -> Any:
        """Build from a plain base retriever or index; ``kwargs`` go to the retriever class."""
        return cls(cls.retriever_class(retriever, llm, **kwargs), streaming=streaming)

    @property
    def retriever(self) -> PipelineRetriever:
        """The pipeline retriever."""
        return self._pipeline_retriever

    # -- prompts (PromptMixin) -----------------------------------------------------
    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _get_prompts(self) -> dict[str, BasePromptTemplate]:
        templates = self._pipeline_retriever.pipeline.prompt_templates()
        return {name: PromptTemplate(text) for name, text in templates.items()}

    def _update_prompts(self, prompts_dict: dict[str, BasePromptTemplate]) -> None:
        self._pipeline_retriever.pipeline.update_prompt_templates(
            {name: prompt.get_template() for name, prompt in prompts_dict.items()}
        )

    # -- streaming -------------------------------------------------------------------
    def _stream_model(self, result: PipelineResult) -> tuple[LLM, str]:
        pipeline = self._pipeline_retriever.pipeline
        spec = pipeline.answer_prompt(result)
        if spec is None:
            raise InvalidParameterError(f"{type(pipeline).__name__} writes its answer in several calls: "
                                        "streaming=True is not supported")
        role, prompt = spec
        backend = pipeline.llms[role].inner
        if not isinstance(backend, LlamaIndexLLM):
            raise InvalidParameterError(f"streaming=True needs a LlamaIndex LLM for role {role!r}; "
                                        f"got {type(backend).__name__}")
        return backend.llm, prompt

    def _stream(self, result: PipelineResult, nodes: list[NodeWithScore]) -> StreamingResponse:
        llm, prompt = self._stream_model(result)
        deltas = (chunk.delta or "" for chunk in llm.stream_complete(prompt))
        return StreamingResponse(response_gen=deltas, source_nodes=nodes, metadata=self.response_metadata(result))

    async def _astream(self, result: PipelineResult, nodes: list[NodeWithScore]) -> AsyncStreamingResponse:
        llm, prompt = self._stream_model(result)
        chunks = await llm.astream_complete(prompt)

        async def deltas() -> AsyncGenerator[str, None]:
            async for chunk in chunks:
                yield chunk.delta or ""

        return AsyncStreamingResponse(
            response_gen=deltas(), source_nodes=nodes, metadata=self.response_metadata(result)
        )

    def response_metadata(self, result: PipelineResult) -> dict[str, Any]:
        """``Response.metadata`` for a result (:meth:`PipelineRetriever.response_metadata`)."""
        return self._pipeline_retriever.response_metadata(result)

    def _response(self, result: PipelineResult, nodes: list[NodeWithScore]) -> Response:
        return Response(response=result.answer, source_nodes=nodes, metadata=self.response_metadata(result))

    def _query(self, query_bundle: QueryBundle) -> Response | StreamingResponse:
        if self._streaming:
            return self._stream(*self._pipeline_retriever.run_pipeline(query_bundle, generate=False))
        return self._response(*self._pipeline_retriever.run_pipeline(query_bundle, generate=True))

    async def _aquery(self, query_bundle: QueryBundle) -> Response | AsyncStreamingResponse:
        if self._streaming:
            return await self._astream(*await self._pipeline_retriever.arun_pipeline(query_bundle, generate=False))
        return self._response(*await self._pipeline_retriever.arun_pipeline(query_bundle, generate=True))


@cache
def retriever_class(name: str) -> type[PipelineRetriever]:
    """The retriever class of the pipeline registered as ``name``, generated once from its declaration.

    Example:
        >>> cls = retriever_class("drrag")
        >>> cls.__name__, cls.response_fields, cls is retriever_class("drrag")
        ('DRRAGRetriever', ('mode', 'stage2_queries', 'rejected'), True)
    """
    pipeline = get_pipeline(name)
    face = pipeline.FACE

    reported = ", ".join(f"``{name}_{face.label(f)}``" for f in face.reports)
    namespace: dict[str, Any] = {
        "__module__": __name__,
        "__doc__": (
            f"A base retriever's candidates, narrowed to the ``k`` nodes {pipeline.__name__} chooses "
            f"(:class:`~{pipeline.__module__}.{pipeline.__name__}`, whose options it takes; the rest as in "
            f":class:`PipelineRetriever`). Nodes carry ``selection_method={name!r}``; a query engine's "
            f"``Response.metadata`` holds {reported or 'the shared fields'}."
        ),
        "pipeline_class": pipeline,
        "response_fields": face.reports,
        "response_names": dict(face.labels),
    }
    return type(f"{pipeline.__name__}Retriever", (PipelineRetriever,), namespace)


@cache
def query_engine_class(name: str) -> type[PipelineQueryEngine]:
    """The query engine class of the pipeline registered as ``name`` (on :func:`retriever_class`)."""
    retriever = retriever_class(name)
    pipeline = retriever.pipeline_class
    doc = (f"Answer with {pipeline.__name__}: ``Response.source_nodes`` are its chosen nodes, ``metadata`` "
           f"what {retriever.__name__} reports, with warnings, cost, trace and the full result.")
    return type(f"{pipeline.__name__}QueryEngine", (PipelineQueryEngine,),
                {"__module__": __name__, "__doc__": doc, "retriever_class": retriever})


def __getattr__(attr: str) -> Any:
    """``<Class>Retriever`` and ``<Class>QueryEngine`` of every built-in pipeline, made on first use."""
    return face_attribute(__name__, attr, {"{cls}Retriever": retriever_class, "{cls}QueryEngine": query_engine_class})
