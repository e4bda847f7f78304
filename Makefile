# Punctual: the two commands that must work on a fresh clone are `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck unit e2e clean synth deploy bootstrap diff destroy cdk-cli

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(PY) -m local

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(STAMP)
	$(PY) -m mypy shared functions local infra

test: lint typecheck
	$(PY) -m pytest -n 2 --dist loadfile

unit: $(STAMP)
	$(PY) -m pytest tests/unit tests/integration

e2e: $(STAMP)
	$(PY) -m pytest tests/e2e

# Every figure of issue #4 (start lag, cost per execution, tick scaling, CPU, scale model):
# prints a table and writes bench/results.json. About 8 minutes on 2 cores.
.PHONY: bench
bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache cdk.out node_modules build/lambda

# --- AWS (CDK) -------------------------------------------------------------------------------
# The CDK CLI is pinned in package.json (aws-cdk 2.1148.x) and installed here by npm ci; the app
# is Python (infra/). `make synth` makes no AWS call; deploy, bootstrap, diff and destroy use
# your AWS credentials. Extra CLI flags: CDK_ARGS='--profile x'.
ENV ?= dev
NPM ?= npm
CDK := node_modules/.bin/cdk
CDK_STAMP := node_modules/.installed
CDK_RUN := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20 CDK_DISABLE_CLI_TELEMETRY=true \
	$(CDK)

# synth needs only the runtime and the CDK libraries: a fresh clone need not install the whole
# dev toolchain first (an existing dev install has them too).
INFRA_STAMP := $(VENV)/.installed-infra
SYNTH_DEPS := $(if $(wildcard $(STAMP)),$(STAMP),$(INFRA_STAMP))

$(INFRA_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[infra]'
	@touch $(INFRA_STAMP)

$(CDK_STAMP): package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $(CDK_STAMP)

cdk-cli: $(CDK_STAMP)

synth: $(SYNTH_DEPS) $(CDK_STAMP)
	AWS_EC2_METADATA_DISABLED=true $(CDK_RUN) synth -c env=$(ENV) --quiet $(CDK_ARGS)
	@echo "cdk.out/ written for env=$(ENV)"

deploy: $(SYNTH_DEPS) $(CDK_STAMP)
	$(CDK_RUN) deploy -c env=$(ENV) --outputs-file cdk.out/outputs-$(ENV).json $(CDK_ARGS)

bootstrap: $(SYNTH_DEPS) $(CDK_STAMP)
	$(CDK_RUN) bootstrap -c env=$(ENV) $(CDK_ARGS)

diff: $(SYNTH_DEPS) $(CDK_STAMP)
	$(CDK_RUN) diff -c env=$(ENV) $(CDK_ARGS)

destroy: $(SYNTH_DEPS) $(CDK_STAMP)
	$(CDK_RUN) destroy -c env=$(ENV) $(CDK_ARGS)
