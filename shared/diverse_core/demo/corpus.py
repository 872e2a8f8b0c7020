"""A small corpus written for the demo: fictional multi-hop facts with redundant paraphrases.

Each question needs two or three "bridge" chunks; the corpus also holds several
near-paraphrases of the most query-like fact, the redundancy that fills a plain
top-k context in real chunked documents.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DemoQuestion", "CHUNKS", "QUESTIONS"]


@dataclass(frozen=True)
class DemoQuestion:
    """A demo question and the facts needed to answer it.

    ``facts`` lists one group of chunk ids per fact; any chunk of a group supplies that fact.
    """

    question: str
    answer: str
    facts: tuple[tuple[str, ...], ...]


CHUNKS: dict[str, str] = {
    # Question 1: library -> architect -> birthplace -> river
    "lib-1": "The Harbor Light Library in Port Amsel was designed by the architect Mara Velde.",
    "lib-2": "Architect Mara Velde drew up the plans for Port Amsel's Harbor Light Library.",
    "lib-3": "Port Amsel's Harbor Light Library, a design of Mara Velde, opened to readers in 1968.",
    "lib-4": "Visitors to the Harbor Light Library admire the glass reading hall designed by Mara Velde.",
    "lib-5": "The Harbor Light Library holds more than two hundred thousand books and maps.",
    "velde-birth": "Mara Velde was born in 1921 in the small town of Oskarby.",
    "oskarby-river": "Oskarby lies on the banks of the river Lenn, which carries timber to the sea.",
    # Question 2: cup -> winning team -> coach
    "cup-1": "The first Coastal Cup was played in 1952 and was won by the Amsel Rovers.",
    "cup-2": "In 1952 the Amsel Rovers won the inaugural Coastal Cup tournament.",
    "cup-3": "The Amsel Rovers lifted the very first Coastal Cup trophy in the summer of 1952.",
    "cup-4": "The Coastal Cup final of 1952 ended with an Amsel Rovers victory over Dunmore.",
    "rovers-coach": "Ida Brenner coached the Amsel Rovers from 1949 to 1956.",
    "brenner-bio": "Ida Brenner, a former goalkeeper, later wrote a book about coaching young players.",
    # Question 3: glacier -> country -> export
    "glacier-1": "The Hvitfell glacier is a broad ice field that has been retreating since 1900.",
    "glacier-2": "Since 1900 the broad Hvitfell ice field has steadily retreated.",
    "glacier-3": "Scientists measure the retreat of the Hvitfell glacier every summer.",
    "glacier-4": "Hvitfell, a wide glacier, loses several metres of ice in a warm year.",
    "glacier-loc": "The Hvitfell glacier sits in the northern mountains of Norland.",
    "norland-export": "Norland's main export is salted cod, shipped mostly to southern ports.",
    # Distractors
    "amsel-port": "Port Amsel is a busy harbour town famous for its fish market.",
    "dunmore": "Dunmore is a fishing village whose football club was founded in 1931.",
    "lenn-bridge": "A stone bridge over a northern river was completed in 1890.",
    "norland-capital": "The capital of Norland is Vesterhavn, a city of bridges.",
    "timber": "Timber from the northern forests is floated downstream each spring.",
}

QUESTIONS: tuple[DemoQuestion, ...] = (
    DemoQuestion(
        question="Which river flows through the birthplace of the architect of the Harbor Light Library?",
        answer="the Lenn",
        facts=(("lib-1", "lib-2", "lib-3", "lib-4"), ("velde-birth",), ("oskarby-river",)),
    ),
    DemoQuestion(
        question="Who coached the team that won the first Coastal Cup?",
        answer="Ida Brenner",
        facts=(("cup-1", "cup-2", "cup-3", "cup-4"), ("rovers-coach",)),
    ),
    DemoQuestion(
        question="What is the main export of the country where the Hvitfell glacier is located?",
        answer="salted cod",
        facts=(("glacier-loc",), ("norland-export",)),
    ),
)
