# Two commands do everything on a fresh machine:
#   make demo   set up, then run the main job on the embedded default
#   make test   set up, then lint and run the whole test suite
#   make test-fast   the tests that need neither a real Slurm cluster nor FUSE (about 7 min)
.PHONY: setup demo test test-fast lint bench
PY := .venv/bin/python

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

lint: setup
	.venv/bin/ruff check hpcbase sim mirage themis tests bench scripts
	.venv/bin/ruff format --check hpcbase sim mirage themis tests bench scripts
	.venv/bin/mypy hpcbase sim mirage themis

# the tests on real Slurm in a pytest process of their own, beside the others
test: setup lint
	@bash scripts/test.sh

test-fast: setup
	$(PY) -m pytest -q -ra -m "not slurm and not fuse"

bench: setup
	@for b in bench/[!_]*.py; do echo "== $$b"; $(PY) $$b || exit 1; done
