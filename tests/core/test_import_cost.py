"""What importing the packages loads (issue 19 item 7): nothing heavy the import does not need."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy.stats", "torch", "sentence_transformers", "transformers")


def _loaded_after(statement: str) -> set[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "shared"), str(ROOT), env.get("PYTHONPATH", "")])
    probe = f"{statement}; import sys; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                         check=True).stdout
    return set(out.split())


def test_import_diverse_core_loads_no_scipy_stats_and_no_framework() -> None:
    loaded = _loaded_after("import diverse_core")
    assert not {m for m in HEAVY if m in loaded}
    assert not {m for m in loaded if m.startswith(("langchain", "llama_index"))}


def test_import_diverse_core_leaves_the_pipelines_for_their_first_use() -> None:
    loaded = _loaded_after("import diverse_core")
    assert not {m for m in loaded if m.startswith(("diverse_core.pipelines", "diverse_core.llm"))}
    assert "diverse_core.pipelines.diva" in _loaded_after("import diverse_core; diverse_core.DIVA")


@pytest.mark.parametrize(("package", "framework"), [("langchain_diverse", "langchain_core"),
                                                    ("llamaindex_diverse", "llama_index.core")])
def test_import_of_a_face_loads_nothing_heavy(package: str, framework: str) -> None:
    if importlib.util.find_spec(framework.split(".")[0]) is None:
        pytest.skip(f"{framework} is not installed")
    loaded = _loaded_after(f"import {package}")
    assert not {m for m in HEAVY if m in loaded}


def test_every_package_has_the_same_version() -> None:
    import diverse_core

    lc = pytest.importorskip("langchain_diverse")
    li = pytest.importorskip("llamaindex_diverse")
    assert diverse_core.__version__ == lc.__version__ == li.__version__
    assert diverse_core.__version__.count(".") >= 2
