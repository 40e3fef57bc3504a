package deploy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/shepherd-proxy/shepherd/config"
)

// obj is one Kubernetes object, decoded generically.
type obj map[string]any

// at walks keys (strings for maps, ints for lists) and returns what is
// there, nil when the path does not exist.
func (o obj) at(path ...any) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

func (o obj) str(path ...any) string { s, _ := o.at(path...).(string); return s }

func (o obj) kind() string { return o.str("kind") }

func (o obj) name() string { return o.str("metadata", "name") }

// decodeObjects reads a multi-document YAML stream.
func decodeObjects(t *testing.T, b []byte) []obj {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []obj
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if o != nil {
			out = append(out, obj(o))
		}
	}
}

func find(t *testing.T, objs []obj, kind string) []obj {
	t.Helper()
	var out []obj
	for _, o := range objs {
		if o.kind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// loadShepherdConfig loads a ConfigMap's config.yaml the way shepherd
// would, with env (os.Environ form) as the container's environment.
func loadShepherdConfig(t *testing.T, cm obj, env []string) *config.Config {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(f, []byte(cm.str("data", "config.yaml")), 0o644))
	cfg, err := config.Load(config.LoadOptions{File: f, Env: env})
	require.NoError(t, err, "the ConfigMap's config.yaml is one shepherd starts with")
	return cfg
}

// imageEnv is the environment the image sets (the Dockerfile's ENV), in
// os.Environ form: a container's env comes after it and wins.
func imageEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, line := range finalStage(t)["ENV"] {
		env = append(env, strings.Fields(line)...)
	}
	require.NotEmpty(t, env)
	return env
}

// containerEnv is the environment a container runs with: the image's,
// then the container's env with secret references filled from secrets
// (by variable name).
func containerEnv(t *testing.T, c obj, secrets map[string]string) []string {
	t.Helper()
	env := imageEnv(t)
	vars, _ := c.at("env").([]any)
	for i := range vars {
		name, v := c.str("env", i, "name"), c.str("env", i, "value")
		if c.at("env", i, "valueFrom") != nil {
			s, ok := secrets[name]
			require.True(t, ok, "a value for secret variable %s", name)
			v = s
		}
		env = append(env, name+"="+v)
	}
	return env
}

// checkSecretRefs: every secretKeyRef of the container names a Secret of
// objs holding that key, or one of external (Secrets the user brings).
func checkSecretRefs(t *testing.T, objs []obj, container obj, external ...string) {
	t.Helper()
	env, _ := container.at("env").([]any)
	for i := range env {
		ref, ok := container.at("env", i, "valueFrom", "secretKeyRef").(map[string]any)
		if !ok {
			continue
		}
		name, key := ref["name"].(string), ref["key"].(string)
		if contains(external, name) {
			continue
		}
		found := false
		for _, s := range find(t, objs, "Secret") {
			if s.name() == name && (s.at("data", key) != nil || s.at("stringData", key) != nil) {
				found = true
			}
		}
		require.True(t, found, "env %s: Secret %s has no key %s", container.str("env", i, "name"), name, key)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestSidecarManifest: deploy/k8s/sidecar.yaml's ConfigMap is a config
// shepherd starts with (listeners on the loopback, Redis from the
// Secret), the agent talks to the port shepherd listens on, and the
// sidecar runs as non-root on a read-only root with exec probes of
// `shepherd healthcheck`.
func TestSidecarManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "k8s", "sidecar.yaml"))
	require.NoError(t, err)
	objs := decodeObjects(t, b)
	cms := find(t, objs, "ConfigMap")
	require.Len(t, cms, 1)
	pods := find(t, objs, "Pod")
	require.Len(t, pods, 1)
	pod := pods[0]
	side := obj(pod.at("spec", "initContainers", 0).(map[string]any))
	cfg := loadShepherdConfig(t, cms[0], containerEnv(t, side, map[string]string{"SHEPHERD_STATE_REDIS_URL": "redis://redis:6379/0"}))
	require.Equal(t, config.BackendRedis, cfg.State.Backend)
	require.True(t, strings.HasPrefix(cfg.Listen, "127.0.0.1:"), "the proxy stays on the pod's loopback: %s", cfg.Listen)
	require.True(t, strings.HasPrefix(cfg.Admin.Listen, "127.0.0.1:"), "admin stays on the pod's loopback: %s", cfg.Admin.Listen)

	require.Equal(t, "Always", side.str("restartPolicy"), "a native sidecar")
	require.Equal(t, cms[0].name(), pod.str("spec", "volumes", 0, "configMap", "name"))
	checkSecretRefs(t, objs, side)
	require.Equal(t, true, side.at("securityContext", "readOnlyRootFilesystem"))
	require.Equal(t, true, pod.at("spec", "securityContext", "runAsNonRoot"))
	for _, probe := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
		cmd, _ := side.at(probe, "exec", "command").([]any)
		require.GreaterOrEqual(t, len(cmd), 2, probe)
		require.Equal(t, []any{"/shepherd", "healthcheck"}, cmd[:2], probe)
	}

	agent := obj(pod.at("spec", "containers", 0).(map[string]any))
	env, _ := agent.at("env").([]any)
	var base string
	for i := range env {
		if agent.str("env", i, "name") == "ANTHROPIC_BASE_URL" {
			base = agent.str("env", i, "value")
		}
	}
	require.Equal(t, "http://"+cfg.Listen, base)
}

