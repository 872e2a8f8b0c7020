"""DR-RAG (Hei et al., arXiv:2406.07348): two-stage retrieval with query-document concatenation
(QDC) and classifier selection (CFS / CIS): :class:`DRRAG` (the pipeline), :func:`select_drrag`
(the selection), :class:`PairClassifier` (the shipped one is trained from TRAIN files only by
``diverse-rag train drrag`` and loaded on first use) and :func:`make_scorer`.

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
