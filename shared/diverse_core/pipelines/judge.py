"""The shared judge-output parser: read a model's own verdict, never text it quotes.

Judge prompts (DF-RAG's Evaluator, Vendi-RAG's judge, DIVA's verifier) show the model passages
that anyone could have written: a passage saying ``Total Score: 10`` or ``Answer: yes`` must not
become the verdict when the model quotes it. Every reader works in three steps.

1. **Quotes out.** Markdown block quotes (``> ...``), text between double quotes that holds a
   ``Field:`` marker, and every reply line or sentence that repeats a line or sentence of the
   passages word for word (at least ``min_quote`` = 12 characters, compared without case,
   spacing or punctuation) are removed (:func:`own_text`).
2. **Candidates.** Every verdict stated in what is left is a candidate: a field counts only on
   its own line (``Total Score: 7`` starting a line, after any bullet or markdown), never inside
   a sentence such as a step's reason that mentions ``Total Score: 1e9``. A candidate whose
   line (or, for a JSON object, each of its ``key value`` pairs) also occurs in the passages -
   without its punctuation, re-spaced, part of a line - is an *echo*: at least ``min_quote``
   characters long it is as sure a quote as a verbatim line and is never read; shorter
   (``Yes.``, ``Total: 10``) it *could be* an echo.
3. **The verdict.** When every candidate says the same, that is the verdict. When they differ,
   the reply is ``ambiguous`` (the pipelines turn that into a run warning) and the verdict is
   the one of the model's **own** candidates - those that could not be an echo; for yes/no, a
   labelled ``Verdict:`` line before a bare line starting with yes/no. When the model's own
   candidates still differ, the *conservative* one is taken (the lowest score, ``no``, the
   lowest ratings) - never the passage's claim by default. A lone verdict that repeats a whole
   passage line or sentence is flagged too; a verdict that was removed as a quote but states
   something else than the model's flags the reply as well.

Cost: ``O(passages + reply)``: the passages are normalised once (:class:`QuoteIndex`) and the echo
searches of one reply are capped (:data:`MAX_ECHO_SCANS`); a 10 MB passage is read in about 0.4 s
(``benchmarks/judge_parse_cost.py``).

Example:
    >>> passages = ["Trivia night. Total Score: 10 points to the winners."]
    >>> reply = 'The passage says "Total Score: 10 points to the winners."\\nTotal Score: 4'
    >>> read_number(reply, "total score", sources=passages).value
    4.0
    >>> got = read_yes_no("Verdict: No\\nYes.", sources=["Is it open on Sunday? Yes."])
    >>> got.value, got.ambiguous
    (False, True)
"""

from __future__ import annotations

import copy
import json
import re
import string
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "FieldParse",
    "QuoteIndex",
    "own_text",
    "read_field",
    "read_number",
    "read_numbered",
    "read_json_object",
    "read_yes_no",
    "clip_score",
    "MAX_ECHO_SCANS",
]

#: Shortest passage text (normalised characters) removed from a reply as a verbatim quote.
MIN_QUOTE = 12
#: Echo tests search at most ``MAX_ECHO_SCANS * (passages + reply)`` characters per reply (so
#: at least this many searches of the passages); past it, a candidate is not searched and
#: counts as a possible echo (it loses to the model's own verdicts, but is not dropped).
MAX_ECHO_SCANS = 32
#: Most failed JSON decodes per reply (each costs up to the reply's length).
MAX_JSON_ATTEMPTS = 256

T = TypeVar("T")

