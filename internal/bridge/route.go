package bridge

import "net/http"

// Route is the sidecar's transport when the era bridge is on: a request
// goes to Bridged (the LegacyFront in front of the Transport) only while
// the upstream's eras are known and one-sided, the only time either
// direction translates anything; every other request (a dual-era
// upstream, eras not yet learned) goes to Direct, with nothing of the
// bridge on its path but this one look at the eras (an atomic load).
type Route struct {
	// Eras reports the upstream's eras (Detector.Current). Required.
	Eras func() Eras
	// Direct carries what needs no translation; Bridged the rest. Both
	// required.
	Direct, Bridged http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (r *Route) RoundTrip(req *http.Request) (*http.Response, error) {
	if e := r.Eras(); e.Known && e.Legacy != e.Modern {
		return r.Bridged.RoundTrip(req)
	}
	return r.Direct.RoundTrip(req)
}
