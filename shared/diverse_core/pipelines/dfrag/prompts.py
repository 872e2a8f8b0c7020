"""Prompts of the DF-RAG Planner, Evaluator and Generator (Khan et al. 2026, App. A.3), in our
own words with the paper's structure: a one-example Planner, a strict 0-5 per-step Evaluator with
three worked examples (we also ask for a ``Short Answer:``, reused by the Incremental Context),
and a Generator that answers from the passages only.

Each role has a ``str.format`` text template and, for the structured path
(``docs/guides/structured-output.md``), ``*_system`` instructions and a reply schema; a role whose
text template you replaced keeps the text path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...llm.structured import (
    OutputSchema,
    RoleRequest,
    array,
    int_range,
    obj,
    passage_blocks,
    string,
)
from ..structured import ANSWER_SCHEMA, DATA_NOTE, role_request, shipped_schema

__all__ = [
    "PLANNER_TEMPLATE",
    "EVALUATOR_TEMPLATE",
    "EVALUATOR_EXAMPLES",
    "EVALUATOR_SCALE",
    "GENERATOR_TEMPLATE",
    "INCREMENTAL_CONTEXT_TEMPLATE",
    "PromptSet",
    "format_plan",
    "format_passages",
    "PLANNER_SYSTEM",
    "EVALUATOR_SYSTEM",
    "GENERATOR_SYSTEM",
    "MAX_PLAN_STEPS",
    "planner_schema",
    "evaluator_schema",
]

#: Most plan steps a Planner may return (the text parser reads as many).
MAX_PLAN_STEPS = 8

PLANNER_TEMPLATE = """You plan how to answer a question. Split the question into the fewest sub-questions that, answered in order, give the answer. Use the exact format of the example: a numbered list, one sub-question per line.

Example
Question: In which country was the composer of the opera 'Rusalka' born?
Plan:
1) Identify who composed the opera 'Rusalka'
2) Identify the country where that composer was born

Write only the plan for this question, with no other text.
Question: {question}
Plan:
"""

EVALUATOR_EXAMPLES = """Example 1
Question: In which city was the author of 'Dracula' born?
Plan:
1) Find who wrote the novel 'Dracula'
2) Find the city where that writer was born
Passages:
[1] "Dracula is an 1897 Gothic horror novel by the Irish author Bram Stoker..."
[2] "Bram Stoker was born on 8 November 1847 in Clontarf, on the north side of Dublin..."
Evaluation:
1. Score: 5. Reason: Bram Stoker is named as the author.
2. Score: 5. Reason: his birth in Clontarf, Dublin is stated.
Short Answer: Dublin
Total Score: 10

Example 2
Question: In what year did the architect of the Sydney Opera House die?
Plan:
1) Find the architect of the Sydney Opera House
2) Find the year that architect died
Passages:
[1] "The Sydney Opera House opened in 1973 and hosts more than 1,500 performances a year..."
[2] "Its sail-like shells are covered with over a million glazed tiles..."
Evaluation:
1. Score: 0. Reason: no architect is named.
2. Score: 0. Reason: no date of death appears.
Short Answer: unknown
Total Score: 0

Example 3
Question: Who founded the maker of the Model S, and when was the company founded?
Plan:
1) Find the company that makes the Model S
2) Find who founded that company
3) Find when the company was founded
Passages:
[1] "The Model S is an electric sedan built by Tesla..."
[2] "Eberhard and Tarpenning, both engineers, had earlier sold an e-book business..."
[3] "Tesla was incorporated in July 2003 in San Carlos, California..."
Evaluation:
1. Score: 5. Reason: Tesla is named as the maker.
2. Score: 2. Reason: two engineers appear but are never said to be the founders.
3. Score: 5. Reason: incorporated in July 2003 is stated.
Short Answer: Tesla, founded July 2003; founders unclear
Total Score: 12
"""

#: The Evaluator's 0-5 scale per plan step, the same on the text and the structured path.
EVALUATOR_SCALE = """Scale for each step:
5 - the fact is stated directly and precisely
4 - the fact is clearly present and complete
3 - mostly present; a small detail is missing but follows from the text
2 - partly present; key details are missing
1 - barely related or vague
0 - absent, or reachable only by guessing
"""

EVALUATOR_TEMPLATE = """You are a strict judge of retrieved passages. For each step of the plan, decide how well the passages, taken together, supply the fact that step needs. Only count facts the passages state outright; nothing for guesses, inferences or loosely related text.

