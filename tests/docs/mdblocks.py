"""Find the fenced code blocks of a Markdown file (the doc-example collector's parser).

Convention (every ``docs/**/*.md`` and ``README.md``):

* a ```` ```python ```` block runs in the test suite, offline, exactly as written; the blocks
  of one file run in order in one namespace, so a later block can use an earlier one's names;
* a ```` ```python notest ```` block is shown but not run (it needs a network model, a server
  or your own data); say why in the text next to it;
* other languages (``bash``, ``text``, ``json``...) are not executed; ``diverse-rag ...`` and
  ``python -m ...`` lines in ``bash`` blocks are checked against the command-line parser and
  the module index instead.

Fences may be indented (inside admonitions and content tabs); the indentation is removed.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "read_blocks", "PYTHON_INFOS"]

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
#: Info strings a Python block may carry, and whether such a block runs.
PYTHON_INFOS = {"python": True, "python notest": False}
_PYTHONISH = re.compile(r"^(python\S*|py|py3|pycon|ipython)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """One fenced block: its file, 1-based line of the opening fence, info string and code."""

    path: Path
    line: int
    info: str
    code: str

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def is_python(self) -> bool:
        return bool(_PYTHONISH.match(self.info.strip()))

    @property
    def runs(self) -> bool:
        return PYTHON_INFOS.get(" ".join(self.info.split()), False)


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` in file order (an unclosed fence runs to the end of the file)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        blocks.append(Block(path, i + 1, info, textwrap.dedent("\n".join(body)) + "\n"))
        i = j + 1
    return blocks
