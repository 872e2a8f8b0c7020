"""Griffe extensions for the API reference: ``Example:`` sections, pydantic signatures.

The project's Google-style docstrings title their doctests ``Example:``; griffe knows only the
plural ``Examples:`` as a section and would render the singular as a Markdown admonition (where
``>>>`` lines turn into block quotes). This renames the title before the docstrings are parsed.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from griffe import Extension, Function, Parameter, ParameterKind, Parameters

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(Extension):
    """Rename ``Example:`` section titles to ``Examples:`` on every loaded object."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:  # noqa: D102
        doc = getattr(obj, "docstring", None)
        if doc is not None and "Example:" in doc.value:
            doc.value = _SINGULAR.sub(r"\1Examples:", doc.value)


def _field_default(value: str | None) -> str | None:
    """The default a pydantic field declaration gives (``None``: required)."""
    if value is None:
        return None
    text = str(value)
    if not text.startswith("Field("):
        return text
    try:
        call = ast.parse(text, mode="eval").body
    except SyntaxError:
        return text
    if not isinstance(call, ast.Call):
        return text
    for kw in call.keywords:
        if kw.arg == "default":
            return ast.unparse(kw.value)
        if kw.arg == "default_factory":
            return f"{ast.unparse(kw.value)}()"
    if call.args and not (isinstance(call.args[0], ast.Constant) and call.args[0].value is Ellipsis):
        return ast.unparse(call.args[0])
    return None


class PydanticSignatures(Extension):
    """Give pydantic-model classes whose ``__init__`` takes only ``**data`` their real signature.

    The faces (``DiverseRetriever``, ``DiverseCompressor``, ...) are pydantic models: their fields
    are annotated class attributes and their ``__init__(self, **data: Any)`` only checks and
    forwards. Read statically, the API reference showed ``DiverseRetriever(**data: Any)``, an empty
    type column and every documented parameter "required". This replaces that ``__init__`` with one
    whose keyword-only parameters are the public fields, in source order (inherited fields of the
    project's own classes first), with their annotations and defaults (``Field(default=...)`` read).
    """

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:  # noqa: D102
        for cls in _classes(pkg):
            init = cls.members.get("__init__")
            if not _takes_only_data(init) or not _fields(cls):
                continue
            params = [Parameter("self", kind=ParameterKind.positional_or_keyword)]
            fields = _fields(cls)
            for attr in fields:
                params.append(Parameter(attr.name, annotation=attr.annotation, kind=ParameterKind.keyword_only,
                                        default=_field_default(attr.value)))
            # Documented keywords that ``__init__`` folds into fields (``diversity`` -> method_params):
            # optional, as the model accepts them without being fields.
            names = {a.name for a in fields}
            for extra in _documented_args(cls):
                if extra not in names:
                    params.append(Parameter(extra, kind=ParameterKind.keyword_only, default="None"))
            new = Function("__init__", parameters=Parameters(*params), returns="None", parent=cls,
                           lineno=init.lineno if init is not None else cls.lineno,
                           endlineno=init.endlineno if init is not None else cls.lineno)
            if init is not None and init.docstring is not None:
                new.docstring = init.docstring
            cls.set_member("__init__", new)


def _classes(obj: Any) -> list[Any]:
    out = []
    for member in obj.members.values():
        if getattr(member, "is_alias", False):
            continue
        if member.is_class:
            out.append(member)
            out.extend(_classes(member))
        elif member.is_module:
            out.extend(_classes(member))
    return out


def _takes_only_data(init: Any) -> bool:
    if init is None or getattr(init, "is_alias", False) or not init.is_function:
        return False
    kinds = [p.kind for p in init.parameters if p.name != "self"]
    return kinds == [ParameterKind.var_keyword]


def _fields(cls: Any) -> list[Any]:
    """Annotated public class attributes of ``cls`` and of the project's classes it derives from."""
    seen: dict[str, Any] = {}
    for base in reversed([cls, *_project_bases(cls)]):
        for name, attr in base.members.items():
            if (getattr(attr, "is_alias", False) or not attr.is_attribute or name.startswith("_")
                    or name == "model_config" or attr.annotation is None
                    or "ClassVar" in str(attr.annotation)
                    or ("class-attribute" not in attr.labels and attr.value is not None)):
                continue
            seen.pop(name, None)
            seen[name] = attr
    return list(seen.values())


def _project_bases(cls: Any) -> list[Any]:
    out = []
    try:
        bases = cls.resolved_bases
    except Exception:  # noqa: BLE001 - an unresolvable base: fields of cls alone
        return out
    for base in bases:
        if getattr(base, "is_class", False):
            out.append(base)
            out.extend(_project_bases(base))
    return out


def _documented_args(cls: Any) -> list[str]:
    """The names of the ``Args:`` section of the class docstring (Google style)."""
    if cls.docstring is None:
        return []
    lines = cls.docstring.value.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
    if start is None:
        return []
    base = len(lines[start]) - len(lines[start].lstrip())
    names: list[str] = []
    entry: int | None = None
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= base:
            break
        entry = indent if entry is None else entry
        m = re.match(r"\s*(\w+)(?:\s*\([^)]*\))?:", line)
        if indent == entry and m:
            names.append(m.group(1))
    return names
