package recognize

import (
	"strings"
	"testing"
)

// contentFragment is a piece of file content as JSON string text: code
// lines with escaped newlines, quotes and a tab.
var contentFragment = strings.Repeat(`	fmt.Println(\"hello, world\") // line\n`, 100)

// patchFragment is the same for a patch's lines.
var patchFragment = strings.Repeat(`+	fmt.Println(\"hello, world\") // line\n`, 100)

func benchFeed(b *testing.B, tool string, freeform bool, start, fragment string) {
	tab := builtinTable()
	w := tab.Watch(tool, freeform)
	if got := w.Feed(start); len(got) != 1 {
		b.Fatalf("start announced %v", got)
	}
	b.SetBytes(int64(len(fragment)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w.Feed(fragment) != nil {
			b.Fatal("a content fragment announced something")
		}
	}
}

// BenchmarkFeedWrite: a Write call's content streaming after its path.
func BenchmarkFeedWrite(b *testing.B) {
	benchFeed(b, "Write", false, `{"file_path":"/w/a.go","content":"`, contentFragment)
}

// BenchmarkFeedPatchJSON: an apply_patch JSON call's patch lines.
func BenchmarkFeedPatchJSON(b *testing.B) {
	benchFeed(b, "apply_patch", false, `{"input":"*** Begin Patch\n*** Add File: a.go\n`, patchFragment)
}

// BenchmarkFeedPatchFreeform: a free-form apply_patch call's lines.
func BenchmarkFeedPatchFreeform(b *testing.B) {
	raw := strings.ReplaceAll(strings.ReplaceAll(patchFragment, `\n`, "\n"), `\"`, `"`)
	benchFeed(b, "apply_patch", true, "*** Begin Patch\n*** Add File: a.go\n", raw)
}

// BenchmarkFeedEditorNew: Cline CLI's editor, its new text streaming.
func BenchmarkFeedEditorNew(b *testing.B) {
	benchFeed(b, "editor", false, `{"path":"/w/a.go","new_text":"`, contentFragment)
}

// BenchmarkFeedSmall: small fragments, as streams deliver them.
func BenchmarkFeedSmall(b *testing.B) {
	benchFeed(b, "Write", false, `{"file_path":"/w/a.go","content":"`, `x := \"a\"\n`)
}
