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

## run: start the whole stack (infrastructure, embedded Kafka, every service)
run: infra build
	./scripts/run-stack.sh

## test: every test of every module, against the real Redis, RabbitMQ and embedded Kafka
test: infra
	$(GO) test -count=1 -timeout 30m $(PKGS)

## test-cluster: the 3-node RabbitMQ and Redis Cluster failover tests (they start their own nodes; about 2 minutes, not part of `make test`)
.PHONY: test-cluster
test-cluster: infra
	BOXOFFICE_RABBITMQ_CLUSTER=1 BOXOFFICE_REDIS_FAILOVER=1 $(GO) test -count=1 -v \
		-run 'TestQuorumClusterSurvivesNodeRestart|TestClusterFailoverMidSale' ./pkg/amqpx/ ./pkg/booking/

## build: every service binary into ./bin
build:
	@mkdir -p $(BIN)
	@for d in services/*/; do \
		s=$$(basename $$d); \
		if ls $$d*.go >/dev/null 2>&1; then \
			(cd $$d && $(GO) build -o $(BIN)/$$s .) || exit 1; \
		fi; \
	done

## lint: gofmt, go vet, and the deployment checks
lint:
	@out=$$(gofmt -l lua pkg services tools); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@if [ -x scripts/lint-deploy.sh ]; then ./scripts/lint-deploy.sh; fi

## bench: the benchmarks quoted in docs/benchmarks.md
bench: infra
	./scripts/bench.sh

infra:
	@./scripts/ensure-infra.sh

fmt:
	gofmt -w lua pkg services tools

clean:
	rm -rf $(BIN) test-output
