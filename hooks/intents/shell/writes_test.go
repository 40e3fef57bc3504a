package shell

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestAnalyzeShellTargets(t *testing.T) {
	cases := []struct {
		cmd     string
		targets []string
	}{
		// Not writing.
		{"ls -la", nil},
		{"cat src/a.go | grep foo", nil},
		{"go test ./... 2>&1 | tail -5", nil},
		{"make >/dev/null 2>&1", nil},
		{"echo hi 1>&2", nil},
		{"grep x < in.txt", nil},
		{"sed 's/a/b/' src/a.go", nil},
		{"cat <<EOF\nhello\nEOF", nil},
		// Redirections.
		{"echo hi > out.txt", []string{"out.txt"}},
		{"echo hi >> logs/a.log", []string{"logs/a.log"}},
		{"make &> build.log", []string{"build.log"}},
		{"make &>> build.log", []string{"build.log"}},
		{"echo x >| f", []string{"f"}},
		{"echo x >&out.txt", []string{"out.txt"}},
		{"cat > docs/new.md <<'EOF'\n# Title\nEOF", []string{"docs/new.md"}},
		{`echo x > "my file.txt"`, []string{"my file.txt"}},
		{`echo x > my\ file.txt`, []string{"my file.txt"}},
		{"echo x > /tmp/abs", []string{"/tmp/abs"}},
		// Commands.
		{"tee -a a.txt b.txt", []string{"a.txt", "b.txt"}},
		{"echo x | tee out", []string{"out"}},
		{"sed -i 's/a/b/' src/a.go src/b.go", []string{"src/a.go", "src/b.go"}},
		{"sed -i.bak -e 's/a/b/' f", []string{"f"}},
		{"sed -Ei 's/a/b/' f", []string{"f"}},
		{"sed --in-place=.orig -n p f", []string{"f"}},
		{"cp a b dir/", []string{"dir"}},
		{"cp -r -t dest a b", []string{"dest"}},
		{"mv old.txt new.txt", []string{"old.txt", "new.txt"}},
		{"rm -rf build dist", []string{"build", "dist"}},
		{"rm -- -weird", []string{"-weird"}},
		{"touch -d yesterday a", []string{"a"}},
		{"mkdir -p -m 755 a/b", []string{"a/b"}},
		{"rmdir d", []string{"d"}},
		{"ln -s ../x link", []string{"link"}},
		{"ln -s /opt/tool", []string{"tool"}},
		{"truncate -s 0 f", []string{"f"}},
		{"dd if=/dev/zero of=disk.img bs=1M count=1", []string{"disk.img"}},
		{"install -m 644 a b", []string{"b"}},
		{"install -d x y", []string{"x", "y"}},
		// Lists, pipelines, subshells, control flow.
		{"make && rm a; touch b || mkdir c", []string{"a", "b", "c"}},
		{"(cd sub && rm x); rm y", []string{"sub/x", "y"}},
		{"cd src && echo > a.go", []string{"src/a.go"}},
		{"cd src; cd ../docs; touch r.md", []string{"docs/r.md"}},
		{"cd /abs/dir && touch f", []string{"/abs/dir/f"}},
		{"if true; then rm a; else rm b; fi", []string{"a", "b"}},
		{"for f in a b; do echo; done > out", []string{"out"}},
		{"while read l; do echo $l >> log; done < in", []string{"log"}},
		{"f() { rm -f tmp; }; f", []string{"tmp"}},
		{"echo $(rm -f inner) > outer", []string{"outer", "inner"}},
		{"diff <(sort a) <(sort b > sorted)", []string{"sorted"}},
		{"{ echo a; echo b; } > both", []string{"both"}},
		// Shells and wrappers.
		{"bash -c 'echo hi > inner.txt'", []string{"inner.txt"}},
		{"bash -lc \"cd src && rm x\"", []string{"src/x"}},
		{"sh -c 'sh -c \"touch deep\"'", []string{"deep"}},
		{"sudo -u root rm /etc/x", []string{"/etc/x"}},
		{"env A=1 B=2 touch f", []string{"f"}},
		{"timeout 10 rm f", []string{"f"}},
		{"nohup touch f &", []string{"f"}},
		{"/bin/rm f", []string{"f"}},
		{"command rm f", []string{"f"}},
		// Devices are not files.
		{"echo x | tee /dev/null", nil},
		{"cmd 2>/dev/stderr", nil},
		// Globs stay patterns.
		{"rm src/*.go", []string{"src/*.go"}},
		// In-place interpreters, patch, git.
		{"perl -pi -e 's/a/b/' src/a.pl src/b.pl", []string{"src/a.pl", "src/b.pl"}},
		{"perl -i.bak -pe 's/a/b/' f", []string{"f"}},
		{"perl -ne 'print' f", nil},
		{"ruby -i -pe 'gsub(/a/, \"b\")' f.rb", []string{"f.rb"}},
		{"patch src/a.go < fix.diff", []string{"src/a.go"}},
		{"patch --dry-run -p1 < fix.diff", nil},
		{"patch -p1 -o out.go in.go < d", []string{"out.go", "in.go"}},
		{"git status && git diff && git add -A && git commit -m x", nil},
		{"git mv a b", []string{"a", "b"}},
		{"git -C sub rm -r old", []string{"sub/old"}},
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			got := Analyze(c.cmd)
			require.Empty(t, got.Unparsed)
			require.Equal(t, c.targets, got.Targets)
		})
	}
}

