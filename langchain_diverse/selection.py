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

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from diverse_core._lazy import deprecated_aliases
from diverse_core.errors import DimensionMismatchError, InvalidParameterError
from diverse_core.plan import Plan, make_plan, shown_params
from diverse_core.registry import DIVERSITY, get_method, with_diversity
from diverse_core.validation import check_k
from langchain_core.documents import Document
from numpy.typing import ArrayLike

from .errors import EmptyDocumentError

_log = logging.getLogger("langchain_diverse")

__all__ = [
    "RELEVANCE_SCORE",
    "SELECTION_SCORE",
    "SELECTION_RANK",
    "SELECTION_METHOD",
    "SELECTION_PARAMS",
    "SELECTION_METADATA_KEYS",
    "face_plan",
    "current_plan",
    "check_sizes",
    "plan_for_call",
    "document_texts",
    "nonblank_documents",
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
    setting) into ``method_params``, where the core plan maps it to the method's own parameter.

    Raises:
        ConflictingParametersError: ``method_params`` holds a different ``diversity``.
    """
    if DIVERSITY in data:
        data["method_params"] = with_diversity(data.get("method_params"), data.pop(DIVERSITY))


def face_plan(method: str, method_params: Mapping[str, Any] | None, where: str = "") -> Plan:
    """The core :class:`~diverse_core.plan.Plan` of a LangChain face (``question``, ``texts`` and
    sources are the face's to pass; a ``scorer`` is refused: it scores candidate indices, which
    change on every call).

    Raises:
        UnknownMethodError, InvalidParameterError: what :func:`~diverse_core.plan.make_plan` raises.
    """
    plan = make_plan(method, method_params, face=True, where=where)
    if plan.params.get("scorer") is not None:
        raise InvalidParameterError(
            "scorer is not supported by the LangChain faces (it scores candidate indices, which "
            f"change on every call); got scorer={plan.params['scorer']!r}{where}"
        )
    return plan


class _Face(Protocol):
    method: str
    method_params: dict[str, Any]
    _plan: Plan | None


def current_plan(face: _Face) -> Plan:
    """``face``'s plan, built again only when its ``method`` or ``method_params`` changed since."""
    plan = face._plan
    if plan is None or not plan.built_from(face.method, face.method_params):
        plan = face._plan = face_plan(face.method, face.method_params)
    return plan


def check_sizes(k: object, fetch_k: object | None = None, where: str = "") -> tuple[int, int | None]:
    """``k`` and ``fetch_k`` as positive integers with ``k <= fetch_k`` (``fetch_k=None``: not used).

    Raises:
        InvalidParameterError: naming the value, or both when ``k > fetch_k``.
    """
    k_int = check_k(k, "k")
    if fetch_k is None:
        return k_int, None
    fetch_int = check_k(fetch_k, "fetch_k")
    if k_int > fetch_int:
        raise InvalidParameterError(
            f"k must not exceed fetch_k; got k={k_int}, fetch_k={fetch_int}{where} (raise fetch_k or lower k)"
        )
    return k_int, fetch_int


