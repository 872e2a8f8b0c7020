"""Check that the installed llama-cpp-python was built for a portable x86-64 target.

A build with llama.cpp's default ``GGML_NATIVE=ON`` compiles for the build machine's CPU (AVX-512,
AMX, ...) and can crash elsewhere, or even on the same kind of machine (issue 32: SIGSEGV on an
AVX-512/AMX Xeon). The Makefile builds it with ``CMAKE_ARGS="-DGGML_NATIVE=OFF"``: AVX, AVX2,
FMA, F16C and BMI2 (a 2015 x86-64), nothing newer. This script disassembles the installed
``libggml*``/``libllama*`` libraries and counts instructions that need more than that:

* ``zmm``: 512-bit AVX-512 registers;
* ``evex``: registers only AVX-512 can name (``xmm16``-``xmm31``, ``ymm16``-``ymm31``) and opmask
  registers ``k1``-``k7`` (AVX-512 on 128/256-bit vectors);
* ``amx``: AMX tile registers and instructions (``tmm``, ``ldtilecfg``, ``tileloadd``, ``tdp*``).

It also prints the feature line llama.cpp reports (``llama_print_system_info``).

Usage: ``python .ci/check_portable_llama.py`` (exit 0: portable; 1: native-only instructions
found; 2: cannot check here, e.g. llama-cpp-python or objdump missing).
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["PATTERNS", "library_dir", "scan_library", "system_info", "main"]

PATTERNS: dict[str, re.Pattern[str]] = {
    "zmm": re.compile(r"%zmm\d"),
    "evex": re.compile(r"%[xy]mm(?:1[6-9]|2\d|3[01])\b|%k[1-7]\b"),
    "amx": re.compile(r"%tmm\d|\b(?:ldtilecfg|sttilecfg|tileloadd\w*|tilestored|tilezero|tilerelease|tdp\w+)\b"),
}
AVX512_FEATURES = re.compile(r"\b(AVX512\w*|AMX\w*|AVX_VNNI) = 1")


def library_dir() -> Path | None:
    """The folder holding llama-cpp-python's shared libraries (``None``: not installed)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / "lib"
    return folder if folder.is_dir() else None


def libraries(folder: Path) -> list[Path]:
    """The ggml/llama shared libraries in ``folder``, each distinct file once (wheels hold
    copies where a build tree has symlinks: ``libggml.so``, ``libggml.so.0``, ...)."""
    seen: set[str] = set()
    found = []
    for path in sorted(folder.glob("lib*.so*"), key=lambda p: (len(p.name), p.name)):
        if not path.is_file() or not re.match(r"lib(ggml|llama)", path.name):
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest not in seen:
            seen.add(digest)
            found.append(path)
    return found


def scan_library(path: Path, objdump: str = "objdump") -> dict[str, int]:
    """Count the disassembled lines of ``path`` matching each of :data:`PATTERNS`."""
    out = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(path)], capture_output=True,
                         text=True, check=True).stdout
    return {name: len(pattern.findall(out)) for name, pattern in PATTERNS.items()}


def system_info() -> str:
    """llama.cpp's own feature line, from a child process (importing it here is not needed)."""
    code = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return done.stdout.strip() or done.stderr.strip()[-500:]


def main() -> int:
    folder = library_dir()
    objdump = shutil.which("objdump")
    if folder is None or objdump is None:
        print("cannot check: " + ("llama-cpp-python is not installed" if folder is None else "objdump is missing"))
        return 2
    bad = False
    print(f"{'library':<28} " + " ".join(f"{name:>6}" for name in PATTERNS))
    for lib in libraries(folder):
        counts = scan_library(lib, objdump)
        bad |= any(counts.values())
        print(f"{lib.name:<28} " + " ".join(f"{counts[name]:>6}" for name in PATTERNS))
    info = system_info()
    print(f"llama_print_system_info: {info}")
    found = AVX512_FEATURES.findall(info)
    if found:
        print(f"compiled-in features beyond AVX2: {', '.join(found)}")
        bad = True
    print("NOT portable: rebuild with CMAKE_ARGS=\"-DGGML_NATIVE=OFF\"" if bad
          else "portable: no AVX-512 or AMX instructions")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
