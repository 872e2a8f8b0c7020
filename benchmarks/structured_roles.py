"""Structured vs text role calls, measured through a real OpenAI-compatible server.

Each pipeline (DF-RAG, Vendi-RAG, DIVA, DR-RAG) answers HotpotQA dev questions (distractor
setting: each question's own 10 paragraphs) with the packaged SmolLM2-135M served by
llama-cpp-python's server on 127.0.0.1, once with structured role calls (the negotiated method:
llama.cpp refuses ``json_schema`` and takes tool calling) and once with the text prompts and
parsers (``OpenAILLM(structured_methods=())``). Per pipeline and path it reports: schema-valid
replies (% of structured calls whose reply decoded to a schema-valid object), clean reads (% of
calls whose reply needed no repair note), fallbacks to text, LLM calls, tokens and wall seconds
per question, and recall@5 of the returned passages against the gold paragraphs.

Every figure comes from a 135M model: plumbing, not quality.

Run from the repository root (needs ``CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install ".[realserver]"`` and the packaged model)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/structured_roles.py --n 20 --results-md benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "shared"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the test-support server

from diverse_core.eval.datasets import load_hotpotqa  # noqa: E402
from diverse_core.llm import OpenAILLM  # noqa: E402
from diverse_core.pipelines import InMemorySource, get_pipeline  # noqa: E402
from llama_server import LlamaCppServer  # noqa: E402

__all__ = ["main", "run_one", "summarise"]

START = "<!-- structured-roles:start (benchmarks/structured_roles.py) -->"
END = "<!-- structured-roles:end -->"
K = 5
#: Small, fixed settings per pipeline (few calls per question; the same on both paths).
SETTINGS: dict[str, dict[str, Any]] = {
    "dfrag": {"k": K, "fetch_k": 10, "lambdas": (0.0, 0.5, 1.0)},
    "vendirag": {"k": K, "fetch_k": 10, "max_iterations": 2},
    "diva": {"k": K, "fetch_k": 10, "max_interpretations": 2},
    "drrag": {"k": K, "mode": "qdc", "fetch_k": 10},
}


def _embedder() -> Any:
    from diverse_core.embedders import get_default_embedder

    return get_default_embedder()


def run_one(name: str, path: str, backend: OpenAILLM, record: Any, docs: dict[str, Any],
            embedder: Any) -> dict[str, Any]:
    """One question through one pipeline on one path: the per-question figures."""
    texts = [f"{docs[d].title}: {docs[d].text}" for d in record.pool_doc_ids]
    source = InMemorySource(texts, embedder=embedder, ids=list(record.pool_doc_ids))
    pipeline = get_pipeline(name)(backend, timeout=120.0, max_retries=1, **SETTINGS[name])
    start = time.perf_counter()
    result = pipeline.run(record.question, source, generate=True)
    seconds = time.perf_counter() - start
    calls = [e for e in result.trace if e.role is not None]
    structured = [e for e in calls if e.path == "structured"]
    valid = [e for e in structured if not any(n.startswith("schema:") or "unreadable" in n for n in e.notes)]
    # clean: the reply was read as it came (no trace note: notes record every repair or flag)
    clean = [e for e in calls if e.error is None and not e.notes]
    gold = set(record.gold_doc_ids)
    picked = [str(d.id) for d in result.documents][:K]
    roles: dict[str, list[int]] = {}
    for e in structured:
        roles.setdefault(str(e.role), [0, 0])
        roles[str(e.role)][0] += 1
        roles[str(e.role)][1] += int(e in valid)
    return {
        "pipeline": name, "path": path, "qid": record.qid, "calls": len(calls),
        "structured": len(structured), "valid": len(valid), "clean": len(clean),
        "fallbacks": result.cost.fallbacks, "errors": sum(e.error is not None for e in calls),
        "tokens": result.cost.prompt_tokens + result.cost.completion_tokens,
        "seconds": seconds, "recall": len(gold & set(picked)) / len(gold) if gold else float("nan"),
        "roles": roles, "methods": sorted({e.method for e in structured}),
        # why a structured reply was not schema-valid (the notes and the start of the reply)
        "problems": [{"role": e.role, "notes": list(e.notes), "reply": (e.reply or "")[:400]}
                     for e in structured if e not in valid],
        "call_notes": [{"role": e.role, "path": e.path, "notes": list(e.notes)} for e in calls],
    }


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (pipeline, path): totals and per-question means."""
    out = []
    for key in dict.fromkeys((r["pipeline"], r["path"]) for r in rows):
        sel = [r for r in rows if (r["pipeline"], r["path"]) == key]
        n_calls = sum(r["calls"] for r in sel)
        n_struct = sum(r["structured"] for r in sel)
        roles: dict[str, list[int]] = {}
        for r in sel:
            for role, (n, ok) in r["roles"].items():
                roles.setdefault(role, [0, 0])
                roles[role][0] += n
                roles[role][1] += ok
        out.append({
            "pipeline": key[0], "path": key[1], "n": len(sel),
            "schema_valid_pct": 100.0 * sum(r["valid"] for r in sel) / n_struct if n_struct else None,
            "clean_pct": 100.0 * sum(r["clean"] for r in sel) / n_calls if n_calls else None,
            "structured_calls": n_struct, "fallbacks": sum(r["fallbacks"] for r in sel),
            "errors": sum(r["errors"] for r in sel),
            "calls_per_q": n_calls / len(sel), "tokens_per_q": sum(r["tokens"] for r in sel) / len(sel),
            "seconds_per_q": float(np.median([r["seconds"] for r in sel])),
            "recall_at_5": 100.0 * float(np.nanmean([r["recall"] for r in sel])),
            "roles": {role: f"{ok}/{n}" for role, (n, ok) in sorted(roles.items())},
            # rows measured before clean meant "no trace note" counted a list of repair fragments
            "clean_by_fragments": any("call_notes" not in r for r in sel),
        })
    return out


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}%"


