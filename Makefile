# boxoffice — the two commands that matter are `make run` and `make test`.
# Every target makes sure Redis and RabbitMQ answer on loopback first
# (scripts/ensure-infra.sh installs or starts them when they do not).

SHELL := /bin/bash
GO    ?= go
# Every module of the workspace (go.work); `go test ./...` does not cross
# module boundaries, so the patterns are built from `go list -m`.
MODULES := $(shell $(GO) list -m -f '{{.Dir}}' 2>/dev/null)
PKGS    := $(addsuffix /...,$(MODULES))
BIN     := $(CURDIR)/bin

.PHONY: run test lint bench infra build fmt clean

## run: start the whole stack (infrastructure, embedded Kafka, every service; tools/stack on pkg/stacktest's service list)
run: infra build
	cd tools && $(GO) build -o $(BIN)/stack ./stack
	$(BIN)/stack

## test: every test of every module, against the real Redis, RabbitMQ and embedded Kafka
test: infra
	@./scripts/ensure-tool.sh promtool prometheus
	$(GO) test -count=1 -timeout 30m $(PKGS)

## test-cluster: every test that starts its own Redis Cluster or RabbitMQ nodes: the services on both with a master and a node killed and the RabbitMQ node restart (both also in `make test`), and the planned failover test (only here); about 4 minutes
.PHONY: test-cluster
test-cluster: infra
	BOXOFFICE_REDIS_FAILOVER=1 $(GO) test -count=1 -v \
		-run 'TestSaleOnClusters|TestQuorumClusterSurvivesNodeRestart|TestClusterFailoverMidSale' ./pkg/stacktest/ ./pkg/amqpx/ ./pkg/booking/

## build: every service binary into ./bin
build:
	@mkdir -p $(BIN)
	@for d in services/*/; do \
		s=$$(basename $$d); \
		if ls $$d*.go >/dev/null 2>&1; then \
			(cd $$d && $(GO) build -o $(BIN)/$$s .) || exit 1; \
		fi; \
	done

# staticcheck, pinned: `go run` builds it from the Go module proxy on first
# use (no install step, the same on a fresh machine and in CI), then from
# the build cache.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

## lint: nothing built is tracked (scripts/lint-tracked.sh), gofmt, go vet, staticcheck, and the deployment checks (scripts/lint-deploy.sh: deployments/check, promtool, the Helm chart)
lint:
	./scripts/lint-tracked.sh
	@out=$$(gofmt -l lua pkg services tools deployments); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	./scripts/lint-deploy.sh

## bench: the benchmarks quoted in docs/benchmarks.md
bench: infra
	./scripts/bench.sh

## bench-onsale: a simulated on-sale of 1,000,000 users into one queue on a stack of its own (tools/onsale; up to 20 minutes; ONSALE_USERS and ONSALE_DURATION to change)
.PHONY: bench-onsale
bench-onsale: infra
	cd tools && $(GO) test -count=1 -timeout 60m -run '^$$' -bench BenchmarkOnsale -benchtime 1x ./onsale/

infra:
	@./scripts/ensure-infra.sh

fmt:
	gofmt -w lua pkg services tools

clean:
	rm -rf $(BIN) test-output
