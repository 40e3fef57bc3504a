// Package arch holds tests of the project's shape: which package may import
// which (see docs/architecture.md, "Packages and arrows").
package arch

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/shepherd-proxy/shepherd"

// deps returns, for every package of the module, the module packages it
// depends on, directly or not (go list -deps, test files excluded).
func deps(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		m[pkg] = nil
		for _, d := range f[1:] {
			if d == module || strings.HasPrefix(d, module+"/") {
				m[pkg] = append(m[pkg], strings.TrimPrefix(d, module))
			}
		}
	}
	return m
}

func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// leafPackages import nothing of the project: the neutral conversation
// model, the JSON toolkit every layer builds on, and the event contract
// every layer emits to.
var leafPackages = []string{"/rewrite/conv", "/rewrite/jsonkit", "/events"}

func TestDependencyRules(t *testing.T) {
	all := deps(t)
	if len(all) < 10 {
		t.Fatalf("go list found only %d packages", len(all))
	}
	leaf := map[string]bool{}
	for _, p := range leafPackages {
		leaf[p] = true
	}
	for pkg, ds := range all {
		for _, d := range ds {
			switch {
			case leaf[pkg]:
				t.Errorf("%s is a leaf package but depends on %s", pkg, d)
			case under(pkg, "/rewrite") && under(d, "/hooks"):
				t.Errorf("%s (codecs) depends on %s (features): the arrow points from hooks to rewrite, never back", pkg, d)
			case under(pkg, "/hooks") && under(d, "/rewrite") && !leaf[d]:
				t.Errorf("%s (features) depends on codec package %s: hooks see only the neutral model (rewrite/conv)", pkg, d)
			case under(pkg, "/state") && !under(d, "/state") && d != "/rewrite/jsonkit":
				// The JSON toolkit (a leaf) reads and writes the record;
				// it says nothing of what the record holds.
				t.Errorf("%s (the store) depends on %s: the store knows nothing of what it stores", pkg, d)
			}
		}
	}
}

// apiPackages returns the wire API packages: the packages directly under
// rewrite/ that build on package rewrite, except the table rewrite/apis.
func apiPackages(all map[string][]string) map[string]bool {
	apis := map[string]bool{}
	for pkg, ds := range all {
		rest, ok := strings.CutPrefix(pkg, "/rewrite/")
		if !ok || strings.Contains(rest, "/") || pkg == "/rewrite/apis" {
			continue
		}
		for _, d := range ds {
			if d == "/rewrite" {
				apis[pkg] = true
			}
		}
	}
	return apis
}

// An API package under rewrite/ imports no other API package: what two APIs
// share lives in package rewrite, so each API can be read, changed and
// added on its own.
func TestAPIPackagesAreIndependent(t *testing.T) {
	all := deps(t)
	apis := apiPackages(all)
	if len(apis) < 4 {
		t.Fatalf("found %d wire API packages under rewrite/, want at least 4: %v", len(apis), apis)
	}
	for pkg := range apis {
		for _, d := range all[pkg] {
			if apis[d] {
				t.Errorf("API package %s depends on API package %s: share code through package rewrite instead", pkg, d)
			}
		}
	}
}
