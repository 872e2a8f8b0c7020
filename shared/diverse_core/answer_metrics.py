"""Answer-string metrics (SQuAD normalisation), shared by the pipelines and the harness.

Normalisation: lower case, drop punctuation and the articles a/an/the, collapse
whitespace. Each metric takes the maximum over the gold answer and its aliases.

These live in the core (pure Python, no optional dependency) so that the DF-RAG Oracle
and the benchmark harness (whose ``metrics`` module re-exports them) score answers
the same way without the core importing the harness.

Example:
    >>> from diverse_core.answer_metrics import f1_score, normalize_answer
    >>> normalize_answer("The  Beatles!")
    'beatles'
    >>> f1_score("The Eiffel tower", ["Eiffel Tower, Paris"])
    0.8
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

from .errors import InvalidParameterError

__all__ = ["normalize_answer", "gold_list", "exact_match", "f1_score", "accuracy", "answer_in_texts"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD-style normalisation.

    Example:
        >>> normalize_answer("The  Beatles!")
        'beatles'
    """
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def gold_list(answers: str | Sequence[str]) -> list[str]:
    """``answers`` as a non-empty list (one string becomes a list of one).

    Raises:
        InvalidParameterError: no gold answer.

    Example:
        >>> gold_list("Rush")
        ['Rush']
    """
    golds = [answers] if isinstance(answers, str) else list(answers)
    if not golds:
        raise InvalidParameterError("answers must contain at least one gold answer; got []")
    return golds


def exact_match(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer.

    Example:
        >>> exact_match("the Rush", ["Rush"])
        1.0
    """
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in gold_list(answers)))


def _token_f1(pred: list[str], gold: list[str]) -> float:
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if not pred or not gold:
        return float(pred == gold)
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, answers: str | Sequence[str]) -> float:
    """Token-level F1 against the best-matching gold answer.

    Example:
        >>> round(f1_score("new york city", ["New York"]), 3)
        0.8
    """
    pred = normalize_answer(prediction).split()
    return max(_token_f1(pred, normalize_answer(g).split()) for g in gold_list(answers))


def accuracy(prediction: str, answers: str | Sequence[str]) -> float:
    """1.0 when a normalised gold answer occurs in the normalised prediction (word-bounded).

    Example:
        >>> accuracy("It was held in Tampa, Florida.", ["Tampa, Florida"])
        1.0
    """
    pred = f" {normalize_answer(prediction)} "
    for g in gold_list(answers):
        gold = normalize_answer(g)
        if gold and f" {gold} " in pred:
            return 1.0
    return 0.0


def answer_in_texts(texts: Iterable[str], answers: str | Sequence[str]) -> float:
    """1.0 when any gold answer occurs in any of ``texts`` (retrieval-level answer hit).

    Example:
        >>> answer_in_texts(["Paris is in France.", "Rome"], ["paris"])
        1.0
    """
    return float(any(accuracy(t, answers) for t in texts))
