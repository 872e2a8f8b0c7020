"""A pure-Python BERT WordPiece tokenizer (the uncased BERT tokenizer all-MiniLM-L6-v2 uses).

It reads a model folder's ``vocab.txt`` (and ``tokenizer_config.json`` for the casing flags) and
gives the same token ids as the Hugging Face *fast* BERT tokenizer that sentence-transformers
uses: the same text clean-up (control characters dropped, whitespace unified), spaces around CJK
ideographs, accents stripped and letters lower-cased, splits on whitespace and punctuation,
greedy longest-match-first word pieces with the ``##`` prefix, ``[UNK]`` for a word with no
split or longer than 100 characters, literal special tokens (``[CLS]``, ``[MASK]``, ...) kept
whole, and ``[CLS] ... [SEP]`` around each text, truncated to ``max_length``.

Standard library only: the numpy forward pass (:mod:`diverse_core.minilm_numpy`) needs no
``tokenizers`` or ``transformers`` install. Words are cached, so a corpus's repeated words
are split once.
"""

from __future__ import annotations

import functools
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from .errors import InvalidParameterError

__all__ = ["WordPieceTokenizer"]

#: Code point ranges of CJK ideographs, each padded with spaces (so each is a word of its own).
_CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B920, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
_CJK_CLASS = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _CJK_RANGES)
_CJK_RE = re.compile(f"([{_CJK_CLASS}])")

#: Characters that become a plain space: tab, newline, carriage return and the Unicode
#: White_Space characters that are not control characters (controls are dropped instead).
_SPACES = "\t\n\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
_SPACE_TABLE = {ord(c): " " for c in _SPACES}

# The Rust tokenizer classifies characters with older Unicode tables (8.0) than Python's
# ``unicodedata`` (14.0 on Python 3.11). Characters assigned since then that Python calls
# punctuation, marks or format characters are plain letters there (kept, not split off, not
# stripped): these ranges. Three changed class: U+166D (Po then, So now) and U+111C9 (Po then,
# Mn now) are still punctuation there, U+1734 (Mn then, Mc now) is still stripped as an accent.
_OLD_TABLES_LETTER_RANGES = (
    (0x61d, 0x61d), (0x7fd, 0x7fd), (0x890, 0x891), (0x898, 0x89f), (0x8ca, 0x8e2),
    (0x9fd, 0x9fe), (0xa76, 0xa76), (0xafa, 0xaff), (0xb55, 0xb55), (0xc04, 0xc04),
    (0xc3c, 0xc3c), (0xc77, 0xc77), (0xc84, 0xc84), (0xd00, 0xd00), (0xd3b, 0xd3c),
    (0xd81, 0xd81), (0xeba, 0xeba), (0x180f, 0x180f), (0x1885, 0x1886), (0x1abf, 0x1ace),
    (0x1b7d, 0x1b7e), (0x1df6, 0x1dfb), (0x2e43, 0x2e4f), (0x2e52, 0x2e5d), (0xa82c, 0xa82c),
    (0xa8c5, 0xa8c5), (0xa8ff, 0xa8ff), (0xa9bd, 0xa9bd), (0x10d24, 0x10d27), (0x10eab, 0x10ead),
    (0x10f46, 0x10f50), (0x10f55, 0x10f59), (0x10f82, 0x10f89), (0x11070, 0x11070), (0x11073, 0x11074),
    (0x110c2, 0x110c2), (0x110cd, 0x110cd), (0x111cf, 0x111cf), (0x1123e, 0x1123e), (0x1133b, 0x1133b),
    (0x11438, 0x1143f), (0x11442, 0x11444), (0x11446, 0x11446), (0x1144b, 0x1144f), (0x1145a, 0x1145b),
    (0x1145d, 0x1145e), (0x11660, 0x1166c), (0x116b9, 0x116b9), (0x1182f, 0x11837), (0x11839, 0x1183b),
    (0x1193b, 0x1193c), (0x1193e, 0x1193e), (0x11943, 0x11946), (0x119d4, 0x119d7), (0x119da, 0x119db),
    (0x119e0, 0x119e0), (0x119e2, 0x119e2), (0x11a01, 0x11a0a), (0x11a33, 0x11a38), (0x11a3b, 0x11a47),
    (0x11a51, 0x11a56), (0x11a59, 0x11a5b), (0x11a8a, 0x11a96), (0x11a98, 0x11a9c), (0x11a9e, 0x11aa2),
    (0x11c30, 0x11c36), (0x11c38, 0x11c3d), (0x11c3f, 0x11c3f), (0x11c41, 0x11c45), (0x11c70, 0x11c71),
    (0x11c92, 0x11ca7), (0x11caa, 0x11cb0), (0x11cb2, 0x11cb3), (0x11cb5, 0x11cb6), (0x11d31, 0x11d36),
    (0x11d3a, 0x11d3a), (0x11d3c, 0x11d3d), (0x11d3f, 0x11d45), (0x11d47, 0x11d47), (0x11d90, 0x11d91),
    (0x11d95, 0x11d95), (0x11d97, 0x11d97), (0x11ef3, 0x11ef4), (0x11ef7, 0x11ef8), (0x11fff, 0x11fff),
    (0x12ff1, 0x12ff2), (0x13430, 0x13438), (0x16e97, 0x16e9a), (0x16f4f, 0x16f4f), (0x16fe2, 0x16fe2),
    (0x16fe4, 0x16fe4), (0x1cf00, 0x1cf2d), (0x1cf30, 0x1cf46), (0x1e000, 0x1e006), (0x1e008, 0x1e018),
    (0x1e01b, 0x1e021), (0x1e023, 0x1e024), (0x1e026, 0x1e02a), (0x1e130, 0x1e136), (0x1e2ae, 0x1e2ae),
    (0x1e2ec, 0x1e2ef), (0x1e944, 0x1e94a), (0x1e95e, 0x1e95f),
)
_OLD_TABLES_LETTERS = frozenset(
    chr(c) for lo, hi in _OLD_TABLES_LETTER_RANGES for c in range(lo, hi + 1)
)
_OLD_TABLES_PUNCTUATION = frozenset("\u166d\U000111c9")
_OLD_TABLES_ACCENT = "\u1734"