""" + EVALUATOR_SCALE + """
Answer with one line per step: "<step number>. Score: <0-5>. Reason: <a few words>". Then one line "Short Answer: <the answer the passages support, or unknown>". The last line must be "Total Score: <sum of the step scores>".

{examples}
Now evaluate these passages in the same format.
Question: {question}
Plan:
{plan}
Passages:
{passages}
Evaluation:
"""

GENERATOR_TEMPLATE = """Answer the question using the passages below. Reply with the answer only: a few words, no explanation.

Passages:
{context}
{incremental_context}
Answer the question using the passages above. Reply with the answer only: a few words, no explanation.
Question: {question}
Answer:"""

INCREMENTAL_CONTEXT_TEMPLATE = """
Plan used to check the passages:
{plan}
Draft answer from that check: {short_answer}
"""


PLANNER_SYSTEM = """You plan how to answer a question. Break it into the fewest sub-questions that, answered one after the other, lead to the answer; each step is one short sub-question.

Example: for "In which country was the composer of the opera 'Rusalka' born?" the plan is
{"steps": ["Identify who composed the opera 'Rusalka'", "Identify the country where that composer was born"]}

Reply with a JSON object {"steps": [...]} and nothing else."""

EVALUATOR_SYSTEM = """You are a strict judge of retrieved passages. For each step of the plan, decide how well the passages, taken together, supply the fact that step needs. Count only facts the passages state outright; give nothing for guesses, inferences or loosely related text.

