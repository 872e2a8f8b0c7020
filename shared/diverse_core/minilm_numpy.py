"""all-MiniLM-L6-v2 in plain numpy: the sentence-transformers forward pass without torch.

A BERT encoder read from a model folder's ``model.safetensors`` (parsed here from its JSON
header; no ``safetensors`` or ``torch`` install), run as sentence-transformers runs
all-MiniLM-L6-v2: word + position + token-type embeddings and LayerNorm, the encoder layers
(multi-head self-attention with the padding masked out, exact-erf GELU feed-forward, residual
LayerNorms), mean pooling over the real tokens, L2 normalisation. Texts are tokenized by
:class:`~diverse_core.wordpiece.WordPieceTokenizer` and cut at the model's ``max_seq_length``
(256 word pieces with ``[CLS]``/``[SEP]`` for all-MiniLM-L6-v2), as sentence-transformers cuts.

Each batch is one padded array with its attention mask; the only Python loop of the forward
pass is over the layers. Float32 throughout; the vectors agree with sentence-transformers' to
cosine >= 0.9999 (``tests/core/test_minilm_numpy.py`` checks every text of its set).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import DiverseRAGError, InvalidParameterError
from .wordpiece import WordPieceTokenizer

__all__ = ["BertLayer", "ModelFormatError", "NumpyMiniLM", "read_safetensors"]

F32 = NDArray[np.float32]

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


class ModelFormatError(DiverseRAGError):
    """A model folder the numpy encoder cannot read (missing file, bad header, other architecture)."""


def read_safetensors(path: str | Path) -> dict[str, NDArray[Any]]:
    """The tensors of a ``.safetensors`` file as numpy arrays (copies; the file is closed on return).

    The format: an 8-byte little-endian header length, a JSON header mapping each name to its
    ``dtype``, ``shape`` and ``data_offsets`` (relative to the end of the header), then the data.

    Raises:
        ModelFormatError: the file is missing, truncated, or holds a dtype other than
            F32/F16/F64/I64/I32.
    """
    file = Path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ModelFormatError(f"cannot read the weights {str(file)!r} ({exc})") from exc
    if len(raw) < 8:
        raise ModelFormatError(f"{str(file)!r} is not a safetensors file (only {len(raw)} bytes)")
    header_len = int.from_bytes(raw[:8], "little")
    if header_len > len(raw) - 8:
        raise ModelFormatError(f"{str(file)!r}: header length {header_len} exceeds the file")
    try:
        header = json.loads(raw[8 : 8 + header_len])
    except ValueError as exc:
        raise ModelFormatError(f"{str(file)!r}: the header is not JSON ({exc})") from exc
    base = 8 + header_len
    tensors: dict[str, NDArray[Any]] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec.get("dtype"))
        if dtype is None:
            raise ModelFormatError(f"{str(file)!r}: tensor {name!r} has unsupported dtype {spec.get('dtype')!r}")
        start, end = (base + int(o) for o in spec["data_offsets"])
        shape = tuple(int(s) for s in spec["shape"])
        if end > len(raw) or end - start != math.prod(shape) * np.dtype(dtype).itemsize:
            raise ModelFormatError(f"{str(file)!r}: tensor {name!r} does not fit its offsets")
        array = np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"), count=math.prod(shape), offset=start)
        tensors[name] = array.reshape(shape).astype(dtype, copy=True)
    return tensors


@dataclass(frozen=True)
class BertLayer:
    """The weights of one encoder layer, linear maps stored as (in, out) for ``x @ w``."""

    qkv_w: F32  # (d, 3d): query, key and value side by side
    qkv_b: F32
    attn_out_w: F32
    attn_out_b: F32
    ln1_g: F32
    ln1_b: F32
    ffn_in_w: F32
    ffn_in_b: F32
    ffn_out_w: F32
    ffn_out_b: F32
    ln2_g: F32
    ln2_b: F32


def _layer_norm(x: F32, gamma: F32, beta: F32, eps: float) -> F32:
    """LayerNorm over the last axis; ``x`` is overwritten (every caller passes a fresh array)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.mean(x * x, axis=-1, keepdims=True)
    x /= np.sqrt(var + np.float32(eps))
    x *= gamma
    x += beta
    return x


