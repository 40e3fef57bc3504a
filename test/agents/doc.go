// Package agents drives the real agent CLIs (Claude Code, Codex CLI,
// gemini-cli, Cline), installed from npm at the versions pinned in
// package.json, headless against the scripted mock provider (bench/mock)
// through a real shepherd proxy, and checks what the provider received and
// what the agent printed.
//
// The tests live in the _test.go files. A CLI that is not installed under
// node_modules/.bin is skipped, so `go test ./...` on a machine without them
// does nothing here; scripts/agents.sh (`make agents`, also run by
// `make test`) installs them with npm and sets SHEPHERD_AGENTS=1, which
// turns a missing CLI into a failure. Everything runs offline: each run gets
// a private HOME with telemetry and update checks off.
package agents
