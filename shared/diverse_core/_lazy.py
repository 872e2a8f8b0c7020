"""Module attributes imported on first use (PEP 562), for packages whose heavier parts most users
never touch, deprecated aliases of renamed public names, and process-wide defaults made on first
use."""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["lazy_exports", "deprecated_aliases", "package_exports", "ProcessDefault"]

T = TypeVar("T")


def lazy_exports(
    package: str, namespace: dict[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` that import ``names`` (name -> relative
    module) on first access and then keep them in ``namespace`` (the module's ``globals()``).

    Example:
        >>> ns: dict = {}
        >>> getattr_, dir_ = lazy_exports("diverse_core", ns, {"vendi_score": ".metrics"})
        >>> getattr_("vendi_score").__name__, "vendi_score" in ns
        ('vendi_score', True)
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name], package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__


def deprecated_aliases(
    module: str,
    namespace: dict[str, Any],
    aliases: Mapping[str, str],
    getattr_: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that also answers old names (``old -> new``) with the new name's
    object, warning with a :class:`DeprecationWarning` on every access (the alias is never
    cached in the module, so each use warns); other names go to ``getattr_`` (e.g. a
    :func:`lazy_exports` one; ``None``: ``AttributeError``).

    Example:
        >>> import warnings
        >>> ns = {"new": 42}
        >>> get = deprecated_aliases("demo", ns, {"old": "new"})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     value = get("old")
        >>> value, caught[0].category.__name__
        (42, 'DeprecationWarning')
    """

    def __getattr__(name: str) -> Any:
        if name in aliases:
            new = aliases[name]
            warnings.warn(
                f"{module}.{name} is deprecated; use {module}.{new} (the same object)",
                DeprecationWarning,
                stacklevel=2,
            )
            return namespace[new] if new in namespace else __getattr__(new)
        if getattr_ is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr_(name)

    return __getattr__


class ProcessDefault(Generic[T]):
    """One object for the whole process, made by ``factory`` on the first :meth:`get` (under a
    lock, so concurrent first callers share it); a factory that raises is tried again next time.

    Example:
        >>> made = []
        >>> default = ProcessDefault(lambda: made.append(1) or len(made))
        >>> default.get(), default.get(), made
        (1, 1, [1])
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        """The object, made now if this is the first call (or every earlier one failed)."""
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value


def package_exports(
    package: str,
    namespace: dict[str, Any],
    lazy: Mapping[str, str],
    renamed: Mapping[str, str],
    moved: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__``: ``lazy`` names (name -> relative module)
    imported on first use (:func:`lazy_exports`), ``renamed`` old names (old -> new) answered
    with a warning (:func:`deprecated_aliases`), and ``moved`` names (name -> relative module)
    the package no longer exports, answered from their module with a warning.

    Example:
        >>> import warnings
        >>> ns: dict = {}
        >>> get, dir_ = package_exports("diverse_core", ns, {"vendi_score": ".metrics"}, {"vendi": "vendi_score"},
        ...                             moved={"jaccard": ".metrics"})
        >>> get("vendi_score").__name__, "vendi_score" in dir_(), "jaccard" in dir_()
        ('vendi_score', True, False)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     moved_one = get("jaccard")
        >>> moved_one.__module__, str(caught[0].message)
        ('diverse_core.metrics', 'diverse_core.jaccard is deprecated; import it from diverse_core.metrics')
    """
    getattr_, dir_ = lazy_exports(package, namespace, lazy)
    if moved:
        getattr_ = _moved_names(package, moved, getattr_)
    return deprecated_aliases(package, namespace, renamed, getattr_), dir_


def _moved_names(package: str, moved: Mapping[str, str], getattr_: Callable[[str], Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` answering ``moved`` names from their module, warning on each access
    (never cached, so each use warns); other names go to ``getattr_``."""

    def __getattr__(name: str) -> Any:
        if name not in moved:
            return getattr_(name)
        module = importlib.import_module(moved[name], package)
        warnings.warn(
            f"{package}.{name} is deprecated; import it from {module.__name__}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(module, name)

    return __getattr__

