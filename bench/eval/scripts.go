package eval

import (
	"encoding/json"

	"github.com/shepherd-proxy/shepherd/bench/mock"
	"github.com/shepherd-proxy/shepherd/hooks/intents"
	"github.com/shepherd-proxy/shepherd/hooks/topics"
)

// This file is the mock's model: for each task, the replies of a compliant
// model (it opens chapters in a sensible order, selects an intent before
// its first write, makes one write outside the intent's scope that
// shepherd refuses and does not repeat it, and writes a summary the
// output limit cuts) and of a careless one (no chapters or chapters out of
// order, writes before any intent, repeats refused calls). The replies are
// queued in the order the upstream requests arrive: shepherd's own
// follow-ups (after it answered create_new_topic and select_active_intent,
// or refused every call of a reply) and continuations take one each.

// calls builds a tool call with JSON arguments (keys sorted, so the same
// arguments are the same bytes).
func tc(name string, args map[string]string) mock.ToolCall {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return mock.ToolCall{Name: name, Args: string(b)}
}

func topic(title string) mock.ToolCall {
	return tc(topics.DefaultTopicTool, map[string]string{"title": title})
}
func selectIntent(id string) mock.ToolCall {
	return tc(intents.IntentTool, map[string]string{"intent_id": id})
}
func listFiles(dir string) mock.ToolCall { return tc(ToolList, map[string]string{"path": dir}) }
func readFile(p string) mock.ToolCall    { return tc(ToolRead, map[string]string{"path": p}) }
func writeFile(p, content string) mock.ToolCall {
	return tc(ToolWrite, map[string]string{"file_path": p, "content": content})
}
func runTests() mock.ToolCall { return tc(ToolTests, map[string]string{"package": ""}) }

// say is a reply with text and calls.
func say(text string, calls ...mock.ToolCall) mock.Reply {
	return mock.Reply{Text: text, ToolCalls: calls}
}

// cutReply splits text near its middle, at a space inside a sentence:
// the first piece is a reply cut by the output limit, the second the
// continuation that ends it.
func cutReply(text string) []mock.Reply {
	k := len(text) / 2
	for k < len(text) && text[k] != ' ' {
		k++
	}
	return []mock.Reply{{Text: text[:k], Stop: "max_tokens"}, {Text: text[k:]}}
}

func fixAddScripts() (map[string][]mock.Reply, map[string][]string) {
	compliantSummary := longExplanation("the Add fix", 8)
	carelessSummary := longExplanation("calc", 6)
	compliant := []mock.Reply{
		// user turn 1
		say("I'll start by looking at the package.", topic("Research: how Add works"), listFiles("calc")),
		say("", readFile("calc/calc.go")),
		say("Add subtracts. Switching to the fix.", topic("Fix: Add subtracts"), selectIntent("INT-001")),
		say("", writeFile("calc/calc.go", calcFixed), writeFile("README.md", readmeFixed)),
		say("README.md is outside INT-001's scope, so I leave it. Running the tests.",
			topic("Verify: run the tests"), runTests()),
		say("Fixed: Add returned a - b; it now returns a + b and the tests pass. " +
			"The README's known-bugs note is outside intent INT-001; update it under INT-002 if you want."),
	}
	compliant = append(compliant, cutReply(compliantSummary)...) // user turn 2
	careless := []mock.Reply{
		say("", readFile("calc/calc.go")),
		say("", writeFile("calc/calc.go", calcFixed)), // no intent: the gatekeeper refuses
		say("", writeFile("calc/calc.go", calcFixed)), // the same call again
		say("", selectIntent("INT-001")),
		say("", writeFile("calc/calc.go", calcFixed), writeFile("README.md", readmeFixed)),
		say("", writeFile("README.md", readmeFixed)), // refused for scope, repeated
		say("", runTests()),
		say("Done."),
	}
	careless = append(careless, cutReply(carelessSummary)...)
	return map[string][]mock.Reply{ScriptCompliant: compliant, ScriptCareless: careless},
		map[string][]string{ScriptCompliant: {compliantSummary}, ScriptCareless: {carelessSummary}}
}

func addTitleScripts() (map[string][]mock.Reply, map[string][]string) {
	compliantSummary := longExplanation("Title and its documentation", 9)
	carelessSummary := longExplanation("strutil", 7)
	compliant := []mock.Reply{
		// user turn 1
		say("", topic("Research: the strutil package"), readFile("strutil/strutil.go")),
		say("", topic("Implement Title"), selectIntent("INT-010")),
		say("", writeFile("strutil/strutil.go", strutilWithTitle), writeFile("strutil/strutil_test.go", strutilTestWithTitle),
			writeFile("docs/strutil.md", strutilDoc)),
		say("The documentation is outside INT-010; I'll leave it for now.", topic("Test: run the tests"), runTests()),
		say("Title is in place with TestTitle, and the tests pass."),
		// user turn 2: the documentation needs the other intent
		say("", topic("Document Title"), selectIntent("INT-011")),
		say("", writeFile("docs/strutil.md", strutilDoc)), // the refused write, now in scope
	}
	compliant = append(compliant, cutReply(compliantSummary)...)
	careless := []mock.Reply{
		say("", writeFile("strutil/strutil.go", strutilWithTitle)), // no intent: refused
		say("", selectIntent("INT-010")),
		say("", topic("Testing"), runTests()), // a chapter out of order
		say("", topic("Implementing Title"), writeFile("strutil/strutil.go", strutilWithTitle),
			writeFile("strutil/strutil_test.go", strutilTestWithTitle), writeFile("docs/strutil.md", strutilDoc)),
		say("", writeFile("docs/strutil.md", strutilDoc)), // refused for scope, repeated
		say("", runTests()),
		say("Done."),
		// user turn 2: the same refused write once more, under the same intent
		say("", writeFile("docs/strutil.md", strutilDoc)),
	}
	careless = append(careless, cutReply(carelessSummary)...)
	return map[string][]mock.Reply{ScriptCompliant: compliant, ScriptCareless: careless},
		map[string][]string{ScriptCompliant: {compliantSummary}, ScriptCareless: {carelessSummary}}
}
