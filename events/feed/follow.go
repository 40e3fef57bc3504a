package feed

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/shepherd-proxy/shepherd/state"
)

// Defaults of Follower.
const (
	DefaultPoll        = 500 * time.Millisecond
	DefaultHeartbeat   = 15 * time.Second
	DefaultReadTimeout = 2 * time.Second
	// PageSize is how many records one read of the log returns at most.
	PageSize = 100
)

// Waker tells followers that the local log changed (*Publisher).
type Waker interface {
	Changed() <-chan struct{}
}

// Follower reads feeds from an event log. Its zero fields take the
// defaults; Log is required. It is safe for concurrent use.
type Follower struct {
	Log state.EventLog
	// Wake wakes a follower as soon as this replica appended (nil: polling
	// only).
	Wake Waker
	// Poll is how often the log is read anyway, so events another replica
	// appended appear (<= 0: DefaultPoll).
	Poll time.Duration
	// Heartbeat is the longest a follower stays silent: after it without
	// an event, Follow calls beat (<= 0: DefaultHeartbeat).
	Heartbeat time.Duration
	// ReadTimeout bounds each read of the log (<= 0: DefaultReadTimeout).
	ReadTimeout time.Duration
}

// Query selects a feed: one session's (Session set, with its Tenant) or
// every session's (Session ""), then of one tenant only when Tenant is
// set. After is the cursor: the id of the last event the reader has (""
// for every event kept).
type Query struct {
	Tenant  string
	Session string
	After   string
}

// Item is one event as a feed delivers it.
type Item struct {
	// ID is the event's id in the log read (the SSE id).
	ID string
	// Type is the event's type (the SSE event name), with no line breaks.
	Type string
	// JSON is the event, its id included: {"id":"<ID>","type":...}.
	JSON []byte
}

// Page reads the events of q after q.After, oldest first: at most
// PageSize records of the log (fewer items when a tenant filter skips
// some). next is the cursor after them (q.After when nothing was read);
// full reports that more records may follow at once.
func (f *Follower) Page(ctx context.Context, q Query) (items []Item, next string, full bool, err error) {
	timeout := f.ReadTimeout
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var recs []state.EventRecord
	if q.Session != "" {
		recs, err = f.Log.SessionEvents(ctx, state.Key{Tenant: q.Tenant, Session: q.Session}, q.After, PageSize)
	} else {
		recs, err = f.Log.AllEvents(ctx, q.After, PageSize)
	}
	if err != nil {
		return nil, q.After, false, err
	}
	next = q.After
	for _, r := range recs {
		next = r.ID
		if q.Session == "" && q.Tenant != "" && gjson.GetBytes(r.Data, "tenant").String() != q.Tenant {
			continue
		}
		items = append(items, itemOf(r))
	}
	return items, next, len(recs) >= PageSize, nil
}

// Follow delivers the events of q to send, oldest first: those kept after
// q.After, then each new one as it is appended (woken by Wake, or found by
// polling every Poll). After Heartbeat without an event it calls beat. It
// returns nil when ctx is done, or the first error of send or beat (the
// reader left). A failed read of the log is retried at the next poll.
func (f *Follower) Follow(ctx context.Context, q Query, send func(Item) error, beat func() error) error {
	poll, hbEvery := f.Poll, f.Heartbeat
	if poll <= 0 {
		poll = DefaultPoll
	}
	if hbEvery <= 0 {
		hbEvery = DefaultHeartbeat
	}
	pollT := time.NewTicker(poll)
	defer pollT.Stop()
	hb := time.NewTimer(hbEvery)
	defer hb.Stop()
	for {
		var changed <-chan struct{}
		if f.Wake != nil {
			changed = f.Wake.Changed() // before the read: no append is missed
		}
		items, next, full, err := f.Page(ctx, q)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			q.After = next
			for _, it := range items {
				if err := send(it); err != nil {
					return err
				}
			}
			if len(items) > 0 {
				hb.Reset(hbEvery)
			}
			if full {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-pollT.C:
		case <-hb.C:
			if err := beat(); err != nil {
				return err
			}
			hb.Reset(hbEvery)
		}
	}
}

// itemOf renders a record: its type, and its JSON with the id first.
func itemOf(r state.EventRecord) Item {
	typ := gjson.GetBytes(r.Data, "type").String()
	typ = strings.NewReplacer("\r", "", "\n", "").Replace(typ)
	id, _ := json.Marshal(r.ID)
	data := r.Data
	out := make([]byte, 0, len(data)+len(id)+8)
	out = append(out, `{"id":`...)
	out = append(out, id...)
	rest := strings.TrimSpace(string(data))
	if len(rest) > 1 && rest[0] == '{' {
		inner := strings.TrimSpace(rest[1:])
		if inner != "}" {
			out = append(out, ',')
		}
		out = append(out, inner...)
	} else {
		out = append(out, '}')
	}
	return Item{ID: r.ID, Type: typ, JSON: out}
}
