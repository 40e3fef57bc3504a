package policy

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestContextXML(t *testing.T) {
	p, err := Parse([]byte(goodPolicy), "p.yaml")
	require.NoError(t, err)
	in, _ := p.Intent("INT-001")
	want := `<intent_context intent_id="INT-001">
<summary>Fix the login bug</summary>
<scope>
<allow_glob>src/auth/**</allow_glob>
<allow_glob>tests/**</allow_glob>
<deny_glob>src/auth/secrets/**</deny_glob>
</scope>
<constraints>
<disallow_tool>Bash</disallow_tool>
<disallow_tool>mcp__*</disallow_tool>
<disallow_pattern>rm\s+-rf</disallow_pattern>
<disallow_pattern>git\s+push</disallow_pattern>
</constraints>
<acceptance_criteria>
<criterion id="AC-1" status="met">login works</criterion>
<criterion id="AC-2" status="pending">tests pass</criterion>
</acceptance_criteria>
</intent_context>`
	require.Equal(t, want, in.ContextXML())

	in2, _ := p.Intent("INT-002")
	require.Equal(t, `<intent_context intent_id="INT-002">
<summary>Docs only</summary>
<scope/>
<constraints/>
<acceptance_criteria/>
</intent_context>`, in2.ContextXML())
}

func TestContextXMLEscaping(t *testing.T) {
	in := &Intent{
		ID:               `INT-"1"&<x>`,
		Summary:          `a < b & "c" > 'd'`,
		AllowGlob:        []string{"src/<x>/**"},
		DisallowPatterns: []string{`a&&b`},
		Criteria:         []Criterion{{ID: `A"C`, Description: "</criterion><evil/>", Status: `p"&`}},
	}
	out := in.ContextXML()
	require.Contains(t, out, `<intent_context intent_id="INT-&#34;1&#34;&amp;&lt;x&gt;">`)
	require.Contains(t, out, `<summary>a &lt; b &amp; &#34;c&#34; &gt; &#39;d&#39;</summary>`)
	require.Contains(t, out, `<allow_glob>src/&lt;x&gt;/**</allow_glob>`)
	require.Contains(t, out, `<disallow_pattern>a&amp;&amp;b</disallow_pattern>`)
	require.Contains(t, out, `<criterion id="A&#34;C" status="p&#34;&amp;">&lt;/criterion&gt;&lt;evil/&gt;</criterion>`)
	require.NotContains(t, out, "<evil/>")

	// Well-formed, and the values round-trip.
	var doc struct {
		ID      string `xml:"intent_id,attr"`
		Summary string `xml:"summary"`
		Crit    []struct {
			ID   string `xml:"id,attr"`
			Text string `xml:",chardata"`
		} `xml:"acceptance_criteria>criterion"`
	}
	require.NoError(t, xml.NewDecoder(strings.NewReader(out)).Decode(&doc))
	require.Equal(t, in.ID, doc.ID)
	require.Equal(t, in.Summary, doc.Summary)
	require.Equal(t, "</criterion><evil/>", doc.Crit[0].Text)
	require.Equal(t, `A"C`, doc.Crit[0].ID)
}
