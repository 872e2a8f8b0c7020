"""Every docstring example in the library runs (pytest's doctest collector, in a child process).

The test command collects ``tests/`` only, so a module's examples would otherwise rot unseen
(``learned/training.py``'s did). A child process keeps the examples' process-wide state
(caches, defaults) away from the other tests.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "shared/diverse_core": None,
    "langchain_diverse": "langchain_core",
    "llamaindex_diverse": "llama_index.core",
}


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_docstring_examples_pass(package: str) -> None:
    needs = PACKAGES[package]
    if needs is not None and importlib.util.find_spec(needs.split(".")[0]) is None:
        pytest.skip(f"{needs} is not installed (install the framework's extra)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT),
                                                         os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--doctest-modules", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(ROOT), "-o", "addopts=", str(ROOT / package)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )
    tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-40:])
    assert proc.returncode == 0, f"docstring examples failed in {package}:\n{tail}"
    assert " passed" in proc.stdout, tail  # the collector found examples
