package proxy

import (
	"github.com/shepherd-proxy/shepherd/config"
	"github.com/shepherd-proxy/shepherd/rewrite"
	"github.com/shepherd-proxy/shepherd/rewrite/conv"
)

// sideRequest returns the kind of side request body is (rewrite.SideRequest)
// when features.side_requests is pass, "" otherwise. The handler sets it as
// hooks.Call.Side: topics and intents then inject no tool, rule or
// reminder, and the turn engine does not count the request in the session
// (it saves only effects a hook still made, such as the audit of a call
// the model made anyway).
func (s *Server) sideRequest(c rewrite.Codec, body []byte, v *conv.Request) string {
	if s.cfg.Features.SideRequests != config.SideRequestsPass {
		return ""
	}
	if v != nil && v.SideKnown {
		return v.Side // classified while parsing
	}
	return rewrite.SideRequest(c, body)
}
