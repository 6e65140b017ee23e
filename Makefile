# Both entry points create .venv and install everything they need themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.auxcheck-installed
# torch is installed on its own, pinned, before the project: any other request
# (a bare `torch`, or a range resolved first) would pull a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0

# Real SGLang releases the tests read (never installed): their wheels are fetched once
# into an ignored folder and kept across `make clean`.
SGLANG_RELEASES := 0.5.19 0.5.20 0.5.23
WHEEL_CACHE := .cache/sglang
FETCH_WHEEL := import sys; from pathlib import Path; from auxcheck.releases import fetch_wheel; \
	fetch_wheel(sys.argv[1], cache=Path(sys.argv[2]))

.PHONY: test test-fast demo venv bench clean clean-cache wheels

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet numpy $(TORCH_PIN)
	$(BIN)/python -m pip install --quiet -e '.[contracts,test]'
	touch $(STAMP)

# Skips a release whose wheel is already there; otherwise auxcheck's own fetcher downloads it.
wheels: $(STAMP)
	@for v in $(SGLANG_RELEASES); do \
	  ls $(WHEEL_CACHE)/sglang-$$v-*.whl >/dev/null 2>&1 && continue; \
	  echo "fetching sglang $$v into $(WHEEL_CACHE)"; \
	  $(BIN)/python -c "$(FETCH_WHEEL)" $$v $(WHEEL_CACHE) || exit 1; \
	done

test: $(STAMP) wheels
	$(BIN)/mypy --config-file mypy.ini
	AUXCHECK_CACHE_DIR=$(CURDIR)/$(WHEEL_CACHE) $(BIN)/python -m pytest -n 2 -p no:randomly tests

# The edit loop: every test but those marked slow (real subprocesses, xdist, cold mypy).
# `make test` and CI run them all.
test-fast: $(STAMP) wheels
	$(BIN)/mypy --config-file mypy.ini
	AUXCHECK_CACHE_DIR=$(CURDIR)/$(WHEEL_CACHE) $(BIN)/python -m pytest -n 2 -p no:randomly \
	  -m "not slow" tests

# The capture example declares [tool.auxcheck] sglang releases: its check reads their wheels.
demo: $(STAMP) wheels
	@AUXCHECK_CACHE_DIR=$(CURDIR)/$(WHEEL_CACHE) bash examples/demo_check.sh $(BIN)

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# The wheel cache survives `make clean` (it is slow to download): `make clean-cache` removes it.
clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .hypothesis

clean-cache:
	rm -rf $(WHEEL_CACHE)
