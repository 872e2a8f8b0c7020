"""Griffe extension for the API reference: read ``Example:`` as an examples section.

The project's Google-style docstrings title their doctests ``Example:``; griffe knows only the
plural ``Examples:`` as a section and would render the singular as a Markdown admonition (where
``>>>`` lines turn into block quotes). This renames the title before the docstrings are parsed.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(Extension):
    """Rename ``Example:`` section titles to ``Examples:`` on every loaded object."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:  # noqa: D102
        doc = getattr(obj, "docstring", None)
        if doc is not None and "Example:" in doc.value:
            doc.value = _SINGULAR.sub(r"\1Examples:", doc.value)
