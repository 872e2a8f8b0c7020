"""Every shipped prompt keeps its wording to the byte (issue 36: the prompts share their repeated
pieces, e.g. DF-RAG's Evaluator scale, instead of writing them twice).

The hashes were taken from the prompts as they stood before that refactor (commit cb40eff):
every module-level template / system instruction, and every role request (system message, user
message, schema name, text prompt, sources) rendered for fixed inputs, with and without a
passage cut, and with a replaced template (text path)."""

from __future__ import annotations

import hashlib
import importlib
import json
from typing import Any

import pytest
from diverse_core.pipelines.dfrag.prompts import PromptSet
from diverse_core.pipelines.diva.prompts import DivaPrompts
from diverse_core.pipelines.drrag import DRRAG
from diverse_core.pipelines.vendirag.prompts import VendiPrompts

CONSTANTS = {
    "dfrag.prompts.EVALUATOR_EXAMPLES": "301c8492e18950ee",
    "dfrag.prompts.EVALUATOR_SYSTEM": "ab20589006535d18",
    "dfrag.prompts.EVALUATOR_TEMPLATE": "7d0284237e166173",
    "dfrag.prompts.GENERATOR_SYSTEM": "e56f9e37104fa5d5",
    "dfrag.prompts.GENERATOR_TEMPLATE": "d584dc51adbbcc7f",
    "dfrag.prompts.INCREMENTAL_CONTEXT_TEMPLATE": "65e21ff4f81a3554",
    "dfrag.prompts.PLANNER_SYSTEM": "4ecac9d780f8e4cf",
    "dfrag.prompts.PLANNER_TEMPLATE": "f9a2c4445f11f660",
    "diva.prompts.AMBIGUITY_SYSTEM": "6bf366a974585fd8",
    "diva.prompts.AMBIGUITY_TEMPLATE": "ae7f88cb3b543f58",
    "diva.prompts.ANSWER_SYSTEM": "aadde9e1f241c9c7",
    "diva.prompts.ANSWER_TEMPLATE": "f3ff1863f7cabb32",
    "diva.prompts.CLOSED_BOOK_SYSTEM": "cd77038cc5e632b2",
    "diva.prompts.CLOSED_BOOK_TEMPLATE": "50cdac050879eea6",
    "diva.prompts.EXTRACT_SYSTEM": "55011fb196f57ed3",
    "diva.prompts.EXTRACT_TEMPLATE": "2e27fb67a4cdb7e4",
    "diva.prompts.REWRITE_SYSTEM": "002bb01c65f34f6a",
    "diva.prompts.REWRITE_TEMPLATE": "a667d1f39204fdc6",
    "diva.prompts.VERIFY_SYSTEM": "56003ebdd19eef97",
    "diva.prompts.VERIFY_TEMPLATE": "c95c52adcf678449",
    "vendirag.prompts.ANSWER_SYSTEM": "230f1464b4dc2771",
    "vendirag.prompts.ANSWER_TEMPLATE": "9d84f5f35350e0c0",
    "vendirag.prompts.JUDGE_RETRY_NOTE": "399976198b3d91bf",
    "vendirag.prompts.JUDGE_SYSTEM": "e10c3cf25b127637",
    "vendirag.prompts.JUDGE_TEMPLATE": "311615c865f311ca",
    "vendirag.prompts.REASONING_SYSTEM": "696fac930ff1a073",
    "vendirag.prompts.REASONING_TEMPLATE": "f78e04516be895b4",
    "vendirag.prompts.REWRITE_SYSTEM": "33fea03be9e1fb85",
    "vendirag.prompts.REWRITE_TEMPLATE": "2b542d96e3afc623",
    "drrag.pipeline.GENERATOR_SYSTEM": "cd9967fd73b5937b",
    "drrag.pipeline.GENERATOR_TEMPLATE": "dbcf896ae91da3d9",
    "drrag.pipeline.UNTITLED_WARNING": "8f944fbabd1f28bc",
}

