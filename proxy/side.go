package proxy

import (
	"shepherd/config"
	"shepherd/rewrite"
)

// sideRequest returns the kind of side request body is (rewrite.SideRequest)
// when features.side_requests is pass, "" otherwise. A side request (a
// title or summary call, a classifier, a JSON-mode call) passes upstream
// untouched: no tool, rule or reminder is added, no hook runs, and the
// session is neither loaded nor touched, so it counts no turn.
func (s *Server) sideRequest(c rewrite.Codec, body []byte) string {
	if s.cfg.Features.SideRequests != config.SideRequestsPass {
		return ""
	}
	return rewrite.SideRequest(c, body)
}
