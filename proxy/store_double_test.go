package proxy_test

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/shepherd-proxy/shepherd/state"
)

// failingStore is a state store that is down: every call fails. It stands in
// for an unreachable Redis so the proxy's degraded behaviour can be tested.
type failingStore struct{ updates atomic.Int32 }

var errStoreDown = errors.New("store down")

func (f *failingStore) Get(context.Context, state.Key) (*state.Session, error) {
	return nil, errStoreDown
}

func (f *failingStore) Update(context.Context, state.Key, func(*state.Session) error) (*state.Session, error) {
	f.updates.Add(1)
	return nil, errStoreDown
}
func (f *failingStore) Delete(context.Context, state.Key) error { return errStoreDown }
func (f *failingStore) List(context.Context, string, int) ([]state.Summary, error) {
	return nil, errStoreDown
}
func (f *failingStore) Ping(context.Context) error { return errStoreDown }
func (f *failingStore) Close() error               { return nil }
