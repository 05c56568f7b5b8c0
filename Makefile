# hz: one command to set up and test, one to run the demo.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test test-loaded lint typecheck unit bench bench-peers soak soak-team demo lock clean claude chromium axe postgres

## The venv holds exactly the lock. uv installs it (seconds where pip takes about 35 s); uv itself
## is pinned in the lock and installed first by pip with the lock's own hashes. Where uv cannot
## run (no wheel for this machine, a registry only pip is set up for), pip installs the lock.
## Both compile the bytecode at install, as hz's own packages are then: every `hz` process the
## tests start would otherwise compile what it imports where PYTHONDONTWRITEBYTECODE is set.
PIP := $(BIN)/pip --quiet --disable-pip-version-check
UV_REQ := $(VENV)/uv-requirement.txt

$(STAMP): requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	awk '/^[a-z]/ { keep = /^uv==/ } keep && !/^ *#/' requirements.lock > $(UV_REQ)
	if $(PIP) install --require-hashes --no-deps -r $(UV_REQ) && \
	   $(BIN)/uv pip install --quiet --python $(BIN)/python --require-hashes --no-deps \
	     --compile-bytecode -r requirements.lock; then :; else \
	  echo "note: uv could not install the lock; pip installs it"; \
	  $(PIP) install --require-hashes --no-deps -r requirements.lock; \
	fi
	$(PIP) install --no-deps --no-build-isolation -e .
	$(BIN)/python -m compileall -q -j 0 ledger machines heinzel
	touch $(STAMP)

# The real Claude Code CLI for the runner tests (tests/runners/test_claude_real.py), pinned to
# what npm gives on Node 20. Without npm this prints a note and those tests skip with the reason.
CLAUDE_CODE_VERSION := 2.1.197
CLAUDE_PREFIX := $(VENV)/claude
CLAUDE_STAMP  := $(CLAUDE_PREFIX)/.installed-$(CLAUDE_CODE_VERSION)

$(CLAUDE_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(CLAUDE_PREFIX) \
	    @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) && touch $@; \
	else \
	  echo "note: npm not found; the real Claude Code runner tests will skip"; \
	fi

# axe-core for the browser test's accessibility check (tests/web/test_browser.py injects its
# axe.min.js into each page), pinned. Without npm this prints a note and that check skips.
AXE_VERSION := 4.14.1
AXE_PREFIX  := $(VENV)/axe
AXE_STAMP   := $(AXE_PREFIX)/.installed-$(AXE_VERSION)

$(AXE_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-audit --no-fund --prefix $(AXE_PREFIX) \
	    axe-core@$(AXE_VERSION) && touch $@; \
	else \
	  echo "note: npm not found; the browser test's accessibility check will skip"; \
	fi

## make axe: install axe-core, which the browser test runs on every page.
axe: $(AXE_STAMP)

# Debian's Chromium for the browser test (tests/web/test_browser.py), driven by Playwright
# with executable_path (no browser download). Without apt it prints a note and that test skips.
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	@if command -v apt-get >/dev/null 2>&1; then \
	  (apt-get install -y -q chromium >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1)) || \
	  echo "note: chromium did not install; the browser test will skip"; \
	else \
	  echo "note: apt-get not found; the browser test will skip"; \
	fi

## make chromium: install the browser the web head's browser test drives.
chromium: $(CHROMIUM)

## make postgres: Debian's postgresql for the Postgres journal's tests, which start a temporary
## cluster with its initdb/pg_ctl (tests/machines/test_postgres.py); no server is left running.
## Without apt (or when it fails) those tests skip, naming why.
postgres:
	@if command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  (apt-get install -y -q postgresql >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q postgresql >/dev/null 2>&1)) || \
	  echo "note: postgresql did not install; the Postgres journal's tests will skip"; \
	else \
	  echo "note: apt-get not found; the Postgres journal's tests will skip"; \
	fi

## make claude: install the real Claude Code CLI the runner tests use.
claude: $(CLAUDE_STAMP)

## make test: set up (venv, exact dependencies from the lock), then lint, type-check and test.
## The type check (one mypy process, one core) runs beside the tests, which fill the cores
## around it; either failing fails `make test`, once both have finished.
test: lint
	$(MAKE) --no-print-directory -j2 typecheck unit

lint: $(STAMP)
	$(BIN)/ruff check ledger machines heinzel tests
	$(BIN)/ruff format --check ledger machines heinzel tests

typecheck: $(STAMP)
	$(BIN)/mypy

## The tests run on one worker more than the machine has cores (many tests wait on the
## `hz` processes they start or on fsync: on 2 cores, 3 workers took 222 s where 2 took 261 s);
## an idle worker takes tests queued for a busy one (worksteal), so the run does not end
## with one long test on one core.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1)')

unit: $(STAMP) $(CLAUDE_STAMP) $(AXE_STAMP) $(CHROMIUM) postgres
	$(BIN)/pytest -q -n $(WORKERS) --dist worksteal

# Debian's stress-ng for make test-loaded. Without apt it prints a note and test-loaded stops.
STRESS_NG := /usr/bin/stress-ng

$(STRESS_NG):
	@if command -v apt-get >/dev/null 2>&1; then \
	  (apt-get install -y -q stress-ng >/dev/null 2>&1 || \
	   (apt-get update -q >/dev/null 2>&1 && apt-get install -y -q stress-ng >/dev/null 2>&1)) || \
	  echo "note: stress-ng did not install"; \
	else \
	  echo "note: apt-get not found; install stress-ng to run make test-loaded"; \
	fi