func TestAnalyzeShellUnparsed(t *testing.T) {
	cases := []struct {
		cmd     string
		targets []string
		reason  string
	}{
		{"echo x > $OUT", nil, "$OUT"},
		{`rm "$DIR/x"`, nil, "$DIR"},
		{"touch $(date +%s).log", nil, "not a literal path"},
		{"echo > ~/x", nil, "~/x"},
		{"rm {a,../b}", nil, "not a literal path"},
		{"eval 'rm x'", nil, "eval"},
		{"ls | xargs rm", nil, "xargs"},
		{"find . -name '*.o' -delete", nil, "-delete"},
		{"$EDITOR f", nil, "command name"},
		{"bash -c \"$SCRIPT\"", nil, "not literal"},
		{"cd $X && touch f", nil, "cannot resolve"},
		{"touch a && cd && touch b", []string{"a"}, "cannot resolve"},
		{"echo 'unterminated", nil, "cannot be parsed"},
		{"source env.sh", nil, "source"},
		{"dd of=$F", nil, "dd output"},
		{"rm a; echo > $X; rm b", []string{"a", "b"}, "$X"},
		{"patch -p1 < fix.diff", nil, "patch"},
		{"git apply fix.diff", nil, "git apply"},
		{"git checkout -- src/a.go", nil, "git checkout"},
		{"git -C sub reset --hard", nil, "git reset"},
		{"git stash pop", nil, "git stash"},
	}
	for _, c := range cases {
		t.Run(c.cmd, func(t *testing.T) {
			got := Analyze(c.cmd)
			require.Contains(t, got.Unparsed, c.reason)
			require.Equal(t, c.targets, got.Targets)
		})
	}
}

func TestAnalyzeArgv(t *testing.T) {
	got := AnalyzeArgv([]string{"bash", "-lc", "cd docs && echo '# x' > a.md"})
	require.Empty(t, got.Unparsed)
	require.Equal(t, []string{"docs/a.md"}, got.Targets)

	got = AnalyzeArgv([]string{"rm", "-f", "a b", "$notavar"})
	require.Empty(t, got.Unparsed)
	require.Equal(t, []string{"a b", "$notavar"}, got.Targets)

	require.Equal(t, Writes{}, AnalyzeArgv(nil))
}

// FuzzAnalyzeShell checks that the analyser never panics or hangs, and that
// its targets are non-empty clean paths.
func FuzzAnalyzeShell(f *testing.F) {
	for _, s := range []string{
		"echo hi > out.txt", "cd src && rm -rf x; sed -i s/a/b/ f", "bash -c 'tee a <<EOF\nx\nEOF'",
		"(cd a; mv b c) | cat > d", "for i in 1 2; do touch $i; done", "f(){ dd of=x; }", "cp -t d a b",
		"echo $(rm a) <(touch b)", "sudo env X=1 timeout 3 ln -s a", "case $x in a) rm y;; esac",
		"[[ -f a ]] && (( i++ )) && let x=1", "declare -a a=($(rm z))", "coproc touch q",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				panic(fmt.Sprintf("Analyze(%q) takes over 10s", s))
			}
		}()
		got := Analyze(s)
		close(done)
		for _, p := range got.Targets {
			if p == "" {
				t.Fatalf("empty target from %q", s)
			}
		}
		if !utf8.ValidString(s) {
			return
		}
		if got.Unparsed != "" && strings.TrimSpace(got.Unparsed) == "" {
			t.Fatalf("blank reason from %q", s)
		}
	})
}

func TestAnalyzeRemoved(t *testing.T) {
	cases := []struct {
		cmd              string
		targets, removed []string
	}{
		{"echo hi > out.txt", []string{"out.txt"}, nil},
		{"rm -f a b && echo x > c", []string{"a", "b", "c"}, []string{"a", "b"}},
		{"cd src && unlink x; rmdir d", []string{"src/x", "src/d"}, []string{"src/x", "src/d"}},
		{"rm a; rm a", []string{"a"}, []string{"a"}},
		{"mv a b", []string{"a", "b"}, nil},
		{"rm $X", nil, nil},
	}
	for _, c := range cases {
		w := Analyze(c.cmd)
		require.Equal(t, c.targets, w.Targets, c.cmd)
		require.Equal(t, c.removed, w.Removed, c.cmd)
	}
}