def plan_for_call(
    face: _Face, k: int, fetch_k: int | None, kwargs: Mapping[str, Any]
) -> tuple[Plan, int, int | None]:
    """The plan and sizes of one call: per-call keyword arguments over the face's settings.

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
    where = " (per-call arguments)"
    method = kwargs.get("method", face.method)
    base: Mapping[str, Any] = face.method_params if method == face.method else {}
    if kwargs.get(DIVERSITY) is not None:
        mapping = get_method(method).diversity
        knob = {DIVERSITY, mapping.param if mapping is not None else None}
        base = {name: v for name, v in base.items() if name not in knob}
    call_params = kwargs.get("method_params")
    if call_params is not None and not isinstance(call_params, Mapping):
        raise InvalidParameterError(f"method_params must be a dict; got method_params={call_params!r}{where}")
    merged = with_diversity({**base, **(call_params or {})}, kwargs.get(DIVERSITY), where)
    call_fetch_k = kwargs.get("fetch_k", fetch_k) if fetch_k is not None else kwargs.get("fetch_k")
    sizes = check_sizes(kwargs.get("k", k), call_fetch_k, where)
    return face_plan(method, merged, where), *sizes


def document_texts(documents: Sequence[Document]) -> list[str]:
    """The texts of ``documents``; raises :class:`EmptyDocumentError` for empty ones."""
    texts = []
    for i, doc in enumerate(documents):
        text = getattr(doc, "page_content", None)
        if not isinstance(text, str) or not text or text.isspace():
            raise EmptyDocumentError(
                f"document {i} (id={getattr(doc, 'id', None)!r}) has empty page_content "
                f"({text!r}); every candidate needs text to be embedded"
            )
        texts.append(text)
    return texts


#: The ``selection_params`` key listing the fetched documents left out for having no text (their
#: positions among the documents fetched).
BLANK_DOCUMENTS = "blank_documents"


def nonblank_documents(documents: Sequence[Document]) -> tuple[list[Document], list[int]]:
    """``documents`` without those whose ``page_content`` is empty or white space, and the positions
    of the ones left out (logged at WARNING): one blank chunk in a store does not fail every query that
    fetches it.

    Raises:
        EmptyDocumentError: every document is blank (nothing is left to select from).
    """
    kept: list[Document] = []
    blank: list[int] = []
    for i, doc in enumerate(documents):
        text = getattr(doc, "page_content", None)
        if isinstance(text, str) and text and not text.isspace():
            kept.append(doc)
        else:
            blank.append(i)
    if blank and not kept:
        document_texts(documents)  # raises, naming the first blank document
    if blank:
        _log.warning("left out %d fetched document(s) with no text (positions %s)", len(blank), blank[:20])
    return kept, blank


def select_documents(
    query_vector: ArrayLike,
    documents: Sequence[Document],
    vectors: ArrayLike,
    plan: Plan,
    k: int,
    *,
    question: str | None = None,
    source_key: str | None = "source",
    title_key: str | None = "title",
    blank: Sequence[int] = (),
) -> list[Document]:
    """Run ``plan`` on the candidates and return annotated copies in pick order.

    Args:
        query_vector: query embedding, shape (d,).
        documents: the candidates.
        vectors: their embeddings, shape (len(documents), d).
        plan: from :func:`face_plan`.
        k: documents to return.
        question: the query text. A method that reads text (``adaptive``, ``learned``) gets it
            with the documents' ``page_content``; without it, that method sees embeddings only.
        source_key: the metadata key naming each document's source (page, file, parent
            document; LangChain loaders set ``"source"``). A method that reads sources
            (``learned``) gets these ids, so windows of one source count as one; ``None`` or no
            document carrying the key: it reads the ``"title: "`` prefix of the texts instead.
        title_key: the metadata key of a document's display title (``None``: not read).
        blank: positions of fetched documents left out for having no text
            (:func:`nonblank_documents`), listed in every returned document's ``selection_params``.

    Raises:
        DimensionMismatchError: not one vector per document, or query and document vectors
            differ in dimension.
    """
    if not documents:
        return []
    if len(vectors) != len(documents):  # type: ignore[arg-type]
        raise DimensionMismatchError(
            f"expected one embedding per document ({len(documents)}); got {len(vectors)}"  # type: ignore[arg-type]
        )
    reads = plan.spec.reads_sources
    inputs = plan.inputs(
        question,
        [doc.page_content for doc in documents],
        sources=[doc.metadata.get(source_key) for doc in documents] if reads and source_key else None,
        names=[doc.metadata.get(title_key) for doc in documents] if reads and title_key else None,
    )
    sel = plan.run(query_vector, vectors, k, inputs=inputs)
    shown = {**plan.shown, **shown_params(sel.details)}
    if blank:
        shown[BLANK_DOCUMENTS] = list(blank)
    return [
        documents[i].model_copy(update={"metadata": {
            **documents[i].metadata,
            RELEVANCE_SCORE: rel,
            SELECTION_SCORE: score,
            SELECTION_RANK: rank,
            SELECTION_METHOD: plan.method,
            SELECTION_PARAMS: dict(shown),  # one per document: safe to edit
        }})
        for rank, (i, score, rel) in enumerate(
            zip(sel.indices.tolist(), sel.scores.tolist(), sel.relevance.tolist(), strict=True)
        )
    ]


#: Old names kept as deprecated aliases (each access warns).
__getattr__ = deprecated_aliases(__name__, globals(), {"METADATA_KEYS": "SELECTION_METADATA_KEYS"})
