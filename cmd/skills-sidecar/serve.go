package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/skills-sidecar/skills-sidecar/internal/authgate"
	"github.com/skills-sidecar/skills-sidecar/internal/bridge"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/proxy"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

func runServe(ctx context.Context, args, environ []string, stdout, stderr io.Writer) int {
	cfg, err := loadConfig(args, environ, os.ReadFile, stdout) // asked-for help goes to stdout
	if errors.Is(err, config.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "skills-sidecar: invalid configuration:\n%v\n", err)
		return exitUsage
	}
	demoMode := cfg.Upstream == ""
	level, log, err := newLogger(cfg, demoMode, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "skills-sidecar: %v\n", err)
		return exitUsage
	}
	defer func() { _ = log.Sync() }()
	for _, w := range cfg.Warnings() {
		log.Warn(w)
	}
	go watchLogLevel(ctx, cfg.AnnotationsFile, levelFixed(args, environ), level, log, 5*time.Second)
	if err := serve(ctx, cfg, log, stdout); err != nil {
		log.Error("sidecar stopped", zap.Error(err))
		return exitFail
	}
	return exitOK
}

// levelFixed reports whether a flag or the environment sets the log level,
// which then outranks the annotation at run time as it does at start.
func levelFixed(args, environ []string) bool {
	for _, a := range args {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "log-level") {
			return true
		}
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, config.EnvName("log-level")+"=") {
			return true
		}
	}
	return false
}