## make test-loaded: make test's suite on a busy machine: lint and type-check, then the tests
## beside `stress-ng --cpu 4` (four workers spinning on the CPU), stopped when the tests end,
## whatever their result (and after two hours at most, should this shell die first).
test-loaded: lint typecheck $(STAMP) $(CLAUDE_STAMP) $(AXE_STAMP) $(CHROMIUM) $(STRESS_NG)
	@command -v stress-ng >/dev/null 2>&1 || { echo "stress-ng is not installed"; exit 1; }
	stress-ng --cpu 4 --timeout 2h --quiet & load=$$!; \
	trap 'kill $$load 2>/dev/null; wait $$load 2>/dev/null' EXIT INT TERM; \
	$(BIN)/pytest -q -n $(WORKERS) --dist worksteal

## make bench: performance figures, each against a baseline measured in the same run.
bench: $(STAMP)
	$(BIN)/python tests/bench/run.py

## make bench-peers: hz (turn host, embedder, embedder on Postgres) beside DBOS (SQLite WAL, Postgres) and
## LangGraph (durability="sync" on SQLite and Postgres) on one workload, interleaved, with the
## fsync floor and each mode's fsyncs by strace (tests/bench/peers/run.py; Postgres a temporary
## cluster from the machine's initdb), and jobs per second with 4 worker processes on Postgres,
## hz's queue beside DBOS's (tests/bench/peers/jobs.py). The peers live in their own venv, never
## in the lock. Then
## hz's own targets in the same run: start-up by need as ratios to `python -c pass`, and turn
## 1,000 of a session beside turn 1 (bench_startup, bench_age).
PEERS_VENV  := .bench-peers-venv
PEERS_STAMP := $(PEERS_VENV)/.installed
PEERS_PKGS  := dbos==3.4.0 langgraph==1.2.24 langgraph-checkpoint-sqlite==3.1.2 \
               langgraph-checkpoint-postgres==3.2.0 "psycopg[binary]==3.3.9" psycopg-pool==3.3.3

$(PEERS_STAMP):
	$(PYTHON) -m venv $(PEERS_VENV)
	$(PEERS_VENV)/bin/pip install --quiet --disable-pip-version-check $(PEERS_PKGS)
	touch $@

bench-peers: $(STAMP) $(PEERS_STAMP)
	$(BIN)/python tests/bench/peers/run.py --peers-python $(PEERS_VENV)/bin/python
	HZ_BENCH_AGE=1000 $(BIN)/python tests/bench/run.py startup age

## make soak: the long chaos runs: the storm (many hz processes, seeded kills, then quiet),
## the storm of every surface (the model's rules drawn by HZ_SOAK_SEED for SOAK_STORM_STEPS
## steps: chats and their resends, retries, answers, MCP, faults, SIGKILLs; it prints its
## figures: processes, kills, delivered twice, lost, doubles, spend, chains, uncoded exits),
## the tick-and-chat race and the concurrent-index run at full length (make test runs them
## short), the model-based one (a state machine of hz processes, kills and a charging
## provider, SOAK_EXAMPLES sequences of SOAK_STEPS steps, new sequences each run), and the
## held-out embedding host SIGKILLed SOAK_KILLS times at seeded points
## (tests/machines/test_heldout_host.py), and the Postgres journal's 4 workers SIGKILLed
## SOAK_PG_KILLS times (tests/machines/test_postgres.py).
SOAK_ROUNDS ?= 40
SOAK_EXAMPLES ?= 40
SOAK_STEPS ?= 40
SOAK_KILLS ?= 300
SOAK_STORM_STEPS ?= 600
SOAK_PG_KILLS ?= 200
soak: $(STAMP) postgres
	HZ_SOAK_ROUNDS=$(SOAK_ROUNDS) HZ_SOAK_STORM_STEPS=$(SOAK_STORM_STEPS) \
	  HZ_CHAOS_CAP=0.05 HZ_CHAOS_TURN_CAP=0.03 $(BIN)/pytest -q -s tests/tick/test_chaos.py
	HZ_SOAK_CHAT_ROUNDS=20 HZ_SOAK_INDEX_ROUNDS=6 $(BIN)/pytest -q \
	  tests/tick/test_one_message.py tests/heinzel/test_concurrent_index.py
	HZ_SOAK_EXAMPLES=$(SOAK_EXAMPLES) HZ_SOAK_STEPS=$(SOAK_STEPS) \
	  $(BIN)/pytest -q tests/tick/test_model_chaos.py
	HZ_SOAK_KILLS=$(SOAK_KILLS) $(BIN)/pytest -q -s tests/machines/test_heldout_host.py -k sigkill
	HZ_SOAK_PG_KILLS=$(SOAK_PG_KILLS) $(BIN)/pytest -q -s tests/machines/test_postgres.py -k kill_loop

## make soak-team: team Heinzelmännchen for a simulated month under kills, pauses, skew, a
## late delegate's hand-over, force-pushes with lint between, a member added to the roster
## by a commit its owner signs, and a forger without a key (refused by the hook,
## quarantined by every member) (tests/bench/soak_team.py; HZ_SOAK_TEAM_DAYS / _N for a
## shorter run).
soak-team: $(STAMP)
	$(BIN)/python tests/bench/soak_team.py

## make demo: the worked example (Priya's weekly report), offline, narrated.
demo: $(STAMP)
	$(BIN)/hz demo

## make lock: regenerate requirements.lock from requirements.in (needs uv).
lock:
	uv pip compile requirements.in --python-version 3.11 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) $(PEERS_VENV) .mypy_cache .pytest_cache .ruff_cache
