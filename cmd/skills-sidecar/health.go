package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skills-sidecar/skills-sidecar/internal/bridge"
)

// readiness answers /readyz: ready when the catalog is loaded, the upstream
// accepts TCP connections, and the process is not draining. An unreachable
// upstream is 503 whatever the auth gate (the pod cannot serve the server's
// own traffic, so Kubernetes should send it elsewhere), and the body says
// which of the two behaviours callers still connected get: with
// --auth-gate none the catalog goes on answering; with --auth-gate upstream
// the sidecar's own methods fail closed too.
type readiness struct {
	draining atomic.Bool
	upstream string // host:port dialled to check reachability
	timeout  time.Duration
	gate     string // the --auth-gate setting, "none" or "upstream"
	// eras, when set, reports the upstream's protocol eras, shown in the
	// body as detail; what they are never makes the pod unready.
	eras func() bridge.Eras
	// probed, when set (era-bridge auto), reports whether the first era
	// probe has returned: until it has, a request the bridge should carry
	// would pass through untranslated, so the pod is not ready yet.
	probed func() bool
	// stdio, when set (a stdio upstream), replaces the TCP check: ready
	// once one of its processes has answered its handshake.
	stdio func() bool
}

// Why an unreachable upstream matters, by --auth-gate setting.
const (
	unreachableGateNone = "auth-gate none: the catalog is still served (skills/list, skills/get, agents/list, " +
		"agents/get of agents without tools, resources/directory/read, the plugin's files, with the plugin folder's " +
		"digests where the upstream's are not known); forwarded methods and agents/get of agents with tools get 502 upstream_unreachable"
	unreachableGateUpstream = "auth-gate upstream: no caller can be admitted, so the sidecar's own methods fail closed " +
		"(502 upstream_unreachable) like forwarded ones"
)

func newReadiness(up *url.URL, gate string) *readiness {
	host := up.Host
	if up.Port() == "" {
		port := "80"
		if up.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(up.Hostname(), port)
	}
	return &readiness{upstream: host, timeout: time.Second, gate: gate}
}

// check returns "" when ready, or why not.
func (r *readiness) check(ctx context.Context) string {
	if r.draining.Load() {
		return "draining"
	}
	if r.stdio != nil {
		if !r.stdio() {
			return "stdio upstream: no process has answered its handshake yet"
		}
		if r.probed != nil && !r.probed() {
			return "upstream eras not yet probed (era-bridge auto)"
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", r.upstream)
	if err != nil {
		why := unreachableGateUpstream
		if r.gate == "none" {
			why = unreachableGateNone
		}
		return "upstream unreachable: " + err.Error() + "\n" + why
	}
	_ = c.Close()
	if r.probed != nil && !r.probed() {
		return "upstream eras not yet probed (era-bridge auto)"
	}
	return ""
}

// opsMux serves the operations listener: /metrics, /healthz, /readyz. It is
// kept apart from MCP traffic so a NetworkPolicy can allow scraping alone.
func opsMux(reg *prometheus.Registry, ready *readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if why := ready.check(r.Context()); why != "" {
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
		if ready.eras != nil {
			_, _ = io.WriteString(w, "upstream eras: "+ready.eras().String()+"\n")
		}
	})
	return mux
}
