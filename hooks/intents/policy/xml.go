package policy

import (
	"encoding/xml"
	"strings"
)

// ContextXML renders the intent as the select_active_intent success result.
// The output is deterministic, one element per line, with all text and
// attribute values XML-escaped:
//
//	<intent_context intent_id="INT-001">
//	<summary>Fix the login bug</summary>
//	<scope>
//	<allow_glob>src/**</allow_glob>
//	<deny_glob>src/secrets/**</deny_glob>
//	</scope>
//	<constraints>
//	<disallow_tool>Bash</disallow_tool>
//	<disallow_pattern>rm\s+-rf</disallow_pattern>
//	</constraints>
//	<acceptance_criteria>
//	<criterion id="AC-1" status="pending">login works</criterion>
//	</acceptance_criteria>
//	</intent_context>
//
// ask_glob, ask_tool and ask_pattern elements (calls a person must
// approve) follow their section's other elements when the intent has them.
// Empty sections are rendered as <scope/>, <constraints/> and
// <acceptance_criteria/>.
func (in *Intent) ContextXML() string {
	var b strings.Builder
	b.WriteString(`<intent_context intent_id="`)
	escape(&b, in.ID)
	b.WriteString("\">\n")
	element(&b, "summary", in.Summary)

	if len(in.AllowGlob)+len(in.DenyGlob)+len(in.AskGlob) == 0 {
		b.WriteString("<scope/>\n")
	} else {
		b.WriteString("<scope>\n")
		for _, g := range in.AllowGlob {
			element(&b, "allow_glob", g)
		}
		for _, g := range in.DenyGlob {
			element(&b, "deny_glob", g)
		}
		for _, g := range in.AskGlob {
			element(&b, "ask_glob", g)
		}
		b.WriteString("</scope>\n")
	}

	if len(in.DisallowTools)+len(in.DisallowPatterns)+len(in.AskTools)+len(in.AskPatterns) == 0 {
		b.WriteString("<constraints/>\n")
	} else {
		b.WriteString("<constraints>\n")
		for _, t := range in.DisallowTools {
			element(&b, "disallow_tool", t)
		}
		for _, p := range in.DisallowPatterns {
			element(&b, "disallow_pattern", p)
		}
		for _, t := range in.AskTools {
			element(&b, "ask_tool", t)
		}
		for _, p := range in.AskPatterns {
			element(&b, "ask_pattern", p)
		}
		b.WriteString("</constraints>\n")
	}

	if len(in.Criteria) == 0 {
		b.WriteString("<acceptance_criteria/>\n")
	} else {
		b.WriteString("<acceptance_criteria>\n")
		for _, c := range in.Criteria {
			b.WriteString(`<criterion id="`)
			escape(&b, c.ID)
			b.WriteString(`" status="`)
			escape(&b, c.Status)
			b.WriteString(`">`)
			escape(&b, c.Description)
			b.WriteString("</criterion>\n")
		}
		b.WriteString("</acceptance_criteria>\n")
	}
	b.WriteString("</intent_context>")
	return b.String()
}

func element(b *strings.Builder, name, text string) {
	b.WriteByte('<')
	b.WriteString(name)
	b.WriteByte('>')
	escape(b, text)
	b.WriteString("</")
	b.WriteString(name)
	b.WriteString(">\n")
}

// escape writes s XML-escaped (quotes included, so it is safe in attribute
// values too).
func escape(b *strings.Builder, s string) {
	_ = xml.EscapeText(b, []byte(s)) // a strings.Builder never fails
}