def markdown(summary: list[dict[str, Any]], args: argparse.Namespace, methods: dict[str, str]) -> str:
    cmd = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 python benchmarks/structured_roles.py "
           f"--n {args.n} --pipelines {','.join(args.pipelines)} --paths {','.join(args.paths)} "
           f"--max-tokens {args.max_tokens} --results-md benchmarks/RESULTS.md")
    lines = [
        START,
        "## Structured vs text role calls through a real server (SmolLM2-135M: plumbing, not quality)",
        "",
        "Generated by:",
        "", "```bash", cmd, "```", "",
        f"HotpotQA dev (distractor paragraphs), first {args.n} questions; llama-cpp-python's OpenAI-compatible "
        f"server with the packaged **SmolLM2-135M-Instruct Q4_1** on 127.0.0.1, the project's `OpenAILLM` "
        f"(max_tokens={args.max_tokens}, temperature 0); MiniLM embeddings; k={K}. Structured method the server "
        f"took: {', '.join(f'{p}: {m}' for p, m in methods.items()) or '-'}. `text` = the same pipeline with "
        "`OpenAILLM(structured_methods=())` (text prompts + parsers). schema-valid = structured replies that "
        "decoded to a schema-valid object; clean = replies read without any repair note; s/q = median wall "
        "seconds per question. A 135M model's answers and verdicts mean nothing; the table shows the plumbing.",
        "",
        *([f"n = questions measured in the row: rows below {args.n} are from a run stopped before the end "
           f"(`--resume` continues it)."] if any(s["n"] < args.n for s in summary) else []),
        "",
        "| pipeline | path | n | schema-valid | clean reads | fallbacks | errors | calls/q | tokens/q | s/q | recall@5 | schema-valid per role |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        roles = ", ".join(f"{r} {v}" for r, v in s["roles"].items()) or "-"
        lines.append(
            f"| {s['pipeline']} | {s['path']} | {s['n']} | {_pct(s['schema_valid_pct'])} | "
            f"{_pct(s['clean_pct'])}{' †' if s.get('clean_by_fragments') else ''} | "
            f"{s['fallbacks']} | {s['errors']} | {s['calls_per_q']:.1f} | {s['tokens_per_q']:.0f} | "
            f"{s['seconds_per_q']:.1f} | {s['recall_at_5']:.1f} | {roles} |"
        )
    if any(s.get("clean_by_fragments") for s in summary):
        lines += ["", "† clean reads counted as calls whose notes hold none of `schema:`, `unreadable`, `fallback`, "
                      "`no total`, `unparseable`, `clipped`, `could not` (an earlier version of this script); the "
                      "other rows count calls with no trace note at all."]
    return "\n".join([*lines, "", END])


def _write_md(section: str, path: str) -> None:
    md = Path(path)
    text = md.read_text(encoding="utf-8") if md.is_file() else ""
    if START in text and END in text:
        head, rest = text.split(START, 1)
        text = head + section + rest.split(END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    md.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20, help="HotpotQA dev questions")
    ap.add_argument("--pipelines", type=lambda s: s.split(","), default=list(SETTINGS))
    ap.add_argument("--paths", type=lambda s: s.split(","), default=["structured", "text"])
    ap.add_argument("--max-tokens", type=int, default=192)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--json", default="benchmarks/results/structured_roles.json")
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--resume", action="store_true", help="keep the rows already in --json and measure the rest")
    ap.add_argument("--render-only", action="store_true", help="only write the table from the rows in --json")
    args = ap.parse_args(argv)
    bench = load_hotpotqa(args.data_dir)
    docs = bench.corpus
    records = bench.records[: args.n]
    embedder = _embedder() if not args.render_only else None
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    if args.resume and out.is_file():  # keep what an interrupted run measured
        rows = [r for r in json.loads(out.read_text(encoding="utf-8"))["rows"]
                if r["pipeline"] in args.pipelines and r["path"] in args.paths]
    done = {(r["qid"], r["pipeline"], r["path"]) for r in rows}
    if not args.render_only:
        with LlamaCppServer(n_ctx=4096) as server:
            backends = {path: OpenAILLM(model=server.alias, base_url=server.base_url, max_tokens=args.max_tokens,
                                        structured_methods=None if path == "structured" else ())
                        for path in args.paths}
            # question by question, every pipeline and path each time: an interrupted run stays balanced
            for i, rec in enumerate(records):
                for name in args.pipelines:
                    for path in args.paths:
                        if (rec.qid, name, path) in done:
                            continue
                        row = run_one(name, path, backends[path], rec, docs, embedder)
                        rows.append(row)
                        print(f"{name:9s} {path:10s} {i + 1:3d}/{len(records)} calls={row['calls']} "
                              f"valid={row['valid']}/{row['structured']} {row['seconds']:.1f}s", flush=True)
                        out.write_text(json.dumps({"summary": summarise(rows), "rows": rows}, indent=1) + "\n",
                                       encoding="utf-8")
    methods: dict[str, str] = {}
    for row in rows:
        if row["path"] == "structured":
            methods.setdefault(row["pipeline"], ", ".join(row["methods"]) or "none")
    summary = summarise(rows)
    out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    section = markdown(summary, args, methods)
    print(section)
    if args.results_md:
        _write_md(section, args.results_md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
