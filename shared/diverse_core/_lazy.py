"""Module attributes imported on first use (PEP 562), for packages whose heavier parts most users
never touch, deprecated aliases of renamed public names, and process-wide defaults made on first
use."""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

__all__ = ["deprecated_aliases", "package_exports", "ProcessDefault"]

T = TypeVar("T")


def deprecated_aliases(
    module: str,
    namespace: dict[str, Any],
    aliases: Mapping[str, str],
    getattr_: Callable[[str], Any] | None = None,
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that also answers old names (``old -> new``) with the new name's
    object, warning with a :class:`DeprecationWarning` on every access (the alias is never
    cached in the module, so each use warns); other names go to ``getattr_`` (e.g. a
    :func:`package_exports` one; ``None``: ``AttributeError``).

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
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562): ``lazy`` names (name -> relative
    module) imported on first use and then kept in ``namespace`` (the package's ``globals()``),
    ``renamed`` old names (old -> new) answered with a warning (:func:`deprecated_aliases`), and
    ``moved`` names (name -> relative module) the package no longer exports, answered from their
    module with a warning on each access.

    Example:
        >>> import warnings
        >>> ns: dict = {}
        >>> get, dir_ = package_exports("diverse_core", ns, {"vendi_score": ".metrics"}, {"vendi": "vendi_score"},
        ...                             moved={"jaccard": ".metrics"})
        >>> get("vendi_score").__name__, "vendi_score" in ns, "vendi_score" in dir_(), "jaccard" in dir_()
        ('vendi_score', True, True, False)
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     moved_one = get("jaccard")
        >>> moved_one.__module__, str(caught[0].message)
        ('diverse_core.metrics', 'diverse_core.jaccard is deprecated; import it from diverse_core.metrics')
    """
    moved = moved or {}

    def lazy_or_moved(name: str) -> Any:
        if name in lazy:
            value = namespace[name] = getattr(importlib.import_module(lazy[name], package), name)
            return value
        if name not in moved:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = importlib.import_module(moved[name], package)
        warnings.warn(f"{package}.{name} is deprecated; import it from {module.__name__}",
                      DeprecationWarning, stacklevel=3)
        return getattr(module, name)

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return deprecated_aliases(package, namespace, renamed, lazy_or_moved), __dir__

