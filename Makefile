# foreman's tasks. `make test` is what CI runs.
GO       ?= go
BIN      ?= bin/foreman
FUZZTIME ?= 30s
# BENCHTIME=1x runs each benchmark once (CI's size); unset, each its own.
BENCHTIME ?=
benchtime = $(if $(BENCHTIME),-benchtime $(BENCHTIME),$(1))

.PHONY: all build install test lint bench fuzz chaos scale sim replay clean ci-small

all: lint test build

build:
	$(GO) build -o $(BIN) ./cmd/foreman

# Puts foreman on PATH: go install writes it to GOBIN, or GOPATH/bin, which
# a shell finds only if that directory is on PATH; the target says so if not.
install:
	$(GO) install ./cmd/foreman
	@bin=$$($(GO) env GOBIN); [ -n "$$bin" ] || bin=$$($(GO) env GOPATH)/bin; \
	echo "installed $$bin/foreman"; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "$$bin is not on PATH: export PATH=\"$$bin:\$$PATH\"";; esac

# vet first: it fails fast on mistakes the race-enabled tests would take longer to show.
# -timeout 25m: a package of real processes (internal/host/live) took past
# go test's 10 minutes under -race beside the others on 2 cores.
test:
	$(GO) vet ./...
	$(GO) test -race -timeout 25m ./...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# The engine, grammar, replay and recovery benchmarks (docs/PERFORMANCE.md),
# then the engine's throughput again on one core, then bench-wake.
bench:
	$(GO) test -run '^$$' -bench . $(call benchtime) -benchmem ./protocol ./coordinator ./transcript ./internal/journal ./internal/recovery ./coordinator/graph ./coordinator/suggest ./internal/web ./internal/cluster ./internal/host
	$(GO) test -run '^$$' -bench 'Lines|Progress|ClaimToAck' $(call benchtime) -benchmem -cpu 1 ./coordinator
	$(MAKE) bench-wake $(if $(filter %x,$(BENCHTIME)),WAKE_EVENTS=$(BENCHTIME:x=))

# foreman host on a repository of 10,000 files and 1,000 commits: its work
# per READY, the queue's throughput, a fresh worktree (a few minutes); what
# a landing's receipt costs; foreman verify over VERIFY_LANDINGS landed
# commits; then the sandbox's cost per check command (a no-op, unconfined
# and confined), and the redactor's throughput over a check's log.
VERIFY_LANDINGS ?= 1000
export VERIFY_LANDINGS
.PHONY: bench-spend
# A recorded Claude Code export replayed through the OTLP receiver into a
# live foreman with a journal (docs/PERFORMANCE.md, issue 47); CI runs it
# small in make test (200 a second for 1 s).
SPEND_RATE ?= 1000
SPEND_SECONDS ?= 60
bench-spend:
	SPEND_RATE=$(SPEND_RATE) SPEND_SECONDS=$(SPEND_SECONDS) $(GO) test -run '^TestSpendLoad$$' -count=1 -v -timeout 30m ./internal/bot

# How long a waiting agent takes to hear of news for it: a line said into
# the room to the result of its wait() through foreman mcp's stdio, over
# WAKE_EVENTS events (median, p95 and max; docs/PERFORMANCE.md, issue 46).
WAKE_EVENTS ?= 500
.PHONY: bench-wake
bench-wake:
	$(GO) test -run '^$$' -bench 'EventToWait' -benchtime $(WAKE_EVENTS)x ./internal/tooling/realagents

# The agent CLIs (Claude Code, Codex, gemini-cli, pinned) from npm, each
# listing foreman's server in a workspace mcpconfig wrote (make test runs
# it too; the first run installs them in the user's cache: ~30 s, 880 MB).
.PHONY: test-clis
test-clis:
	$(GO) test -run '^TestAgentCLIsListForeman$$' -count=1 -v ./internal/tooling/realagents

.PHONY: bench-host
bench-host:
	$(GO) test -run '^$$' -bench 'ReadyToVerdict|QueueThroughput' $(call benchtime,-benchtime 20x) ./internal/host/gitjob
	$(GO) test -run '^$$' -bench 'LandingReceipt|ApprovedCar' $(call benchtime,-benchtime 100x) -count 3 ./internal/host/gitjob
	$(GO) test -run '^$$' -bench 'Verify' $(call benchtime,-benchtime 5x) ./internal/verify
	$(GO) test -run '^$$' -bench 'FreshWorktree' $(call benchtime,-benchtime 3x) ./internal/host/gitjob
	$(GO) test -run '^$$' -bench 'OverlapScan' $(call benchtime,-benchtime 10x) ./internal/host/gitjob
	$(GO) test -run '^$$' -bench 'SandboxNoop' $(call benchtime,-benchtime 200x) ./internal/host/sandbox
	$(GO) test -run '^$$' -bench 'WarmHonestChecks' $(call benchtime,-benchtime 5x) ./internal/host/sandbox
	$(GO) test -run '^$$' -bench 'Redactor' $(call benchtime) ./internal/host/checks

