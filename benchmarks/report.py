"""Write the sections of ``benchmarks/RESULTS.md`` (the text between two marker lines) and their tables."""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["replace_section", "machine_label", "publish", "ab_table", "end_section", "add_output_arguments"]


def replace_section(md_path: Path, section: str, start: str, end: str) -> None:
    """Replace the text from ``start`` to ``end`` (markers included) with ``section``, or append it."""
    text = md_path.read_text(encoding="utf-8") if md_path.is_file() else ""
    if start in text and end in text:
        head, rest = text.split(start, 1)
        _, tail = rest.split(end, 1)
        text = head + section + tail
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    md_path.write_text(text, encoding="utf-8")


def machine_label() -> str:
    """``"2026-11-28, x86_64, 2 cores, Python 3.11.7"``: the label every measured table carries."""
    import os

    return (f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")


def add_output_arguments(ap: argparse.ArgumentParser) -> None:
    """``--json FILE`` (the rows and their metadata) and ``--results-md FILE`` (the section)."""
    ap.add_argument("--json", default=None, help="also write the rows and their metadata here")
    ap.add_argument("--results-md", default=None, help="also write the section into this Markdown file")


def end_section(lines: list[str], trees: dict[str, str] | None, end: str) -> str:
    """The section's text: ``lines``, the trees it compared (when named on the command line), ``end``."""
    if trees:
        lines = [*lines, "", "Trees: " + ", ".join(f"`{k}` = {v}" for k, v in trees.items())]
    return "\n".join([*lines, end])


def publish(section: str, start: str, end: str, md_path: str | None, json_path: str | None = None,
            payload: object = None) -> None:
    """Print ``section``; write ``payload`` to ``json_path`` and the section into ``md_path`` when given."""
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(payload, indent=1), encoding="utf-8")
    print(section)
    if md_path:
        replace_section(Path(md_path), section, start, end)


Value = Callable[[str, tuple[str, ...]], float | None]


def ab_table(key_headers: list[str], keys: list[tuple[str, ...]], trees: list[str], columns: list[str],
             cells: Callable[[str, tuple[str, ...]], list[str] | None], ratios: dict[str, Value]) -> list[str]:
    """A Markdown table with ``columns`` per tree for each row key and, with two trees or more, one
    column per entry of ``ratios``: that value of the last tree over the first's (``-`` where missing)."""
    head = key_headers + [f"{t}: {c}" for t in trees for c in columns]
    align = ["---"] * len(key_headers) + ["---:"] * (len(trees) * len(columns))
    if len(trees) > 1:
        head += [f"{trees[-1]} / {trees[0]}{label}" for label in ratios]
        align += ["---:"] * len(ratios)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|"]
    for key in keys:
        row = list(key)
        for t in trees:
            row += cells(t, key) or ["-"] * len(columns)
        if len(trees) > 1:
            for value in ratios.values():
                a, b = value(trees[0], key), value(trees[-1], key)
                row.append(f"{b / a:.2f}" if a and b else "-")
        lines.append("| " + " | ".join(row) + " |")
    return lines
