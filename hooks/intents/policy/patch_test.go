package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const applyPatch = `*** Begin Patch
*** Add File: src/new.go
+package src
+
+// --- not a header
*** Update File: src/old.go
*** Move to: src/renamed.go
@@ func main()
-	a()
+	b()
*** Update File: src/other.go
@@
 x
-y
+z
*** End of File
*** Delete File: src/gone.go
*** Update File: src/new.go
*** End Patch
`

const unifiedDiff = `diff --git a/src/a.go b/src/a.go
index 83db48f..bf269f4 100644
--- a/src/a.go	2024-01-01 00:00:00.000000000 +0000
+++ b/src/a.go	2024-01-01 00:00:01.000000000 +0000
@@ -1,3 +1,3 @@
 package a
--- removed sql comment
+added line
diff --git a/src/b.go b/src/b.go
new file mode 100644
--- /dev/null
+++ b/src/b.go
@@ -0,0 +1 @@
+package b
--- a/src/c.go
+++ /dev/null
@@ -1 +0,0 @@
-package c
`

func TestPatchPaths(t *testing.T) {
	cases := []struct {
		name, patch string
		want        []string
	}{
		{"apply_patch", applyPatch, []string{"src/new.go", "src/old.go", "src/renamed.go", "src/other.go", "src/gone.go"}},
		{"unified", unifiedDiff, []string{"src/a.go", "src/b.go", "src/c.go"}},
		{"crlf and indented headers", "*** Begin Patch\r\n  *** Update File: a.txt \r\n@@\r\n-x\r\n+y\r\n*** End Patch\r\n", []string{"a.txt"}},
		{"no prefix diff", "--- x.txt\n+++ x.txt\n@@ -1 +1 @@\n-a\n+b\n", []string{"x.txt"}},
		{"rename only", "diff --git a/old name.txt b/new name.txt\nsimilarity index 100%\nrename from old name.txt\nrename to new name.txt\n", []string{"old name.txt", "new name.txt"}},
		{"binary", "diff --git a/img.png b/img.png\nGIT binary patch\nliteral 0\n", []string{"img.png"}},
		{"ambiguous git header resolved", "diff --git a/x b/y b/x b/y\n", []string{"x b/y"}},
		{"absolute paths kept raw", "*** Begin Patch\n*** Add File: /etc/passwd\n+x\n*** End Patch\n", []string{"/etc/passwd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PatchPaths(c.patch)
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestPatchPathsErrors(t *testing.T) {
	cases := []struct{ name, patch, msg string }{
		{"empty", "", "no recognisable file header"},
		{"garbage", "hello world\nthis is not a patch\n", "no recognisable file header"},
		{"begin end only", "*** Begin Patch\n*** End Patch\n", "no recognisable file header"},
		{"lone minus", "--- a/x\n", "no recognisable file header"},
		{"empty path", "*** Begin Patch\n*** Add File:   \n+x\n*** End Patch\n", "empty path"},
		{"quoted", "--- \"a/x\\ty\"\n+++ \"b/x\\ty\"\n", "quoted path"},
		{"quoted git", "diff --git \"a/x\\ty\" \"b/x\\ty\"\n", "quoted path"},
		{"dev null only", "--- /dev/null\n+++ /dev/null\n", "names no file"},
		{"ambiguous git header", "diff --git a/x b/y b/z\n", "cannot parse"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PatchPaths(c.patch)
			require.Error(t, err)
			require.Contains(t, err.Error(), c.msg)
			require.Nil(t, got)
		})
	}
}

func TestPatchPathsLinear(t *testing.T) {
	// A large patch of many small lines and one huge line is handled quickly.
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: big.txt\n")
	for i := 0; i < 200000; i++ {
		b.WriteString("+--- x\n")
	}
	b.WriteString("+" + strings.Repeat("a b/", 200000) + "\n*** End Patch\n")
	got, err := PatchPaths(b.String())
	require.NoError(t, err)
	require.Equal(t, []string{"big.txt"}, got)
}
