"""Benchmark configuration: which datasets/protocols, which methods and parameter grids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidParameterError, UnknownMethodError
from ..registry import DIVERSITY, available_methods, get_method
from .plugins import available_plugins, get_plugin

__all__ = [
    "MethodGrid",
    "BenchConfig",
    "parse_method",
    "parse_values",
    "parse_task",
    "DEFAULT_METHODS",
    "DEFAULT_TASKS",
    "MAX_GRID_VALUES",
    "ORACLE_LAMBDAS",
    "display_name",
    "coerce",
]

#: Cosine top-k is reported under this name.
_ALIASES = {"cosine": "topk"}


def display_name(method: str) -> str:
    """The name used in reports (``topk`` is shown as ``cosine``)."""
    return "cosine" if method == "topk" else method


#: The most values one method grid may hold (``lo:hi:step`` or a comma list); a larger grid
#: is refused with one line before anything is built.
MAX_GRID_VALUES = 1000


def _grid(lo: float, hi: float, step: float) -> tuple[float, ...]:
    n = int(round((hi - lo) / step))
    return tuple(float(round(lo + i * step, 10)) for i in range(n + 1))


def _grid_size(lo: float, hi: float, step: float, spec: str) -> None:
    """Refuse a ``lo:hi:step`` grid that is not finite or would hold over :data:`MAX_GRID_VALUES`
    values (``(hi - lo) / step`` is computed in floats: it may overflow to ``inf``)."""
    if not all(np.isfinite((lo, hi, step))) or step <= 0 or hi < lo:
        raise InvalidParameterError(
            f"parameter values 'lo:hi:step' need finite lo <= hi and step > 0; got {spec!r}"
        )
    with np.errstate(over="ignore"):
        count = np.float64(hi - lo) / np.float64(step)
    if not np.isfinite(count) or round(float(count)) + 1 > MAX_GRID_VALUES:  # as _grid counts
        raise InvalidParameterError(
            f"parameter grid {spec!r} holds {'too many' if not np.isfinite(count) else f'{round(float(count)) + 1:,}'} "
            f"values; at most {MAX_GRID_VALUES:,} (MAX_GRID_VALUES) are accepted: use a larger step"
        )


@dataclass(frozen=True)
class MethodGrid:
    """One method with the values of its trade-off parameter.

    Attributes:
        method: a registered core method (:func:`diverse_core.available_methods`, e.g.
            ``gmmr``, ``vendi``, ``learned``) or a registered plugin name.
        values: values of the trade-off parameter (empty: run once with the defaults).
        params: fixed keyword parameters shared by every value.
        over: ``"diversity"`` when ``values`` are values of the shared knob
            (``gmmr@diversity=0:1:0.25``, each mapped to the method's own parameter);
            ``None``: values of the method's own trade-off parameter.

    Example:
        >>> parse_method("gmmr=0:1:0.5")
        MethodGrid(method='gmmr', values=(0.0, 0.5, 1.0), params={}, over=None)
        >>> parse_method("gmmr@diversity=0:1:0.5").settings()
        [{'diversity': 0.0}, {'diversity': 0.5}, {'diversity': 1.0}]
    """

    method: str
    values: tuple[float, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    over: str | None = None

    @property
    def is_plugin(self) -> bool:
        """Whether the method is a registered plugin rather than a core method."""
        return self.method not in available_methods()

    @property
    def param(self) -> str | None:
        """Name of the trade-off parameter (``lambda_mult``, ``sigma``, ``s`` or the plugin's;
        ``diversity`` for a grid over the shared knob)."""
        if self.over is not None:
            return self.over
        if self.is_plugin:
            return get_plugin(self.method).param
        return get_method(self.method).param

    def label(self, params: Mapping[str, Any], llm: str | None = None) -> str:
        """The parameters one setting ran with, defaults included (``-`` when it has none).

        The trade-off parameter comes first (its default when the grid gives no values),
        then every fixed parameter given with ``@key=value``; a core method without a
        trade-off parameter shows its defaults (e.g. ``model=None`` for ``adaptive``).
        ``llm``: the model a pipeline actually ran with (e.g. ``smollm2-135m (local)``); it
        replaces the ``llm=`` spec the user gave (``auto``, ``local``, ...), last in the label.
        """
        shown: dict[str, Any] = {}
        if self.param is not None and (self.param in params or self.is_plugin
                                       or get_method(self.method).defaults.get(self.param) is not None):
            if self.param in params:
                shown[self.param] = params[self.param]
            elif not self.is_plugin:
                shown[self.param] = get_method(self.method).defaults.get(self.param)
        elif not self.is_plugin:  # no trade-off value to show (or its default is "the method's own choice")
            shown.update({k: v for k, v in get_method(self.method).setting_defaults.items() if k != self.param})
        shown.update({k: v for k, v in params.items() if k != self.param})
        parts = [f"{k}={_fmt(v)}" for k, v in shown.items() if llm is None or k != "llm"]
        if llm is not None:  # shown verbatim: a model name may hold a '/' (Qwen/Qwen2.5-7B)
            parts.append(f"llm={llm}")
        return ", ".join(parts) if parts else "-"

    def settings(self) -> list[dict[str, Any]]:
        """The parameter dicts this grid runs, one per value."""
        if not self.values:
            return [dict(self.params)]
        return [{**self.params, str(self.param): v} for v in self.values]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, str) and ("/" in value or "\\" in value):
        return Path(value).name  # a file path: its name is enough to tell settings apart
    return str(value)


def parse_values(spec: str) -> tuple[float, ...]:
    """``"0.1,0.5"`` or ``"lo:hi:step"`` (inclusive) to a tuple of finite floats.

    At most :data:`MAX_GRID_VALUES` values (1,000).

    Raises:
        InvalidParameterError: a malformed spec, a value that is not finite, a step that is
            not > 0, or a grid over :data:`MAX_GRID_VALUES` values.

    Example:
        >>> parse_values("0:0.4:0.2"), parse_values("0.5,0.7")
        ((0.0, 0.2, 0.4), (0.5, 0.7))
    """
    try:
        if ":" in spec:
            lo, hi, step = (float(x) for x in spec.split(":"))
            _grid_size(lo, hi, step, spec)
            return _grid(lo, hi, step)
        values = tuple(float(x) for x in spec.split(",") if x.strip())
    except (ValueError, OverflowError) as exc:
        if isinstance(exc, InvalidParameterError):
            raise
        raise InvalidParameterError(
            f"parameter values must be 'v1,v2,...' or 'lo:hi:step' with step > 0; got {spec!r}"
        ) from exc
    if len(values) > MAX_GRID_VALUES:
        raise InvalidParameterError(
            f"parameter grid holds {len(values):,} values; at most {MAX_GRID_VALUES:,} (MAX_GRID_VALUES) "
            f"are accepted; got {spec[:40]!r}..."
        )
    if not all(np.isfinite(values)):
        raise InvalidParameterError(f"parameter values must be finite numbers; got {spec!r}")
    return values


def coerce(value: Any) -> Any:
    """A CLI value as Python: ``true``/``yes``, ``false``/``no``, ``none``, ints, floats, else the string."""
    if not isinstance(value, str):
        return value
    low = value.lower()
    if low in {"true", "yes", "false", "no", "none"}:
        return {"true": True, "yes": True, "false": False, "no": False}.get(low)
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def parse_method(spec: str) -> MethodGrid:
    """Parse ``NAME[=VALUES][@KEY=VAL...]``, e.g. ``dartboard=0.05,0.1@triage_k=100``.

    ``cosine`` is an alias of ``topk``. ``@diversity=VALUES`` with several values
    (``gmmr@diversity=0:1:0.25``, ``vendi@diversity=0,0.5``) is a grid over the shared
    ``diversity`` knob in place of ``=VALUES`` (also for a pipeline plugin that takes
    ``diversity``: ``diva@diversity=0:1:0.5``); one value (``@diversity=0.3``) is a fixed
    parameter like any other.
    """
    head, *extras = spec.strip().split("@")
    name, _, values = head.partition("=")
    name = _ALIASES.get(name.strip(), name.strip())
    if name not in available_methods() and name not in available_plugins():
        raise UnknownMethodError(
            f"unknown method {name!r} in {spec!r}; core methods: {available_methods()}, "
            f"plugins: {available_plugins()}"
        )
    params: dict[str, Any] = {}
    over: tuple[float, ...] = ()
    for extra in extras:
        key, sep, val = extra.partition("=")
        if not sep or not key:
            raise InvalidParameterError(f"fixed parameters must look like @key=value; got {extra!r} in {spec!r}")
        if key.strip() == DIVERSITY and (":" in val or "," in val):
            over = parse_values(val.strip())
            continue
        params[key.strip()] = coerce(val.strip())
    if over:
        if values:
            raise InvalidParameterError(
                f"give the grid once: '={values}' or '@{DIVERSITY}=...', not both, in {spec!r}"
            )
        if name not in available_methods():
            if DIVERSITY not in getattr(get_plugin(name).fn, "options", ()):
                raise InvalidParameterError(
                    f"@{DIVERSITY}=GRID needs a method that takes {DIVERSITY}; plugin {name!r} does not"
                )
            return MethodGrid(name, over, params, over=DIVERSITY)
        mapping = get_method(name).diversity
        if get_method(name).param is None and not (mapping is not None and mapping.constant):
            raise InvalidParameterError(f"method {name!r} has no trade-off parameter; a {DIVERSITY} grid needs one")
        return MethodGrid(name, over, params, over=DIVERSITY)
    grid = MethodGrid(name, parse_values(values) if values else (), params)
    if grid.values and grid.param is None:
        raise InvalidParameterError(f"method {name!r} has no trade-off parameter; drop '={values}'")
    return grid


def parse_task(spec: str, default_protocols: Sequence[str]) -> list[tuple[str, str]]:
    """``"hotpotqa"`` -> one task per default protocol; ``"rgb:paragraphs"`` -> that one."""
    name, _, protos = spec.partition(":")
    chosen = [p for p in protos.split(",") if p] if protos else list(default_protocols)
    return [(name.strip(), p.strip()) for p in chosen]


#: gMMR lambda grid of the per-query Oracle (Khan et al. 2026, Sec. 3.3).
ORACLE_LAMBDAS: tuple[float, ...] = _grid(0.1, 1.0, 0.1)

DEFAULT_METHODS: tuple[MethodGrid, ...] = (
    MethodGrid("topk"),
    MethodGrid("mmr", (0.5, 0.7)),
    MethodGrid("gmmr", _grid(0.0, 1.0, 0.1)),
    MethodGrid("dartboard", (0.05, 0.1, 0.15, 0.2, 0.3, 0.5)),
    MethodGrid("vendi", _grid(0.0, 1.0, 0.2)),
)

DEFAULT_TASKS: tuple[tuple[str, str], ...] = (
    ("hotpotqa", "paragraphs"),
    ("hotpotqa", "chunks"),
    ("musique", "paragraphs"),
    ("musique", "chunks"),
    ("2wiki", "paragraphs"),
    ("2wiki", "chunks"),
    ("rgb", "paragraphs"),
    ("asqa", "paragraphs"),
)


@dataclass
class BenchConfig:
    """Everything :func:`~diverse_core.eval.runner.run_benchmark` needs.

    Attributes:
        tasks: ``(dataset, protocol)`` pairs.
        methods: method grids to run on every task.
        k: chunks chosen per question.
        fetch_k: candidates retrieved by cosine before selection.
        limit: keep only the first ``limit`` questions of each dataset (``--quick``).
        data_dir: benchmark data folder (default: ``$DIVERSE_RAG_DATA`` or ``../shared/data``).
        cache_dir: embedding cache folder (default: ``$DIVERSE_RAG_CACHE`` or the user cache folder,
            see :func:`~diverse_core.eval.disk_cache.default_cache_dir`).
        out_dir: where results are written (``None``: nothing written).
        per_query_dir: folder for the per-query JSON (default ``<out_dir>/per_query``).
        results_md: optional path of the generated ``RESULTS.md``.
        benchmarks: already loaded benchmarks by name, used instead of reading
            ``data_dir`` (custom data, tests).
        embedder: ``texts -> (n, d)`` callable (default: the packaged MiniLM).
        model_name: cache key of the embedder's vectors.
        oracle_lambdas: gMMR values the Oracle chooses from (empty: no Oracle; when the gmmr
            grid lacks any of them the Oracle is skipped, see :meth:`oracle_missing`).
        agreement_methods: methods whose picks get Kendall tau / Spearman rho against
            cosine order (scipy's rank tests are slow, so not all by default).
        plots: draw PNG figures.
        progress: show tqdm progress bars.
        command: the command line to print at the top of the reports.
        titles: index units as ``"title: text"`` (``False``: the bare text, see
            :func:`~diverse_core.eval.protocols.build_task`).
        source_ids: give methods that read sources (``learned``) each candidate's page id as
            ``sources`` (what a store's metadata would carry).
    """

    tasks: Sequence[tuple[str, str]] = DEFAULT_TASKS
    methods: Sequence[MethodGrid] = DEFAULT_METHODS
    k: int = 5
    fetch_k: int = 50
    limit: int | None = None
    data_dir: str | Path | None = None
    cache_dir: str | Path | None = None
    out_dir: str | Path | None = None
    per_query_dir: str | Path | None = None
    results_md: str | Path | None = None
    benchmarks: Mapping[str, Any] = field(default_factory=dict)
    embedder: Any = None
    model_name: str = "all-MiniLM-L6-v2"
    oracle_lambdas: Sequence[float] = ORACLE_LAMBDAS
    agreement_methods: Sequence[str] = ("vendi",)
    plots: bool = True
    progress: bool = True
    command: str | None = None
    titles: bool = True
    source_ids: bool = False

    def validate(self, require_tasks: bool = True) -> None:
        """Raise InvalidParameterError on inconsistent settings (``require_tasks=False``: tasks may be empty)."""
        for name, val in (("k", self.k), ("fetch_k", self.fetch_k)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise InvalidParameterError(f"{name} must be a positive integer; got {name}={val!r}")
        if self.fetch_k < self.k:
            raise InvalidParameterError(f"fetch_k must be >= k; got fetch_k={self.fetch_k}, k={self.k}")
        if self.limit is not None and (
            isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1
        ):
            raise InvalidParameterError(
                f"limit (--quick) must be a positive integer or None; got limit={self.limit!r}"
            )
        if require_tasks and not self.tasks:
            raise InvalidParameterError("tasks must name at least one (dataset, protocol)")
        if not self.methods:
            raise InvalidParameterError("methods must name at least one method")
        from .protocols import PROTOCOLS

        for dataset, protocol in self.tasks:
            if protocol not in PROTOCOLS:
                raise InvalidParameterError(
                    f"unknown protocol {protocol!r} for dataset {dataset!r}; accepted: {', '.join(PROTOCOLS)}"
                )
        for grid in self.methods:  # every value of every core grid, checked before any data is read
            if grid.is_plugin:
                continue
            spec = get_method(grid.method)
            for params in grid.settings():
                try:
                    spec.resolve_params(params)
                except InvalidParameterError as exc:
                    raise InvalidParameterError(f"method {display_name(grid.method)!r}: {exc}") from None

    def oracle_missing(self) -> list[float]:
        """The ``oracle_lambdas`` that no gmmr grid runs (the Oracle is skipped when any is missing)."""
        ran = [v for g in self.methods if g.method == "gmmr" and g.over is None for v in g.values]
        return [float(v) for v in self.oracle_lambdas if not np.any(np.isclose(ran, v))] if ran else [
            float(v) for v in self.oracle_lambdas
        ]
