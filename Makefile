# The two commands of the README: `make demo` and `make test` (`make test-quick` runs a part of
# it). Each sets up what is missing: the virtual environment, this package, and (as root, via
# apt-get) the servers it starts (ZooKeeper, Redis, etcd, haproxy, nftables; for the tests also
# chromium, prometheus and faketime, whose libfaketime skews the chaos cluster's clocks).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-quick lint model servers up up-monitoring down clean constraints cluster-up cluster-down chaos \
	test-e2e-cluster test-e2e-stacks

# constraints.txt pins every package to the version the tests passed with.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[test,dev]'
	touch $(STAMP)

# Upgrade the pins on purpose: the newest of everything in a scratch environment, frozen.
constraints:
	rm -rf .venv-constraints
	$(PYTHON) -m venv .venv-constraints
	.venv-constraints/bin/pip install --quiet '.[test,dev]'
	{ sed -n '1,2p' constraints.txt; .venv-constraints/bin/pip freeze --exclude-editable \
		| grep -v '^inventory-deduction'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf .venv-constraints
	@echo "constraints.txt upgraded: run make test, then commit it"

servers:
	@scripts/ensure-servers.sh

# `make demo` tells the story of one order; `make demo SCENARIO=stale-holder` runs a fault
# scenario, `make demo SCENARIO=herd` counts the herd effect (`inventory demo --help` lists the
# scenarios, from inventory/scenarios/__init__.py; docs/scenarios.md tells each).
SCENARIO ?=
demo: $(STAMP) servers
	$(BIN)/inventory demo $(SCENARIO)

# Everything CI runs, in two parts: the unit and integration tests in 3 processes (their time is
# mostly waiting on servers: 8 min here where one process took 27 min, under the same load),
# then the end-to-end tests in two runs side by side (make -j2): the cluster's chaos module
# (one cluster at a time on a machine, about 11 minutes) and every local stack's test (about
# 6). Each run's output is printed whole when it ends (--output-sync). Two pytest runs, not
# pytest-xdist's --dist loadgroup: with pytest 9 that no longer groups (xdist 3.8 renames
# `item._nodeid`, which pytest 9 does not read), and a module's fixture was set up twice.
test: $(STAMP)
	@scripts/ensure-servers.sh --test
	$(BIN)/pytest -n 3 tests/unit tests/integration
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-e2e-cluster test-e2e-stacks

test-e2e-cluster: $(STAMP)
	$(BIN)/pytest -m chaos tests/e2e
test-e2e-stacks: $(STAMP)
	$(BIN)/pytest -m "not chaos" tests/e2e

# The product's unit and integration tests in a few minutes, while changing the code: the tests
# run once per database on SQLite only (QUICK_DATABASES=sqlite,postgresql for more), in 4
# processes (most of a test's time is waiting, not CPU), the API contract's fuzzing with 10
# cases per operation and phase rather than 40, without the model check (`make model`) and the
# end-to-end tests (gunicorn, the cluster). `make test` still runs everything, as CI does;
# docs/getting-started.md says what is left out.
QUICK_DATABASES ?= sqlite
test-quick: $(STAMP)
	@scripts/ensure-servers.sh
	SCHEMATHESIS_MAX_EXAMPLES=10 $(BIN)/pytest -n 4 tests/unit tests/integration \
		--databases $(QUICK_DATABASES) --deselect tests/unit/test_model_check.py \
		--deselect tests/unit/test_model_locations.py \
		--deselect tests/unit/test_model_backorders.py

# The model of the protocol (model/protocol.pml), the locations' (model/locations.pml) and the
# backorders' and reservations' (model/backorders.pml), checked by spin with every guard removed
# in turn; `make test` runs them too (tests/unit/test_model_check.py,
# tests/unit/test_model_locations.py, tests/unit/test_model_backorders.py).
model: $(STAMP)
	@scripts/ensure-servers.sh --model
	$(BIN)/python -m inventory.model_check

# The docs site too (mkdocs.yml): --strict fails on a broken link or anchor, or a page left out of
# the nav (not with --quiet, which hides the warnings that --strict counts); into ./site.
lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/mkdocs build --strict

up: $(STAMP) servers
	$(BIN)/inventory up

# The stack and a prometheus scraping it (deploy/ has the same configuration for compose).
up-monitoring: $(STAMP) servers
	@scripts/ensure-servers.sh --monitoring
	$(BIN)/inventory up --monitoring

down: $(STAMP)
	$(BIN)/inventory down

# The multi-node cluster (root) and a full chaos run on it (report in ./chaos-report).
cluster-up: $(STAMP)
	@scripts/ensure-servers.sh --cluster
	$(BIN)/inventory cluster up

cluster-down: $(STAMP)
	$(BIN)/inventory cluster down

chaos: $(STAMP)
	@scripts/ensure-servers.sh --cluster
	$(BIN)/inventory chaos

clean: down
	rm -rf .inventory
