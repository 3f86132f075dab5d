// Package sidecar owns the assembly of the serving sidecar: from a
// config.Config, a logger and a Prometheus registry it builds the catalog
// (a watched plugin folder, or a plugin given as a file system), the auth
// gate, the upstream-files overlay, the calls made on a caller's behalf,
// the sidecar's own methods and the proxy in front of them, wired the one
// way production runs them. cmd/skills-sidecar and every integration test
// (through package sidecartest) build the sidecar here; what stays in cmd
// is flags, listeners, signals and shutdown.
package sidecar

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/bridge"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Options are what the sidecar is built from besides its Config.
type Options struct {
	// Logger receives the proxy's request lines and the catalog's
	// reloads; nil logs nothing.
	Logger *zap.Logger
	// Registry receives the sidecar's metrics; nil registers them nowhere.
	Registry prometheus.Registerer
	// Version is the build's version (metrics, serverInfo); "" means "dev".
	Version string
	// Listener is the address the MCP listener is bound to (the Host
	// check follows it, see proxy.Options.Listener); nil judges each
	// connection by its local address.
	Listener net.Addr
	// Plugin is the plugin served when the Config names no plugin folder
	// (the demo's embedded example); nil serves an empty catalog.
	Plugin fs.FS
	// Snapshot, when set, is the catalog served instead of the one the
	// Config names: for tests that drive a catalog.Watcher themselves.
	Snapshot func() *catalog.Snapshot
}

// Sidecar is the assembled sidecar. Its parts are exposed for the
// process around it: Watcher for SIGHUP, Proxy for shutdown.
type Sidecar struct {
	Proxy   *proxy.Proxy
	Methods *methods.Handler
	// Gate is nil with --auth-gate none.
	Gate *authgate.Gate
	// Overlay is nil unless --upstream-files auto.
	Overlay *methods.Overlay
	// Eras learns which protocol eras the upstream speaks (readiness
	// shows them).
	Eras *bridge.Detector
	// Watcher is nil unless a plugin folder is watched.
	Watcher *catalog.Watcher
	// Snapshot returns the catalog being served.
	Snapshot func() *catalog.Snapshot
	// Notify carries the catalog's changes to the proxy's streams.
	Notify  *notify.Hub
	Metrics *metrics.Metrics
}

