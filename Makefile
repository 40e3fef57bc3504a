# shepherd developer targets. `make test` is the project's test command: it
# starts a private redis-server (see scripts/test.sh) unless REDIS_URL is set.
#
#   GOTEST_PKGS   packages to vet/test/bench (default ./...)
#   GOTEST_FLAGS  extra `go test` flags, e.g. GOTEST_FLAGS='-run Redis -v'
#   FUZZTIME      time per fuzz target for `make fuzz` (default 10s)

GO          ?= go
GOTEST_PKGS ?= ./...
FUZZTIME    ?= 10s

export GOTEST_PKGS

.PHONY: test agents build fmt vet fuzz bench eval

test:
	bash scripts/test.sh

# The agents suite: the real agent CLIs (pinned in test/agents/package.json,
# installed by npm) driven through shepherd against the mock provider.
# `make test` runs it too.
agents:
	bash scripts/agents.sh

build:
	$(GO) build ./...

fmt:
	$(GO) fmt ./...

vet:
	$(GO) vet $(GOTEST_PKGS)

# Runs every native fuzz target (found with `go test -list`) for FUZZTIME.
fuzz:
	@set -e; for pkg in $$($(GO) list $(GOTEST_PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== fuzz $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; \
	done

# The whole benchmark in one command (bench/Makefile, bench/README.md): Go
# benchmarks, then the load comparison against direct and nginx; writes
# bench/results/<UTC date>.md, its charts and README.md's performance table.
bench:
	$(MAKE) -C bench

# The behavioural eval (bench/eval/README.md): against the provider whose key is set, else the
# scripted mock. EVAL_FLAGS passes flags, e.g. EVAL_FLAGS='-api openai_responses -model gpt-4.1'.
eval:
	mkdir -p bench/out && $(GO) run ./bench/eval/cmd -json bench/out/eval.json $(EVAL_FLAGS)
