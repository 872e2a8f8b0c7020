"""DR-RAG as a harness method: ``--methods drrag@mode=cfs@k1=2@fill=true``.

Retrieval-only runs need no LLM (the default); ``@generate=true`` adds the one Generator call
(``@llm=...``). Per query the info records every document's stage, the stage-1 document that
led to it, the classifier probability, the number of documents returned (CFS/CIS may return
fewer than ``k``) and the searches made. Options: DR-RAG's declared ones (``DRRAG.OPTIONS``:
``k1``, ``m``, ``mode``, ``classifier`` as a saved classifier's path, ``threshold``, ``fill``,
``per_doc``, ``cis_rule``, ``protect_stage1``, ``fetch_k``; ``diversity`` is declared but refused
with the reason: DR-RAG has no relevance/diversity trade-off) and the call policy. (The perfect-classifier ceiling needs
the gold documents: ``benchmarks/drrag_retrieval.py`` measures it.)
"""

from __future__ import annotations

from typing import Any

from ..pipelines import PipelineResult
from ..pipelines.drrag import DRRAG, DRRAGResult
from .pipeline_plugin import declare_pipeline_method

__all__ = ["drrag_method"]


def _info(res: PipelineResult) -> dict[str, Any]:
    assert isinstance(res, DRRAGResult)
    return {"mode": res.mode, "k1": res.k1, "n_returned": len(res.documents), "pairs_scored": res.pairs_scored}


#: The harness plugin: DR-RAG's chosen documents for one question.
drrag_method = declare_pipeline_method("drrag", info=_info, needs_llm=False, pipeline=DRRAG)
