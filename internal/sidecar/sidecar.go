// Package sidecar owns the assembly of the serving sidecar: from a
// config.Config, a logger and a Prometheus registry it builds the catalog
// (a watched plugin folder, or a plugin given as a file system), the auth
// gate, the upstream-files overlay, the calls made on a caller's behalf,
// the sidecar's own methods and the proxy in front of them, wired the one
// way production runs them. cmd/skills-sidecar and every integration test
// (through package sidecartest) build the sidecar here; what stays in cmd
// is flags, listeners, signals and shutdown.
//
// It must not hold behaviour of its own: it wires the parts, each of which
// owns what it does (and whose behaviour tests live with it), and it
// decides nothing about a request, reads no flag and binds no listener.
package sidecar

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/bridge"
	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionkeys"
	"github.com/skills-sidecar/skills-sidecar/internal/stdio"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
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
	// Environ is the environment a stdio upstream's processes get, less
	// the sidecar's own SKILLS_SIDECAR_* keys; nil means the process's own.
	Environ []string
	// Snapshot, when set, is the catalog served instead of the one the
	// Config names: for tests that drive a catalog.Watcher themselves.
	Snapshot func() *catalog.Snapshot
	// SessionKeysInterval is how often the session keys file is read
	// again; 0 means sessionkeys.DefaultInterval.
	SessionKeysInterval time.Duration
}

// Sidecar is the assembled sidecar. Its parts are exposed for the
// process around it: Watcher for SIGHUP, Proxy for shutdown.
type Sidecar struct {
	Proxy   *proxy.Proxy
	Methods *methods.Handler
	// Gate is nil with --auth-gate none.
	Gate *authgate.Gate
	// Overlay is nil unless --upstream-files auto.
	Overlay *upstreamfiles.Overlay
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
	// Stdio is the stdio upstream's transport; nil when the upstream is a URL.
	Stdio *stdio.Transport
	// SessionKeys seal the sessions minted for legacy clients; nil with
	// --era-bridge off.
	SessionKeys *sessionkeys.Source
	// Callers says who a request's caller is, for every table callers
	// share (package caller): the auth-headers when the gate is on,
	// otherwise the address, believing trusted-proxies' headers.
	Callers *caller.Resolver
	// SharePercent is the part of each such table one caller may hold.
	SharePercent int
}

// StdioURL is the upstream URL the rest of the sidecar addresses when the
// upstream is a stdio command: requests to it never leave the process
// (the .invalid name cannot resolve, RFC 2606).
const StdioURL = "http://stdio.invalid/mcp"

