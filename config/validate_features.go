package config

func (f *Features) validate(p *problems) {
	switch f.SideRequests {
	case SideRequestsPass, SideRequestsInject:
	default:
		p.add("features.side_requests", "%q is not one of pass, inject", f.SideRequests)
	}
}
