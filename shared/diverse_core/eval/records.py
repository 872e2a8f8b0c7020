"""The normalised record types every benchmark loader returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Document", "QARecord", "Benchmark", "CorpusBuilder"]


@dataclass(frozen=True)
class Document:
    """One passage of a corpus.

    Attributes:
        doc_id: identifier, unique within its :class:`Benchmark`.
        title: the passage title (``""`` when the source has none, e.g. RGB).
        text: the passage text.
        sentences: the source's own sentence split, when it provides one (HotpotQA,
            2Wiki distractor contexts); empty otherwise.
        source: the id of the page, file or parent document it comes from, when the data gives
            one (custom datasets); ``""``: the passage is its own source.

    Example:
        >>> Document("0", "Paris", "Paris is the capital of France.").indexed_text
        'Paris: Paris is the capital of France.'
    """

    doc_id: str
    title: str
    text: str
    sentences: tuple[str, ...] = ()
    source: str = ""

    @property
    def indexed_text(self) -> str:
        """What gets embedded for the ``paragraphs`` protocol: ``"title: text"``."""
        return f"{self.title}: {self.text}" if self.title else self.text


@dataclass(frozen=True)
class QARecord:
    """One question with its answers, gold passages and candidate pool.

    Attributes:
        qid: the source's question id.
        question: the question text.
        answers: the gold answer first, then its aliases (may be empty).
        gold_doc_ids: ids of the passages that support the answer.
        pool_doc_ids: the question's own candidate passages (distractor setting);
            empty when the source has none (2Wiki pooled test set).
        answer_groups: one tuple of acceptable short answers per interpretation
            (ASQA ``qa_pairs``), used by MRecall; empty otherwise.
        meta: free-form extras (question type, hops, ...).
        support: per gold passage id, the texts that show it supports the answer (HotpotQA:
            its supporting sentences; MuSiQue: the answer of the hop it supports; 2Wiki pooled:
            the answer or another gold page's title, a proxy): a chosen unit of that passage
            counts for the support-level recall only when it contains one of them. Empty:
            no support annotation (the support-level recall is not defined).

    Example:
        >>> r = QARecord("q1", "Who?", ("Ann",), ("3",))
        >>> r.gold_doc_ids
        ('3',)
    """

    qid: str
    question: str
    answers: tuple[str, ...]
    gold_doc_ids: tuple[str, ...]
    pool_doc_ids: tuple[str, ...] = ()
    answer_groups: tuple[tuple[str, ...], ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    support: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Benchmark:
    """A loaded benchmark: questions plus the pooled, de-duplicated corpus.

    Attributes:
        name: dataset name (``"hotpotqa"``).
        records: the questions, in file order.
        corpus: ``doc_id -> Document`` in first-seen order.
        protocols: the retrieval protocols the dataset supports.
        metric: the headline metric of the dataset (``"recall"``, ``"ndcg"``, ``"mrecall"``).
        as_stored: units are indexed as stored and titles go to methods as names (a custom-data
            folder, :mod:`~diverse_core.eval.customdata`), not as a ``"title: "`` prefix.
    """

    name: str
    records: tuple[QARecord, ...]
    corpus: Mapping[str, Document]
    protocols: tuple[str, ...]
    metric: str = "recall"
    as_stored: bool = False

    def subset(self, limit: int | None) -> Benchmark:
        """The first ``limit`` questions (the corpus is kept whole, so pooled retrieval is unchanged)."""
        if limit is None:
            return self
        return replace(self, records=self.records[:limit])


class CorpusBuilder:
    """Collects passages, de-duplicating identical ``(title, text)`` pairs.

    Example:
        >>> b = CorpusBuilder()
        >>> b.add("A", "x"), b.add("B", "y"), b.add("A", "x")
        ('0', '1', '0')
    """

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], str] = {}
        self.docs: dict[str, Document] = {}

    def add(self, title: str, text: str, sentences: tuple[str, ...] = ()) -> str:
        """Add a passage (if new) and return its id."""
        key = (title.strip(), text.strip())
        found = self._ids.get(key)
        if found is not None:
            return found
        doc_id = str(len(self._ids))
        self._ids[key] = doc_id
        self.docs[doc_id] = Document(doc_id, key[0], key[1], tuple(sentences))
        return doc_id
