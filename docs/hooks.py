"""MkDocs hook: publish the committed benchmark figures without copying them into ``docs/``.

Every ``benchmarks/results/*.png`` becomes ``assets/results/<name>.png`` in the site, so a
page links ``../assets/results/recall_vs_lambda.png`` and ``mkdocs build --strict`` checks the
link against the file the benchmark scripts wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


def on_files(files: Files, config: Any) -> Files:
    """Add the benchmark figures to the site's files."""
    for png in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"assets/results/{png.name}", abs_src_path=str(png)))
    return files
