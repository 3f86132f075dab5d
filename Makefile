# skills-sidecar: the everyday commands. `make test` is the whole suite (what
# CI runs); `make run` is the quick start on the embedded default.

GO      ?= go
# VERSION stamps the binary only when given or when HEAD is a tagged release;
# otherwise it reports the release cmd/skills-sidecar/run.go names.
VERSION ?= $(shell git describe --tags --exact-match 2>/dev/null)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w $(if $(VERSION),-X main.version=$(VERSION)) -X main.commit=$(COMMIT)

.PHONY: build run test unit fuzz e2e bench soak attack lint clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/skills-sidecar ./cmd/skills-sidecar

run:
	$(GO) run ./cmd/skills-sidecar

test:
	scripts/test.sh

unit:
	$(GO) test -race ./...

fuzz:
	STAGES=fuzz FUZZTIME=$${FUZZTIME:-30s} scripts/test.sh

e2e:
	scripts/e2e-all.sh

bench:
	$(GO) run ./bench/cmd/skillsbench -json bench-results.json

soak:
	$(GO) run ./test/soak -json soak-results.json

attack:
	$(GO) run ./test/attack

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }

clean:
	rm -rf bin .tools
