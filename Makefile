# foreman's tasks. `make test` is what CI runs.
GO       ?= go
BIN      ?= bin/foreman
FUZZTIME ?= 30s

.PHONY: all build install test lint bench fuzz chaos scale sim replay clean

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
test:
	$(GO) vet ./...
	$(GO) test -race ./...

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# The engine, grammar, replay and recovery benchmarks (docs/PERFORMANCE.md),
# then the engine's throughput again on one core.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./protocol ./coordinator ./transcript ./internal/journal ./internal/recovery ./coordinator/graph ./internal/web ./internal/cluster ./internal/host
	$(GO) test -run '^$$' -bench 'Lines|Progress|ClaimToAck' -benchmem -cpu 1 ./coordinator

# foreman host on a repository of 10,000 files and 1,000 commits: its work
# per READY, the queue's throughput, a fresh worktree (a few minutes).
.PHONY: bench-host
bench-host:
	$(GO) test -run '^$$' -bench 'ReadyToVerdict|QueueThroughput' -benchtime 20x ./internal/host/gitjob
	$(GO) test -run '^$$' -bench 'FreshWorktree' -benchtime 3x ./internal/host/gitjob

# The merge queue's whole build, as a user runs it (the real binaries over
# WebSockets, a real repository): 16 components with 4 s checks at
# max_parallel 8, two of them failing together, then 32 at 4 and 8 (a few
# minutes, mostly waiting on sleeps). make test runs it small.
# FOREMAN_BIN=path measures another build side by side.
.PHONY: bench-train
bench-train:
	TRAIN_COMPONENTS=16 TRAIN_CHECK=4s TRAIN_PARALLEL=8 $(GO) test ./internal/tooling/trainbench -count=1 -v -timeout 30m
	TRAIN_COMPONENTS=32 TRAIN_CHECK=4s TRAIN_PARALLEL=4 $(GO) test ./internal/tooling/trainbench -count=1 -v -timeout 30m
	TRAIN_COMPONENTS=32 TRAIN_CHECK=4s TRAIN_PARALLEL=8 $(GO) test ./internal/tooling/trainbench -count=1 -v -timeout 30m

# Short fuzzing runs of the grammar, the engine and the room's frames; FUZZTIME=10m for long ones.
fuzz:
	$(GO) test ./protocol -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./coordinator -run '^$$' -fuzz '^FuzzEngine$$' -fuzztime $(FUZZTIME)
	$(GO) test ./protocol -run '^$$' -fuzz '^FuzzReadReply$$' -fuzztime $(FUZZTIME)
	$(GO) test ./agentchat/server -run '^$$' -fuzz '^FuzzFrames$$' -fuzztime $(FUZZTIME)

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

# The full fault set: many kill -9 trials and restarts, and the cluster's
# faults on in-process NATS servers (make test runs a short form).
chaos:
	CHAOS=full $(GO) test ./internal/tooling/chaos -v -count=1 -timeout 60m

# 1,000 builds of 20 components shared by three foreman processes through
# one NATS server: memory per build, and how long the survivors take to
# lead a killed process's builds. Heavy (both CPUs for minutes): not in test.
scale:
	CLUSTER_SCALE=1000 $(GO) test ./internal/tooling/chaos -run TestClusterScale -v -count=1 -timeout 60m

# The fault simulator (internal/tooling/vopr): foreman's whole loop on a
# virtual clock under seeded faults, its promises checked after every step.
# CI runs these seeds; SIMSEEDS=100000 for a long run, SIMFROM to start
# elsewhere. A failing seed prints the command that replays it.
SIMSEEDS ?= 5000
SIMFROM  ?= 1
# Then seeds whose stalls are a cluster's takeovers (a standby leads behind
# a fence while foreman is stopped).
SIMTAKEOVERS ?= 1000
sim:
	$(GO) run ./cmd/foreman sim --seeds $(SIMSEEDS) --from $(SIMFROM)
	$(GO) run ./cmd/foreman sim --takeovers --seeds $(SIMTAKEOVERS) --from $(SIMFROM)

# The live load goals, measured on this machine: 1,000 agents claiming over
# 10s with no rate limit, then 200 simultaneous claims under the stock one
# message per second. Heavy (a minute or so, both CPUs): not part of test.
.PHONY: load
load: build
	$(BIN) bench --agents 1000
	$(BIN) bench --agents 200 --rate-limit 1s --simultaneous

clean:
	rm -rf bin
