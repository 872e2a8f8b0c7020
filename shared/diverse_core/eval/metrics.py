"""Answer- and retrieval-level metrics for the benchmark harness.

Answer metrics (SQuAD normalisation: lower case, drop punctuation and the articles
a/an/the, collapse whitespace), each the maximum over the gold answer and its aliases:

* :func:`exact_match`, :func:`f1_score` (token F1), :func:`accuracy` (a gold answer is
  contained in the prediction) - defined in the core's :mod:`diverse_core.answer_metrics`
  (the pipelines score answers with them too) and re-exported here;
* :func:`rouge_l` (ROUGE-L F-measure via ``rouge-score``).

Retrieval metrics:

* :func:`recall_at_k` - fraction of the gold passages among the first ``k`` retrieved
  (for windows, pass their source passage ids: this is gold-document coverage).
* :func:`all_gold_at_k` - 1 when every gold passage is among them.
* :func:`ndcg_at_k` - binary-relevance NDCG@k (numpy; equal to ``ranx``'s).
* :func:`mrecall_at_k` - DIVA / Min et al. (2021): success when the retrieved texts
  contain answers of all interpretations, or of at least ``k`` of them when there are
  more than ``k``.

Set diversity and rank agreement come from :mod:`diverse_core.metrics`.

Example:
    >>> f1_score("The Eiffel tower", ["Eiffel Tower, Paris"])
    0.8
    >>> recall_at_k(["d3", "d1", "d9"], ["d1", "d2"], k=2)
    0.5
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..answer_metrics import (
    accuracy,
    answer_in_texts,
    exact_match,
    f1_score,
    gold_list,
    normalize_answer,
)
from ..errors import InvalidParameterError
from ..validation import check_k
from ._deps import require

__all__ = [
    "normalize_answer",
    "exact_match",
    "f1_score",
    "accuracy",
    "answer_in_texts",
    "rouge_l",
    "recall_at_k",
    "all_gold_at_k",
    "ndcg_at_k",
    "mrecall_at_k",
]


def rouge_l(prediction: str, references: str | Sequence[str]) -> float:
    """ROUGE-L F-measure (``rouge-score``, stemming on), best over the references.

    Example:
        >>> round(rouge_l("the cat sat", ["the cat sat down"]), 3)  # doctest: +SKIP
        0.857
    """
    scorer_mod = require("rouge_score.rouge_scorer", "ROUGE-L")
    scorer = scorer_mod.RougeScorer(["rougeL"], use_stemmer=True)
    return max(float(scorer.score(ref, prediction)["rougeL"].fmeasure) for ref in gold_list(references))


def _gold_set(gold: Iterable[Any]) -> set[Any]:
    out = set(gold)
    if not out:
        raise InvalidParameterError("gold must contain at least one relevant id; got an empty collection")
    return out


def recall_at_k(retrieved: Sequence[Any], gold: Iterable[Any], k: int) -> float:
    """Fraction of ``gold`` ids found among the first ``k`` of ``retrieved`` (repeats allowed).

    Example:
        >>> recall_at_k(["a", "a", "b"], ["a", "c"], k=3)
        0.5
    """
    want = _gold_set(gold)
    return len(want & set(list(retrieved)[: check_k(k)])) / len(want)


def all_gold_at_k(retrieved: Sequence[Any], gold: Iterable[Any], k: int) -> float:
    """1.0 when every gold id is among the first ``k`` retrieved, else 0.0.

    Example:
        >>> all_gold_at_k(["a", "b"], ["b", "a"], k=2)
        1.0
    """
    return float(recall_at_k(retrieved, gold, k) == 1.0)


def ndcg_at_k(
    runs: Mapping[str, Sequence[Any]], qrels: Mapping[str, Iterable[Any]], k: int
) -> NDArray[np.float64]:
    """Per-query binary-relevance NDCG@k (plain numpy; the same values as ``ranx``'s ``ndcg@k``).

    DCG counts each relevant id among the first ``k`` distinct retrieved ids as
    ``1 / log2(rank + 1)``; IDCG is the DCG of ``min(k, len(relevant))`` relevant ids at the top.

    Args:
        runs: query id -> retrieved ids in rank order (repeats after the first are ignored).
        qrels: query id -> relevant ids (each must be non-empty); same keys as ``runs``.
        k: cut-off.

    Returns:
        NDCG@k per query, in the order of ``runs`` (0 for an empty run).

    Example:
        >>> ndcg_at_k({"q": ["x", "a"]}, {"q": ["a"]}, k=5).round(4).tolist()
        [0.6309]
    """
    k = check_k(k)
    if set(runs) != set(qrels):
        raise InvalidParameterError("runs and qrels must have the same query ids")
    discount = 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))  # rank 1 .. k
    ideal = np.cumsum(discount)
    out = np.zeros(len(runs), dtype=np.float64)
    for i, (q, ranked) in enumerate(runs.items()):
        relevant = _gold_set(qrels[q])
        top = list(dict.fromkeys(ranked))[:k]
        hits = np.fromiter((d in relevant for d in top), dtype=bool, count=len(top))
        out[i] = float(discount[: len(top)][hits].sum()) / ideal[min(k, len(relevant)) - 1]
    return out


def mrecall_at_k(texts: Sequence[str], answer_groups: Sequence[Sequence[str]], k: int) -> float:
    """MRecall@k: did the retrieved ``texts`` cover enough interpretations?

    An interpretation (one group of acceptable short answers) is covered when any of
    its answers occurs (normalised, word-bounded) in any text. With ``n`` groups the
    retrieval succeeds (1.0) when ``min(n, k)`` groups are covered, else 0.0.

    Example:
        >>> groups = [["Ali Daei"], ["Josef Bican"], ["Christine Sinclair"]]
        >>> mrecall_at_k(["Ali Daei scored 109.", "Bican scored 805."], groups, k=2)
        0.0
        >>> mrecall_at_k(["Ali Daei scored 109.", "Josef Bican scored 805."], groups, k=2)
        1.0
    """
    k = check_k(k)
    groups = [list(g) for g in answer_groups]
    if not groups or any(not g for g in groups):
        raise InvalidParameterError(
            "answer_groups must hold at least one non-empty group of answers; "
            f"got {len(groups)} group(s)"
        )
    covered = sum(answer_in_texts(texts, g) for g in groups)
    return float(covered >= min(len(groups), k))


def str_em(answer: str, answer_groups: Sequence[Sequence[str]]) -> float:
    """str-EM (ASQA / ALCE): the share of interpretations (groups of acceptable short answers)
    whose answer occurs (normalised, word-bounded) in a generated long ``answer``.

    The reader-based DR score (sqrt(Disambig-F1 x ROUGE-L)) needs a QA reader model we cannot
    run here; str-EM is what the harness reports for generated answers instead.

    Example:
        >>> str_em("Ali Daei holds the men's record.", [["Ali Daei"], ["Christine Sinclair"]])
        0.5
    """
    groups = [list(g) for g in answer_groups if g]
    if not groups:
        raise InvalidParameterError("answer_groups must hold at least one non-empty group of answers")
    return float(sum(answer_in_texts([answer], g) for g in groups) / len(groups))

