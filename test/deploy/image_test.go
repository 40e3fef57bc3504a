package deploy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// finalStage returns the instructions of the Dockerfile's last stage (the
// image), keyed by instruction, continuation lines joined.
func finalStage(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	text := strings.ReplaceAll(string(b), "\\\n", " ")
	var stage map[string][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		instr = strings.ToUpper(instr)
		if instr == "FROM" {
			stage = map[string][]string{}
		}
		stage[instr] = append(stage[instr], strings.TrimSpace(rest))
	}
	return stage
}

// TestImageRunsAsNonRootWithHealthcheck: the image's user is a numeric
// non-zero uid and gid (scratch has no /etc/passwd), and its HEALTHCHECK
// runs the binary's healthcheck subcommand with the config the entrypoint
// uses.
func TestImageRunsAsNonRootWithHealthcheck(t *testing.T) {
	st := finalStage(t)
	require.Len(t, st["USER"], 1)
	uid, gid, _ := strings.Cut(st["USER"][0], ":")
	for _, id := range []string{uid, gid} {
		n, err := strconv.Atoi(id)
		require.NoError(t, err, "USER %q is numeric", st["USER"][0])
		require.NotZero(t, n, "USER %q is not root", st["USER"][0])
	}
	require.Len(t, st["HEALTHCHECK"], 1)
	require.Contains(t, st["HEALTHCHECK"][0], `CMD ["/shepherd", "healthcheck", "-config", "/etc/shepherd/config.yaml"]`)
	require.Equal(t, []string{`["/shepherd", "-config", "/etc/shepherd/config.yaml"]`}, st["ENTRYPOINT"])
}

// TestComposeWiring: Prometheus scrapes the admin address shepherd listens
// on in compose.yaml, which needs a token there; Grafana mounts the
// provisioning and dashboards folders that exist.
func TestComposeWiring(t *testing.T) {
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
			Volumes     []string          `yaml:"volumes"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	b, err := os.ReadFile(filepath.Join(deployDir, "compose.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &compose))
	sh, ok := compose.Services["shepherd"]
	require.True(t, ok)
	_, adminPort, ok := strings.Cut(sh.Environment["SHEPHERD_ADMIN_LISTEN"], ":")
	require.True(t, ok)
	require.NotEmpty(t, sh.Environment["SHEPHERD_ADMIN_TOKEN"], "a non-loopback admin address needs a token")
	require.Equal(t, "redis", sh.Environment["SHEPHERD_STATE_BACKEND"])
	require.Equal(t, "/shepherd", sh.Healthcheck.Test[1])

	var prom struct {
		ScrapeConfigs []struct {
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	b, err = os.ReadFile(filepath.Join(deployDir, "prometheus", "prometheus.yml"))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &prom))
	require.Len(t, prom.ScrapeConfigs, 1)
	require.Equal(t, "/metrics", prom.ScrapeConfigs[0].MetricsPath)
	require.Equal(t, []string{"shepherd:" + adminPort}, prom.ScrapeConfigs[0].StaticConfigs[0].Targets)

	gr, ok := compose.Services["grafana"]
	require.True(t, ok)
	for _, v := range gr.Volumes {
		src, _, _ := strings.Cut(v, ":")
		if strings.HasPrefix(src, "./") {
			_, err := os.Stat(filepath.Join(deployDir, src))
			require.NoError(t, err, "grafana mounts %s", src)
		}
	}
}