#: Word pieces of a word longer than this many characters: ``[UNK]``.
MAX_CHARS_PER_WORD = 100


@functools.lru_cache(maxsize=65_536)
def _is_dropped(char: str) -> bool:
    """Control, format, private-use and surrogate characters (not tab/newline/CR), and U+FFFD.

    Unassigned code points (``Cn``) are kept, as the Rust tokenizer keeps them.
    """
    if char in "\t\n\r" or char in _OLD_TABLES_LETTERS:
        return False
    category = unicodedata.category(char)
    return char == "\ufffd" or (category.startswith("C") and category != "Cn")


@functools.lru_cache(maxsize=65_536)
def _is_punctuation(char: str) -> bool:
    """BERT's punctuation: every ASCII symbol that is not a letter, digit or space, and Unicode P*."""
    code = ord(char)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    if char in _OLD_TABLES_LETTERS:
        return False
    return char in _OLD_TABLES_PUNCTUATION or unicodedata.category(char).startswith("P")


@functools.lru_cache(maxsize=65_536)
def _is_accent(char: str) -> bool:
    """A non-spacing combining mark (removed by accent stripping after NFD)."""
    if char in _OLD_TABLES_LETTERS or char in _OLD_TABLES_PUNCTUATION:
        return False
    return char == _OLD_TABLES_ACCENT or unicodedata.category(char) == "Mn"


_ASCII_DROPPED = {c: None for c in range(128) if _is_dropped(chr(c))}
_ASCII_PUNCT = "".join(chr(c) for c in range(128) if _is_punctuation(chr(c)))
# A word of ASCII text: a run of characters that are neither space nor punctuation, or one
# punctuation character.
_ASCII_WORD_RE = re.compile(f"[^\\s{re.escape(_ASCII_PUNCT)}]+|[{re.escape(_ASCII_PUNCT)}]")


