package deploy

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// grafanaVars stand in for the Grafana variables the queries use, so
// Prometheus's own parser can read them.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$__interval", "1m")

// TestDashboardQueriesParse: every query of the dashboard is valid PromQL,
// as Prometheus's promtool reads it (each one as a recording rule; the
// Grafana variables replaced by durations). Skips when promtool is not
// installed (scripts/deploy-lint.sh installs Debian's prometheus package,
// which ships it).
func TestDashboardQueriesParse(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian package prometheus; scripts/deploy-lint.sh installs it)")
	}
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			n++
			fmt.Fprintf(&rules, "      - record: dashboard:query%d\n        expr: %q\n", n, grafanaVars.Replace(tg.Expr))
		}
	}
	require.Positive(t, n)
	f := filepath.Join(t.TempDir(), "rules.yaml")
	require.NoError(t, os.WriteFile(f, []byte(rules.String()), 0o644))
	var out bytes.Buffer
	cmd := exec.Command(promtool, "check", "rules", f)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Run(), "promtool: %s", out.String())
	require.Contains(t, out.String(), fmt.Sprintf("%d rules found", n))
}
