"""DF-RAG as a method of the benchmark harness (plugin ``dfrag``), plus its measurements.

Registered on import of :mod:`diverse_core.eval`. For every question the harness hands
over the ``fetch_k`` cosine candidates; DF-RAG chooses ``k`` of them with its LLM
Planner/Evaluator over the gMMR λ grid (retrieval only unless ``@generate=true``).
Per-query info (λ*, score per λ, plan, distinct sets, parse failures, cost) lands in
the harness's per-query JSON.

Fixed parameters (``--methods dfrag@key=value@...``):

* ``llm``: ``auto`` (default: an OpenAI-compatible endpoint when
  ``DIVERSE_RAG_LLM_MODEL`` is set - with ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` -
  else the packaged local SmolLM2), ``openai``, ``local``, ``none`` (dry run: no LLM;
  counts distinct candidate sets and returns the upper-median λ's set, i.e. what an
  all-tied evaluation picks) or ``simulated:SECONDS`` (a stand-in endpoint that sleeps
  that long per call and scores every set equally - for scheduling/latency studies only).
* ``sampling`` (``uniform``/``binary``), ``max_concurrency``, ``incremental_context``,
  ``generate``, ``score_from``, ``timeout``, ``max_retries``, ``max_new_tokens``
  (local model), ``max_tokens`` (endpoint), ``zero_shot`` (drop the evaluator's examples),
  ``max_passage_chars``.

One command benchmarks any OpenAI-compatible endpoint against cosine, fixed-λ gMMR and
the Oracle (which the harness adds when the gMMR grid covers 0.1..1.0)::

    DIVERSE_RAG_LLM_MODEL=qwen2.5-7b-instruct OPENAI_BASE_URL=http://localhost:8000/v1 \\
    OPENAI_API_KEY=EMPTY diverse-rag bench --datasets hotpotqa:chunks musique:chunks \\
        2wiki:chunks --methods cosine gmmr=0.1:1:0.1 dfrag --quick 30 --out /tmp/dfrag

Measurements (``python examples/dfrag_measure.py --help``): ``sets`` (distinct
candidate sets per query over the λ grid, no LLM) and ``timing`` (wall time per query,
sequential vs concurrent evaluation).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from ..dfrag import DEFAULT_LAMBDAS, DFRAG, PromptSet, sweep_candidate_sets
from ..errors import InvalidParameterError
from ..llm import Completion, LocalGGUFLLM, OpenAILLM
from ..tuning import upper_median
from .plugins import MethodInput, MethodOutput, register_plugin

__all__ = ["dfrag_method", "resolve_llm", "SimulatedEndpoint", "main"]

_PIPELINES: dict[tuple[Any, ...], DFRAG] = {}
_LOCK = threading.Lock()


class SimulatedEndpoint:
    """A stand-in for a remote endpoint: sleeps ``latency`` seconds per call, then replies
    with a fixed plan / equal scores / a fixed answer. Only for latency and scheduling
    measurements; it says nothing about retrieval quality."""

    def __init__(self, latency: float) -> None:
        self.latency = float(latency)

    def complete(self, prompt: str, **kw: Any) -> Completion:  # pragma: no cover - sync path unused
        return asyncio.run(self.acomplete(prompt))

    async def acomplete(self, prompt: str, **kw: Any) -> Completion:
        await asyncio.sleep(self.latency)
        tail = prompt.rstrip()
        if tail.endswith("Plan:"):
            return Completion("1) step one\n2) step two")
        if tail.endswith("Evaluation:"):
            return Completion("1. Score: 3\n2. Score: 3\nTotal Score: 6")
        return Completion("answer")


def resolve_llm(spec: str = "auto", *, max_new_tokens: int = 64, max_tokens: int = 256) -> Any:
    """The backend named by ``spec`` (see the module docstring)."""
    spec = str(spec)
    if spec == "auto":
        spec = "openai" if os.environ.get("DIVERSE_RAG_LLM_MODEL") else "local"
    if spec == "openai":
        return OpenAILLM(max_tokens=max_tokens)
    if spec == "local":
        return LocalGGUFLLM(max_new_tokens=max_new_tokens)
    if spec.startswith("simulated:"):
        return SimulatedEndpoint(float(spec.split(":", 1)[1]))
    raise InvalidParameterError(
        f"llm must be auto, openai, local, none or simulated:SECONDS; got llm={spec!r}"
    )


def _truthy(value: Any) -> bool:
    return value is True or str(value).lower() in {"1", "true", "yes"}


def _pipeline(params: dict[str, Any], k: int) -> DFRAG:
    key = (k, *sorted((str(a), str(b)) for a, b in params.items()))
    with _LOCK:
        if key not in _PIPELINES:
            prompts = PromptSet(
                evaluator_examples="" if _truthy(params.get("zero_shot", False)) else PromptSet().evaluator_examples,
                max_passage_chars=int(params["max_passage_chars"]) if params.get("max_passage_chars") else None,
            )
            llm = resolve_llm(
                str(params.get("llm", "auto")),
                max_new_tokens=int(params.get("max_new_tokens", 64)),
                max_tokens=int(params.get("max_tokens", 256)),
            )
            _PIPELINES[key] = DFRAG(
                llm,
                k=k,
                sampling=str(params.get("sampling", "uniform")),
                incremental_context=_truthy(params.get("incremental_context", False)),
                max_concurrency=int(params.get("max_concurrency", 4)),
                timeout=float(params["timeout"]) if params.get("timeout") not in (None, "none") else None,
                max_retries=int(params.get("max_retries", 3)),
                score_from=str(params.get("score_from", "total")),
                prompts=prompts,
            )
        return _PIPELINES[key]


_KNOWN = {
    "llm", "sampling", "max_concurrency", "incremental_context", "generate", "score_from",
    "timeout", "max_retries", "max_new_tokens", "max_tokens", "zero_shot", "max_passage_chars",
}


def dfrag_method(inp: MethodInput, **params: Any) -> MethodOutput:
    """The harness plugin: DF-RAG's chosen chunk set for one question."""
    unknown = set(params) - _KNOWN
    if unknown:
        raise InvalidParameterError(f"unknown dfrag parameter(s) {sorted(unknown)}; known: {sorted(_KNOWN)}")
    if params.get("llm", "auto") is None or str(params.get("llm")).lower() == "none":
        groups = sweep_candidate_sets(inp.query_embedding, inp.embeddings, inp.k, DEFAULT_LAMBDAS)
        lam = upper_median(DEFAULT_LAMBDAS)
        return MethodOutput(
            [int(i) for i in groups.indices[DEFAULT_LAMBDAS.index(lam)]],
            {"lambda": lam, "n_distinct_sets": len(groups.groups), "dry_run": True},
        )
    pipe = _pipeline(params, inp.k)
    res = pipe.run(
        inp.question, list(inp.texts), inp.query_embedding, inp.embeddings,
        generate=_truthy(params.get("generate", False)),
    )
    info = {
        "lambda": res.lambda_star,
        "scores": {f"{lam:g}": s for lam, s in res.lambda_scores.items()},
        "tied_lambdas": list(res.tied_lambdas),
        "plan": list(res.plan),
        "n_distinct_sets": res.n_distinct_sets,
        "parse_failures": list(res.parse_failures),
        "cost": asdict(res.cost),
    }
    if res.answer is not None:
        info["answer"] = res.answer
    return MethodOutput(list(res.indices), info)