// New builds the sidecar for cfg, whose Upstream must be set, and starts
// watching its plugin folder until ctx is done.
func New(ctx context.Context, cfg config.Config, o Options) (*Sidecar, error) {
	up, err := url.Parse(cfg.Upstream)
	if err != nil || up.Host == "" {
		return nil, errors.New("upstream: not a URL") // the error would quote it, secrets and all
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	// One hub for the sidecar's own change notifications: the catalog
	// publishes into it, the proxy's streams read from it.
	s := &Sidecar{Metrics: metrics.New(reg, o.Version)}
	s.Notify = notify.New(notify.Options{Count: s.Metrics.Notification})
	if err := s.startCatalog(ctx, cfg, o); err != nil {
		return nil, err
	}
	direct := proxy.NewTransport(cfg.DialTimeout, cfg.UpstreamTimeout, cfg.AuthHeaderList())
	// The upstream's eras, learned by probes on the direct transport; with
	// era-bridge auto every other request goes through the bridge, which
	// passes it through untouched unless the upstream lacks its era.
	s.Eras = &bridge.Detector{URL: up, Client: &http.Client{Transport: direct}, Logger: o.Logger,
		OnChange: func(e bridge.Eras) { s.Metrics.UpstreamEra(e.Label()) }}
	go s.Eras.Run(ctx)
	var transport http.RoundTripper = direct
	bridged := false
	if cfg.EraBridge == "auto" {
		// Both directions count into one gauge: the legacy sessions held
		// for modern callers and the sessions minted for legacy callers
		// (only one direction is ever active: it follows the upstream's eras).
		var held, minted atomic.Int64
		count := func(v *atomic.Int64) func(int) {
			return func(n int) { v.Store(int64(n)); s.Metrics.BridgeSessions(int(held.Load() + minted.Load())) }
		}
		bt := &bridge.Transport{Next: direct, Eras: s.Eras.Current, Credentials: cfg.AuthHeaderList(), OnSessions: count(&held)}
		bt.Start(ctx)
		// In front of it, the legacy front: legacy clients of a modern-only
		// upstream.
		front := &bridge.LegacyFront{Next: bt, Eras: s.Eras.Current, Upstream: up, Credentials: cfg.AuthHeaderList(), OnSessions: count(&minted)}
		front.Start(ctx)
		transport, bridged = front, true
	}
	serves := func(modern bool) bool { return s.Eras.Current().Serves(modern, bridged) }
	client := &http.Client{Transport: transport}
	forCaller := &onbehalf.Upstream{URL: up, Client: client, Credentials: cfg.AuthHeaderList()}
	if cfg.UpstreamFiles == "auto" {
		s.Overlay = methods.NewOverlay(forCaller, cfg.UpstreamFilesTTL, cfg.UpstreamFilesShared)
		s.Overlay.Metrics = s.Metrics
		s.Overlay.FrontmatterPortability = cfg.FrontmatterPortability
	}
	mo := methods.Options{
		Overlay:          s.Overlay,
		Subscriptions:    s.Notify,
		Snapshot:         s.Snapshot,
		PageSize:         cfg.PageSize,
		TTLMs:            cfg.CacheTTLMs,
		CacheScope:       cfg.CacheScope,
		Tools:            &methods.UpstreamTools{Upstream: forCaller, TTL: cfg.ToolsCacheTTL},
		DropUnknownTools: cfg.DropUnknownTools,
		ServerVersion:    o.Version,
		Serves:           serves,
	}
	if cfg.AuthGate == "upstream" {
		s.Gate = authgate.New(authgate.Options{Upstream: up, Client: client,
			CredentialHeaders: cfg.AuthHeaderList(), TTL: cfg.AuthCacheTTL, Metrics: s.Metrics})
		mo.Gate = s.Gate // only when set: a nil *Gate in the interface would not be nil
		if s.Overlay != nil {
			// A new caller's first listing is its probe too (authgate.Gate.Witness).
			s.Overlay.Witness = s.Gate.Witness
		}
	}
	s.Methods = methods.New(mo)
	s.Proxy, err = proxy.New(proxy.Options{
		Listener:           o.Listener,
		Upstream:           up,
		Transport:          transport,
		Local:              s.Methods,
		Metrics:            s.Metrics,
		OnResourcesChanged: s.onResourcesChanged(),
		Notify:             s.Notify,
		OwnsURI:            s.Methods.OwnsURI,
		Declaration:        rewrite.SkillsSidecar(),
		Logger:             o.Logger,
		MaxBodyBytes:       cfg.MaxBodyBytes,
		MaxEventBytes:      cfg.MaxEventBytes,
		MaxDepth:           cfg.MaxJSONDepth,
		AllowedOrigins:     cfg.AllowedOriginList(),
		AllowedHosts:       cfg.AllowedHostList(),
		UpstreamTimeout:    cfg.UpstreamTimeout,
		DialTimeout:        cfg.DialTimeout,
		ClientBodyTimeout:  cfg.ClientBodyTimeout,
		SendTimeout:        cfg.SendTimeout,
	})
	return s, err
}

// Handler is the MCP listener's handler: the proxy at /mcp, and at /mcp/
// exactly as at /mcp (every method), since Python clients follow the
// redirect Starlette-based servers send from /mcp/ to /mcp and expect the
// slash to work. Nothing else under /mcp/ is served.
func (s *Sidecar) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Proxy)
	mux.Handle("/mcp/{$}", s.Proxy)
	return mux
}

// onResourcesChanged returns the hook that makes the overlay forget what it
// learned when the upstream announces a resource change; nil without one.
func (s *Sidecar) onResourcesChanged() func(*http.Request, string, string) {
	if s.Overlay == nil {
		return nil
	}
	return s.Overlay.ResourcesChanged
}
