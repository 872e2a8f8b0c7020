"""Retrieval protocols: what gets indexed and which units each question searches.

* ``pool``: each question searches only its own paragraphs (distractor setting).
* ``paragraphs``: every passage of the dataset pooled into one corpus, each indexed
  as ``"title: text"``.
* ``chunks``: every passage split into windows of 2 consecutive sentences with
  stride 1 (the source's sentences where it gives them, else
  :func:`~diverse_core.eval.chunking.split_sentences`), each indexed as
  ``"title: window"``; all windows pooled. A window maps to its source passage, and
  recall becomes gold-document coverage: the fraction of a question's gold passages
  hit by at least one chosen window.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError
from .chunking import sentence_windows, split_sentences
from .records import Benchmark, QARecord

__all__ = ["PROTOCOLS", "RetrievalTask", "build_task"]

PROTOCOLS = ("pool", "paragraphs", "chunks")
_LOG = logging.getLogger("diverse_core")


@dataclass(frozen=True)
class RetrievalTask:
    """One dataset under one protocol, ready to embed and search.

    Attributes:
        dataset: dataset name.
        protocol: ``pool``, ``paragraphs`` or ``chunks``.
        records: the questions.
        unit_texts: the indexed texts (passages or windows).
        unit_doc: index into ``doc_ids`` of each unit's source passage, shape (n_units,).
        doc_ids: passage ids, in corpus order.
        pools: per question, the unit indices it may retrieve from (``None``: all units).
        gold: per question, indices into ``doc_ids`` of its gold passages.
        support: per question, per gold passage (same order as ``gold``), the unit indices of
            that passage that contain one of its supporting texts (:attr:`QARecord.support`);
            ``None`` for a question without support annotation.
        titled: whether units carry the ``"title: "`` prefix (``False``: the bare text, the
            title only in ``doc_titles``, as in a store whose chunks keep it in metadata).
        doc_titles: the title per ``doc_ids`` entry.
        doc_sources: the source id per ``doc_ids`` entry (the passage's own id when the data
            gives none): what a store's metadata would hold.
    """

    dataset: str
    protocol: str
    records: tuple[QARecord, ...]
    unit_texts: tuple[str, ...]
    unit_doc: NDArray[np.int64]
    doc_ids: tuple[str, ...]
    pools: tuple[NDArray[np.int64], ...] | None
    gold: tuple[NDArray[np.int64], ...]
    support: tuple[tuple[NDArray[np.int64], ...] | None, ...] = ()
    titled: bool = True
    doc_titles: tuple[str, ...] = ()
    doc_sources: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``"dataset/protocol"``."""
        return f"{self.dataset}/{self.protocol}"


def _norm(text: str) -> str:
    from .metrics import normalize_answer

    return f" {normalize_answer(text)} "


def _support_units(
    rec: QARecord, gold: NDArray[np.int64], doc_ids: tuple[str, ...], units_of_doc: list[list[int]], texts: list[str],
    norm_cache: dict[int, str],
) -> tuple[NDArray[np.int64], ...] | None:
    if not rec.support:
        return None
    out = []
    for d in gold.tolist():
        needles = [n for n in (_norm(x) for x in rec.support.get(doc_ids[d], ())) if n.strip()]
        found = []
        for u in units_of_doc[d]:
            if u not in norm_cache:
                norm_cache[u] = _norm(texts[u])
            if any(n in norm_cache[u] for n in needles):
                found.append(u)
        out.append(np.asarray(found, dtype=np.int64))
    return tuple(out)


def build_task(bench: Benchmark, protocol: str, *, titles: bool = True) -> RetrievalTask:
    """Turn a loaded benchmark into a :class:`RetrievalTask` for ``protocol``.

    ``titles=False`` indexes every unit without its ``"title: "`` prefix (a corpus whose
    chunks carry their title, if at all, in metadata).

    Example:
        >>> from diverse_core.eval.records import Benchmark, Document, QARecord
        >>> docs = {"0": Document("0", "A", "One. Two. Three.")}
        >>> b = Benchmark("toy", (QARecord("q", "?", (), ("0",)),), docs, ("chunks",))
        >>> build_task(b, "chunks").unit_texts
        ('A: One. Two.', 'A: Two. Three.')
    """
    if protocol not in PROTOCOLS:
        raise InvalidParameterError(f"unknown protocol {protocol!r}; available: {list(PROTOCOLS)}")
    if protocol not in bench.protocols:
        raise InvalidParameterError(
            f"dataset {bench.name!r} does not support protocol {protocol!r}; "
            f"supported: {list(bench.protocols)}"
        )
    docs = list(bench.corpus.values())
    doc_ids = tuple(d.doc_id for d in docs)
    doc_index = {d: i for i, d in enumerate(doc_ids)}
    texts: list[str] = []
    unit_doc: list[int] = []
    units_of_doc: list[list[int]] = []
    for i, doc in enumerate(docs):
        if protocol == "chunks":
            sents = list(doc.sentences) or split_sentences(doc.text)
            pieces = list(dict.fromkeys(sentence_windows(sents))) or [doc.text]
            windows = [f"{doc.title}: {w}" if doc.title and titles else w for w in pieces]
        else:
            windows = [doc.indexed_text if titles else doc.text]
        units_of_doc.append(list(range(len(texts), len(texts) + len(windows))))
        texts.extend(windows)
        unit_doc.extend([i] * len(windows))
    pools: tuple[NDArray[np.int64], ...] | None = None
    records = bench.records
    if protocol == "pool":
        all_pools = [
            np.array([u for d in r.pool_doc_ids for u in units_of_doc[doc_index[d]]], dtype=np.int64)
            for r in records
        ]
        # A question with no passages of its own has nothing to retrieve from (ASQA: 63 dev
        # questions carry no annotator snippet): it is left out of the pool task, with a warning.
        keep = [i for i, pool in enumerate(all_pools) if pool.size]
        if len(keep) < len(records):
            _LOG.warning(
                "%s/pool: %d of %d questions have no passages of their own and are left out",
                bench.name, len(records) - len(keep), len(records),
            )
        records = tuple(records[i] for i in keep)
        pools = tuple(all_pools[i] for i in keep)
    gold = tuple(np.array([doc_index[d] for d in r.gold_doc_ids], dtype=np.int64) for r in records)
    norm_cache: dict[int, str] = {}
    support = tuple(_support_units(r, g, doc_ids, units_of_doc, texts, norm_cache) for r, g in zip(records, gold,
                                                                                                  strict=True))
    return RetrievalTask(
        dataset=bench.name,
        protocol=protocol,
        records=records,
        unit_texts=tuple(texts),
        unit_doc=np.array(unit_doc, dtype=np.int64),
        doc_ids=doc_ids,
        pools=pools,
        gold=gold,
        support=support,
        titled=titles,
        doc_titles=tuple(d.title for d in docs),
        doc_sources=tuple(d.source or d.doc_id for d in docs),
    )
