"""What the README and the docs' first page say in prose matches what the repository measured."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "RESULTS.md"

#: Column header (README / docs/index.md) -> column header of the RESULTS learned-split table.
HEADLINE_COLUMNS = {
    "cosine top-k": "cosine",
    "gMMR (λ from train)": "fixed gMMR (train)",
    "adaptive (learned λ)": "adaptive",
    "DR-RAG (retrieval only)": "DR-RAG",
    "**`learned`**": "**learned**",
    "λ Oracle (gold labels)": "λ Oracle",
}


def _table(text: str, first_header: str) -> list[dict[str, str]]:
    """The rows of the Markdown table whose header row starts with ``first_header``, by header."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(header, (c.strip() for c in line.strip("|").split("|")), strict=True)))
    return rows


def _number(cell: str) -> float:
    match = re.search(r"-?\d+(?:\.\d+)?", cell)
    assert match, cell
    return float(match.group())


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_headline_figures_come_from_the_learned_split_results(page: str) -> None:
    """Every figure of the headline table is the RESULTS "Learned set selector" table's figure
    (``benchmarks/learned_split.py --no-cv``); columns added later (support-level recall) are not
    checked here."""
    results = RESULTS.read_text(encoding="utf-8")
    section = results[results.index("## Learned set selector") :]
    source = {(r["dataset"], r["protocol"]): r for r in _table(section, "| dataset | protocol | n |")}
    rows = _table((ROOT / page).read_text(encoding="utf-8"), "| dataset | protocol | cosine top-k |")
    assert {(r["dataset"], r["protocol"]) for r in rows} == set(source)
    for row in rows:
        for ours, theirs in HEADLINE_COLUMNS.items():
            assert _number(row[ours]) == _number(source[(row["dataset"], row["protocol"])][theirs]), (page, row, ours)


def test_the_drrag_example_finds_its_stage2_document_only_with_titles() -> None:
    """The README's DR-RAG block says the pair classifier reads the ``title: `` prefixes."""
    pytest.importorskip("sentence_transformers")  # the default embedder of InMemorySource
    from diverse_core.pipelines import InMemorySource
    from diverse_core.pipelines.drrag import DRRAG

    titled = [
        "Ruleta: Ruleta is a song recorded by Romanian singer Inna for her fifth studio album.",
        "Ruleta: Ruleta was released as a single in 2017 and features Erik.",
        "Ruleta: The music video for Ruleta was filmed in Bucharest.",
        "Inna: Inna, born Elena Alexandra Apostoleanu, is a Romanian singer born in Mangalia.",
        "Mangalia: Mangalia is a city and port on the Black Sea coast of Romania.",
        "Inna: Inna rose to fame with the single Hot in 2008.",
    ]
    question = "What is the place of birth of the performer of the song Ruleta?"
    for docs, stage2 in ((titled, ["3"]), ([t.split(": ", 1)[1] for t in titled], [])):
        res = DRRAG(None, k=3, fill=True).run(question, InMemorySource(docs), generate=False)
        assert [d.id for d in res.documents if d.reason["stage"] == 2] == stage2
        assert bool(res.notes) == (not stage2)  # the untitled run says why (a note: ok stays true)


def test_the_swap_example_differs_by_the_weight_not_the_formula() -> None:
    """The README says: on its six chunks LangChain's MMR and gMMR pick the same three at equal
    weight (0.5 and 0.7), and the shown difference comes from MMR's default 0.5 against gMMR's 0.7."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from mdblocks import read_blocks

    block = next(b for b in read_blocks(ROOT / "README.md") if "langchain" in b.extras)
    setup = block.code[: block.code.index("retriever = ")]  # chunks, question, the store
    namespace: dict[str, object] = {}
    exec(compile(setup, "README.md", "exec"), namespace)
    from langchain_diverse import as_diverse_retriever

    store, question = namespace["store"], namespace["question"]

    def picks(search_type: str, lam: float) -> list[str]:
        kwargs = {"k": 3, "fetch_k": 6, "lambda_mult": lam}
        retriever = (store.as_retriever(search_type="mmr", search_kwargs=kwargs) if search_type == "lc-mmr"  # type: ignore[attr-defined]
                     else as_diverse_retriever(store, search_type="gmmr", search_kwargs=kwargs))
        return [d.page_content for d in retriever.invoke(question)]

    for lam in (0.5, 0.7):
        assert picks("lc-mmr", lam) == picks("gmmr", lam), lam
    assert picks("lc-mmr", 0.5) != picks("gmmr", 0.7)


def test_support_and_bare_headline_figures_come_from_the_issue45_table() -> None:
    """The home page's second table (support-level recall, bare units with ids) repeats the issue-45
    table's MiniLM figures (``benchmarks/default_model.py``, ``benchmarks/results/issue45_minilm.json``)."""
    import json

    data = json.loads((ROOT / "benchmarks" / "results" / "issue45_minilm.json").read_text(encoding="utf-8"))
    cells = {(r["dataset"], r["protocol"], r["form"], r["level"]): r for r in data["rows"]}
    rows = _table((ROOT / "docs" / "index.md").read_text(encoding="utf-8"), "| dataset | protocol | cosine | gMMR")
    assert len(rows) == 6
    names = {"HotpotQA": "hotpotqa", "MuSiQue": "musique", "2Wiki": "2wiki"}
    columns = {"cosine": "cosine", "gMMR (λ 0.8)": "gmmr", "adaptive": "adaptive", "**`learned`**": "auto",
               "λ Oracle": "oracle"}
    for row in rows:
        key = (names[row["dataset"]], row["protocol"])
        for ours, theirs in columns.items():
            assert _number(row[ours]) == round(100 * cells[(*key, "text", "support")][theirs], 1), (key, ours)
        page, strict = (float(x) for x in row["bare + ids: `learned` (page / support)"].split("/"))
        assert page == round(100 * cells[(*key, "ids", "page")]["auto"], 1), key
        assert strict == round(100 * cells[(*key, "ids", "support")]["auto"], 1), key
        assert _number(row["bare + ids: λ Oracle (page)"]) == round(100 * cells[(*key, "ids", "page")]["oracle"], 1)