def _gelu(x: F32) -> F32:
    """BERT's GELU, ``x * (1 + erf(x / sqrt(2))) / 2`` with the exact error function, in place."""
    from scipy.special import erf

    half = erf(x * np.float32(1.0 / math.sqrt(2.0))).astype(np.float32, copy=False)
    half += 1.0
    half *= 0.5
    x *= half
    return x


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFormatError(f"cannot read {str(path)!r} ({exc})") from exc
    if not isinstance(data, dict):
        raise ModelFormatError(f"{str(path)!r} does not hold a JSON object")
    return data


class NumpyMiniLM:
    """A sentence-transformers BERT model with mean pooling, run in numpy (no torch).

    Args:
        model_dir: a sentence-transformers folder of a BERT model with mean pooling
            (``config.json``, ``model.safetensors``, ``vocab.txt``; ``sentence_bert_config.json``
            and ``1_Pooling/config.json`` when present), e.g. the packaged all-MiniLM-L6-v2.

    Raises:
        ModelFormatError: a file is missing or unreadable, the model is not a BERT model, or
            its pooling is not mean pooling.

    Example:
        >>> from diverse_core.embedders import default_model_path
        >>> model = NumpyMiniLM(default_model_path())  # doctest: +SKIP
        >>> model.embed(["a cat on a mat"]).shape  # doctest: +SKIP
        (1, 384)
    """

    def __init__(self, model_dir: str | Path) -> None:
        folder = Path(model_dir)
        config = _load_json(folder / "config.json")
        if config.get("model_type", "bert") != "bert" or config.get("hidden_act", "gelu") != "gelu":
            raise ModelFormatError(
                f"{str(folder)!r}: the numpy encoder runs BERT models with GELU; got model_type="
                f"{config.get('model_type')!r}, hidden_act={config.get('hidden_act')!r}"
            )
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ModelFormatError(f"{str(folder)!r}: only absolute position embeddings are supported")
        pooling_path = folder / "1_Pooling" / "config.json"
        if pooling_path.exists():
            pooling = _load_json(pooling_path)
            other = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v and k != "pooling_mode_mean_tokens"]
            if not pooling.get("pooling_mode_mean_tokens", False) or other:
                raise ModelFormatError(f"{str(folder)!r}: the numpy encoder does mean pooling only; got {pooling}")
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_positions = int(config.get("max_position_embeddings", 512))
        st_path = folder / "sentence_bert_config.json"
        st_config = _load_json(st_path) if st_path.exists() else {}
        self.max_seq_length = min(int(st_config.get("max_seq_length", self.max_positions)), self.max_positions)
        self.tokenizer = WordPieceTokenizer.from_dir(folder)
        if st_config.get("do_lower_case"):
            self.tokenizer.lowercase = True
        weights_path = folder / "model.safetensors"
        tensors = read_safetensors(weights_path)
        try:
            self._build(tensors, int(config["num_hidden_layers"]))
        except KeyError as exc:
            raise ModelFormatError(f"{str(weights_path)!r}: missing tensor {exc}") from exc

    def _build(self, t: dict[str, NDArray[Any]], n_layers: int) -> None:
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in t else ""

        def get(name: str) -> F32:
            return np.ascontiguousarray(t[prefix + name], dtype=np.float32)

        def linear_t(name: str) -> F32:  # torch stores (out, in); x @ w wants (in, out)
            return np.ascontiguousarray(get(name).T)

        self.word_emb = get("embeddings.word_embeddings.weight")
        self.pos_emb = get("embeddings.position_embeddings.weight")
        self.type_emb = get("embeddings.token_type_embeddings.weight")
        self.emb_ln_g = get("embeddings.LayerNorm.weight")
        self.emb_ln_b = get("embeddings.LayerNorm.bias")
        layers = []
        for i in range(n_layers):
            p = f"encoder.layer.{i}."
            att = p + "attention.self."
            layers.append(
                BertLayer(
                    qkv_w=np.ascontiguousarray(
                        np.concatenate([linear_t(att + n + ".weight") for n in ("query", "key", "value")], axis=1)
                    ),
                    qkv_b=np.concatenate([get(att + n + ".bias") for n in ("query", "key", "value")]),
                    attn_out_w=linear_t(p + "attention.output.dense.weight"),
                    attn_out_b=get(p + "attention.output.dense.bias"),
                    ln1_g=get(p + "attention.output.LayerNorm.weight"),
                    ln1_b=get(p + "attention.output.LayerNorm.bias"),
                    ffn_in_w=linear_t(p + "intermediate.dense.weight"),
                    ffn_in_b=get(p + "intermediate.dense.bias"),
                    ffn_out_w=linear_t(p + "output.dense.weight"),
                    ffn_out_b=get(p + "output.dense.bias"),
                    ln2_g=get(p + "output.LayerNorm.weight"),
                    ln2_b=get(p + "output.LayerNorm.bias"),
                )
            )
        self.layers: tuple[BertLayer, ...] = tuple(layers)
        if self.word_emb.shape[1] != self.hidden or self.hidden % self.heads:
            raise ModelFormatError(
                f"hidden_size={self.hidden} does not match the embeddings ({self.word_emb.shape}) "
                f"or num_attention_heads={self.heads}"
            )

    @property
    def dimension(self) -> int:
        """Length of each sentence vector."""
        return self.hidden

    def forward(self, ids: NDArray[np.int64], mask: NDArray[np.int64]) -> F32:
        """Unit-length mean-pooled sentence vectors of a padded batch.

        Args:
            ids: token ids, shape (batch, length), padded on the right.
            mask: 1 for real tokens, 0 for padding, same shape.

        Returns:
            float32 array of shape (batch, hidden), each row of length 1.
        """
        batch, length = ids.shape
        heads, head_dim, hidden = self.heads, self.hidden // self.heads, self.hidden
        rows = batch * length
        x = (self.word_emb[ids] + self.pos_emb[:length][None, :, :] + self.type_emb[0]).reshape(rows, hidden)
        x = _layer_norm(x, self.emb_ln_g, self.emb_ln_b, self.eps)
        keep = mask.astype(np.float32)
        # Additive mask: padded keys get the float32 minimum, as transformers does.
        bias = ((1.0 - keep) * np.finfo(np.float32).min)[:, None, None, :].astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for layer in self.layers:
            # One (rows, d) @ (d, 3d) product for query, key and value; heads split after.
            qkv = (x @ layer.qkv_w + layer.qkv_b).reshape(batch, length, 3, heads, head_dim)
            q = np.ascontiguousarray(qkv[:, :, 0].transpose(0, 2, 1, 3))  # (B, H, L, hd)
            k_t = np.ascontiguousarray(qkv[:, :, 1].transpose(0, 2, 3, 1))  # (B, H, hd, L)
            v = np.ascontiguousarray(qkv[:, :, 2].transpose(0, 2, 1, 3))  # (B, H, L, hd)
            q *= scale
            scores = q @ k_t  # (B, H, L, L)
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(rows, hidden)
            x = _layer_norm(context @ layer.attn_out_w + layer.attn_out_b + x, layer.ln1_g, layer.ln1_b, self.eps)
            inner = _gelu(x @ layer.ffn_in_w + layer.ffn_in_b)
            x = _layer_norm(inner @ layer.ffn_out_w + layer.ffn_out_b + x, layer.ln2_g, layer.ln2_b, self.eps)
        x = x.reshape(batch, length, hidden)
        summed = np.einsum("bld,bl->bd", x, keep)
        pooled = summed / np.maximum(keep.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        out: F32 = (pooled / norms).astype(np.float32, copy=False)
        return out

    def embed(self, texts: Sequence[str], batch_size: int = 64) -> F32:
        """Unit-length sentence vectors of ``texts``, shape (len(texts), hidden).

        Texts are sorted by length and batched (``batch_size`` per forward pass) so a batch
        pads little; the rows come back in the input order.

        Raises:
            InvalidParameterError: ``batch_size`` is not a positive int, or a text is not a str.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidParameterError(f"batch_size must be a positive int; got batch_size={batch_size!r}")
        items = list(texts)
        out = np.zeros((len(items), self.hidden), dtype=np.float32)
        if not items:
            return out
        encoded = [self.tokenizer.encode(t, self.max_seq_length) for t in items]
        order = np.argsort([-len(e) for e in encoded], kind="stable")
        for start in range(0, len(items), batch_size):
            rows = order[start : start + batch_size]
            ids, mask = self.tokenizer.pad([encoded[r] for r in rows])
            out[rows] = self.forward(ids, mask)
        return out