""" + EVALUATOR_SCALE + """
Reply with a JSON object: "steps" holds one entry per plan step, in order, each with a short "reason" and its "score"; "short_answer" is the answer the passages support (or "unknown"); "total_score" is the sum of the step scores.
""" + DATA_NOTE

GENERATOR_SYSTEM = """Answer the question from the passages only. Put the answer, a few words with no explanation, in the "answer" field of a JSON object.
""" + DATA_NOTE


def planner_schema(max_steps: int = MAX_PLAN_STEPS) -> OutputSchema:
    """The Planner's reply: ``{"steps": [1..max_steps sub-questions]}``.

    Example:
        >>> planner_schema().validate({"steps": []})[0].kind
        'length'
    """
    return OutputSchema("plan", obj({"steps": array(string(200, min_length=1), min_items=1,
                                                    max_items=max_steps)}), "the plan's sub-questions")


def evaluator_schema(n_steps: int) -> OutputSchema:
    """The Evaluator's reply for a plan of ``n_steps``: exactly one ``{"reason", "score"}`` per
    step (score an integer 0-5), a ``short_answer`` and ``total_score`` in 0..5*n_steps.

    Example:
        >>> s = evaluator_schema(2)
        >>> [str(p) for p in s.validate({"steps": [{"reason": "ok", "score": 9},
        ...                                        {"reason": "no", "score": 0}],
        ...                               "short_answer": "x", "total_score": 9})]
        ['steps[0].score=9 is not one of 0..5']
    """
    n = max(1, int(n_steps))
    step = obj({"reason": string(80), "score": int_range(0, 5)})
    return OutputSchema("evaluation", obj({
        "steps": array(step, min_items=n, max_items=n),
        "short_answer": string(60),
        "total_score": int_range(0, 5 * n),
    }), "per-step support scores of the passages")


def format_plan(steps: Sequence[str]) -> str:
    """Render plan steps as ``1) ...`` lines."""
    return "\n".join(f"{i}) {step}" for i, step in enumerate(steps, start=1))


def format_passages(texts: Sequence[str], max_chars: int | None = None) -> str:
    """Render passages as ``[i] "text"`` lines, each optionally cut to ``max_chars``."""
    lines = []
    for i, text in enumerate(texts, start=1):
        body = " ".join(text.split())
        if max_chars is not None and len(body) > max_chars:
            body = body[:max_chars].rstrip() + "..."
        lines.append(f'[{i}] "{body}"')
    return "\n".join(lines)


@dataclass(frozen=True)
class PromptSet:
    """The three DF-RAG prompts (``str.format`` templates).

    Attributes:
        planner: needs ``{question}``.
        evaluator: needs ``{examples}``, ``{question}``, ``{plan}``, ``{passages}``.
        evaluator_examples: the few-shot block put in ``{examples}`` ("" for zero-shot).
        generator: needs ``{context}``, ``{incremental_context}``, ``{question}``.
        incremental_context: needs ``{plan}`` and ``{short_answer}``.
        max_passage_chars: cut each passage to this many characters in evaluator and
            generator prompts (``None`` = keep whole passages).

    Example:
        >>> p = PromptSet()
        >>> "Total Score" in p.render_evaluator("Q?", ["find x"], ["x is 1"])
        True
    """

    planner: str = PLANNER_TEMPLATE
    evaluator: str = EVALUATOR_TEMPLATE
    evaluator_examples: str = EVALUATOR_EXAMPLES
    generator: str = GENERATOR_TEMPLATE
    incremental_context: str = INCREMENTAL_CONTEXT_TEMPLATE
    max_passage_chars: int | None = None
    planner_system: str = PLANNER_SYSTEM
    evaluator_system: str = EVALUATOR_SYSTEM
    generator_system: str = GENERATOR_SYSTEM


    def planner_request(self, question: str) -> RoleRequest:
        """The Planner's request (chat messages + :func:`planner_schema`; text: :meth:`render_planner`)."""
        return role_request("planner", self.planner_system, f"Question: {question.strip()}",
                            shipped_schema(self.planner, PLANNER_TEMPLATE, planner_schema()),
                            self.render_planner(question))

    def evaluator_request(self, question: str, steps: Sequence[str], passages: Sequence[str]) -> RoleRequest:
        """The Evaluator's request for one chunk set (passages as numbered data blocks)."""
        user = (f"Question: {question.strip()}\n\nPlan ({len(steps)} steps):\n{format_plan(steps)}\n\n"
                f"Passages:\n{passage_blocks(passages, self.max_passage_chars)}")
        schema = shipped_schema(self.evaluator, EVALUATOR_TEMPLATE, evaluator_schema(len(steps)))
        return role_request("evaluator", self.evaluator_system, user, schema,
                            self.render_evaluator(question, steps, passages), passages)

    def generator_request(
        self,
        question: str,
        passages: Sequence[str],
        steps: Sequence[str] | None = None,
        short_answer: str | None = None,
    ) -> RoleRequest:
        """The Generator's request (``{"answer": ...}``), with the Incremental Context when ``steps``."""
        user = f"Passages:\n{passage_blocks(passages, self.max_passage_chars)}\n"
        if steps:
            user += (f"\nPlan used to check the passages:\n{format_plan(steps)}\n"
                     f"Draft answer from that check: {short_answer or 'unknown'}\n")
        user += f"\nQuestion: {question.strip()}"
        return role_request("generator", self.generator_system, user,
                            shipped_schema(self.generator, GENERATOR_TEMPLATE, ANSWER_SCHEMA),
                            self.render_generator(question, passages, steps, short_answer), passages)

    def render_planner(self, question: str) -> str:
        """The Planner prompt for ``question``."""
        return self.planner.format(question=question.strip())

    def render_evaluator(self, question: str, steps: Sequence[str], passages: Sequence[str]) -> str:
        """The Evaluator prompt for one candidate chunk set."""
        return self.evaluator.format(
            examples=self.evaluator_examples,
            question=question.strip(),
            plan=format_plan(steps),
            passages=format_passages(passages, self.max_passage_chars),
        )

    def render_generator(
        self,
        question: str,
        passages: Sequence[str],
        steps: Sequence[str] | None = None,
        short_answer: str | None = None,
    ) -> str:
        """The Generator prompt; with ``steps`` it appends the Incremental Context."""
        incremental = ""
        if steps:
            incremental = self.incremental_context.format(
                plan=format_plan(steps), short_answer=short_answer or "unknown"
            )
        return self.generator.format(
            context=format_passages(passages, self.max_passage_chars),
            incremental_context=incremental,
            question=question.strip(),
        )
