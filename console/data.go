package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/shepherd-proxy/shepherd/events"
	"github.com/shepherd-proxy/shepherd/state"
)

// Bounds of what one fragment reads from the store.
const (
	listLimit      = 500  // sessions in the list
	eventPage      = 500  // events per EventLog read
	maxEvents      = 5000 // events read for one session page
	approvalsLimit = 200  // pending approvals shown
	storeTimeout   = 5 * time.Second
)

// errAmbiguous: a session id exists under several tenants and the request
// named none.
var errAmbiguous = errors.New("console: session id exists under several tenants")

// findSession loads a session; with tenant "" the id is looked up among the
// most recent sessions of every tenant and must be unambiguous, as in the
// sessions API.
func (h *Handler) findSession(ctx context.Context, id, tenant string) (*state.Session, error) {
	if tenant == "" {
		tenants, err := state.SessionTenants(ctx, h.store, id)
		switch {
		case err != nil:
			return nil, err
		case len(tenants) == 0:
			return nil, state.ErrNotFound
		case len(tenants) > 1:
			return nil, errAmbiguous
		}
		tenant = tenants[0]
	}
	return h.store.Get(ctx, state.Key{Tenant: tenant, Session: id})
}

// sessionEvents reads a session's kept events, oldest first (nil when the
// store keeps none).
func (h *Handler) sessionEvents(ctx context.Context, key state.Key) []events.Event {
	if h.events == nil {
		return nil
	}
	var out []events.Event
	after := ""
	for len(out) < maxEvents {
		recs, err := h.events.SessionEvents(ctx, key, after, eventPage)
		if err != nil {
			h.log.Warn("console: reading events", zap.Error(err))
			break
		}
		for _, r := range recs {
			var ev events.Event
			if json.Unmarshal(r.Data, &ev) != nil {
				continue
			}
			ev.ID = r.ID
			out = append(out, ev)
		}
		if len(recs) < eventPage {
			break
		}
		after = recs[len(recs)-1].ID
	}
	return out
}

// pendingApprovals lists pending approvals, of one session when id is set.
func (h *Handler) pendingApprovals(ctx context.Context, tenant, id string) ([]state.Approval, error) {
	if h.approvals == nil {
		return nil, nil
	}
	list, err := h.approvals.PendingApprovals(ctx, tenant, approvalsLimit)
	if err != nil || id == "" {
		return list, err
	}
	out := list[:0:0]
	for _, a := range list {
		if a.Session == id {
			out = append(out, a)
		}
	}
	return out, nil
}

// sessionURL is the console page of a session.
func sessionURL(id, tenant string) string {
	u := Prefix + "/sessions/" + url.PathEscape(id)
	if tenant != "" {
		u += "?" + url.Values{"tenant": {tenant}}.Encode()
	}
	return u
}

// withTenant adds ?tenant= to an API path when tenant is set.
func withTenant(p, tenant string, extra url.Values) string {
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	if tenant != "" {
		q.Set("tenant", tenant)
	}
	if len(q) == 0 {
		return p
	}
	return p + "?" + q.Encode()
}
