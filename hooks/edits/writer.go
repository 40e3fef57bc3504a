package edits

import (
	"sync"
	"time"
)

// writer runs jobs on one background goroutine, in the order they were
// queued. Its queue is bounded: add never blocks, and a job that finds the
// queue full is dropped (add reports it).
type writer struct {
	run  func(*job)
	jobs chan *job
	done chan struct{}

	mu     sync.RWMutex
	closed bool
}

func newWriter(n int, run func(*job)) *writer {
	w := &writer{run: run, jobs: make(chan *job, n), done: make(chan struct{})}
	go w.loop()
	return w
}

func (w *writer) loop() {
	defer close(w.done)
	for j := range w.jobs {
		if j.barrier != nil {
			close(j.barrier)
			continue
		}
		w.run(j)
	}
}

// add queues j; false when the queue is full or the writer closed.
func (w *writer) add(j *job) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return false
	}
	select {
	case w.jobs <- j:
		return true
	default:
		return false
	}
}

// flush waits until the jobs queued before it ran.
func (w *writer) flush() {
	b := &job{barrier: make(chan struct{})}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		<-w.done
		return
	}
	w.jobs <- b
	w.mu.RUnlock()
	<-b.barrier
}

// close stops taking jobs and waits up to d for the queued ones to run.
func (w *writer) close(d time.Duration) {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.jobs)
	}
	w.mu.Unlock()
	select {
	case <-w.done:
	case <-time.After(d):
	}
}
