"""DIVA for LangChain: :class:`DIVARetriever` (generated from the core's declaration, see
:func:`~langchain_diverse.pipeline_retriever.retriever_class`), :func:`create_diva_chain` and the
metadata keys of its documents.

The retriever keeps the ``k`` passages DIVA chooses for an ambiguous question (In et al.,
arXiv:2409.02361): each LLM-written interpretation takes its top hits, the union is pruned by mean
similarity to all interpretations; documents carry ``diva_interpretations`` and
``diva_usefulness``. The chain also verifies the passages and answers with them, or closed book.

Example:
    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> from langchain_core.language_models import FakeListLLM
    >>> from langchain_core.vectorstores import InMemoryVectorStore
    >>> store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    >>> _ = store.add_texts([f"fact {i}" for i in range(8)])
    >>> llm = FakeListLLM(responses=["Reason: the year.\\nKinds: [Time]", "1: In 2018?\\n2: In 2019?"])
    >>> docs = DIVARetriever(llm=llm, vectorstore=store, k=2, fetch_k=8).invoke("Who won?")
    >>> len(docs), docs[0].metadata["diva_interpretations"]
    (2, ['In 2018?', 'In 2019?'])
"""

from __future__ import annotations

from .pipeline_retriever import create_pipeline_chain, retriever_class

__all__ = ["DIVARetriever", "create_diva_chain", "DIVA_INTERPRETATIONS", "DIVA_USEFULNESS"]

DIVARetriever = retriever_class("diva")
create_diva_chain = create_pipeline_chain

#: Metadata key: every interpretation of the question (the document's own are in
#: ``pipeline_reason["interpretations"]``).
DIVA_INTERPRETATIONS = "diva_interpretations"
#: Metadata key: the verification grade (``None`` unless ``verify_in_retrieval=True``).
DIVA_USEFULNESS = "diva_usefulness"
