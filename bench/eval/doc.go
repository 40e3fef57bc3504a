// Package eval is shepherd's behavioural eval (issue 17, item 6): scripted
// multi-turn coding tasks run through the real proxy, started in process
// with topics, intents (the task's policy file) and recovery on, against a
// real provider when a key is set, else against the scripted mock
// provider (bench/mock).
//
// The eval is the agent. It keeps the conversation, offers a small tool
// set (list_files, read_file, write_file, run_tests) executed in a
// temporary workspace, sends each task's user prompts, runs the model's
// tool calls and loops until the model answers without tool calls or a
// step cap is reached. It speaks every wire API through the test kit's
// drivers (test/kit), so one loop serves all four.
//
// What shepherd did is read from its live feed (an events.Recorder)
// and from a recording tap between shepherd and the provider
// (what the model was sent and answered). From these the eval scores, per
// task and overall: chapters opened and their order against the task's
// phases, an intent selected before the first write, refusals respected
// (no identical retry of a refused call under the same intent),
// continuations seamless, tokens shepherd added per turn, and the
// cache-read ratio. Run reports them as a Report: a markdown table
// (Report.Markdown) and JSON.
//
// Against the mock the model is a script (scripts.go): a compliant one
// that follows shepherd's protocol and a careless one that does not, so
// the scores check the harness, not a model; the report says so.
package eval
