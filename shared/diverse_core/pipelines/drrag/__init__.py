"""DR-RAG (Hei et al., arXiv:2406.07348): two-stage retrieval with query-document concatenation (QDC) and
classifier selection (CFS / CIS), framework-free.

* :class:`DRRAG`: the pipeline on the shared contract (stage 1, QDC searches, CFS/CIS, one
  Generator call); faces ``langchain_diverse.DRRAGRetriever`` and ``llamaindex_diverse.DRRAGRetriever``.
* :func:`select_drrag`: the selection logic over stage-1 rankings and concatenated-search hits.
* :class:`PairClassifier` / :func:`default_classifier`: the compact (question, A, B) pair
  classifier; the shipped one is trained from TRAIN files only
  (``diverse-rag train drrag``) and loaded lazily on first use.
* :func:`make_scorer`: a batched pair scorer from a classifier or any
  ``(question, doc_a, doc_b) -> probability`` callable.

Example:
    >>> sel = select_drrag(["a", "b"], [["a", "c"], ["b", "d"]], k=4, mode="qdc")
    >>> sel.ids, [p.stage for p in sel.picks]
    (('a', 'b', 'c', 'd'), [1, 1, 2, 2])
"""

from .classifier import PairClassifier, default_classifier, make_scorer
from .pipeline import DRRAG, UNTITLED_WARNING, DRRAGResult, concat_query
from .select import DrragPick, DrragSelection, default_k1, select_drrag

__all__ = [
    "DRRAG",
    "DRRAGResult",
    "concat_query",
    "UNTITLED_WARNING",
    "DrragPick",
    "DrragSelection",
    "PairClassifier",
    "default_classifier",
    "default_k1",
    "make_scorer",
    "select_drrag",
]
