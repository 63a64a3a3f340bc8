# The two commands a new user needs (README): `make demo` and `make test`. Both set everything up first.
.PHONY: setup demo engine test test-python

setup:
	@bash scripts/setup.sh

demo: setup
	@bash scripts/demo.sh

engine: setup
	.venv/bin/python run.py config/examples/inference_engine_demo.yaml

test:
	@bash scripts/test.sh

test-python: setup
	.venv/bin/python -m pytest -q
