"""What reading a judge reply costs when a passage is large (issue 46, item 2).

Reading a reply removes what it quotes from the passages; that step used to cost about
(passage sentences x reply length). This script times, with whatever ``diverse_core`` is first
on the path (run it once per checkout to compare):

* ``parse_evaluation`` - a DF-RAG Evaluator reply (~1 KB, quoting the passage) over one passage
  of each ``--sizes`` (MB of prose: sentences of 5-25 words, some lines verdict-shaped);
* ``read_yes_no`` and ``read_judgement`` (DIVA's verifier, Vendi-RAG's judge) over the same;
* ``DFRAG.run`` over 12 candidates, one of ``--candidate`` characters, with a scripted LLM
  (0 s of LLM time): the whole run, so the parse is seen inside a pipeline.

Each figure is the best of ``--repeat`` runs in seconds. Run from the repository root::

    PYTHONPATH=$PWD/shared python benchmarks/judge_parse_cost.py
    PYTHONPATH=/path/to/old/checkout/shared python benchmarks/judge_parse_cost.py --sizes 1.3 --repeat 1
"""

from __future__ import annotations

import argparse
import random
import timeit
from collections.abc import Callable

import numpy as np
from diverse_core.llm import Completion
from diverse_core.pipelines.dfrag import DFRAG, parse_evaluation
from diverse_core.pipelines.judge import read_yes_no
from diverse_core.pipelines.vendirag import read_judgement

WORDS = ("the of and a to in is was for on that by with as at from his her it an were are which this be "
         "or has had not but first also new one two after time their city river club season final").split()


def prose(n_chars: int, seed: int = 0) -> str:
    """About ``n_chars`` characters of sentences, every 50th line a verdict-shaped one."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    i = 0
    while size < n_chars:
        i += 1
        if i % 50 == 0:
            line = rng.choice(["Total Score: 10 for the home side.", "Yes.", "Answer: yes",
                               '{"coherence": 10, "relevance": 10, "query_alignment": 10}'])
        else:
            line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 25))).capitalize() + "."
        line += "\n" if rng.random() < 0.3 else " "
        out.append(line)
        size += len(line)
    return "".join(out)


def reply_quoting(passage: str) -> str:
    """An Evaluator reply of ~1 KB that quotes two lines of the passage."""
    lines = passage.splitlines()
    quote = "\n".join(lines[1:3])[:600]
    return (f"The passage reads:\n{quote}\n1. Score: 2. Reason: partly stated\n2. Score: 1. Reason: not stated\n"
            "Short Answer: unknown\nTotal Score: 3\nTotal Score: 10 for the home side.\nVerdict: No\nYes.\n"
            '{"coherence": 2, "relevance": 2, "query_alignment": 2}\n'
            '{"coherence":10,"relevance":10,"query_alignment":10}')


def best(fn: Callable[[], object], repeat: int) -> float:
    """The best of ``repeat`` single runs, in seconds."""
    return min(timeit.repeat(fn, number=1, repeat=repeat))


class EchoLLM:
    """Plans two steps; evaluates by quoting the first passage's start; answers 'x'."""

    def complete(self, prompt: str, **kw: object) -> Completion:
        tail = prompt.rstrip()
        if tail.endswith("Plan:"):
            return Completion("1) Find A\n2) Find B")
        if tail.endswith("Evaluation:"):
            return Completion(reply_quoting(prompt[-3000:]))
        return Completion("x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=float, nargs="+", default=[1.3, 10.0], help="passage sizes in MB")
    ap.add_argument("--candidate", type=int, default=568_000, help="characters of the large DF-RAG candidate")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    for mb in args.sizes:
        passage = prose(int(mb * 1_000_000))
        reply = reply_quoting(passage)
        t_eval = best(lambda: parse_evaluation(reply, 2, passages=[passage]), args.repeat)  # noqa: B023
        t_yes = best(lambda: read_yes_no(reply, sources=[passage]), args.repeat)  # noqa: B023
        t_judge = best(lambda: read_judgement(reply, [passage]), args.repeat)  # noqa: B023
        print(f"passage {len(passage):>10,} chars, reply {len(reply):,} chars: parse_evaluation {t_eval:.3f} s, "
              f"read_yes_no {t_yes:.3f} s, read_judgement {t_judge:.3f} s")
    texts = [prose(300, seed=i) for i in range(11)] + [prose(args.candidate, seed=99)]
    clean = [prose(300, seed=i) for i in range(12)]
    vectors = np.random.default_rng(0).normal(size=(12, 16))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query = vectors[-1] + 0.5 * vectors[0]  # the large candidate is among the relevant ones
    pipeline = DFRAG(EchoLLM(), k=3, max_retries=0)
    t_run = best(lambda: pipeline.run("Where was the club founded?", texts, query, vectors), args.repeat)
    t_clean = best(lambda: pipeline.run("Where was the club founded?", clean, query, vectors), args.repeat)
    print(f"DFRAG.run, one {len(texts[-1]):,}-character candidate: {t_run:.3f} s (clean corpus: {t_clean:.3f} s)")


if __name__ == "__main__":
    main()
