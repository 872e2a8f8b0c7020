"""Write one marked section of ``benchmarks/RESULTS.md`` (the text between its two marker lines)."""

from __future__ import annotations

import platform
import time
from pathlib import Path

__all__ = ["replace_section", "machine_label"]


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