# The merge queue's whole build, as a user runs it (the real binaries over
# WebSockets, a real repository): 16 components with 4 s checks at
# max_parallel 8, two of them failing together, then 32 at 4 and 8 (a few
# minutes, mostly waiting on sleeps). Each run is components:check:parallel;
# FOREMAN_BIN=path measures another build side by side; TRAIN_FLAKE,
# TRAIN_SEED, TRAIN_BATCH (host.batch.max) and TRAIN_DEPTH
# (host.failure_depth) set the rest (internal/tooling/trainbench).
TRAIN_RUNS ?= 16:4s:8 32:4s:4 32:4s:8
.PHONY: bench-train
bench-train:
	@for r in $(TRAIN_RUNS); do \
		set -- $$(echo $$r | tr : ' '); \
		TRAIN_COMPONENTS=$$1 TRAIN_CHECK=$$2 TRAIN_PARALLEL=$$3 $(GO) test ./internal/tooling/trainbench -count=1 -v -timeout 30m | grep -E '^(trainbench:|---|FAIL|ok)' || exit 1; \
	done

# The same build with the host's checks on foreman worker processes (an
# in-process NATS, the real binaries): 32 components with 4 s checks at
# max_parallel 8 on 1, 2 and 4 workers, then on 2 with one of them killed
# (SIGKILL) mid-check and started again. Each run is
# components:check:parallel:workers, :kill to kill one.
WORKER_RUNS ?= 32:4s:8:1 32:4s:8:2 32:4s:8:4 32:4s:8:2:kill
.PHONY: bench-workers
bench-workers:
	@for r in $(WORKER_RUNS); do \
		set -- $$(echo $$r | tr : ' '); \
		kill=0; [ "$$5" = kill ] && kill=1; \
		TRAIN_COMPONENTS=$$1 TRAIN_CHECK=$$2 TRAIN_PARALLEL=$$3 TRAIN_WORKERS=$$4 TRAIN_KILL=$$kill $(GO) test ./internal/tooling/trainbench -count=1 -v -timeout 30m | grep -E '^(trainbench:|---|FAIL|ok)' || exit 1; \
	done

# Short fuzzing runs of the grammar, the engine and the room's frames; FUZZTIME=10m for long ones.
# scripts/fuzz runs a target again when Go 1.26's coordinator fails it on its
# own deadline having found nothing (go.dev/issue/75804).
fuzz:
	GO=$(GO) scripts/fuzz ./protocol FuzzParse $(FUZZTIME)
	GO=$(GO) scripts/fuzz ./coordinator FuzzEngine $(FUZZTIME)
	GO=$(GO) scripts/fuzz ./protocol FuzzReadReply $(FUZZTIME)
	GO=$(GO) scripts/fuzz ./protocol FuzzHandoff $(FUZZTIME)
	GO=$(GO) scripts/fuzz ./agentchat/server FuzzFrames $(FUZZTIME)
	GO=$(GO) scripts/fuzz ./internal/web FuzzBoardState $(FUZZTIME)

# A whole build on this machine: chat server, foreman and simulated agents
# (ARGS="--minute 50ms --ci" to change it; see `foreman demo --help`).
.PHONY: demo demo-git
demo:
	$(GO) run ./cmd/foreman demo $(ARGS)

# The same story with the work made real: builders push to a temporary git
# repository, foreman host checks and lands it; ends with git log --graph.
.PHONY: demo-git
demo-git:
	$(GO) run ./cmd/foreman demo --git $(ARGS)

# The README's path for real: git init, foreman init and foreman up on a
# temporary repository, scripted builders pushing to it and an auditor,
# until COMPLETE with main holding every component; says how long it took.
.PHONY: demo-real
demo-real:
	$(GO) run ./cmd/foreman demo --up $(ARGS)

# The README's quickest path, timed: git clone of this checkout, make
# install, git init, foreman init && foreman up --agents 3, until COMPLETE
# (COLD=1: make install with a fresh build cache; ARGS=90 fails past 90 s).
.PHONY: quickest-path
quickest-path:
	scripts/quickest-path $(ARGS)

# The full fault set: many kill -9 trials and restarts, and the cluster's
# faults on in-process NATS servers (make test runs a short form); then the
# standby host's: HOST_KILLS kills of the leading host mid-landing with a
# lease of HOST_LEASE (the takeover figure in docs/RELIABILITY.md), a kill
# mid-train, SIGTERM, SIGSTOP, NATS restarted.
HOST_KILLS ?= 20
HOST_LEASE ?= 3s
chaos:
	CHAOS=full $(GO) test ./internal/tooling/chaos -v -count=1 -timeout 60m
	HOST_KILLS=$(HOST_KILLS) HOST_LEASE=$(HOST_LEASE) $(GO) test ./internal/host/live -run 'Standby|DeposedHost|NATSRestart' -v -count=1 -timeout 30m

# 1,000 builds of 20 components shared by three foreman processes through
# one NATS server: memory per build, and how long the survivors take to
# lead a killed process's builds. Heavy (both CPUs for minutes): not in test.
# CLUSTER_SCALE=50 for another count of builds.
CLUSTER_SCALE ?= 1000
scale:
	CLUSTER_SCALE=$(CLUSTER_SCALE) $(GO) test ./internal/tooling/chaos -run TestClusterScale -v -count=1 -timeout 60m

