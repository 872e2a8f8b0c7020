"""The house: every module of the library sits on one level, and imports run downwards only.

Levels, bottom to top (:data:`LEVELS`; a module takes the level of its longest listed prefix)::

    0  base          errors, the input checks (validation, array/param checks, row norms), Selection
    1  contract      registry: MethodSpec, the diversity map, the name -> method table
    2  kernels       methods/: the ten plain selection kernels
    3  tools         set metrics, DF-RAG tuning, embedders, embedding cache, LLM clients, SQL
    4  text          the text features the trained selectors and DR-RAG read
    5  trained base  what the two trained selectors share
    6  trained       adaptive/ and learned/: the trained selectors with their training code
    7  registration  builtin_methods: registers the twelve built-in methods, the one place that does
    8  entry points  select/sweep (api) and the per-retriever plan
    9  pipelines     DF-RAG, DIVA, Vendi-RAG, DR-RAG on one contract
    10 package       ``import diverse_core``: the public surface
    11 faces         langchain_diverse, llamaindex_diverse
    12 harness       eval/, the command line, the demo: never imported by anything below

Every ``import`` counts, at module level and inside functions alike (a lazy import is still an
arrow), and so do the lazy export tables (``_LAZY = {"Name": ".module"}``) and
``importlib.import_module("literal")``. An import of ``a.b.c`` is an arrow to the deepest module
of that path that exists (``from pkg import name`` points at ``pkg`` unless ``name`` is a module).
Python's implicit import of a module's parent packages is not an arrow.

Print the house (levels, modules and lines per level, every upward arrow and cycle) with
``python tests/core/test_import_graph.py [REPO_ROOT]``.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: (level, name, module prefixes). A prefix covers the module of that name and everything below it.
LEVELS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (0, "base", (
        "diverse_core.errors", "diverse_core._version", "diverse_core._lazy",
        "diverse_core.array_checks", "diverse_core.param_checks", "diverse_core.row_norms",
        "diverse_core.validation", "diverse_core.result", "diverse_core.pipeline_names",
        "diverse_core.candidate_screen", "diverse_core.near_duplicates",
    )),
    (1, "contract", ("diverse_core.registry",)),
    (2, "kernels", ("diverse_core.methods",)),
    (3, "tools", (
        "diverse_core.metrics", "diverse_core.answer_metrics", "diverse_core.tuning",
        "diverse_core.wordpiece", "diverse_core.minilm_numpy", "diverse_core.embedders",
        "diverse_core.embedding_cache", "diverse_core.pgvector_sql", "diverse_core.llm",
        "diverse_core.gil_blocks",
    )),
    (4, "text", (
        "diverse_core.text", "diverse_core.textcache", "diverse_core.textfeatures",
        "diverse_core.textmarks", "diverse_core.texttokens",
    )),
    (5, "trained base", ("diverse_core.trained",)),
    (6, "trained", ("diverse_core.adaptive", "diverse_core.learned")),
    (7, "registration", ("diverse_core.builtin_methods",)),
    (8, "entry points", ("diverse_core.api", "diverse_core.plan", "diverse_core.embedder_check")),
    (9, "pipelines", ("diverse_core.pipelines", "diverse_core.dfrag")),
    (10, "package", ("diverse_core",)),
    (11, "faces", ("langchain_diverse", "llamaindex_diverse")),
    (12, "harness", ("diverse_core.eval", "diverse_core.cli", "diverse_core.demo")),
)
KERNELS = 2
HARNESS = 12
#: (source folder, package name) of every package the graph covers.
PACKAGES = (
    ("shared/diverse_core", "diverse_core"),
    ("langchain_diverse", "langchain_diverse"),
    ("llamaindex_diverse", "llamaindex_diverse"),
)
#: What a user runs (with every module of the pipelines): nothing these reach, by any import, lazy
#: ones included, may be the harness.
RUNTIME_ROOTS = ("diverse_core", "diverse_core.api", "langchain_diverse", "llamaindex_diverse")
#: Prefixes only the package itself may list (the top-level ``diverse_core``, not its modules).
EXACT = {"diverse_core"}
#: Packages of one level that must not import each other (what they share lives a level below).
APART = (("diverse_core.adaptive", "diverse_core.learned"),)


@dataclass(frozen=True)
class Arrow:
    """One import: ``source`` imports ``target`` (``lazy``: inside a function or a lazy table)."""

    source: str
    target: str
    lazy: bool
    line: int


def level_of(module: str) -> int | None:
    """The level of ``module`` by its longest prefix in :data:`LEVELS` (``None``: not listed)."""
    best: tuple[int, int] | None = None
    for level, _, prefixes in LEVELS:
        for prefix in prefixes:
            covers = module == prefix or (prefix not in EXACT and module.startswith(prefix + "."))
            if covers and (best is None or len(prefix) > best[0]):
                best = (len(prefix), level)
    return None if best is None else best[1]


def level_name(level: int) -> str:
    return next(name for lv, name, _ in LEVELS if lv == level)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the covered packages: dotted name -> file."""
    found: dict[str, Path] = {}
    for folder, package in PACKAGES:
        for path in sorted((root / folder).rglob("*.py")):
            parts = [package, *path.relative_to(root / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported(tree: ast.AST, package: str) -> list[tuple[str, bool, int]]:
    """``(dotted target, lazy, line)`` for each import in ``tree`` (``package``: for relative ones)."""

    def absolute(name: str, level: int) -> str:
        if not level:
            return name
        base = package.split(".")[: len(package.split(".")) - level + 1]
        return ".".join([*base, *([name] if name else [])])

    def named(text: str) -> str:  # ".x.y" (a lazy table's or import_module's) -> absolute
        return absolute(text.lstrip("."), len(text) - len(text.lstrip(".")))

    out: list[tuple[str, bool, int]] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((alias.name, lazy, child.lineno) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = absolute(child.module or "", child.level)
                out.extend((f"{base}.{alias.name}", lazy, child.lineno) for alias in child.names)
            elif isinstance(child, ast.Call) and _is_import_module(child):
                arg = child.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.append((named(arg.value), True, child.lineno))
            elif isinstance(child, ast.Assign) and isinstance(child.value, ast.Dict) and any(
                isinstance(t, ast.Name) and "LAZY" in t.id for t in child.targets
            ):
                out.extend(
                    (named(v.value), True, child.lineno)
                    for v in child.value.values
                    if isinstance(v, ast.Constant) and isinstance(v.value, str)
                )
            visit(child, inner)

    visit(tree, False)
    return out


def _is_import_module(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name == "import_module" and bool(call.args)


def arrows(root: Path = ROOT) -> tuple[dict[str, Path], list[Arrow]]:
    """The modules and every import among them."""
    mods = modules(root)
    found: list[Arrow] = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        seen: set[tuple[str, bool]] = set()
        for target, lazy, line in _imported(ast.parse(path.read_text(encoding="utf-8")), package):
            while target and target not in mods:  # ``from pkg import name`` -> pkg
                target = target.rpartition(".")[0]
            if target and target != name and (target, lazy) not in seen:
                seen.add((target, lazy))
                found.append(Arrow(name, target, lazy, line))
    return mods, found


def upward(found: list[Arrow]) -> list[Arrow]:
    """The arrows from a lower level to a higher one."""
    return [a for a in found if (level_of(a.source) or 0) < (level_of(a.target) or 0)]


def sideways(found: list[Arrow]) -> list[Arrow]:
    """The arrows between two packages :data:`APART` keeps apart."""

    def inside(module: str, prefix: str) -> bool:
        return module == prefix or module.startswith(prefix + ".")

    return [
        a for a in found for one, other in APART
        if (inside(a.source, one) and inside(a.target, other)) or (inside(a.source, other) and inside(a.target, one))
    ]


def cycles(mods: dict[str, Path], found: list[Arrow]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for a in found:
        graph[a.source].add(a.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(mods)))
    try:
        for m in sorted(graph):
            if m not in index:
                strong(m)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(groups)


def reachable(roots: tuple[str, ...], found: list[Arrow]) -> dict[str, str]:
    """Every module the ``roots`` reach (their parent packages included): module -> who imports it."""
    graph: dict[str, set[str]] = {}
    for a in found:
        graph.setdefault(a.source, set()).add(a.target)
    via: dict[str, str] = {r: "(root)" for r in roots}
    todo = list(roots)
    while todo:
        m = todo.pop()
        parents = [m.rsplit(".", i)[0] for i in range(1, m.count(".") + 1)]
        for dep in [*sorted(graph.get(m, ())), *parents]:
            if dep not in via:
                via[dep] = m
                todo.append(dep)
    return via


def depths(found: list[Arrow]) -> dict[str, int]:
    """Each module's longest chain of imports below it (0: imports none of the covered modules;
    a module in a cycle counts the cycle once)."""
    graph: dict[str, set[str]] = {}
    for a in found:
        graph.setdefault(a.source, set()).add(a.target)
    depth: dict[str, int] = {}

    def walk(m: str, path: frozenset[str]) -> int:
        if m not in depth:
            below = [walk(t, path | {m}) for t in graph.get(m, ()) if t not in path]
            depth[m] = 1 + max(below) if below else 0
        return depth[m]

    for m in sorted(graph):
        walk(m, frozenset())
    return depth


def house(root: Path = ROOT) -> str:
    """The levels with their module and line counts and the deepest import chain below a module of
    the level, then every upward arrow and cycle."""
    mods, found = arrows(root)
    count: Counter[int | None] = Counter()
    lines: Counter[int | None] = Counter()
    deepest: dict[int | None, int] = {}
    depth = depths(found)
    for m, path in mods.items():
        count[level_of(m)] += 1
        lines[level_of(m)] += len(path.read_text(encoding="utf-8").splitlines())
        deepest[level_of(m)] = max(deepest.get(level_of(m), 0), depth.get(m, 0))
    out = ["level  name          modules  lines  depth"]
    for level, name, _ in reversed(LEVELS):
        shown = deepest[level] if level in deepest else "-"
        out.append(f"{level:>5}  {name:<12} {count[level]:>8} {lines[level]:>6} {shown:>6}")
    unlisted = sorted(m for m in mods if level_of(m) is None)
    if unlisted:
        out.append(f"no level: {', '.join(unlisted)}")
    up = upward(found)
    out.append(f"upward arrows: {len(up)} ({sum(a.lazy for a in up)} inside functions)")
    for a in up:
        out.append(
            f"  {a.source} ({level_name(level_of(a.source) or 0)}) -> {a.target} "
            f"({level_name(level_of(a.target) or 0)}){' [lazy]' if a.lazy else ''}  line {a.line}"
        )
    side = sideways(found)
    out.append(f"arrows between packages kept apart ({', '.join('/'.join(p) for p in APART)}): {len(side)}")
    out.extend(f"  {a.source} -> {a.target}{' [lazy]' if a.lazy else ''}" for a in side)
    groups = cycles(mods, found)
    out.append(f"cycles: {len(groups)}")
    out.extend(f"  {' <-> '.join(g)}" for g in groups)
    return "\n".join(out)


# --- the tests ---------------------------------------------------------------------------------

_MODS, _ARROWS = arrows()


def test_the_walk_finds_relative_lazy_and_table_imports() -> None:
    source = (
        "from .. import tuning\n"
        "from ..methods.gmmr import SPEC\n"
        "def f():\n    from ...eval import cli\n    import importlib\n"
        "    importlib.import_module('diverse_core.demo')\n"
        "_LAZY = {'DFRAG': '.pipelines.dfrag'}\n"
    )
    got = {(t, lazy) for t, lazy, _ in _imported(ast.parse(source), "diverse_core.pipelines.dfrag")}
    assert ("diverse_core.pipelines.tuning", False) in got
    assert ("diverse_core.pipelines.methods.gmmr.SPEC", False) in got
    assert ("diverse_core.eval.cli", True) in got
    assert ("diverse_core.demo", True) in got
    assert ("diverse_core.pipelines.dfrag.pipelines.dfrag", True) in got


def test_the_level_table_reads_by_longest_prefix() -> None:
    assert level_of("diverse_core") == 10
    assert level_of("diverse_core.methods.gmmr") == KERNELS
    assert level_of("diverse_core.text.tokens") == 4 and level_of("diverse_core.textcache") == 4
    assert level_of("diverse_core.trained.base") == 5
    assert level_of("diverse_core.eval.cli") == HARNESS
    assert level_of("diverse_core.nowhere") is None  # the package's own entry is exact
    assert upward([Arrow("diverse_core.methods", "diverse_core.learned", False, 1)])
    assert not upward([Arrow("diverse_core.learned", "diverse_core.methods.gmmr", True, 1)])


def test_every_module_has_a_level() -> None:
    assert len(_MODS) > 150  # the three packages were found
    unlisted = sorted(m for m in _MODS if level_of(m) is None)
    assert not unlisted, (
        f"modules with no level: {unlisted}; give each a prefix in LEVELS of {__file__}"
    )


def test_no_import_runs_upwards() -> None:
    up = upward(_ARROWS)
    assert not up, "imports from a lower level to a higher one:\n" + house()


def test_no_import_cycle() -> None:
    groups = cycles(_MODS, _ARROWS)
    assert not groups, f"import cycles: {groups}\n" + house()


def test_the_trained_selectors_do_not_import_each_other() -> None:
    side = sideways(_ARROWS)
    assert not side, [f"{a.source} -> {a.target}" for a in side]


def test_the_kernels_import_only_the_base_and_the_contract() -> None:
    wrong = [
        f"{a.source} -> {a.target} (line {a.line})"
        for a in _ARROWS
        if level_of(a.source) == KERNELS and (level_of(a.target) or 0) > KERNELS
    ]
    assert not wrong, wrong
    kernels = [m for m in _MODS if level_of(m) == KERNELS]
    assert {"diverse_core.methods.gmmr", "diverse_core.methods.dpp"} <= set(kernels)


def test_the_runtime_never_reaches_the_harness() -> None:
    pipelines = tuple(m for m in _MODS if m.startswith("diverse_core.pipelines"))
    via = reachable((*RUNTIME_ROOTS, *pipelines), _ARROWS)
    harness = {m: via[m] for m in via if level_of(m) == HARNESS}
    assert not harness, f"the runtime reaches the harness (module: imported by): {harness}"
    assert {"diverse_core.methods.gmmr", "diverse_core.learned", "diverse_core.llm.managed"} <= set(via)


if __name__ == "__main__":
    print(house(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