def _read_vocab(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        raise InvalidParameterError(f"model_path: cannot read the vocabulary {str(path)!r} ({exc})") from exc
    if lines and lines[-1] == "":
        lines.pop()
    return {token.rstrip("\r"): i for i, token in enumerate(lines)}


class WordPieceTokenizer:
    """BERT WordPiece tokenization to ids, for one vocabulary.

    Args:
        vocab: token -> id; must hold ``[CLS]``, ``[SEP]``, ``[UNK]`` and ``[PAD]``.
        lowercase: lower-case the text (uncased models).
        strip_accents: drop combining marks after NFD decomposition; ``None`` follows ``lowercase``.
        split_cjk: put spaces around CJK ideographs.

    Example:
        >>> tok = WordPieceTokenizer({"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3,
        ...                           "play": 4, "##ing": 5, "!": 6})
        >>> tok.tokenize("Playing!")
        ['play', '##ing', '!']
        >>> tok.encode("PLAYING zzz", max_length=8)
        [2, 4, 5, 1, 3]
    """

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        lowercase: bool = True,
        strip_accents: bool | None = None,
        split_cjk: bool = True,
    ) -> None:
        missing = [t for t in ("[CLS]", "[SEP]", "[UNK]", "[PAD]") if t not in vocab]
        if missing:
            raise InvalidParameterError(f"vocab: missing special tokens {missing}")
        self.vocab: dict[str, int] = dict(vocab)
        self.lowercase = lowercase
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.split_cjk = split_cjk
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.unk_id = self.vocab["[UNK]"]
        self.pad_id = self.vocab["[PAD]"]
        specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in self.vocab]
        # Longest first, so a special token that contains another is matched whole.
        specials.sort(key=len, reverse=True)
        self._special_re = re.compile("(" + "|".join(re.escape(t) for t in specials) + ")")
        self._inverse: dict[int, str] | None = None
        self._word_ids = functools.lru_cache(maxsize=200_000)(self._word_ids_uncached)

    @classmethod
    def from_dir(cls, model_dir: str | Path) -> WordPieceTokenizer:
        """The tokenizer of a Hugging Face BERT model folder (``vocab.txt``, ``tokenizer_config.json``)."""
        folder = Path(model_dir)
        lowercase, strip_accents, split_cjk = True, None, True
        config_path = folder / "tokenizer_config.json"
        if config_path.exists():
            try:
                config = json.loads(config_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InvalidParameterError(
                    f"model_path: cannot read {str(config_path)!r} ({exc})"
                ) from exc
            lowercase = bool(config.get("do_lower_case", True))
            strip_accents = config.get("strip_accents")
            split_cjk = bool(config.get("tokenize_chinese_chars", True))
        return cls(
            _read_vocab(folder / "vocab.txt"),
            lowercase=lowercase,
            strip_accents=strip_accents,
            split_cjk=split_cjk,
        )

    # -- text -> words ------------------------------------------------------------
    def normalize(self, text: str) -> str:
        """Clean-up, CJK spacing, accent stripping and lower-casing, as BERT's normalizer does."""
        if text.isascii():
            text = text.translate(_ASCII_DROPPED).translate(_SPACE_TABLE)
            return text.lower() if self.lowercase else text
        text = "".join(c for c in text if not _is_dropped(c)).translate(_SPACE_TABLE)
        if self.split_cjk:
            text = _CJK_RE.sub(r" \1 ", text)
        if self.strip_accents:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if not _is_accent(c))
        if self.lowercase:
            # Character by character: no context-dependent final sigma.
            text = text.replace("\u03a3", "\u03c3").lower()
        return text

    def _split_words(self, text: str) -> list[str]:
        """Whitespace- and punctuation-split words of normalised text."""
        if text.isascii():
            return _ASCII_WORD_RE.findall(text)
        words: list[str] = []
        for chunk in text.split():
            start = 0
            for i, char in enumerate(chunk):
                if _is_punctuation(char):
                    if i > start:
                        words.append(chunk[start:i])
                    words.append(char)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    # -- words -> ids ---------------------------------------------------------------
    def _word_ids_uncached(self, word: str) -> tuple[int, ...]:
        """Greedy longest-match-first word pieces of one word (``[UNK]`` if it has no split)."""
        if len(word) > MAX_CHARS_PER_WORD:
            return (self.unk_id,)
        vocab = self.vocab
        ids: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            piece_id = None
            while end > start:
                piece = word[start:end] if start == 0 else "##" + word[start:end]
                piece_id = vocab.get(piece)
                if piece_id is not None:
                    break
                end -= 1
            if piece_id is None:
                return (self.unk_id,)
            ids.append(piece_id)
            start = end
        return tuple(ids)

    def _text_ids(self, text: str) -> list[int]:
        ids: list[int] = []
        for i, part in enumerate(self._special_re.split(text)):
            if i % 2 == 1:  # a literal special token, kept whole
                ids.append(self.vocab[part])
                continue
            for word in self._split_words(self.normalize(part)):
                ids.extend(self._word_ids(word))
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The word pieces of ``text`` (no ``[CLS]``/``[SEP]``, no truncation)."""
        if self._inverse is None:
            self._inverse = {i: t for t, i in self.vocab.items()}
        return [self._inverse[i] for i in self._text_ids(text)]

    def encode(self, text: str, max_length: int = 512) -> list[int]:
        """``[CLS] pieces [SEP]`` ids, the pieces cut so the whole is at most ``max_length`` ids."""
        if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 2:
            raise InvalidParameterError(f"max_length must be an int >= 2; got max_length={max_length!r}")
        if not isinstance(text, str):
            raise InvalidParameterError(f"text must be a str; got {type(text).__name__}")
        return [self.cls_id, *self._text_ids(text)[: max_length - 2], self.sep_id]

    def encode_batch(
        self, texts: Sequence[str], max_length: int = 512
    ) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Padded ids and attention mask, each of shape (len(texts), longest encoded text).

        Example:
            >>> tok = WordPieceTokenizer({"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "a": 4})
            >>> ids, mask = tok.encode_batch(["a a", "a"])
            >>> ids.tolist(), mask.tolist()
            ([[2, 4, 4, 3], [2, 4, 3, 0]], [[1, 1, 1, 1], [1, 1, 1, 0]])
        """
        return self.pad([self.encode(t, max_length) for t in texts])

    def pad(self, encoded: Sequence[Sequence[int]]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Right-pad id lists to one array, with the attention mask (1 = real token)."""
        lengths = np.array([len(e) for e in encoded], dtype=np.int64)
        width = int(lengths.max()) if len(encoded) else 0
        mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
        ids = np.full((len(encoded), width), self.pad_id, dtype=np.int64)
        if len(encoded):
            ids[mask.astype(bool)] = np.fromiter(
                (i for e in encoded for i in e), dtype=np.int64, count=int(lengths.sum())
            )
        return ids, mask
