# Both entry points create .venv and install everything they need themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.auxcheck-installed
# torch is installed on its own, pinned, before the project: any other request
# (a bare `torch`, or a range resolved first) would pull a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0

# Real SGLang releases the tests read (never installed): their wheels are fetched once
# into an ignored folder and kept across `make clean`; where AUXCHECK_CACHE_DIR is set,
# into that cache instead, as every auxcheck command does (`make clean-cache` leaves it).
SGLANG_RELEASES := 0.5.19 0.5.20 0.5.23
LOCAL_WHEEL_CACHE := .cache/sglang
WHEEL_CACHE := $(abspath $(or $(AUXCHECK_CACHE_DIR),$(LOCAL_WHEEL_CACHE)))
FETCH_WHEEL := import sys; from pathlib import Path; from auxcheck.releases import fetch_wheel; \
	fetch_wheel(sys.argv[1], cache=Path(sys.argv[2]))

.PHONY: test test-fast test-busy demo venv bench clean clean-cache wheels sarif-validator sglang-cpu

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "[1/3] upgrading pip in $(VENV) ..."
	$(BIN)/python -m pip install --quiet --upgrade pip
	@echo "[2/3] installing numpy and $(TORCH_PIN) (hundreds of MB on a first install: a minute or more) ..."
	$(BIN)/python -m pip install --quiet numpy $(TORCH_PIN)
	@echo "[3/3] installing auxcheck in editable mode with its contracts and test extras (mypy, pytest, hypothesis, ...) ..."
	$(BIN)/python -m pip install --quiet -e '.[contracts,test]'
	@echo "$(VENV) is ready"
	touch $(STAMP)

# Skips a release whose wheel is already there; otherwise auxcheck's own fetcher downloads it.
wheels: $(STAMP)
	@for v in $(SGLANG_RELEASES); do \
	  ls $(WHEEL_CACHE)/sglang-$$v-*.whl >/dev/null 2>&1 && continue; \
	  echo "fetching sglang $$v into $(WHEEL_CACHE)"; \
	  $(BIN)/python -c "$(FETCH_WHEEL)" $$v $(WHEEL_CACHE) || exit 1; \
	done

# SGLang 0.5.23's real code on CPU, for the differential and live tiers: a virtual environment of
# its own (CPU torch, SGLang without its CUDA requirements, pinned by
# auxcheck/_sglang_cpu/constraints-0.5.23.txt), built once (about 2 min, 1.9 GB) and rebuilt
# only when its recipe changes. Never installed into $(VENV).
SGLANG_CPU := .cache/sglang-cpu

sglang-cpu: $(STAMP) wheels
	@$(BIN)/python -m auxcheck._sglang_cpu $(SGLANG_CPU) \
	  --wheel $(firstword $(wildcard $(WHEEL_CACHE)/sglang-0.5.23-*.whl))

# Microsoft's SARIF Multitool, which the suite runs on every SARIF log auxcheck writes (the
# SARIF 2.1.0 schema and the SARIF rules): a self-contained Linux x86-64 program from the npm
# registry, fetched once into an ignored folder, checked against its digest, kept like the wheels.
SARIF_MULTITOOL := @microsoft/sarif-multitool-linux@5.7.0
SARIF_TARBALL := microsoft-sarif-multitool-linux-5.7.0.tgz
SARIF_SHA256 := 27d8e3e96dde578a23b7c45035b8d741fece5731e2700aa068015b8c44d1514e
SARIF_CACHE := .cache/sarif-multitool

sarif-validator: $(SARIF_CACHE)/package/Sarif.Multitool

$(SARIF_CACHE)/package/Sarif.Multitool:
	@if [ "$$(uname -sm)" != "Linux x86_64" ]; then \
	  echo "sarif-validator: the SARIF Multitool runs on Linux x86-64 only: SARIF tests skip here"; \
	  exit 0; fi; \
	echo "fetching $(SARIF_MULTITOOL) into $(SARIF_CACHE)"; \
	mkdir -p $(SARIF_CACHE) && cd $(SARIF_CACHE) && rm -rf package $(SARIF_TARBALL) && \
	npm pack --silent $(SARIF_MULTITOOL) >/dev/null && \
	echo "$(SARIF_SHA256)  $(SARIF_TARBALL)" | sha256sum --check --quiet && \
	tar xzf $(SARIF_TARBALL) && rm $(SARIF_TARBALL) && chmod +x package/Sarif.Multitool

# The suite, on two xdist workers that steal work from each other (no worker idles while the
# other has a queue), with bytecode cached even where the environment sets
# PYTHONDONTWRITEBYTECODE: otherwise each process the suite starts compiles auxcheck anew.
# PYTEST_ARGS: more pytest options (test-busy passes --suite-shuffle=SEED).
PYTEST := AUXCHECK_CACHE_DIR=$(WHEEL_CACHE) AUXCHECK_SGLANG_CPU=$(CURDIR)/$(SGLANG_CPU) \
	env -u PYTHONDONTWRITEBYTECODE \
	$(BIN)/python -m pytest -n 2 --dist worksteal -p no:randomly

test: $(STAMP) wheels sarif-validator sglang-cpu
	$(BIN)/mypy --config-file mypy.ini
	$(PYTEST) $(PYTEST_ARGS) tests

# A busy day for CI, rehearsed: `make test` RUNS times (default 3) beside four busy loops,
# each time in a new shuffled order (SEED=N repeats one). docs/development.md says why.
test-busy: $(STAMP) wheels sarif-validator sglang-cpu
	@bash tests/busy.sh $(or $(RUNS),3)

# The edit loop: every test but those marked slow (real subprocesses, xdist, cold mypy).
# `make test` and CI run them all.
test-fast: $(STAMP) wheels sarif-validator sglang-cpu
	$(BIN)/mypy --config-file mypy.ini
	$(PYTEST) -m "not slow" tests

# The capture example declares [tool.auxcheck] sglang releases: its check reads their wheels.
demo: $(STAMP) wheels
	@AUXCHECK_CACHE_DIR=$(WHEEL_CACHE) bash examples/demo_check.sh $(BIN)

# Every benchmark, under both bytecode settings, its targets in one table at the end; on a
# committed checkout the table is recorded in benchmarks/last-run.md and docs/benchmarks.md.
# BENCH_ARGS: e.g. --only plugin, --setting written (benchmarks/run_all.py --help).
bench: $(STAMP) wheels
	@AUXCHECK_CACHE_DIR=$(WHEEL_CACHE) $(BIN)/python benchmarks/run_all.py --record $(BENCH_ARGS)

# The wheel cache survives `make clean` (it is slow to download): `make clean-cache` removes it.
clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .hypothesis

clean-cache:
	rm -rf $(LOCAL_WHEEL_CACHE) $(SARIF_CACHE) $(SGLANG_CPU)

# The release: the sdist, and the wheel built from it, in dist/, checked by twine.
# tests/test_packaging.py installs them into a fresh virtual environment.
.PHONY: dist
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/twine check --strict dist/*
