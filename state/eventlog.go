package state

import "context"

// EventRecord is one record of an event log: its id, assigned by the log,
// and its bytes, opaque to the store (package events encodes them).
type EventRecord struct {
	ID   string
	Data []byte
}

// EventLog keeps bounded, append-only logs of opaque records: one per
// session and one for all sessions. Both Memory and Redis implement it,
// so a replica that did not serve a request still reads its events.
//
// Contract, for every implementation:
//   - AppendEvents appends recs, in order, to the session's log and to the
//     global log, and keeps only the newest perSession and global records
//     of each (older ones are dropped). It returns nothing but an error.
//     recs stay the caller's: an implementation copies what it keeps.
//   - Ids are strings "<ms>-<seq>" (unix milliseconds of the append, a
//     sequence within that millisecond), strictly increasing within a log;
//     the same record has different ids in the session and global logs.
//     CompareEventIDs orders them.
//   - SessionEvents and AllEvents return the records whose id is after
//     after ("" for the oldest kept), oldest first, at most limit (<= 0:
//     100). An after older than everything kept returns from the oldest
//     kept; the caller cannot tell what was dropped. An after that is not
//     "" or of that form is ErrInvalidEventID (a Last-Event-ID is input).
//   - A session's log expires with the session (the store's TTL since its
//     last append) and is deleted with it (Store.Delete); the global log
//     keeps its copies until newer records push them out.
//   - The key must be Valid (ErrInvalidKey otherwise).
type EventLog interface {
	AppendEvents(ctx context.Context, key Key, recs [][]byte) error
	SessionEvents(ctx context.Context, key Key, after string, limit int) ([]EventRecord, error)
	AllEvents(ctx context.Context, after string, limit int) ([]EventRecord, error)
}