register_plugin("dfrag", dfrag_method, replace=True)


# ---------------------------------------------------------------------------- measurements
def _run(datasets: Sequence[str], method: str, limit: int | None, k: int, fetch_k: int) -> Any:
    from .config import BenchConfig, parse_method
    from .runner import run_benchmark

    cfg = BenchConfig(
        tasks=[(d, "chunks") for d in datasets],
        methods=[parse_method(method)],
        k=k,
        fetch_k=fetch_k,
        limit=limit,
        oracle_lambdas=(),
        plots=False,
        progress=False,
    )
    return run_benchmark(cfg)


def _sets(args: argparse.Namespace) -> None:
    res = _run(args.datasets, "dfrag@llm=none", args.limit, args.k, args.fetch_k)
    print(f"distinct gMMR candidate sets per query over lambda = {list(DEFAULT_LAMBDAS)} "
          f"(chunks protocol, k={args.k}, fetch_k={args.fetch_k})")
    print("| dataset | queries | mean | median | min | max | histogram (sets: queries) |")
    print("|---|---|---|---|---|---|---|")
    for task in res.tasks:
        counts = np.array([i["n_distinct_sets"] for i in task.settings[0].info])
        hist = ", ".join(f"{n}: {c}" for n, c in sorted(Counter(counts.tolist()).items()))
        print(f"| {task.dataset} | {counts.size} | {counts.mean():.2f} | {np.median(counts):g} | "
              f"{counts.min()} | {counts.max()} | {hist} |")


def _timing(args: argparse.Namespace) -> None:
    print(f"wall time per query, llm={args.llm}, {args.limit} queries of {args.datasets[0]} chunks, "
          f"k={args.k}, fetch_k={args.fetch_k}")
    print("| max_concurrency | mean wall s/query | mean LLM calls | mean LLM s (summed) |")
    print("|---|---|---|---|")
    extra = f"@max_new_tokens={args.max_new_tokens}" if args.llm == "local" else ""
    for conc in args.concurrency:
        method = f"dfrag@llm={args.llm}@max_concurrency={conc}{extra}"
        if args.zero_shot:
            method += "@zero_shot=true"
        res = _run(args.datasets[:1], method, args.limit, args.k, args.fetch_k)
        costs = [i["cost"] for i in res.tasks[0].settings[0].info]
        print(f"| {conc} | {np.mean([c['wall_time'] for c in costs]):.2f} | "
              f"{np.mean([c['llm_calls'] for c in costs]):.1f} | "
              f"{np.mean([c['llm_seconds'] for c in costs]):.2f} |")


def main(argv: Sequence[str] | None = None) -> int:
    """Measurement CLI: ``python examples/dfrag_measure.py {sets,timing} ...``."""
    parser = argparse.ArgumentParser(prog="dfrag_measure.py")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("sets", "timing"):
        p = sub.add_parser(name)
        p.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique", "2wiki"])
        p.add_argument("--limit", type=int, default=None if name == "sets" else 3)
        p.add_argument("--k", type=int, default=5)
        p.add_argument("--fetch-k", type=int, default=50)
        if name == "timing":
            p.add_argument("--llm", default="local")
            p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4])
            p.add_argument("--max-new-tokens", type=int, default=48)
            p.add_argument("--zero-shot", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    (_sets if args.cmd == "sets" else _timing)(args)
    return 0
