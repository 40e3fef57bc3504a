package events

import (
	"sync"
	"testing"
)

func TestRecorder(t *testing.T) {
	var r Recorder
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			r.Emit(Event{Type: ChapterOpened})
			r.Emit(Event{Type: CallAllowed})
		})
	}
	wg.Wait()
	if n := len(r.All()); n != 16 {
		t.Fatalf("All: %d events, want 16", n)
	}
	if n := len(r.Of(ChapterOpened)); n != 8 {
		t.Fatalf("Of(chapter.opened): %d, want 8", n)
	}
	all := r.All()
	all[0].Type = "changed"
	if r.All()[0].Type == "changed" {
		t.Fatal("All returned the recorder's own slice")
	}
}
