"""Selection shared by the retriever and the compressor: settings, checks and result metadata.

Every document the faces return is a copy of a candidate whose ``metadata`` gains:

* ``relevance_score`` (float): cosine similarity between the query and the document
  embedding, the relevance the selection used;
* ``selection_score`` (float): the method's objective value when the document was
  picked (MMR/gMMR marginal score, Dartboard log-score, Vendi objective; the
  relevance itself for ``topk``);
* ``selection_rank`` (int): 0-based pick order;
* ``selection_method`` (str): the method name;
* ``selection_params`` (dict): the parameters the method ran with, defaults filled
  in, callables left out (so it stays JSON-serialisable); for ``adaptive`` also what it
  chose: ``lambda_mult`` and ``variant`` (``"text"``: it read the query and the
  documents' ``page_content``, which the faces always pass; those texts are never
  copied into the metadata).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from diverse_core import select
from diverse_core._lazy import deprecated_aliases
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.registry import DIVERSITY, get_method, resolve_user_params, with_diversity
from diverse_core.text import source_inputs
from diverse_core.validation import check_k
from langchain_core.documents import Document
from numpy.typing import ArrayLike

from .errors import EmptyDocumentError

__all__ = [
    "RELEVANCE_SCORE",
    "SELECTION_SCORE",
    "SELECTION_RANK",
    "SELECTION_METHOD",
    "SELECTION_PARAMS",
    "SELECTION_METADATA_KEYS",
    "SelectionPlan",
    "plan_selection",
    "plan_for_call",
    "document_texts",
    "select_documents",
    "fold_diversity",
]

RELEVANCE_SCORE = "relevance_score"
SELECTION_SCORE = "selection_score"
SELECTION_RANK = "selection_rank"
SELECTION_METHOD = "selection_method"
SELECTION_PARAMS = "selection_params"
#: Every metadata key the faces add to a returned document (the name the
#: LlamaIndex face uses too; the old ``METADATA_KEYS`` is a deprecated alias).
SELECTION_METADATA_KEYS = (RELEVANCE_SCORE, SELECTION_SCORE, SELECTION_RANK, SELECTION_METHOD, SELECTION_PARAMS)

#: Keyword arguments accepted per call (``retriever.invoke(query, k=3, ...)``).
CALL_OPTIONS = ("k", "fetch_k", "method", "method_params", "diversity")


def fold_diversity(data: dict[str, Any]) -> None:
    """Move a face's ``diversity=`` keyword (0 = pure relevance, 1 = the method's most diverse
    setting) into ``method_params``, where the core maps it to the method's own parameter.

    Raises:
        ConflictingParametersError: ``method_params`` holds a different ``diversity``.
    """
    if DIVERSITY in data:
        data["method_params"] = with_diversity(data.get("method_params"), data.pop(DIVERSITY))


@dataclass(frozen=True)
class SelectionPlan:
    """Validated settings of one selection.

    Attributes:
        method: registered method name.
        params: resolved parameters handed to :func:`diverse_core.select`.
        public_params: JSON-friendly copy of ``params`` for document metadata.
        k: number of documents to return.
        fetch_k: number of candidates to fetch (``None`` for the compressor).
    """

    method: str
    params: dict[str, Any]
    public_params: dict[str, Any]
    k: int
    fetch_k: int | None = None


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def _json_friendly(params: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _plain(v) for name, v in params.items() if not callable(v)}


def plan_selection(
    method: str,
    method_params: Mapping[str, Any] | None,
    k: object,
    fetch_k: object | None = None,
    *,
    where: str = "",
) -> SelectionPlan:
    """Validate method, parameters, ``k`` and ``fetch_k`` together.

    Args:
        method: a name from :func:`diverse_core.available_methods`.
        method_params: the method's parameters (unknown names are rejected, and so are
            ``question``/``texts`` of a text-reading method: the faces pass those).
        k: documents to return, a positive integer.
        fetch_k: candidates to fetch, a positive integer ``>= k`` (``None``: not used).
        where: context appended to error messages (e.g. ``" in invoke()"``).

    Raises:
        UnknownMethodError: ``method`` is not registered.
        InvalidParameterError: a bad parameter name or value, or ``k > fetch_k``.
    """
    if method_params is None:
        method_params = {}
    if not isinstance(method_params, Mapping):
        raise InvalidParameterError(
            f"method_params must be a dict; got method_params={method_params!r}{where}"
        )
    spec = get_method(method)
    resolved = resolve_user_params(spec, dict(method_params), where)
    if resolved.get("scorer") is not None:
        raise InvalidParameterError(
            "scorer is not supported by the LangChain faces (it scores candidate indices, which "
            f"change on every call); got scorer={resolved['scorer']!r}{where}"
        )
    k_int = check_k(k, "k")
    fetch_int: int | None = None
    if fetch_k is not None:
        fetch_int = check_k(fetch_k, "fetch_k")
        if k_int > fetch_int:
            raise InvalidParameterError(
                f"k must not exceed fetch_k; got k={k_int}, fetch_k={fetch_int}{where} "
                "(raise fetch_k or lower k)"
            )
    return SelectionPlan(spec.name, resolved, _json_friendly(resolved), k_int, fetch_int)


def plan_for_call(
    defaults: tuple[str, Mapping[str, Any], int, int | None], kwargs: Mapping[str, Any]
) -> SelectionPlan:
    """Merge per-call keyword arguments over the configured ``(method, params, k, fetch_k)``.

    ``method_params`` given per call update the configured ones when the method is
    unchanged; naming another method starts from that method's defaults. ``diversity``
    given per call replaces the configured trade-off (``diversity`` or the method's own
    parameter it maps to).
    """
    unknown = sorted(set(kwargs) - set(CALL_OPTIONS))
    if unknown:
        raise InvalidParameterError(
            f"unknown keyword argument(s) {unknown}; accepted per call: {list(CALL_OPTIONS)}"
        )
    method, params, k, fetch_k = defaults
    call_method = kwargs.get("method", method)
    base: Mapping[str, Any] = params if call_method == method else {}
    if kwargs.get(DIVERSITY) is not None:
        mapping = get_method(call_method).diversity
        knob = {DIVERSITY, mapping.param if mapping is not None else None}
        base = {name: v for name, v in base.items() if name not in knob}
    call_params = kwargs.get("method_params")
    if call_params is not None and not isinstance(call_params, Mapping):
        raise InvalidParameterError(f"method_params must be a dict; got method_params={call_params!r}")
    merged = with_diversity({**base, **(call_params or {})}, kwargs.get(DIVERSITY), " (per-call arguments)")
    call_fetch_k = kwargs.get("fetch_k", fetch_k) if fetch_k is not None else kwargs.get("fetch_k")
    return plan_selection(
        call_method, merged, kwargs.get("k", k), call_fetch_k, where=" (per-call arguments)"
    )


def document_texts(documents: Sequence[Document]) -> list[str]:
    """The texts of ``documents``; raises :class:`EmptyDocumentError` for empty ones."""
    try:  # fast path: every candidate is a Document with real text (checks run in C)
        texts = [doc.page_content for doc in documents]
        if all(texts) and not any(map(str.isspace, texts)):
            return texts
    except (AttributeError, TypeError):  # not a Document / page_content not a str
        pass
    for i, doc in enumerate(documents):
        text = getattr(doc, "page_content", None)
        if not isinstance(text, str) or not text or text.isspace():
            raise EmptyDocumentError(
                f"document {i} (id={getattr(doc, 'id', None)!r}) has empty page_content "
                f"({text!r}); every candidate needs text to be embedded"
            )
    return [doc.page_content for doc in documents]  # pragma: no cover - the fast path took these


_new = object.__new__
_set = object.__setattr__
_METADATA_FIELD = frozenset({"metadata"})
_MISSING = object()


def _annotated_copy(doc: Document, metadata: dict[str, Any]) -> Document:
    """A shallow copy of ``doc`` with ``metadata`` replaced; ``doc`` is left untouched.

    Same result as ``doc.model_copy(update={"metadata": metadata})`` (no validation,
    other fields shared) in about half the time: pydantic's generic copy machinery
    is the largest per-document cost of the faces. Falls back to ``model_copy`` for
    documents with extra or private attributes.
    """
    if (
        getattr(doc, "__pydantic_extra__", _MISSING) is not None
        or getattr(doc, "__pydantic_private__", _MISSING) is not None
    ):
        return doc.model_copy(update={"metadata": metadata})
    cls = type(doc)
    new = _new(cls)
    fields = doc.__dict__.copy()
    fields["metadata"] = metadata
    _set(new, "__dict__", fields)
    _set(new, "__pydantic_fields_set__", doc.__pydantic_fields_set__ | _METADATA_FIELD)
    _set(new, "__pydantic_extra__", None)
    _set(new, "__pydantic_private__", None)
    return new


def select_documents(
    query_vector: ArrayLike,
    documents: Sequence[Document],
    vectors: ArrayLike,
    plan: SelectionPlan,
    *,
    question: str | None = None,
    source_key: str | None = "source",
    title_key: str | None = "title",
) -> list[Document]:
    """Run ``plan`` on the candidates and return annotated copies in pick order.

    Args:
        query_vector: query embedding, shape (d,).
        documents: the candidates.
        vectors: their embeddings, shape (len(documents), d).
        plan: from :func:`plan_selection`.
        question: the query text. A method that reads text (``adaptive``, ``learned``) gets it
            with the documents' ``page_content``; without it, that method sees embeddings only.
        source_key: the metadata key naming each document's source (page, file, parent
            document; LangChain loaders set ``"source"``). A method that reads sources
            (``learned``) gets these ids, so windows of one source count as one; ``None`` or no
            document carrying the key: it reads the ``"title: "`` prefix of the texts instead.
        title_key: the metadata key of a document's display title (``None``: not read).

    Raises:
        DimensionMismatchError: query and document embeddings differ in dimension.
    """
    if not documents:
        return []
    query = np.asarray(query_vector)
    cands = np.asarray(vectors)
    if cands.ndim != 2 or cands.shape[0] != len(documents):
        raise DimensionMismatchError(
            f"expected one embedding per document ({len(documents)}); got shape {cands.shape}"
        )
    if query.ndim != 1 or query.shape[0] != cands.shape[1]:
        raise DimensionMismatchError(
            f"query embedding has shape {query.shape} but document embeddings have dimension "
            f"{cands.shape[1]}; were both made by the same embeddings model?"
        )
    extra: dict[str, Any] = {}
    spec = get_method(plan.method)
    if question is not None and spec.reads_text:
        extra = {"question": question, "texts": [doc.page_content for doc in documents]}
        if spec.reads_sources:
            extra.update(source_inputs(
                [None if source_key is None else doc.metadata.get(source_key) for doc in documents],
                None if title_key is None else [doc.metadata.get(title_key) for doc in documents],
            ))
    sel = select(plan.method, query, cands, plan.k, **plan.params, **extra)
    method = plan.method
    shown = {**plan.public_params, **_json_friendly(sel.details)} if sel.details else plan.public_params
    out = []
    for rank, (i, score, rel) in enumerate(
        zip(sel.indices.tolist(), sel.scores.tolist(), sel.relevance.tolist(), strict=True)
    ):
        doc = documents[i]
        metadata = dict(doc.metadata)
        metadata[RELEVANCE_SCORE] = rel
        metadata[SELECTION_SCORE] = score
        metadata[SELECTION_RANK] = rank
        metadata[SELECTION_METHOD] = method
        metadata[SELECTION_PARAMS] = shown.copy()  # one per document: safe to edit
        out.append(_annotated_copy(doc, metadata))
    return out


#: Old names kept as deprecated aliases (each access warns).
__getattr__ = deprecated_aliases(__name__, globals(), {"METADATA_KEYS": "SELECTION_METADATA_KEYS"})
