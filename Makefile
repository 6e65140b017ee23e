# Both entry points create .venv and install everything they need themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.auxcheck-installed
# torch is installed on its own, pinned, before the project: any other request
# (a bare `torch`, or a range resolved first) would pull a multi-GB CUDA build.
TORCH_PIN := torch==2.13.0

.PHONY: test demo venv bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet numpy $(TORCH_PIN)
	$(BIN)/python -m pip install --quiet -e '.[contracts,test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/mypy --config-file mypy.ini
	$(BIN)/python -m pytest -n 2 -p no:randomly tests

demo: $(STAMP)
	@bash examples/demo_check.sh $(BIN)

bench: $(STAMP)
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .hypothesis