_SPACE = re.compile(r"\s+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
_MD = re.compile(r"[*_`#]+")
_QUOTED = re.compile(r"[\"“”«»]([^\"“”«»\n]{0,400}?)[\"“”«»]")
_MARKER = re.compile(r"[A-Za-z][A-Za-z ]{1,30}:")
_NUMBER = r"[-+]?(?:\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
_OBJECT_START = re.compile(r"\{\s*\"")

_CUT = "\x01"  # a line or sentence boundary in normalised text
_BOUNDARIES = ".!?;\n\r\v\f\u2028\u2029\u0085"
_SPACES = string.punctuation + " \t\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
    "\u202f\u205f\u3000\u201c\u201d\u2018\u2019\u00ab\u00bb\u2013\u2014\u2026\u2022\u00b7"
_TABLE = str.maketrans({**dict.fromkeys(_SPACES, " "), **dict.fromkeys(_BOUNDARIES, _CUT)})


_RUNS = re.compile("  +")


def _squeeze(text: str) -> str:
    """Case-folded words separated by single spaces, ``_CUT`` where a line or sentence ends
    (spaces may stand next to it). Three C-level passes: ``casefold``, ``translate``, one
    regular-expression substitution."""
    return _RUNS.sub(" ", text.casefold().translate(_TABLE))


def _pieces(text: str) -> list[str]:
    """The normalised lines and sentences of ``text`` (non-empty)."""
    return [p for p in (q.strip() for q in _squeeze(text).split(_CUT)) if p]


class QuoteIndex:
    """The passages a judge was shown, normalised once: what a reply may quote from them.

    Built in a few C-level passes over the passages; every test of a reply piece against it is
    a set look-up (:meth:`quoted`, :meth:`verbatim`) or one substring search (:meth:`echoes`,
    within a budget of :data:`MAX_ECHO_SCANS` times the passages' plus the replies' length -
    use an index for one reply).

    Args:
        sources: the passages (anything else shown to the model whose verdicts must not count).
        min_quote: shortest text (normalised characters) :meth:`quoted` accepts.
        shown: more text shown to the model (e.g. the whole prompt, with its format example):
            its lines and sentences quoted verbatim are removed from a reply, but it is not
            searched for echoes (a reply that only gives the example's ratings is the model's).

    Example:
        >>> index = QuoteIndex(["Results. Total Score: 10 for the Reds.\\nYes."])
        >>> index.quoted("total score 10, for the reds"), index.verbatim("Yes"), index.echoes("score: 10")
        (True, True, True)
        >>> index.echoes("Verdict: No")
        False
    """

    def __init__(self, sources: Iterable[str] = (), *, min_quote: int = MIN_QUOTE, shown: Iterable[str] = ()) -> None:
        parts = [q for q in (q.strip() for q in _squeeze("\n".join(str(s) for s in sources)).split(_CUT)) if q]
        self._pieces = frozenset((*parts, *_pieces("\n".join(str(s) for s in shown))))
        self._flat = f" {' '.join(parts)} " if parts else ""
        self.min_quote = min_quote
        self.scans = 0  # substring searches made
        self._budget = MAX_ECHO_SCANS * len(self._flat)  # characters they may cover
        self._echo: dict[str, bool] = {}

    @classmethod
    def of(cls, sources: Sequence[str] | QuoteIndex) -> QuoteIndex:
        """``sources`` itself when it is an index, else a new index of them."""
        return sources if isinstance(sources, QuoteIndex) else cls(sources)

    def __bool__(self) -> bool:
        return bool(self._pieces)

    def verbatim(self, text: str) -> bool:
        """Every line and sentence of ``text`` is a whole line or sentence of the passages."""
        parts = _pieces(text)
        return bool(parts) and all(p in self._pieces for p in parts)

    def quoted(self, text: str) -> bool:
        """:meth:`verbatim`, and at least ``min_quote`` characters long (a sure quote)."""
        parts = _pieces(text)
        return sum(len(p) for p in parts) >= self.min_quote and all(p in self._pieces for p in parts)

    def again(self) -> QuoteIndex:
        """The same passages for another reply: the normalised text and the search results are
        shared (no second pass over the passages), the search budget starts afresh."""
        other = copy.copy(self)
        other.scans = 0
        other._budget = MAX_ECHO_SCANS * len(self._flat)
        return other

    def grant(self, reply: str) -> None:
        """Add a reply's share to the search budget (every reader calls it once per reply)."""
        self._budget += MAX_ECHO_SCANS * len(reply)

    def echoes(self, *claims: str) -> bool | None:
        """Each claim's words occur in the passages, in order (so it could be a quote of them);
        ``None`` when the search budget ran out before that was known.

        Example:
            >>> QuoteIndex(["Was it open?\\nYes."]).echoes("open yes")
            True
        """
        if not self._flat:
            return False
        unknown = False
        for claim in claims:
            for piece in _pieces(claim):
                known = self._echo.get(piece)
                if known is None:
                    if (self.scans + 1) * len(self._flat) > self._budget:
                        unknown = True
                        continue
                    self.scans += 1
                    known = self._echo[piece] = f" {piece} " in self._flat
                if not known:
                    return False
        return None if unknown else True


@dataclass(frozen=True)
class FieldParse:
    """A value read from a judge reply.

    Attributes:
        value: the value (``None`` when nothing could be read).
        parsed: whether a value was found.
        ambiguous: the reply stated different values (or its only verdict repeats passage
            text); see the module docstring for which one was used.
        notes: what was repaired or flagged (ambiguity notes start with ``"ambiguous"``).
    """

    value: Any
    parsed: bool
    ambiguous: bool = False
    notes: tuple[str, ...] = field(default=())


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _own_lines(reply: str, index: QuoteIndex) -> tuple[str, list[str]]:
    """``(own text, removed quotes that stood at a line start)``: see :func:`own_text`."""
    index.grant(reply)
    text = _QUOTED.sub(lambda m: " " if _MARKER.search(m.group(1)) else m.group(0), reply.replace("\r\n", "\n"))
    kept: list[str] = []
    removed: list[str] = []
    for line in text.split("\n"):
        if line.lstrip().startswith(">"):
            continue
        if not index:
            kept.append(line)
            continue
        if index.quoted(line):
            removed.append(line)
            continue
        sentences = _SENTENCE.split(line)
        drop = [index.quoted(s) for s in sentences]
        if drop[0]:
            removed.append(sentences[0])
        kept.append(" ".join(s for s, d in zip(sentences, drop, strict=True) if not d))
    return "\n".join(kept).strip(), removed


def own_text(reply: str, sources: Sequence[str] | QuoteIndex = (), *, min_quote: int = MIN_QUOTE) -> str:
    """The reply without what it quotes (step 1 of the module docstring): block quotes, double
    quoted spans with a ``Field:`` marker, and lines or sentences that repeat a passage line or
    sentence of at least ``min_quote`` characters.

    Example:
        >>> own_text("> Answer: Paris\\nAnswer: Rome")
        'Answer: Rome'
        >>> own_text("It reads. Total Score: 10 for all. Mine: 3", ["Total Score: 10 for all."])
        'It reads. Mine: 3'
    """
    index = sources if isinstance(sources, QuoteIndex) else QuoteIndex(sources, min_quote=min_quote)
    return _own_lines(reply, index)[0]


def _split(reply: str, sources: Sequence[str] | QuoteIndex, find: Callable[[str], T]) -> tuple[QuoteIndex, T, T]:
    """``(index, find(own text), find(removed quotes))`` of a reply (see :func:`own_text`)."""
    index = QuoteIndex.of(sources)
    own, removed = _own_lines(reply, index)
    return index, find(own), find("\n".join(removed))


@dataclass(frozen=True)
class _Candidate:
    value: Any
    line: str  # the reply text that states it (tested against the passages)
    claims: tuple[str, ...] = ()  # what must occur in the passages for it to be an echo (default: line)
    labelled: bool = True


def _claims(c: _Candidate) -> tuple[str, ...]:
    return c.claims or (c.line,)


def _long(c: _Candidate, index: QuoteIndex) -> bool:
    """The candidate's claims are at least ``min_quote`` normalised characters long."""
    return sum(len(p) for claim in _claims(c) for p in _pieces(claim)) >= index.min_quote


def _key(value: Any) -> Any:
    """Equal values, equal keys: equal numbers (``2`` and ``2.0``), text ignoring case and spaces,
    JSON objects by their content."""
    if isinstance(value, str):
        try:
            return ("number", float(value))
        except ValueError:
            return ("text", _norm(value))
    if isinstance(value, dict):
        return ("json", json.dumps(value, sort_keys=True, default=str))
    return (type(value).__name__, value)


def _distinct(cands: Sequence[_Candidate]) -> list[Any]:
    """The candidates' distinct values, in order of first appearance (one pass)."""
    seen: dict[Any, Any] = {}
    for c in cands:
        seen.setdefault(_key(c.value), c.value)
    return list(seen.values())


def _resolve(name: str, live: Sequence[_Candidate], quoted: Sequence[_Candidate], index: QuoteIndex,
             conservative: Callable[[list[Any]], Any] | None, missing: str | None = None) -> FieldParse:
    """The verdict among the candidates (step 3 of the module docstring)."""
    if index:  # a long echo is as sure a quote as a verbatim line: never read
        sure = [_long(c, index) and index.echoes(*_claims(c)) is True for c in live]
        quoted = [*quoted, *(c for c, q in zip(live, sure, strict=True) if q)]
        live = [c for c, q in zip(live, sure, strict=True) if not q]
    if not live:
        note = missing or f"no {name!r} field"
        if quoted:
            note = f"the only {name!r} line(s) repeat passage text; none was read"
        return FieldParse(None, False, notes=(note,))
    values = _distinct(live)
    notes: list[str] = []
    if len(values) == 1:
        value = live[-1].value
        if index and all(index.verbatim(c.line) for c in live):
            notes.append(f"ambiguous: the only {name!r} stated repeats a passage line word for word; it was used")
    else:
        own = [c for c in live if index.echoes(*_claims(c)) is False] if index else list(live)
        pool = own or list(live)
        pool = [c for c in pool if c.labelled] or pool
        choices = _distinct(pool)
        if len(choices) == 1:
            value = pool[-1].value
            notes.append(f"ambiguous: {len(values)} different {name!r} values; the model's own was used "
                         f"(the other(s) could be quoted passage text)")
        elif conservative is not None:
            value = conservative(choices)
            notes.append(f"ambiguous: {len(values)} different {name!r} values; the most conservative was used")
        else:
            value = pool[-1].value
            notes.append(f"ambiguous: {len(values)} different {name!r} values; the last was used")
    if any(_key(c.value) != _key(value) for c in quoted):
        notes.append(f"ambiguous: passage text quoted in the reply states another {name!r}; it was not read")
    return FieldParse(value, True, bool(notes), tuple(notes))


def _lowest(values: list[Any]) -> Any:
    """The lowest of ``values`` read as numbers (the last one when they are not numbers)."""
    try:
        return min(values, key=float)
    except (TypeError, ValueError):
        return values[-1]


#: What may precede a field on its own line: spaces and one list bullet.
_LINE_START = r"^[ \t]*(?:[-+\u2022][ \t]*)?"


def _label(name: str) -> str:
    return r"\s*".join(re.escape(w) for w in name.split())


def _field_candidates(text: str, label: str, value_pattern: str, own_line: bool) -> list[_Candidate]:
    if own_line:
        rx = re.compile(
            rf"{_LINE_START}{label}[ \t]*(?:[:=]|\bis\b)[ \t]*({value_pattern})", re.IGNORECASE | re.MULTILINE
        )
    else:
        rx = re.compile(rf"(?<![A-Za-z]){label}\s*(?:[:=]|\bis\b)\s*({value_pattern})", re.IGNORECASE)
    plain = _MD.sub("", text)
    out = []
    for m in rx.finditer(plain):
        end = plain.find("\n", m.end())
        out.append(_Candidate(m.group(1).strip(), plain[m.start(): end if end != -1 else len(plain)]))
    return out


def read_field(
    reply: str,
    name: str,
    *,
    sources: Sequence[str] | QuoteIndex = (),
    pattern: str = r"[^\n]+",
    own_line: bool = True,
    label: str | None = None,
    conservative: Callable[[list[Any]], Any] | None = None,
) -> FieldParse:
    """The reply's own ``Name: value`` (see the module docstring for which one when it differs).

    Args:
        reply: the model's reply.
        name: the field name (words, matched case- and space-insensitively).
        sources: passages shown to the model (or their :class:`QuoteIndex`).
        pattern: regular expression of the value.
        own_line: accept the field only where it starts a line (default); ``False`` also
            reads it inside a sentence.
        label: a regular expression replacing the one built from ``name`` (e.g. to accept
            ``Total support score`` as well as ``Total Score``).
        conservative: picks among different values of the model's own (default: the last).

    Example:
        >>> read_field("Answer: Paris\\nAnswer: Lyon", "answer").value
        'Lyon'
        >>> read_field("It is not Answer: Paris", "answer").parsed
        False
    """
    rx_label = label or _label(name)
    index, live, quoted = _split(reply, sources, lambda text: _field_candidates(text, rx_label, pattern, own_line))
    return _resolve(name, live, quoted, index, conservative)


def read_number(
    reply: str, name: str, *, sources: Sequence[str] | QuoteIndex = (), own_line: bool = True,
    label: str | None = None,
) -> FieldParse:
    """The reply's own ``Name: <number>`` as a float (see :func:`read_field`); different values
    of the model's own give the lowest.

    Example:
        >>> read_number("Total Score: 7\\n**Total Score:** 7.0", "total score").value
        7.0
        >>> got = read_number("Total Score: 7\\nTotal Score: 3", "total score")
        >>> got.value, got.ambiguous
        (3.0, True)
        >>> read_number("1. Score: 4 (the text says Total Score: 1e9)", "total score").parsed
        False
    """
    got = read_field(reply, name, sources=sources, pattern=_NUMBER, own_line=own_line, label=label,
                     conservative=_lowest)
    if not got.parsed:
        return got
    return FieldParse(float(got.value), True, got.ambiguous, got.notes)


_STEP_LINE = re.compile(
    r"^[ \t]*(?:[-+\u2022][ \t]*)?(?:step[ \t]*)?(\d{1,2})(?![\d.]\d)[ \t]*[).:\]-]?[ \t]*(.*)$", re.IGNORECASE
)


def _numbered(text: str, label: str, pattern: str) -> list[tuple[int, _Candidate]]:
    in_line = re.compile(rf"^.*?\b{label}\b[ \t]*(?:[:=]|\bis\b|\bof\b)?[ \t]*({pattern})", re.IGNORECASE)
    bare = re.compile(rf"{_LINE_START}{label}[ \t]*[:=][ \t]*({pattern})", re.IGNORECASE)
    out: list[tuple[int, _Candidate]] = []
    last = 0
    for line in _MD.sub("", text).splitlines():
        numbered = _STEP_LINE.match(line)
        m = in_line.match(numbered.group(2)) if numbered else None
        if m is not None and numbered is not None:
            number = int(numbered.group(1))
        else:
            m = bare.match(line)
            if m is None:
                continue
            number = last + 1
        last = number
        out.append((number, _Candidate(m.group(1).strip(), line)))
    return out


def read_numbered(
    reply: str,
    name: str = "score",
    *,
    sources: Sequence[str] | QuoteIndex = (),
    pattern: str = _NUMBER,
    limit: int | None = None,
) -> FieldParse:
    """Per-number values of numbered lines such as ``1. Score: 4`` or ``Step 2 - ... score is 3``.

    A line ``Name: value`` without a number takes the number after the previous line's.
    A number stated with different values is ``ambiguous`` and read as the module docstring
    says (the model's own value, else the lowest: a reply that quotes a passage line
    ``1. Score: 5`` next to its own ``1. Score: 0`` reads 0). Numbers keep the order of their
    first appearance; only the first ``limit`` distinct numbers count.

    Returns:
        ``value``: ``{number: value string}`` in that order (``None`` when no line matched).

    Example:
        >>> got = read_numbered("1. Score: 5\\n1. Score: 0. my own\\n2. Score: 3")
        >>> got.value, got.ambiguous
        ({1: '0', 2: '3'}, True)
    """
    index, live, removed = _split(reply, sources, lambda text: _numbered(text, _label(name), pattern))
    per: dict[int, list[_Candidate]] = {}
    for number, cand in live:
        if number in per or limit is None or len(per) < limit:
            per.setdefault(number, []).append(cand)
    quoted: dict[int, list[_Candidate]] = {}
    for number, cand in removed:
        quoted.setdefault(number, []).append(cand)
    if not per:
        return FieldParse(None, False, notes=(f"no numbered {name!r} lines",))
    values: dict[int, str] = {}
    notes: list[str] = []
    for number, cands in per.items():
        got = _resolve(f"{name} {number}", cands, quoted.get(number, ()), index, _lowest)
        values[number] = got.value
        notes.extend(got.notes)
    return FieldParse(values, True, bool(notes), tuple(notes))


def clip_score(value: float, lo: float, hi: float, name: str = "score") -> tuple[float, tuple[str, ...]]:
    """``value`` clipped to ``[lo, hi]``, with a note when it was out of range (or not finite).

    Example:
        >>> clip_score(1e9, 0, 10)
        (10.0, ('score 1e+09 out of range 0..10; clipped',))
    """
    if value != value:  # NaN
        return float(lo), (f"{name} is NaN; set to {lo:g}",)
    if lo <= value <= hi:
        return float(value), ()
    clipped = float(min(max(value, lo), hi))
    return clipped, (f"{name} {value:g} out of range {lo:g}..{hi:g}; clipped",)


def _objects(text: str, keys: Sequence[str]) -> tuple[list[_Candidate], bool]:
    """JSON objects of ``text`` holding every key (with none: every object): ``(candidates, capped)``."""
    decoder = json.JSONDecoder()
    found: list[_Candidate] = []
    failures = 0
    m = _OBJECT_START.search(text)
    while m is not None and failures < MAX_JSON_ATTEMPTS:
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            failures += 1
            m = _OBJECT_START.search(text, m.start() + 1)
            continue
        if isinstance(obj, dict) and all(k in obj for k in keys):
            claims = tuple(f"{k} {json.dumps(obj[k])}" for k in keys or obj)
            found.append(_Candidate(obj, text[m.start():end], claims))
        m = _OBJECT_START.search(text, end)
    return found, m is not None


def read_json_object(
    reply: str, keys: Sequence[str], *, sources: Sequence[str] | QuoteIndex = (),
    conservative: Callable[[list[Any]], Any] | None = None,
) -> FieldParse:
    """The reply's own JSON object with every key in ``keys`` (see the module docstring: an object
    whose ``key value`` pairs all occur in the passages could be an echo of them).

    Markdown fences are tolerated. Different objects of the model's own give ``conservative``'s
    pick (default: the last). At most :data:`MAX_JSON_ATTEMPTS` malformed objects are tried.

    Example:
        >>> read_json_object('ok: {"a": 1, "b": 2}', ["a", "b"]).value
        {'a': 1, 'b': 2}
        >>> got = read_json_object('{"a": 1, "b": 2} but {"a":9,"b":9}', ["a", "b"], sources=['{"a": 9, "b": 9}'])
        >>> got.value, got.ambiguous
        ({'a': 1, 'b': 2}, True)
    """
    index, (live, capped), (quoted, _) = _split(reply, sources, lambda text: _objects(text, keys))
    got = _resolve("JSON verdict", live, quoted, index, conservative, f"no JSON object with keys {list(keys)}")
    if capped:
        note = f"more than {MAX_JSON_ATTEMPTS} malformed JSON objects; the rest of the reply was not read"
        got = FieldParse(got.value, got.parsed, got.ambiguous, (*got.notes, note))
    return got


_YES = {"yes", "y", "true", "supported", "useful"}
_NO = {"no", "n", "false", "unsupported", "useless", "not"}
_LABELS = {"answer", "verdict", "judgement", "judgment", "decision"}


def _yes_no(text: str) -> list[_Candidate]:
    out = []
    for line in text.splitlines():
        words = re.findall(r"[a-z]+", _MD.sub("", line).lower())
        labelled = bool(words) and words[0] in _LABELS
        if labelled:
            words = words[1:]
        if words and (words[0] in _YES or words[0] in _NO):
            out.append(_Candidate(words[0] in _YES, line, labelled=labelled))
    return out


def _no(values: list[Any]) -> Any:
    return False if False in values else values[-1]


def read_yes_no(reply: str, *, sources: Sequence[str] | QuoteIndex = ()) -> FieldParse:
    """A yes/no verdict: a line of the reply's own text that starts with (or is labelled) yes or
    no; ``None`` when there is none. Lines that differ are read as the module docstring says
    (a labelled line before a bare one; otherwise ``no``).

    Example:
        >>> read_yes_no("The passage says: yes, it was 1990.\\nVerdict: No").value
        False
        >>> got = read_yes_no("Verdict: No\\nYes, it names the 2018 winner, not the 2019 one.")
        >>> got.value, got.ambiguous
        (False, True)
    """
    index, live, quoted = _split(reply, sources, _yes_no)
    return _resolve("verdict", live, quoted, index, _no, "no yes/no verdict")
