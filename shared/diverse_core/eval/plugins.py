"""The method hook of the harness: plug any selection pipeline in as a "method".

A plugin is a callable ``fn(inputs: MethodInput, **params) -> MethodOutput``. For every
question the runner retrieves the ``fetch_k`` most similar units by cosine and hands
the plugin the question, the candidate texts (in cosine order), their embeddings, the
query embedding and ``k``; the plugin returns the chosen candidate indices in pick
order plus any extra information (kept in the per-query JSON).

Register it once, then name it in the method grid (``--methods NAME`` on the CLI).
A plugin with a trade-off parameter declares its name with ``param=`` so a grid of
values (``NAME=0.1,0.5``) is passed one value per call as that keyword.

Example (an LLM pipeline such as DF-RAG plugs in the same way):
    >>> import numpy as np
    >>> from diverse_core import sweep
    >>> def closest_to_centroid(inp, width=0.5):
    ...     sw = sweep("gmmr", inp.query_embedding, inp.embeddings, inp.k, values=[0.5, 1.0])
    ...     return MethodOutput(sw.indices[0].tolist(), {"lambda": 0.5, "width": width})
    >>> register_plugin("toy", closest_to_centroid, param="width", replace=True)
    >>> get_plugin("toy").param
    'width'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InvalidParameterError, UnknownMethodError

__all__ = [
    "MethodInput",
    "MethodOutput",
    "Plugin",
    "register_plugin",
    "get_plugin",
    "available_plugins",
    "add_plugin_resolver",
]


@dataclass(frozen=True)
class MethodInput:
    """What a plugin sees for one question.

    Attributes:
        question: the question text.
        query_embedding: shape (d,).
        texts: candidate texts (``fetch_k`` of them, most similar first).
        embeddings: candidate embeddings, shape (n, d), unit length.
        relevance: cosine similarity of each candidate to the query, shape (n,).
        k: how many to choose.
        qid: the question id.
        meta: the record's free-form metadata (e.g. ASQA's gold interpretations in
            ``meta["interpretations"]``); never the gold passages.
        gold_groups: per candidate, the index of the gold passage it belongs to, or -1
            (shape (n,)); filled by the harness for simulations and diagnostics (e.g. the
            simulated judge). A real method must not look at it.
        units: the candidates' unit indices in the task's corpus (``None`` outside the runner).
        source_factory: builds the question's :class:`~diverse_core.pipelines.CandidateSource`
            (the task's pooled corpus, or the question's own pool; ids are unit indices).
        sources: per candidate, the id of its source passage (page), as a store's metadata would
            give it (``None`` outside the runner).
        names: per candidate, its passage's title (``None`` where it has none), as a store's
            ``metadata["title"]`` would give it; ``None`` when no passage has a title.
    """

    question: str
    query_embedding: NDArray[np.float32]
    texts: Sequence[str]
    embeddings: NDArray[np.float32]
    relevance: NDArray[np.float64]
    k: int
    qid: str = ""
    gold_groups: NDArray[np.int64] | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    units: NDArray[np.int64] | None = None
    source_factory: Callable[[], Any] | None = None
    sources: Sequence[str] | None = None
    names: Sequence[str | None] | None = None

    @cached_property
    def source(self) -> Any:
        """The question's candidate source (built on first use), or ``None``."""
        return None if self.source_factory is None else self.source_factory()

    def local_indices(self, units: Sequence[int]) -> list[int]:
        """Positions in ``texts`` of the given corpus units (-1 for units outside the candidates)."""
        if self.units is None:
            return [int(u) for u in units]
        where = {int(u): i for i, u in enumerate(self.units.tolist())}
        return [where.get(int(u), -1) for u in units]


@dataclass(frozen=True)
class MethodOutput:
    """A plugin's answer: candidate indices in pick order and free-form info (JSON-able).

    Pipelines that search the whole corpus also give ``units``: the chosen corpus unit indices
    (then they, not ``indices``, are scored).
    """

    indices: Sequence[int]
    info: Mapping[str, Any] = field(default_factory=dict)
    units: Sequence[int] | None = None


PluginFn = Callable[..., MethodOutput]


@dataclass(frozen=True)
class Plugin:
    """A registered plugin: its callable and the name of its swept parameter (if any)."""

    name: str
    fn: PluginFn
    param: str | None = None


_PLUGINS: dict[str, Plugin] = {}


def register_plugin(name: str, fn: PluginFn, *, param: str | None = None, replace: bool = False) -> None:
    """Make ``fn`` available to the runner as method ``name``.

    Raises:
        InvalidParameterError: the name is taken (pass ``replace=True``) or ``fn`` is not callable.
    """
    check_registration(_PLUGINS, name, fn, replace=replace, kind="plugin", subject=f"plugin {name!r}")
    _PLUGINS[name] = Plugin(name, fn, param)


def check_registration(
    table: Mapping[str, Any], name: str, fn: object, *, replace: bool, kind: str, subject: str
) -> None:
    """The checks of the harness's ``register_*`` functions: ``fn`` (named ``subject`` in the
    error) is callable, and ``name`` is not yet a ``kind`` in ``table`` unless ``replace``.

    Raises:
        InvalidParameterError: either check fails.
    """
    if not callable(fn):
        raise InvalidParameterError(f"{subject} must be callable; got {fn!r}")
    if name in table and not replace:
        raise InvalidParameterError(f"{kind} {name!r} is already registered (pass replace=True)")


#: Hooks that may declare a plugin on first use (``resolve(name) -> declared``).
_RESOLVERS: list[Callable[[str], bool]] = []


def add_plugin_resolver(resolve: Callable[[str], bool]) -> None:
    """Let ``resolve(name)`` declare a plugin that :func:`get_plugin` does not know yet (it
    returns whether it did); the pipeline plugin adds one for every registered pipeline."""
    _RESOLVERS.append(resolve)


def get_plugin(name: str) -> Plugin:
    """Look up a registered plugin.

    A pipeline registered with :func:`~diverse_core.pipelines.register_pipeline` (or built in)
    that no plugin declares is declared on first use with the generic plugin
    (:func:`~diverse_core.eval.pipeline_plugin.declare_registered_pipeline`).
    """
    if name not in _PLUGINS:
        for resolve in _RESOLVERS:
            if resolve(name):
                break
    if name not in _PLUGINS:
        raise UnknownMethodError(f"unknown plugin {name!r}; registered: {available_plugins()}")
    return _PLUGINS[name]


def available_plugins() -> list[str]:
    """Names of the registered plugins and of every registered pipeline, sorted."""
    from ..pipelines import available_pipelines

    return sorted(set(_PLUGINS) | set(available_pipelines()))
