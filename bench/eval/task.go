package eval

import (
	"regexp"

	"github.com/shepherd-proxy/shepherd/bench/mock"
)

// Task is one scripted multi-turn coding task.
type Task struct {
	// Name identifies the task in reports and on the command line.
	Name string
	// Summary says in a line what the task asks.
	Summary string
	// Files is the workspace the task starts from: relative path → content.
	Files map[string]string
	// Policy is the intents policy file (YAML) the task brings; it is
	// written to PolicyPath in the workspace.
	Policy string
	// Prompts are the user's messages, one per user turn, in order.
	Prompts []Prompt
	// Phases are the chapters a model following the protocol opens, in
	// order.
	Phases []Phase
	// Check is what run_tests runs: it reads the workspace and reports
	// whether the task's tests pass, with their output.
	Check func(ws *Workspace) (pass bool, output string)
	// Scripts are the mock's model for this task, by script name
	// (ScriptCompliant, ScriptCareless): the replies in the order the
	// upstream requests arrive, the follow-ups shepherd sends itself
	// included.
	Scripts map[string][]mock.Reply
	// Expected is, per script, the whole text of each reply the script
	// cuts by the output limit (the concatenation of its pieces): what the
	// agent must read once shepherd continued it.
	Expected map[string][]string
}

// Prompt is one user turn.
type Prompt struct {
	Text string
	// Limit is the output limit of this turn's requests (0: the driver's
	// default). A small limit provokes a cut a live model's reply and so a
	// continuation.
	Limit int
}

// Phase is one expected chapter of a task: a name and the pattern a
// chapter title of that phase matches.
type Phase struct {
	Name  string
	Match *regexp.Regexp
}

// PolicyPath is where a task's policy file lies in its workspace.
const PolicyPath = ".orchestration/active_intents.yaml"

// Script names.
const (
	// ScriptCompliant plays a model that follows shepherd's protocol.
	ScriptCompliant = "compliant"
	// ScriptCareless plays a model that skips it.
	ScriptCareless = "careless"
	// ScriptLive is the script name of a run against a real model.
	ScriptLive = "live"
)

// phaseOf returns the index in phases of the first phase title matches, or
// -1.
func phaseOf(phases []Phase, title string) int {
	for i, p := range phases {
		if p.Match.MatchString(title) {
			return i
		}
	}
	return -1
}