// New builds the sidecar for cfg, whose Upstream must be set, and starts
// watching its plugin folder until ctx is done.
func New(ctx context.Context, cfg config.Config, o Options) (*Sidecar, error) {
	argv, err := cfg.UpstreamArgv()
	if err != nil {
		return nil, fmt.Errorf("upstream-command: %w", err)
	}
	upstream := cfg.Upstream
	if argv != nil {
		upstream = StdioURL
		if _, err := exec.LookPath(argv[0]); err != nil {
			return nil, fmt.Errorf("upstream-command: %w", err) // names the program only, never its arguments
		}
	}
	up, err := url.Parse(upstream)
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
	trusted, err := cfg.TrustedProxyPrefixes()
	if err != nil {
		return nil, fmt.Errorf("trusted-proxies: %w", err)
	}
	s.Callers, s.SharePercent = &caller.Resolver{TrustedProxies: trusted}, cfg.CallerSharePercent
	if cfg.AuthGate == "upstream" {
		s.Callers.Credentials = cfg.AuthHeaderList()
	}
	// Its subscriptions and streams are tables callers share.
	s.Notify = notify.New(notify.Options{Count: s.Metrics.Notification, SharePercent: s.SharePercent, Metrics: s.Metrics})
	if err := s.startCatalog(ctx, cfg, o); err != nil {
		return nil, err
	}
	var direct http.RoundTripper
	if argv != nil {
		s.Stdio = s.startStdio(ctx, cfg, argv, o)
		direct = s.Stdio
	} else {
		direct = proxy.NewTransport(cfg.DialTimeout, cfg.UpstreamTimeout, cfg.AuthHeaderList())
	}
	var keys *sessionkeys.Source
	if cfg.EraBridge == "auto" {
		// The keys of the sessions the legacy front mints: shared by every
		// replica that mounts the same file.
		if keys, err = sessionkeys.Open(cfg.SessionKeysFile, sessionkeys.Options{Logger: o.Logger, Interval: o.SessionKeysInterval}); err != nil {
			return nil, err
		}
		s.SessionKeys = keys
		go keys.Run(ctx)
	}
	// The upstream's eras, learned by probes on the direct transport; with
	// era-bridge auto every other request goes through the bridge, which
	// passes it through untouched unless the upstream lacks its era.
	var warnOnce sync.Once
	s.Eras = &bridge.Detector{URL: up, Client: &http.Client{Transport: direct}, Logger: o.Logger, Once: argv != nil,
		OnChange: func(e bridge.Eras) {
			if keys != nil && e.Known && e.Modern && !e.Legacy && !keys.FromFile() {
				warnOnce.Do(func() { warnProcessKey(o.Logger, keys.Path()) })
			}
			s.Metrics.UpstreamEra(e.Label())
		}}
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
		bt := &bridge.Transport{Next: direct, Eras: s.Eras.Current, Credentials: cfg.AuthHeaderList(), OnSessions: count(&held),
			Callers: s.Callers, SharePercent: s.SharePercent, Metrics: s.Metrics}
		bt.Start(ctx)
		// In front of it, the legacy front: legacy clients of a modern-only
		// upstream.
		front := &bridge.LegacyFront{Next: bt, Eras: s.Eras.Current, Upstream: up, Credentials: cfg.AuthHeaderList(), OnSessions: count(&minted),
			Keys: keys.Keys, KeysChanged: keys.Changed, Callers: s.Callers, SharePercent: s.SharePercent, Metrics: s.Metrics}
		front.Start(ctx)
		// Only a one-sided upstream's requests reach the bridge: a
		// dual-era upstream's go straight to the hop.
		transport, bridged = &bridge.Route{Eras: s.Eras.Current, Direct: direct, Bridged: front}, true
	}
	serves := func(modern bool) bool { return s.Eras.Current().Serves(modern, bridged) }
	client := &http.Client{Transport: transport}
	forCaller := &onbehalf.Upstream{URL: up, Client: client, Credentials: cfg.AuthHeaderList()}
	if cfg.UpstreamFiles == "auto" {
		s.Overlay = upstreamfiles.NewOverlay(forCaller, cfg.UpstreamFilesTTL, cfg.UpstreamFilesShared)
		s.Overlay.Metrics = s.Metrics
		s.Overlay.FrontmatterPortability = cfg.FrontmatterPortability
	}
	mo := methods.Options{
		Overlay:          s.Overlay,
		Subscriptions:    s.Notify,
		Callers:          s.Callers,
		Snapshot:         s.Snapshot,
		PageSize:         cfg.PageSize,
		TTLMs:            cfg.CacheTTLMs,
		CacheScope:       cfg.CacheScope,
		Tools:            &methods.UpstreamTools{Upstream: forCaller, TTL: cfg.ToolsCacheTTL},
		DropUnknownTools: cfg.DropUnknownTools,
		ServerVersion:    o.Version,
		Serves:           serves,
	}
	decl := rewrite.SkillsSidecar()
	for _, v := range cfg.HostCompatList() {
		// The same skills as prompts and tools, for hosts that do not
		// speak the extension (methods/hostcompat.go).
		switch v {
		case "prompts":
			mo.HostCompat.Prompts, decl.Prompts = true, true
			mo.HostCompat.UpstreamPrompts = &methods.UpstreamTools{Upstream: forCaller, TTL: cfg.ToolsCacheTTL, List: "prompts"}
		case "tools":
			mo.HostCompat.Tools, decl.Tools = true, true
		}
	}
	mo.HostCompat.Prefix = cfg.HostCompatPrefix
	mo.HostCompat.OnCollision = collisionWarner(o.Logger, s.Metrics)
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
	var admitStream func(*http.Request) error
	if s.Gate != nil {
		// The sidecar's own GET stream of a legacy session: the gate's
		// legacy probe (ping) carries the caller's credentials and that
		// session's id, so the upstream judges whether the session is the
		// caller's.
		ping := rewrite.Message{Kind: rewrite.KindRequest, Method: "ping"}
		admitStream = func(r *http.Request) error { return s.Gate.Admit(r, ping) }
	}
	s.Proxy, err = proxy.New(proxy.Options{
		AdmitStream:        admitStream,
		Listener:           o.Listener,
		Upstream:           up,
		Transport:          transport,
		Local:              s.Methods,
		Metrics:            s.Metrics,
		OnResourcesChanged: s.onResourcesChanged(),
		Notify:             s.Notify,
		Callers:            s.Callers,
		OwnsURI:            s.Methods.OwnsURI,
		Declaration:        decl,
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

// startStdio starts the transport that runs argv as the upstream.
func (s *Sidecar) startStdio(ctx context.Context, cfg config.Config, argv []string, o Options) *stdio.Transport {
	t := &stdio.Transport{
		Command:        argv,
		Logger:         o.Logger.Named("stdio"),
		Metrics:        s.Metrics,
		RequestTimeout: cfg.UpstreamTimeout,
		Caller:         s.Callers.Of,
		Sessions: caller.NewTable(caller.TableOptions{Name: stdio.TableSessions, Cap: stdio.DefaultMaxProcesses,
			SharePercent: s.SharePercent, Metrics: s.Metrics}),
		Calls: caller.NewTable(caller.TableOptions{Name: stdio.TableCalls, Cap: stdio.DefaultMaxCalls,
			SharePercent: s.SharePercent, Metrics: s.Metrics}),
		SharePercent: s.SharePercent, // of the bytes held for slow readers (stdio.DefaultMaxQueued)
	}
	s.Metrics.CallerRefusalTable(stdio.TableSessionCalls) // their refusals, at 0 until one
	s.Metrics.CallerRefusalTable(stdio.TableQueuedBytes)
	if o.Environ != nil {
		t.Env = stdio.ChildEnv(o.Environ)
	}
	t.Start(ctx)
	return t
}

// Close ends what the sidecar runs besides its goroutines: a stdio
// upstream's processes. Call it after draining.
func (s *Sidecar) Close() error {
	if s.Stdio == nil {
		return nil
	}
	return s.Stdio.Close()
}

// warnProcessKey says that the sessions minted for legacy clients open on
// this replica only: the legacy front is in use and no keys file is read.
func warnProcessKey(log *zap.Logger, path string) {
	log.Warn("era bridge: the upstream speaks only 2026-07-28, and the sessions minted for its legacy clients are sealed with a key of this process alone: "+
		"behind a Service without session affinity they work only on the replica that minted them, and a restart ends them all; "+
		"mount the session keys Secret (docs/replicas.md)", zap.String("session_keys_file", path))
}

// collisionWarner returns host-compat's OnCollision: every entry left out
// is counted, and each name is logged once (at most maxWarnedNames of
// them), since every listing of every caller would repeat it.
func collisionWarner(log *zap.Logger, m *metrics.Metrics) func(kind, name string) {
	var mu sync.Mutex
	warned := map[string]bool{}
	return func(kind, name string) {
		m.HostCompatCollision(kind)
		mu.Lock()
		first := !warned[kind+" "+name] && len(warned) < maxWarnedNames
		if first {
			warned[kind+" "+name] = true
		}
		mu.Unlock()
		if first {
			log.Warn("host-compat: the upstream has a "+kind+" of this name; its own is served and the sidecar's left out (change host-compat-prefix)",
				zap.String("name", name))
		}
	}
}

// maxWarnedNames bounds the names collisionWarner remembers having logged.
const maxWarnedNames = 256

// Handler is the MCP listener's handler: the proxy at /mcp, and at /mcp/
// exactly as at /mcp (every method), since Python clients follow the
// redirect Starlette-based servers send from /mcp/ to /mcp and expect the
// slash to work. Nothing else under /mcp/ is served.
func (s *Sidecar) Handler() http.Handler { return endpointRoutes(s.Proxy) }

// endpointRoutes serves endpoint at /mcp and /mcp/, and 404 elsewhere.
func endpointRoutes(endpoint http.Handler) routes {
	mux := http.NewServeMux()
	mux.Handle("/mcp", endpoint)
	mux.Handle("/mcp/{$}", endpoint)
	return routes{endpoint: endpoint, mux: mux}
}

// routes hands a request for the endpoint's own path, as a client sends it
// on every call, straight to the endpoint, and everything else to mux,
// which decides the same for those paths: the mux cleans and matches every
// path it is given, about a microsecond per forwarded call.
type routes struct {
	endpoint http.Handler
	mux      *http.ServeMux
}

func (h routes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; (p == "/mcp" || p == "/mcp/") && r.URL.RawPath == "" {
		h.endpoint.ServeHTTP(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// onResourcesChanged returns the hook that makes the overlay forget what it
// learned when the upstream announces a resource change; nil without one.
func (s *Sidecar) onResourcesChanged() func(*http.Request, string, string) {
	if s.Overlay == nil {
		return nil
	}
	return s.Overlay.ResourcesChanged
}
