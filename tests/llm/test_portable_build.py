"""The installed llama-cpp-python is a portable build (issue 32 item 1): no AVX-512 or AMX
instruction in its libraries (``.ci/check_portable_llama.py``), and that scanner does find them
in a library compiled with them (so a native build would fail here)."""

from __future__ import annotations

import importlib.util
import platform
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "check_portable_llama.py"


def _checker() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_portable_llama", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SOURCE = """
#include <immintrin.h>
void add8(float *a, const float *b) { _mm256_storeu_ps(a, _mm256_add_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(b))); }
#ifdef WIDE
void add16(float *a, const float *b) { _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_loadu_ps(b))); }
void tiles(void) { _tile_release(); }
#endif
"""


def _compile(tmp_path: Path, name: str, flags: list[str]) -> Path:
    source = tmp_path / "kernels.c"
    source.write_text(SOURCE)
    out = tmp_path / f"libggml-{name}.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", *flags, str(source), "-o", str(out)], check=True,
                   capture_output=True)
    return out


@pytest.mark.skipif(shutil.which("gcc") is None or shutil.which("objdump") is None,
                    reason="needs gcc and objdump")
def test_the_scanner_flags_avx512_and_amx_and_passes_avx2(tmp_path: Path) -> None:
    check = _checker()
    portable = check.scan_library(_compile(tmp_path, "avx2", ["-mavx2", "-mfma", "-mf16c"]))
    assert portable == {"zmm": 0, "evex": 0, "amx": 0}
    native = check.scan_library(_compile(tmp_path, "wide", ["-DWIDE", "-mavx512f", "-mamx-tile"]))
    assert native["zmm"] > 0 and native["amx"] > 0
    assert [p.name for p in check.libraries(tmp_path)] == ["libggml-avx2.so", "libggml-wide.so"]
    assert check.AVX512_FEATURES.findall("CPU : AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1 | FMA = 1") == [
        "AVX512", "AMX_INT8"]


@pytest.mark.skipif(platform.machine() not in {"x86_64", "AMD64"}, reason="x86-64 builds only")
def test_the_installed_llama_cpp_python_is_portable() -> None:
    check = _checker()
    folder = check.library_dir()
    if folder is None:
        pytest.skip('llama-cpp-python is not installed (pip install ".[realserver]")')
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed")
    libs = check.libraries(folder)
    assert any(p.name.startswith("libggml") for p in libs), f"no ggml library in {folder}"
    found = {p.name: counts for p in libs if any((counts := check.scan_library(p)).values())}
    assert not found, (f"native-only instructions in {found}; rebuild: "
                       'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir llama-cpp-python')
    info = check.system_info()
    assert "AVX2 = 1" in info and not check.AVX512_FEATURES.findall(info), info