# The fault simulator (internal/tooling/vopr): foreman's whole loop on a
# virtual clock under seeded faults, its promises checked after every step.
# CI runs these seeds; SIMSEEDS=100000 for a long run, SIMFROM to start
# elsewhere. A failing seed prints the command that replays it.
SIMSEEDS ?= 5000
SIMFROM  ?= 1
# Then seeds whose stalls are a cluster's takeovers (a standby leads behind
# a fence while foreman is stopped).
SIMTAKEOVERS ?= 1000
# Then foreman host's simulator (internal/tooling/hostsim): its core and
# ledger on a simulated repository, killed and stopped at any moment, its
# landing invariant checked after every step.
SIMHOSTS ?= 3000
sim:
	$(GO) run ./cmd/foreman sim --seeds $(SIMSEEDS) --from $(SIMFROM)
	$(GO) run ./cmd/foreman sim --takeovers --seeds $(SIMTAKEOVERS) --from $(SIMFROM)
	$(GO) run ./cmd/foreman sim --host --seeds $(SIMHOSTS) --from $(SIMFROM)

# foreman host's simulator alone, long: SIMHOSTLONG seeds [20,000] from
# SIMFROM, its landing invariant (package invariant) checked after every
# step (docs/RELIABILITY.md records its time).
SIMHOSTLONG ?= 20000
.PHONY: sim-host-long
sim-host-long:
	$(GO) run ./cmd/foreman sim --host --seeds $(SIMHOSTLONG) --from $(SIMFROM)

# Mutation testing (gremlins, scripts/mutation) of what decides what lands:
# MUTATION=full [default] the host core, receipts, verify and the land job
# (an hour or more on two CPUs); MUTATION=ci the core's decision files
# (rules.go, landing.go, head.go, state.go), as CI runs it. A surviving
# mutant not argued in docs/RELIABILITY.md fails it.
MUTATION ?= full
.PHONY: mutation
mutation:
	scripts/mutation $(MUTATION)

# The live load goals, measured on this machine: 1,000 agents claiming over
# 10s with no rate limit, then 200 simultaneous claims under the stock one
# message per second. Heavy (a minute or so, both CPUs): not part of test.
# LOADAGENTS (over LOADSPREAD) and LOADBURST set the two counts of agents.
LOADAGENTS ?= 1000
LOADSPREAD ?= 10s
LOADBURST  ?= 200
.PHONY: load
load: build
	$(BIN) bench --agents $(LOADAGENTS) --spread $(LOADSPREAD)
	$(BIN) bench --agents $(LOADBURST) --rate-limit 1s --simultaneous

# Every scenario transcript in coordinator/testdata replayed on the virtual clock and
# compared line by line (also TestScenarios in make test).
replay:
	$(GO) run ./cmd/foreman replay coordinator/testdata/*.txt

# Every documented target above, once, at a small size: each proves its
# command still runs end to end, not its figure (the figures come from the
# full sizes: docs/PERFORMANCE.md). CI runs it after make sim; a few
# minutes on two CPUs.
CHAOS_SMALL = CHAOS_TRIALS=1 CHAOS_KILLS=2 CHAOS_RESTARTS=2 CHAOS_STALL_TRIALS=1 \
	CLUSTER_KILLS=2 CLUSTER_TRIALS=1 CLUSTER_HANDOVERS=1 HOST_KILLS=2
ci-small:
	$(MAKE) build
	GOBIN=$(CURDIR)/bin $(MAKE) install # into bin/, not this machine's PATH
	$(MAKE) replay
	$(MAKE) demo
	$(MAKE) demo-git
	$(MAKE) demo-real ARGS="--limit 60s" # issue 38: the whole build in under a minute, or CI fails
	$(MAKE) quickest-path ARGS=300 # issue 46: clone to COMPLETE with foreman up --agents 3 (the README's figure is a quiet machine's)
	$(MAKE) bench BENCHTIME=1x
	$(MAKE) bench-host BENCHTIME=1x VERIFY_LANDINGS=50
	$(MAKE) bench-spend SPEND_RATE=200 SPEND_SECONDS=2
	$(MAKE) bench-wake WAKE_EVENTS=20 # make bench ran it once: its percentiles over a few
	$(MAKE) bench-train TRAIN_RUNS=4:300ms:2
	$(MAKE) bench-train TRAIN_RUNS=4:300ms:2 TRAIN_FLAKE=0.1
	$(MAKE) bench-train TRAIN_RUNS=6:300ms:2 TRAIN_FLAKE=0.1 TRAIN_BATCH=4 TRAIN_DEPTH=1
	$(MAKE) bench-workers WORKER_RUNS=4:300ms:2:2:kill
	$(MAKE) fuzz FUZZTIME=5s
	$(MAKE) load LOADAGENTS=20 LOADSPREAD=2s LOADBURST=20
	$(CHAOS_SMALL) $(MAKE) chaos
	$(MAKE) scale CLUSTER_SCALE=6
	$(MAKE) sim-host-long SIMHOSTLONG=20

clean:
	rm -rf bin
