# Two commands do everything on a fresh machine:
#   make demo   set up, then run the main job on the embedded default
#   make test   set up, then lint and run the whole test suite
.PHONY: setup demo test lint bench
PY := .venv/bin/python

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

lint: setup
	.venv/bin/ruff check sim mirage themis tests bench scripts
	.venv/bin/mypy sim mirage themis

test: setup lint
	$(PY) -m pytest -q -ra

bench: setup
	@for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
