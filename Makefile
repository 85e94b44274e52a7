# Forge: the two commands a user needs are `make demo` and `make test`.
# Everything else here is a step those two call, or a developer convenience.

GO       ?= go
PKGS     ?= ./...
BENCHTIME ?= 1x

.PHONY: all deps test vet cross-vet bench race fmt-check

all: test

# deps installs (as root on Debian) or names (otherwise) the system packages.
deps:
	@./scripts/deps.sh

vet:
	$(GO) vet $(PKGS)

# cross-vet keeps the Apple (Metal, Accelerate) and arm64 (NEON) code compiling
# on a machine that has neither.
cross-vet:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(PKGS)
	GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

test: deps fmt-check vet
	$(GO) test -count=1 $(PKGS)

race:
	$(GO) test -race -count=1 ./stage/... ./pipeline/... ./scorecards/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
