# helmsim: `make demo` and `make test` each set up .venv, install the project with its
# dev and ray extras (the Ray tests start a real local Ray cluster), and run. Only Python
# 3.11+ and make are needed.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test check install bench clean

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "helmsim needs Python 3.11+, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,ray]'
	$(BIN)/python -m compileall -q src  # start-up: no first-run bytecode compile (issue 15)
	$(BIN)/python -m helmsim.builtin_cache  # the built-in catalog and profiles, validated once
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/helmsim plan examples/seed1-migrate-race --namespace kagent --release-name agent-platform-connectivity --profile cilium-always
	-$(BIN)/helmsim simulate examples/seed1-migrate-race --helmrelease examples/seed1-migrate-race/flux \
		--profile cilium-always -f examples/seed1-migrate-race/rehearsals/migration-fails-values.yaml \
		--upgrade-from examples/seed1-migrate-race --upgrade-from-values examples/seed1-migrate-race/ci/previous-values.yaml

test: $(STAMP)
	$(BIN)/python -m pytest -n auto

# Static checks over src/helmsim: mypy (configuration in pyproject.toml) with 0 errors and ruff clean.
check: $(STAMP)
	$(BIN)/python -m mypy
	$(BIN)/python -m ruff check src/helmsim

bench: $(STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache build dist