func newLogger(cfg config.Config, demoMode bool, stderr io.Writer) (zap.AtomicLevel, *zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(cfg.LogLevel)
	if err != nil {
		return zap.AtomicLevel{}, nil, fmt.Errorf("log-level: %w", err)
	}
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if demoMode {
			format = "console"
		}
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	encCfg.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	if format == "console" {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	level := zap.NewAtomicLevelAt(lvl)
	core := zapcore.NewCore(enc, zapcore.AddSync(stderr), level)
	return level, zap.New(core), nil
}

// serve runs the sidecar until ctx is done, then drains.
func serve(ctx context.Context, cfg config.Config, log *zap.Logger, stdout io.Writer) error {
	upstream := cfg.Upstream
	if upstream == "" {
		// The demo is for trying the sidecar on this machine: it listens
		// on loopback unless told an address with a host, and so the Host
		// check (origin.go) is in force.
		cfg.Listen, cfg.MetricsListen = loopbackUnlessHost(cfg.Listen), loopbackUnlessHost(cfg.MetricsListen)
		u, stop, err := demo.Start(ctx)
		if err != nil {
			return err
		}
		defer stop()
		upstream = u
		log.Info("no --upstream given: started the embedded demo upstream", zap.String("url", u))
	}
	up, err := url.Parse(upstream)
	if err != nil {
		return errors.New("upstream: not a URL") // the error would quote it, secrets and all
	}
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, version)
	// One hub for the sidecar's own change notifications: the catalog
	// publishes into it, the proxy's streams read from it.
	hub := notify.New(notify.Options{Count: m.Notification})
	snapshot, err := startCatalog(ctx, cfg, log, m, hub.Publish)
	if err != nil {
		return err
	}
	direct := proxy.NewTransport(cfg.DialTimeout, cfg.UpstreamTimeout, cfg.AuthHeaderList())
	// The upstream's eras, learned by probes on the direct transport; with
	// era-bridge auto every other request goes through the bridge, which
	// passes it through untouched unless the upstream lacks its era.
	eras := &bridge.Detector{URL: up, Client: &http.Client{Transport: direct}, Logger: log,
		OnChange: func(e bridge.Eras) { m.UpstreamEra(e.Label()) }}
	go eras.Run(ctx)
	var transport http.RoundTripper = direct
	bridged := false
	if cfg.EraBridge == "auto" {
		bt := &bridge.Transport{Next: direct, Eras: eras.Current, Credentials: cfg.AuthHeaderList(), OnSessions: m.BridgeSessions}
		bt.Start(ctx)
		transport, bridged = bt, true
	}
	serves := func(modern bool) bool { return eras.Current().Serves(modern, modern && bridged) }
	upstreamClient := &onbehalf.Upstream{URL: up, Client: &http.Client{Transport: transport}, Credentials: cfg.AuthHeaderList()}
	var overlay *methods.Overlay
	if cfg.UpstreamFiles == "auto" {
		overlay = methods.NewOverlay(upstreamClient, cfg.UpstreamFilesTTL, cfg.UpstreamFilesShared)
		overlay.Metrics = m
	}
	var gate methods.Gate
	if cfg.AuthGate == "upstream" {
		gate = authgate.New(authgate.Options{Upstream: up, Client: &http.Client{Transport: transport},
			CredentialHeaders: cfg.AuthHeaderList(), TTL: cfg.AuthCacheTTL, Metrics: m})
	}
	local := methods.New(methods.Options{
		Gate:             gate,
		Overlay:          overlay,
		Subscriptions:    hub,
		Snapshot:         snapshot,
		PageSize:         cfg.PageSize,
		TTLMs:            cfg.CacheTTLMs,
		CacheScope:       cfg.CacheScope,
		Tools:            &methods.UpstreamTools{Upstream: upstreamClient, TTL: cfg.ToolsCacheTTL},
		DropUnknownTools: cfg.DropUnknownTools,
		ServerVersion:    version,
		Serves:           serves,
	})
	// Bound before the proxy is built: the Host check depends on the
	// address it listens on (connections wait in the backlog until Serve).
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	p, err := proxy.New(proxy.Options{
		Listener:           ln.Addr(),
		Upstream:           up,
		Transport:          transport,
		Local:              local,
		Metrics:            m,
		OnResourcesChanged: onResourcesChanged(overlay),
		Notify:             hub,
		OwnsURI:            local.OwnsURI,
		Declaration:        rewrite.SkillsSidecar(),
		Logger:             log,
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
	if err != nil {
		_ = ln.Close()
		return err
	}

	ready := newReadiness(up, cfg.AuthGate)
	ready.eras = eras.Current
	mux := http.NewServeMux()
	mux.Handle("/mcp", p)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: cfg.MaxHeaderBytes,
		ErrorLog: zap.NewStdLog(log.Named("http"))}
	var mln net.Listener
	var msrv *http.Server
	if cfg.MetricsListen != "" {
		mln, err = net.Listen("tcp", cfg.MetricsListen)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("listen on %s (metrics-listen): %w", cfg.MetricsListen, err)
		}
		msrv = &http.Server{Handler: opsMux(reg, ready), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	mcpURL := "http://" + displayAddr(ln.Addr()) + "/mcp"
	log.Info("skills-sidecar listening", zap.String("mcp", mcpURL), zap.String("upstream", config.RedactURL(upstream)), zap.String("version", version))
	if cfg.Upstream == "" {
		fmt.Fprintf(stdout, "skills-sidecar %s is serving the demo at %s\n\n"+
			"Try it with the MCP Inspector CLI (Node.js 22.19 or later):\n"+
			"  npx @modelcontextprotocol/inspector@2.12.0 --cli %s --method skills/list --verify\n"+
			"  npx @modelcontextprotocol/inspector@2.12.0 --cli %s --method tools/list\n\n", version, mcpURL, mcpURL, mcpURL)
	}

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	ready.draining.Store(true)
	if cfg.ShutdownDelay > 0 {
		log.Info("shutting down: still serving, not ready", zap.Duration("shutdown-delay", cfg.ShutdownDelay))
		time.Sleep(cfg.ShutdownDelay)
	}
	log.Info("shutting down: draining", zap.Duration("drain-timeout", cfg.DrainTimeout))
	p.EndStreams()
	dctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	err = srv.Shutdown(dctx)
	if err == nil {
		err = p.WaitStreams(dctx) // detached GET streams are not the server's to wait for
	}
	if err != nil {
		log.Warn("drain timeout reached: closing remaining connections", zap.Error(err))
		_ = srv.Close()
	}
	if msrv != nil {
		_ = msrv.Close()
	}
	return nil
}

// onResourcesChanged returns the hook that makes the overlay forget what it
// learned when the upstream announces a resource change; nil without one.
func onResourcesChanged(o *methods.Overlay) func(*http.Request, string, string) {
	if o == nil {
		return nil
	}
	return o.ResourcesChanged
}

// loopbackUnlessHost gives addr (host:port) the host 127.0.0.1 when it has
// none, as ":8080" has; an empty addr stays empty.
func loopbackUnlessHost(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// displayAddr turns a listener address into one a person can paste: an
// unspecified host becomes 127.0.0.1.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}
