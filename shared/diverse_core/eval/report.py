"""Writing results: summary JSON/Markdown, per-query JSON, ``RESULTS.md`` and plots."""

from __future__ import annotations

import json
import math
import platform
import re
from collections import Counter
from pathlib import Path
from typing import Any

from .config import BenchConfig
from .results import BenchResults, TaskResult, summary_rows

__all__ = ["write_outputs", "summary_markdown", "results_markdown", "task_payload", "keep_sections"]

def _num(v: float, pct: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{100 * v:.1f}" if pct else f"{v:.3f}"


def _clean(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    if isinstance(v, float):
        return round(v, 6)
    return v


def task_payload(task: TaskResult) -> dict[str, Any]:
    """The per-query record of one task (picked passage ids and every metric per setting)."""
    return {
        "dataset": task.dataset,
        "protocol": task.protocol,
        "headline_metric": task.metric,
        "qids": task.qids,
        "oracle_lambdas": task.oracle_lambdas,
        "settings": [
            {
                "method": s.method,
                "params": s.label,
                "picks": s.picks,
                "metrics": {m: [_clean(v) for v in vals] for m, vals in s.per_query.items()},
                **({"info": s.info} if any(s.info) else {}),
            }
            for s in task.settings
        ],
    }


def _timing_lines(results: BenchResults) -> list[str]:
    sec = results.seconds
    lines = [
        f"- wall time of this run: {sec.get('total', 0.0):.1f} s "
        f"(embedding {sec.get('embedding', 0.0):.1f} s for {results.texts_embedded} new texts; "
        "the rest is retrieval, selection and scoring)",
        f"- machine: {platform.machine()}, Python {platform.python_version()}",
    ]
    for t in results.tasks:
        lines.append(
            f"- {t.dataset}/{t.protocol}: {len(t.qids)} questions, {t.n_units} units, "
            f"select+score {t.seconds.get('select_and_score', 0.0):.1f} s"
        )
    return lines


def summary_markdown(results: BenchResults) -> str:
    """Every setting with every metric (means over questions; recall-type metrics in percent)."""
    k = results.config["k"]
    head = ["dataset", "protocol", "method", "params", "n", f"recall@{k}", f"support@{k}", f"all_gold@{k}", f"ndcg@{k}",
            f"mrecall@{k}", "answer_hit", "diversity", "vendi", "tau", "rho", "str_em"]
    out = [
        "# Benchmark summary",
        "",
        f"k={k}, fetch_k={results.config['fetch_k']}, model={results.config['model_name']}, "
        f"limit={results.config['limit']}, titles={results.config.get('titles', True)}, "
        f"source_ids={results.config.get('source_ids', False)}",
        "",
        "Percent: recall, support, all_gold, ndcg, mrecall, answer_hit, str_em (generated answers only). recall is "
        "page-level (a gold passage counts when any chosen unit of it is picked); support is strict (only when a chosen "
        "unit holds one of its supporting texts; '-' without that annotation). diversity = 1 - mean pairwise cosine "
        "of the picks; vendi = Vendi Score; tau/rho = agreement of pick order with cosine order.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in summary_rows(results):
        cells = [r["dataset"], r["protocol"], r["method"], r["params"], str(r["n"])]
        cells += [_num(r[m], pct=True) for m in ("recall", "support", "all_gold", "ndcg", "mrecall", "answer_hit")]
        cells += [_num(r[m]) for m in ("diversity", "vendi", "tau", "rho")]
        cells.append(_num(r["str_em"], pct=True))
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "## Timing", "", *_timing_lines(results), ""]
    return "\n".join(out)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _table(rows: list[dict[str, Any]], metric: str, title: str) -> list[str]:
    out = [f"| dataset | protocol | method | params | {title} |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['dataset']} | {r['protocol']} | {r['method']} | {r['params']} | {_num(r[metric], pct=True)} |")
    return out


def _headline(results: BenchResults) -> list[str]:
    """One line per task: cosine, the best fixed value of each diversity method, the Oracle."""
    k = results.config["k"]
    out = [
        f"## In-sample reference (percent, metric@{k} of each task; best fixed chosen on these questions)",
        "",
        "Best fixed parameter per method is picked on the same questions (in-sample), so it is an "
        "optimistic reference, like the Oracle. The out-of-sample headline (chosen on TRAIN) is above.",
        "",
        "| dataset | protocol | metric | cosine | best MMR | best gMMR | best Dartboard | best Vendi | oracle |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in results.tasks:
        cells = [t.dataset, t.protocol, f"{t.metric}@{k}"]
        for method in ("cosine", "mmr", "gmmr", "dartboard", "vendi", "oracle"):
            cand = [s for s in t.settings if s.method == method]
            if not cand:
                cells.append("-")
                continue
            best = max(cand, key=lambda s: (s.mean(t.metric), s.label))
            tag = "" if method in ("cosine", "oracle") else f" ({best.label})"
            cells.append(_num(best.mean(t.metric), pct=True) + tag)
        out.append("| " + " | ".join(cells) + " |")
    return [*out, ""]


def _oracle_sentence(grid: Any) -> str:
    if not len(grid):
        return "No Oracle row (run without the full gMMR grid, or with --no-oracle)."
    return (
        f"`oracle` picks, per question, the gMMR lambda_mult in {grid[0]:g}..{grid[-1]:g} with the best "
        "score (ties: upper median), as in DF-RAG Sec. 3.3, but scored on the table's retrieval metric "
        "(recall; NDCG for RGB; MRecall for ASQA) instead of answer F1."
    )


def results_markdown(results: BenchResults) -> str:
    """The committed ``benchmarks/RESULTS.md``: the command, then one table per headline metric."""
    k = results.config["k"]
    rows = summary_rows(results)
    metric_of = {(t.dataset, t.protocol): t.metric for t in results.tasks}
    cmd = results.config.get("command") or "diverse-rag bench"
    methods = ", ".join(
        ("cosine" if m["method"] == "topk" else m["method"]) + (f" {m['values']}" if m["values"] else "")
        for m in results.config["methods"]
    )
    out = [
        "# Retrieval benchmark results",
        "",
        "Generated by (from the repository root; embeddings are cached in `$DIVERSE_RAG_CACHE` or the user cache folder):",
        "",
        "```bash",
        cmd,
        "```",
        "",
        f"Retrieval level only (no LLM). Embedder: {results.config['model_name']}; each question "
        f"retrieves fetch_k={results.config['fetch_k']} candidates by cosine from the pooled corpus, then each "
        f"method selects k={k}. Methods and grids: {methods}. `cosine` is plain top-k. "
        "MMR uses LangChain's convention (lambda_mult=1 is pure relevance). "
        + _oracle_sentence(results.config.get("oracle_lambdas") or ()),
        "",
        "Protocols: `paragraphs` = every passage of the dataset pooled and indexed as `title: text` "
        "(identical passages merged); `chunks` = every passage split into windows of 2 consecutive sentences "
        "(stride 1), indexed as `title: window`, all windows pooled; recall@k is then gold-document coverage "
        "(fraction of the question's gold passages hit by at least one chosen window).",
        "",
        *_timing_lines(results),
        "",
    ]
    out += _headline(results)
    def of(metric: str) -> list[dict[str, Any]]:
        return [r for r in rows if metric_of[(r["dataset"], r["protocol"])] == metric]

    recall_rows = of("recall")
    support_rows = [r for r in recall_rows if r["protocol"] == "chunks" and not _missing(r.get("support"))]
    out += _section(f"## Gold-passage recall@{k} (percent)", recall_rows, "recall", f"recall@{k}")
    out += _section(f"## Support-level recall@{k}, chunks (percent, strict)", support_rows, "support",
                    f"support@{k}",
                    "A gold passage counts only when a chosen window of it holds one of its supporting texts "
                    "(HotpotQA: a supporting sentence; MuSiQue: the answer of the hop it supports; 2Wiki pooled: "
                    "the answer or another gold page's title, a proxy); the table above counts any window of it.")
    out += _section(f"## RGB en_fact NDCG@{k} (percent)", of("ndcg"), "ndcg", f"ndcg@{k}",
                    "Dartboard protocol: every query's positive and negative passages merged into one corpus; "
                    f"binary relevance = that query's positives; NDCG@{k}.")
    out += _section(f"## ASQA MRecall@{k} (percent)", of("mrecall"), "mrecall", f"mrecall@{k}",
                    "Corpus: the annotators' knowledge snippets of all 948 dev questions pooled (our stand-in; "
                    "ASQA ships no retrieval corpus).")
    out += ["Full metrics (all-gold rate, NDCG, answer hit, diversity, Vendi Score, Kendall tau, Spearman rho): "
            "`benchmarks/results/summary.md`; figures: `benchmarks/results/*.png`.", ""]
    return "\n".join(out)


def _section(heading: str, rows: list[dict[str, Any]], key: str, label: str, note: str = "") -> list[str]:
    """The lines of one results section: its heading, ``note`` (if any) and the table of ``rows``
    by ``key``; none when there are no rows."""
    if not rows:
        return []
    return [heading, "", *([note, ""] if note else []), *_table(rows, key, label), ""]


_SECTION = re.compile(r"<!-- ([\w-]+):start.*?-->.*?<!-- \1:end -->", re.S)


def keep_sections(old: str, new: str) -> str:
    """``new`` with every ``<!-- NAME:start ... -->`` ... ``<!-- NAME:end -->`` block of ``old``
    that ``new`` lacks inserted after its title (sections other scripts maintain survive a rerun)."""
    blocks = [m.group(0) for m in _SECTION.finditer(old) if m.group(0).split("-->")[0] not in new]
    if not blocks:
        return new
    title, sep, body = new.partition("\n\n")
    return title + sep + "\n\n".join(blocks) + "\n\n" + body


def write_outputs(results: BenchResults, config: BenchConfig) -> None:
    """Write ``summary.json``, ``summary.md``, per-query JSON, plots and optionally RESULTS.md."""
    assert config.out_dir is not None
    out = Path(config.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "config": results.config,
        "seconds": {k: round(v, 2) for k, v in results.seconds.items()},
        "texts_embedded": results.texts_embedded,
        "rows": [{k: _clean(v) for k, v in r.items()} for r in summary_rows(results)],
        "tasks": [
            {
                "dataset": t.dataset,
                "protocol": t.protocol,
                "headline_metric": t.metric,
                "n_questions": len(t.qids),
                "n_units": t.n_units,
                "seconds": {k: round(v, 2) for k, v in t.seconds.items()},
                "oracle_lambda_counts": {f"{k:g}": v for k, v in sorted(Counter(t.oracle_lambdas).items())},
                "gmmr_jaccard": {"values": t.jaccard_values, "matrix": t.jaccard},
            }
            for t in results.tasks
        ],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(results), encoding="utf-8")
    pq = Path(config.per_query_dir) if config.per_query_dir is not None else out / "per_query"
    pq.mkdir(parents=True, exist_ok=True)
    for t in results.tasks:
        (pq / f"{t.dataset}__{t.protocol}.json").write_text(json.dumps(task_payload(t)), encoding="utf-8")
    if config.results_md is not None:
        md = Path(config.results_md)
        old = md.read_text(encoding="utf-8") if md.is_file() else ""
        md.write_text(keep_sections(old, results_markdown(results)), encoding="utf-8")
    if config.plots:
        from .plots import draw_all

        draw_all(results, out)
