"""Benchmark results: per-setting, per-task and per-run records, and their summary rows.

Results flow one way: :mod:`~diverse_core.eval.runner` produces these records;
:mod:`~diverse_core.eval.report` and :mod:`~diverse_core.eval.plots` read them. This module
imports neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["METRICS", "SettingResult", "TaskResult", "BenchResults", "summary_rows"]

METRICS = ("recall", "support", "all_gold", "ndcg", "mrecall", "answer_hit", "diversity", "vendi", "tau", "rho",
           "str_em")


@dataclass
class SettingResult:
    """One method at one parameter value on one task: per-query values and their means.

    ``llm`` names the model an LLM pipeline ran with (``None``: no LLM was involved)."""

    method: str
    params: dict[str, Any]
    label: str
    per_query: dict[str, list[float]] = field(default_factory=dict)
    picks: list[list[str]] = field(default_factory=list)
    info: list[dict[str, Any]] = field(default_factory=list)
    llm: str | None = None

    def mean(self, metric: str) -> float:
        """Mean of ``metric`` over the questions where it is defined (NaN if nowhere)."""
        vals = np.asarray(self.per_query.get(metric, []), dtype=np.float64)
        vals = vals[~np.isnan(vals)]
        return float(vals.mean()) if vals.size else math.nan


@dataclass
class TaskResult:
    """Everything measured on one ``(dataset, protocol)`` task."""

    dataset: str
    protocol: str
    metric: str
    qids: list[str]
    n_units: int
    settings: list[SettingResult]
    jaccard_values: list[float] = field(default_factory=list)
    jaccard: list[list[float]] = field(default_factory=list)
    oracle_lambdas: list[float] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass
class BenchResults:
    """All task results of one :func:`run_benchmark` call plus timings."""

    config: dict[str, Any]
    tasks: list[TaskResult]
    seconds: dict[str, float]
    texts_embedded: int


def summary_rows(results: BenchResults) -> list[dict[str, Any]]:
    """One row per task x setting with the mean of every metric."""
    rows = []
    for t in results.tasks:
        for s in t.settings:
            row: dict[str, Any] = {
                "dataset": t.dataset,
                "protocol": t.protocol,
                "method": s.method,
                "params": s.label,
                "llm": s.llm,
                "n": len(t.qids),
            }
            for m in METRICS:
                row[m] = s.mean(m)
            rows.append(row)
    return rows

