#!/usr/bin/env bash
# Install resolution on the platforms of the README's support table that CI cannot run (issue 47):
# for Python 3.10-3.13 on x86-64 and ARM64 Linux and macOS, ask pip whether every package that ships
# compiled code has a wheel (`pip install --dry-run --no-deps --only-binary=:all: --platform ...`,
# which reads the index only, downloads no wheel and installs nothing).
#   demo: what `make demo` installs (numpy, scipy, matplotlib and its compiled dependencies);
#   test: what `make test` adds: torch (the CPU index on Linux, PyPI on macOS), the compiled
#         dependencies of the other extras, pgserver where pyproject's marker wants it.
# llama-cpp-python is built from source by `make test` (a C/C++ compiler and CMake), so it is not
# checked here. Prints one line per platform and Python, fails when a line the README claims fails.
# Usage: .ci/check_platforms.sh   (needs the package index; about a minute with a warm pip cache)
set -uo pipefail
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
TORCH_INDEX="${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

DEMO=(numpy scipy matplotlib contourpy kiwisolver pillow fonttools)
TEST=(pydantic-core pyyaml regex tokenizers safetensors scikit-learn faiss-cpu llguidance orjson
      "psycopg-binary" psycopg2-binary asyncpg numba llvmlite grpcio jiter tiktoken)
declare -A PLATFORMS=(
  [linux-x86_64]="manylinux2014_x86_64 manylinux_2_28_x86_64"
  [linux-arm64]="manylinux2014_aarch64 manylinux_2_28_aarch64"
  [macos-arm64]="macosx_11_0_arm64 macosx_14_0_arm64"
  [macos-x86_64]="macosx_10_13_x86_64 macosx_10_15_x86_64 macosx_11_0_x86_64 macosx_13_0_x86_64"
)

wheels_missing() {  # wheels_missing KEY PY [--index-url URL] SPEC...: prints the specs without a wheel
  local key=$1 py=$2; shift 2
  local args=() pre=() specs=()
  for p in ${PLATFORMS[$key]}; do args+=(--platform "$p"); done
  [ "${1:-}" = "--index-url" ] && { pre=(--index-url "$2"); shift 2; }
  specs=("$@")
  # One pip call for all; a spec without a wheel is named in pip's error: drop it and ask again.
  while ((${#specs[@]})); do
    local err
    err=$("$PYTHON" -m pip install -q --dry-run --no-deps --ignore-installed --only-binary=:all: \
      --python-version "$py" --implementation cp "${args[@]}" "${pre[@]}" --target "$WORK/t-$key-$py" \
      "${specs[@]}" 2>&1 >/dev/null) && return 0
    local bad
    bad=$(sed -n 's/.*No matching distribution found for \([^ ;]*\).*/\1/p' <<<"$err" | head -1)
    [ -z "$bad" ] && { echo "ERROR:$(tail -1 <<<"$err")"; return 0; }
    echo "$bad"
    local keep=()
    for s in "${specs[@]}"; do [ "$s" = "$bad" ] || keep+=("$s"); done
    specs=("${keep[@]}")
  done
}

check() {  # check KEY PY -> prints one line, writes KEY-PY.fail when a claimed row fails
  local key=$1 py=$2 notes=()
  local missing_demo missing_test
  missing_demo=$(wheels_missing "$key" "$py" "${DEMO[@]}" | tr '\n' ' ')
  missing_test=$(wheels_missing "$key" "$py" "${TEST[@]}" | tr '\n' ' ')
  # PyPI's torch: the same version as PyTorch's CPU index (which `make test` asks first on Linux and
  # this workplace cannot reach); a wheel here means one for the platform and Python.
  local torch_args=("torch==$TORCH_VERSION")
  [ -n "${TORCH_INDEX_CHECK:-}" ] && [[ $key == linux-* ]] && torch_args=(--index-url "$TORCH_INDEX" "torch==$TORCH_VERSION")
  if [ -n "$(wheels_missing "$key" "$py" "${torch_args[@]}")" ]; then
    notes+=("no torch $TORCH_VERSION wheel")
    [[ $key == macos-x86_64 ]] || missing_test+="torch==$TORCH_VERSION"
  fi
  if [ -z "$(wheels_missing "$key" "$py" pgserver)" ]; then notes+=("pgserver"); else notes+=("no pgserver: postgres tests skip"); fi
  local demo="demo ok" test="test ok"
  [ -n "${missing_demo// /}" ] && demo="demo MISSING $missing_demo"
  [ -n "${missing_test// /}" ] && test="test MISSING $missing_test"
  echo "$key py$py: $demo; $test; ${notes[*]}"
  [ -n "${missing_demo// /}${missing_test// /}" ] && touch "$WORK/$key-$py.fail"
  return 0
}

start=$(date +%s)
# Four at a time: each pip call reads the index pages of every package (cached by pip after the first).
for key in linux-x86_64 linux-arm64 macos-arm64 macos-x86_64; do
  for py in 3.10 3.11 3.12 3.13; do
    check "$key" "$py" > "$WORK/$key-$py.line" &
  done
  wait
done
for key in linux-x86_64 linux-arm64 macos-arm64 macos-x86_64; do cat "$WORK/$key-"*.line; done
failed=$(ls "$WORK"/*.fail 2>/dev/null | wc -l)
echo "platform resolution: $((16 - failed))/16 rows install, $(( $(date +%s) - start )) s"
exit $(( failed > 0 ))