// helmBinary is helm from SHEPHERD_HELM (scripts/test.sh sets it after
// scripts/deploy-lint.sh built it) or the PATH; the test skips without one.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("SHEPHERD_HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("helm is not installed: run scripts/deploy-lint.sh (it builds helm with go install) and set SHEPHERD_HELM")
	}
	return h
}

func helmTemplate(t *testing.T, helm string, sets ...string) ([]byte, error) {
	t.Helper()
	args := []string{"template", "shepherd", filepath.Join(deployDir, "helm", "shepherd")}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New(stderr.String())
	}
	return out, nil
}

// TestHelmChart renders the chart with helm and checks what a cluster
// would run: the ConfigMap is a config shepherd starts with under the
// Deployment's environment, the ports and probes agree with it, secrets
// resolve, the pod is non-root on a read-only root, the optional objects
// select the pods; and replicas without Redis are refused.
func TestHelmChart(t *testing.T) {
	helm := helmBinary(t)
	for _, tc := range []struct {
		name     string
		sets     []string
		external []string // Secrets the values name but the chart does not make
		redis    bool
		replicas int
		optional bool
	}{
		{name: "defaults", replicas: 1},
		{name: "replicas on Redis, every option", sets: []string{"replicaCount=3", "redis.url=redis://redis:6379/0", "serviceMonitor.enabled=true", "podDisruptionBudget.enabled=true"}, redis: true, replicas: 3, optional: true},
		{name: "existing secrets, cluster seeds", sets: []string{"replicaCount=2", "redis.existingSecret=my-redis", "admin.existingSecret=my-admin", "redis.addrs={r1:6379,r2:6379}"}, external: []string{"my-redis", "my-admin"}, redis: true, replicas: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplate(t, helm, tc.sets...)
			require.NoError(t, err)
			objs := decodeObjects(t, out)
			deps := find(t, objs, "Deployment")
			require.Len(t, deps, 1)
			dep := deps[0]
			require.Equal(t, tc.replicas, dep.at("spec", "replicas"))
			c := obj(dep.at("spec", "template", "spec", "containers", 0).(map[string]any))
			checkSecretRefs(t, objs, c, tc.external...)

			env := containerEnv(t, c, map[string]string{"SHEPHERD_ADMIN_TOKEN": "t0ken", "SHEPHERD_STATE_REDIS_URL": "redis://redis:6379/0"})
			cms := find(t, objs, "ConfigMap")
			require.Len(t, cms, 1)
			cfg := loadShepherdConfig(t, cms[0], env)
			require.Equal(t, tc.redis, cfg.State.Backend == config.BackendRedis)
			require.Equal(t, cms[0].name(), dep.str("spec", "template", "spec", "volumes", 0, "configMap", "name"))

			ports := map[string]string{}
			for i := range c.at("ports").([]any) {
				ports[c.str("ports", i, "name")] = strconv.Itoa(c.at("ports", i, "containerPort").(int))
			}
			// The kubelet's probes and Prometheus come from outside the pod.
			require.Equal(t, "0.0.0.0:"+ports["http"], cfg.Listen)
			require.Equal(t, "0.0.0.0:"+ports["admin"], cfg.Admin.Listen)
			require.Equal(t, "/healthz", c.str("livenessProbe", "httpGet", "path"))
			require.Equal(t, "/readyz", c.str("readinessProbe", "httpGet", "path"))
			require.Equal(t, "admin", c.str("livenessProbe", "httpGet", "port"))
			require.Equal(t, "admin", c.str("readinessProbe", "httpGet", "port"))

			require.Equal(t, true, dep.at("spec", "template", "spec", "securityContext", "runAsNonRoot"))
			require.NotEqual(t, 0, dep.at("spec", "template", "spec", "securityContext", "runAsUser"))
			require.Equal(t, true, c.at("securityContext", "readOnlyRootFilesystem"))
			require.Equal(t, false, c.at("securityContext", "allowPrivilegeEscalation"))
			require.NotNil(t, c.at("resources", "requests"))

			podLabels, _ := dep.at("spec", "template", "metadata", "labels").(map[string]any)
			selects := func(sel any) {
				m, _ := sel.(map[string]any)
				require.NotEmpty(t, m)
				for k, v := range m {
					require.Equal(t, v, podLabels[k], "selector %s", k)
				}
			}
			svcs := find(t, objs, "Service")
			require.Len(t, svcs, 1)
			selects(svcs[0].at("spec", "selector"))
			sms, pdbs := find(t, objs, "ServiceMonitor"), find(t, objs, "PodDisruptionBudget")
			if !tc.optional {
				require.Empty(t, sms)
				require.Empty(t, pdbs)
				return
			}
			require.Len(t, sms, 1)
			require.Len(t, pdbs, 1)
			selects(sms[0].at("spec", "selector", "matchLabels"))
			selects(pdbs[0].at("spec", "selector", "matchLabels"))
			require.Equal(t, "admin", sms[0].str("spec", "endpoints", 0, "port"))
			require.Equal(t, "/metrics", sms[0].str("spec", "endpoints", 0, "path"))
		})
	}
	t.Run("replicas without Redis are refused", func(t *testing.T) {
		_, err := helmTemplate(t, helm, "replicaCount=3")
		require.ErrorContains(t, err, "needs the sessions in Redis")
	})
}
