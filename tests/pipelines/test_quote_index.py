"""The judge parser's passage index against a slow token-list reference, and its cost bounds
(issue 46: verdicts passages cannot forge; reading a reply linear in reply plus passages)."""

from __future__ import annotations

import string

from diverse_core.pipelines.judge import QuoteIndex, read_number, read_yes_no
from hypothesis import given, settings
from hypothesis import strategies as st

BOUNDARY = ".!?;\n"


def ref_pieces(text: str) -> list[list[str]]:
    """Token lists of the lines and sentences of ASCII ``text``, written out plainly."""
    pieces: list[list[str]] = []
    current = ""
    for ch in text.lower():
        if ch in BOUNDARY:
            pieces.append(current.split())
            current = ""
        else:
            current += " " if ch in string.punctuation else ch
    pieces.append(current.split())
    return [p for p in pieces if p]


def ref_echoes(claim: str, passages: list[str]) -> bool:
    flat = [t for p in passages for piece in ref_pieces(p) for t in piece]

    def inside(tokens: list[str]) -> bool:
        n = len(tokens)
        return any(flat[i:i + n] == tokens for i in range(len(flat) - n + 1))

    return all(inside(piece) for piece in ref_pieces(claim))


def ref_quoted(claim: str, passages: list[str], min_quote: int = 12) -> bool:
    known = {tuple(piece) for p in passages for piece in ref_pieces(p)}
    pieces = ref_pieces(claim)
    return sum(len(" ".join(p)) for p in pieces) >= min_quote and all(tuple(p) in known for p in pieces)


WORDS = st.sampled_from(["yes", "no", "total", "score", "10", "2", "a", "verdict", "answer", "the"])
SEPARATORS = st.sampled_from([" ", "  ", ". ", ", ", ":", "\n", "{", '"', "; ", "!"])
TEXT = st.lists(st.tuples(WORDS, SEPARATORS), max_size=14).map(lambda pairs: "".join(w + s for w, s in pairs))


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=3), TEXT, st.data())
def test_echoes_and_quoted_match_the_slow_reference(passages: list[str], claim: str, data: st.DataObject) -> None:
    source = passages[0]
    if source and data.draw(st.booleans()):  # often a piece of a passage, to hit the positives
        i = data.draw(st.integers(0, len(source) - 1))
        claim = source[i: data.draw(st.integers(i + 1, len(source)))]
    index = QuoteIndex(passages)
    if not ref_pieces(claim):
        return
    assert index.echoes(claim) == ref_echoes(claim, passages), (passages, claim)
    assert index.quoted(claim) == ref_quoted(claim, passages), (passages, claim)


YES_LINES = st.sampled_from(["Yes.", "Yes, it was open in 1998.", "Answer: yes", "Verdict: Yes", "True, it was.",
                             "Useful", "**Yes**", "yes the bridge opened"])
FILLER = st.sampled_from(["The bridge opened in 1998.", "It rained.", "Officials said so.", ""])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(FILLER, YES_LINES), min_size=1, max_size=4), st.data())
def test_an_echoed_yes_never_flips_the_models_no(lines: list[tuple[str, str]], data: st.DataObject) -> None:
    passage = "\n".join(f"{filler} {yes}" for filler, yes in lines)
    line = data.draw(st.sampled_from([yes for _, yes in lines]))
    words = line.split()
    start = data.draw(st.integers(0, len(words) - 1))
    echo = " ".join(words[start: data.draw(st.integers(start + 1, len(words)))])
    echo = data.draw(st.sampled_from([echo, echo.rstrip("."), echo.upper(), f"- {echo}"]))
    for reply in (f"Verdict: No\n{echo}", f"{echo}\nVerdict: No"):
        assert read_yes_no(reply, sources=[passage]).value is False, (passage, reply)


@settings(max_examples=200, deadline=None)
@given(st.integers(3, 999), st.sampled_from(["Total Score: {}", "Total: {}", "**Total Score:** {}",
                                             "Total Score: {} points for the Reds."]), st.data())
def test_an_echoed_total_never_raises_the_models_own(high: int, form: str, data: st.DataObject) -> None:
    line = form.format(high)
    passage = f"Club news.\n{line}\nMore news."
    echo = data.draw(st.sampled_from([line, line.rstrip("."), line.replace(":", " :"), line.lower()]))
    for reply in (f"Total Score: 2\n{echo}", f"{echo}\nTotal Score: 2"):
        assert read_number(reply, "total score", sources=[passage]).value == 2.0, reply


def test_reading_a_long_reply_is_linear() -> None:
    """50,000 different totals: pairwise comparisons of the candidates would take minutes."""
    reply = "\n".join(f"Total Score: {i}" for i in range(50_000, 0, -1))
    index = QuoteIndex(["Total Score: 50000"])
    got = read_number(reply, "total score", sources=index)
    assert got.value == 1.0 and got.ambiguous


def test_the_prompt_is_shown_text_not_an_echo_source() -> None:
    prompt = 'Reply with JSON, for example {"a": 4, "b": 6}.'
    index = QuoteIndex(["a passage"], shown=[prompt])
    assert index.quoted(prompt) and not index.echoes('{"a": 4, "b": 6}')