REQUESTS = {
    "dfrag.planner/None": "cd876f690754b632",
    "dfrag.evaluator/None": "56379e3f0c7a1c04",
    "dfrag.generator/None": "b9c22f58b2448d7c",
    "dfrag.generator_ic/None": "daf37cfca326f8a1",
    "diva.ambiguity/None": "29a35cd672a6ca24",
    "diva.rewrite/None": "9b3e7c0e705e2c1a",
    "diva.verify/None": "9ef2f90adc2fe545",
    "diva.extract/None": "792145bbe45799c5",
    "diva.answer/None": "4f645dea5ff66e32",
    "diva.closed_book/None": "1b2e3079f833bd2c",
    "vendirag.reasoning/None": "f0640d8177e84df4",
    "vendirag.answer/None": "9eaee39ed37b7c59",
    "vendirag.judge/None": "e80926700f93736d",
    "vendirag.judge_retry/None": "48c18ca1c57ee0f2",
    "vendirag.rewrite/None": "e7de25b2f41eb4c6",
    "dfrag.planner/12": "cd876f690754b632",
    "dfrag.evaluator/12": "229cb575ba4c4591",
    "dfrag.generator/12": "aa2349d9d475eabb",
    "dfrag.generator_ic/12": "7a6e40705bd97c7a",
    "diva.ambiguity/12": "29a35cd672a6ca24",
    "diva.rewrite/12": "9b3e7c0e705e2c1a",
    "diva.verify/12": "d5f9ca538859b765",
    "diva.extract/12": "25ba8434687d98ef",
    "diva.answer/12": "b65ced61dca4a4a3",
    "diva.closed_book/12": "1b2e3079f833bd2c",
    "vendirag.reasoning/12": "e91c6c649d88e23a",
    "vendirag.answer/12": "18eee881a4c23934",
    "vendirag.judge/12": "55dac5ffa0838a82",
    "vendirag.judge_retry/12": "35355ac1f49fae8e",
    "vendirag.rewrite/12": "e7de25b2f41eb4c6",
    "drrag.generator": "a5c4b70651ccf732",
    "dfrag.planner/replaced": "636f626e7632feba",
    "diva.verify/replaced": "31736950e40b83c9",
    "vendirag.judge/replaced": "9b5b7483d5647832",
}


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _req(r: Any) -> str:
    return _h(json.dumps([r.role, [[m.role, m.content] for m in r.messages],
                          None if r.schema is None else r.schema.name, r.prompt, list(r.sources)]))


def _rendered() -> dict[str, str]:
    q, ps = "Who wrote  Tales?", ["Ann wrote Tales in 1901.", "Tales is a long book about the sea and ships."]
    steps = ["find the author", "find the year"]
    out = {}
    for cut in (None, 12):
        p = PromptSet(max_passage_chars=cut)
        out[f"dfrag.planner/{cut}"] = _req(p.planner_request(q))
        out[f"dfrag.evaluator/{cut}"] = _req(p.evaluator_request(q, steps, ps))
        out[f"dfrag.generator/{cut}"] = _req(p.generator_request(q, ps))
        out[f"dfrag.generator_ic/{cut}"] = _req(p.generator_request(q, ps, steps, "Ann"))
        d = DivaPrompts(max_passage_chars=cut)
        out[f"diva.ambiguity/{cut}"] = _req(d.ambiguity_request(q))
        out[f"diva.rewrite/{cut}"] = _req(d.rewrite_request(q, "Which  Tales?", 3))
        out[f"diva.verify/{cut}"] = _req(d.verify_request("Who wrote Tales (1901)?", ps))
        out[f"diva.extract/{cut}"] = _req(d.extract_request(q, ["Who wrote it?", "When?"], ps))
        out[f"diva.answer/{cut}"] = _req(d.answer_request(q, [("Who wrote it?", "Ann")], ps))
        out[f"diva.closed_book/{cut}"] = _req(d.closed_book_request(q))
        v = VendiPrompts(max_chunk_chars=cut)
        out[f"vendirag.reasoning/{cut}"] = _req(v.reasoning_request(q, ps))
        out[f"vendirag.answer/{cut}"] = _req(v.answer_request(q, ps, ["note one", "note two"]))
        out[f"vendirag.judge/{cut}"] = _req(v.judge_request(q, "Ann", ps))
        out[f"vendirag.judge_retry/{cut}"] = _req(v.judge_request(q, "Ann", ps, retry=True))
        out[f"vendirag.rewrite/{cut}"] = _req(v.rewrite_request(q, "Tales", "Ann", "steps"))
    out["drrag.generator"] = _req(DRRAG(k=2).request(q, ps))
    out["dfrag.planner/replaced"] = _req(PromptSet(planner="Q: {question}").planner_request(q))
    out["diva.verify/replaced"] = _req(DivaPrompts(verify="{interpretation} {passages}").verify_request(q, ps))
    out["vendirag.judge/replaced"] = _req(
        VendiPrompts(judge="{question} {answer} {passages}").judge_request(q, "A", ps))
    return out


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_every_shipped_template_keeps_its_wording(name: str) -> None:
    module, _, constant = name.rpartition(".")
    text = getattr(importlib.import_module(f"diverse_core.pipelines.{module}"), constant)
    assert _h(text) == CONSTANTS[name]


def test_every_rendered_request_keeps_its_wording() -> None:
    got = _rendered()
    assert sorted(got) == sorted(REQUESTS)
    assert {k: v for k, v in got.items() if v != REQUESTS[k]} == {}


def test_the_hash_sees_a_one_character_change() -> None:
    from diverse_core.pipelines.dfrag import prompts

    assert _h(prompts.EVALUATOR_TEMPLATE.replace("5 - ", "5 -  ", 1)) != CONSTANTS["dfrag.prompts.EVALUATOR_TEMPLATE"]
