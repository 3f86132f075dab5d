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
)

// readiness answers /readyz: ready when the catalog is loaded, the upstream
// accepts TCP connections, and the process is not draining.
type readiness struct {
	draining atomic.Bool
	upstream string // host:port dialled to check reachability
	timeout  time.Duration
}

func newReadiness(up *url.URL) *readiness {
	host := up.Host
	if up.Port() == "" {
		port := "80"
		if up.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(up.Hostname(), port)
	}
	return &readiness{upstream: host, timeout: time.Second}
}

// check returns "" when ready, or why not.
func (r *readiness) check(ctx context.Context) string {
	if r.draining.Load() {
		return "draining"
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", r.upstream)
	if err != nil {
		return "upstream unreachable: " + err.Error()
	}
	_ = c.Close()
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
	})
	return mux
}
