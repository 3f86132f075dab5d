package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension identifiers (SEP-2133 declarations).
const (
	skillsExtension = "io.modelcontextprotocol/skills"
	agentsExtension = "io.modelcontextprotocol/agents"
)

// Eras accepted by Options.Era.
const (
	EraAuto   = "auto"
	EraLegacy = "legacy"
	EraModern = "modern"
)

// Defaults of Options.
const (
	DefaultMaxBytes  = 16 << 20
	DefaultMaxSkills = 10_000
	DefaultMaxPages  = 1_000
	DefaultTimeout   = 60 * time.Second
)

// Options says what to verify and how far to read. The zero value of each
// bound means its default.
type Options struct {
	// URL is the server's MCP endpoint.
	URL string
	// Era is EraAuto (server/discover, falling back to initialize, as
	// clients do), EraLegacy (initialize only) or EraModern
	// (server/discover only, 2026-07-28). Empty means EraAuto.
	Era string
	// Header is added to every request (for example Authorization).
	Header http.Header
	// MaxBytes bounds each skill file read (default 16 MiB). A response body
	// may be up to 2*MaxBytes+1 MiB, room for a base64 blob and JSON.
	MaxBytes int64
	// MaxSkills bounds how many skills (and agents) are listed and checked.
	MaxSkills int
	// MaxPages bounds how many pages of any listing are followed.
	MaxPages int
	// RequireDigests makes a skill whose resources are "dynamic" a failure
	// instead of a warning.
	RequireDigests bool
	// Transport is the HTTP transport; nil means a fresh default one.
	Transport http.RoundTripper
}

func (o *Options) fill() {
	if o.Era == "" {
		o.Era = EraAuto
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxSkills <= 0 {
		o.MaxSkills = DefaultMaxSkills
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
}

// verifier holds one run's state.
type verifier struct {
	opts   Options
	http   *http.Client
	c      *client
	rep    *Report
	server checks
	// fatal is the first auth or reachability error; it stops the run.
	fatal error

	caps      map[string]any
	dirRead   bool
	hasAgents bool
	tools     map[string]any // tools/list by name, fetched once for agents
	toolsErr  error
}

// Verify checks the server at opts.URL and returns the report. It never
// returns nil; the report's ExitCode says how Run would exit.
func Verify(ctx context.Context, opts Options) *Report {
	opts.fill()
	base := opts.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	hc := &http.Client{Transport: &headerTransport{base: base, header: opts.Header}}
	v := &verifier{
		opts: opts,
		http: hc,
		c:    &client{endpoint: opts.URL, http: hc, maxBody: 2*opts.MaxBytes + 1<<20},
		rep:  &Report{URL: opts.URL, Server: nil, Skills: []*Item{}, Agents: []*Item{}},
	}
	v.run(ctx)
	v.rep.Server = append([]Check{}, v.server.list...)
	switch {
	case errors.Is(v.fatal, ErrAuthRequired):
		v.rep.ExitCode, v.rep.Error = ExitAuth, v.fatal.Error()
	case v.fatal != nil:
		v.rep.ExitCode, v.rep.Error = ExitUnreachable, v.fatal.Error()
	}
	v.rep.finish()
	return v.rep
}

func (v *verifier) run(ctx context.Context) {
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		v.c.closeSession(cctx)
	}()
	if !v.handshake(ctx) {
		return
	}
	v.goSDKHandshake(ctx)
	skills := v.declaration()
	if v.fatal != nil {
		return
	}
	if skills {
		v.verifySkills(ctx)
	} else if v.hasAgents {
		if _, err := v.call(ctx, "skills/list", map[string]any{}); err == nil {
			v.server.fail("declaration.skills", "skills/list answers but capabilities.extensions lacks %s", skillsExtension)
		}
	}
	if v.hasAgents && v.fatal == nil {
		v.verifyAgents(ctx)
	}
}

// call sends a request; auth and reachability errors become fatal.
func (v *verifier) call(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if v.fatal != nil {
		return nil, v.fatal
	}
	res, err := v.c.call(ctx, method, params)
	if errors.Is(err, ErrAuthRequired) || errors.Is(err, ErrUnreachable) {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ErrUnreachable, ctx.Err())
		}
		v.fatal = err
	}
	return res, err
}

// handshake negotiates the era as opts.Era says and records the server's
// capabilities.
func (v *verifier) handshake(ctx context.Context) bool {
	if v.opts.Era != EraLegacy {
		caps, err := v.discover(ctx)
		if err == nil {
			v.caps = caps
			v.rep.Era, v.rep.ProtocolVersion = EraModern, modernVersion
			v.server.ok("handshake", "server/discover offers "+modernVersion)
			return true
		}
		if v.fatal != nil {
			return false
		}
		if v.opts.Era == EraModern {
			v.server.fail("handshake", "server/discover: %v", err)
			return false
		}
		v.c.modern, v.c.version = false, ""
	}
	res, err := v.call(ctx, "initialize", map[string]any{
		"protocolVersion": legacyVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "skills-sidecar-verify", "version": "1"},
	})
	if err != nil {
		if v.fatal == nil {
			v.server.fail("handshake", "initialize: %v", err)
		}
		return false
	}
	var init struct {
		ProtocolVersion string
		Capabilities    map[string]any
	}
	if err := readFields(res, map[string]any{"protocolVersion": &init.ProtocolVersion, "capabilities": &init.Capabilities}); err != nil ||
		init.ProtocolVersion == "" || init.Capabilities == nil {
		v.server.fail("handshake", "initialize result lacks protocolVersion or capabilities: %s", snippet(res))
		return false
	}
	v.caps = init.Capabilities
	v.c.version = init.ProtocolVersion
	v.rep.Era, v.rep.ProtocolVersion = EraLegacy, init.ProtocolVersion
	if err := v.c.notify(ctx, "notifications/initialized"); err != nil {
		v.server.warn("handshake", "notifications/initialized: %v", err)
		if errors.Is(err, ErrAuthRequired) || errors.Is(err, ErrUnreachable) {
			v.fatal = err
			return false
		}
		return true
	}
	v.server.ok("handshake", "initialize negotiated "+init.ProtocolVersion)
	return true
}

// discover sends server/discover on the modern wire.
func (v *verifier) discover(ctx context.Context) (map[string]any, error) {
	v.c.modern, v.c.version = true, modernVersion
	res, err := v.call(ctx, "server/discover", nil)
	if err != nil {
		return nil, err
	}
	var d struct {
		SupportedVersions []string
		Capabilities      map[string]any
	}
	if err := readFields(res, map[string]any{"supportedVersions": &d.SupportedVersions, "capabilities": &d.Capabilities}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	found := false
	for _, s := range d.SupportedVersions {
		found = found || s == modernVersion
	}
	if !found {
		return nil, fmt.Errorf("supportedVersions %q lacks %s", d.SupportedVersions, modernVersion)
	}
	if d.Capabilities == nil {
		return nil, fmt.Errorf("server/discover result has no capabilities object: %w", ErrBadResponse)
	}
	v.cacheFields("discover.cache", res)
	return d.Capabilities, nil
}

// goSDKHandshake connects with the go-sdk client, as a Go host would, and
// checks that it lands in the same era.
func (v *verifier) goSDKHandshake(ctx context.Context) {
	version := ""
	switch v.opts.Era {
	case EraLegacy:
		version = legacyVersion
	case EraModern:
		version = modernVersion
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "skills-sidecar-verify", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cs, err := c.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: v.opts.URL, HTTPClient: v.http,
		MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		v.server.fail("handshake.go-sdk", "the go-sdk v1.8.0 client cannot connect: %v", err)
		return
	}
	defer func() { _ = cs.Close() }()
	got := cs.InitializeResult().ProtocolVersion
	if (got >= modernVersion) != (v.rep.Era == EraModern) {
		v.server.warn("handshake.go-sdk", "the go-sdk client negotiated %s, this check the %s era", got, v.rep.Era)
		return
	}
	exts, _ := v.caps["extensions"].(map[string]any)
	if _, declared := exts[skillsExtension]; !declared {
		v.server.ok("handshake.go-sdk", "the go-sdk client negotiated "+got)
		return
	}
	if _, ok := cs.InitializeResult().Capabilities.Extensions[skillsExtension]; !ok {
		v.server.warn("handshake.go-sdk", "the go-sdk client (protocol %s) sees no %s declaration", got, skillsExtension)
		return
	}
	v.server.ok("handshake.go-sdk", "the go-sdk client negotiated "+got)
}

// declaration checks capabilities.extensions and resources and reports
// whether the skills extension is declared.
func (v *verifier) declaration() bool {
	exts, _ := v.caps["extensions"].(map[string]any)
	if raw, ok := v.caps["extensions"]; ok && exts == nil {
		v.server.fail("declaration.skills", "capabilities.extensions is %s, want an object", kind(raw))
	}
	if a, ok := exts[agentsExtension]; ok {
		if _, isObj := a.(map[string]any); !isObj {
			v.server.fail("declaration.agents", "%s settings are %s, want an object (inline, SEP-2133)", agentsExtension, kind(a))
		} else {
			v.hasAgents = true
			v.server.ok("declaration.agents", "declared")
		}
	} else {
		v.server.skip("declaration.agents", "agents extension not declared")
	}
	s, ok := exts[skillsExtension]
	if !ok && v.hasAgents {
		// An agents-only server is judged on what it declares; run checks
		// that it does not serve skills/list undeclared.
		v.server.skip("declaration.skills", "skills extension not declared; the agents extension is checked")
		return false
	}
	if !ok {
		v.server.fail("declaration.skills", "capabilities.extensions lacks %s", skillsExtension)
		return false
	}
	settings, isObj := s.(map[string]any)
	if !isObj {
		v.server.fail("declaration.skills", "%s settings are %s, want an object (inline, SEP-2133)", skillsExtension, kind(s))
		return false
	}
	if _, wrapped := settings["config"]; wrapped {
		v.server.warn("declaration.skills", "settings carry a \"config\" key: settings are inline, not wrapped")
	}
	if dr, ok := settings["directoryRead"]; ok {
		b, isBool := dr.(bool)
		if !isBool {
			v.server.fail("declaration.skills", "directoryRead is %s, want a boolean", kind(dr))
		}
		v.dirRead = b
	}
	v.server.ok("declaration.skills", fmt.Sprintf("declared, directoryRead=%t", v.dirRead))
	if r, ok := v.caps["resources"]; !ok {
		v.server.fail("declaration.resources", "skills declared but capabilities.resources is absent (a skills server MUST declare it)")
	} else if _, isObj := r.(map[string]any); !isObj {
		v.server.fail("declaration.resources", "capabilities.resources is %s, want an object", kind(r))
	} else {
		v.server.ok("declaration.resources", "declared")
	}
	return true
}

// cacheFields checks the modern result fields (SEP-2549): resultType
// "complete", ttlMs an integer >= 0 and cacheScope public or private. On the
// legacy wire nothing is required.
func (v *verifier) cacheFields(name string, res json.RawMessage) {
	if !v.c.modern {
		return
	}
	if reason := cacheProblem(res); reason != "" {
		v.server.fail(name, "%s", reason)
		return
	}
	v.server.ok(name, "resultType, ttlMs and cacheScope present")
}

// cacheProblem describes what is wrong with a modern result's cache fields,
// or returns "".
func cacheProblem(res json.RawMessage) string {
	var r struct {
		ResultType *string
		TTLMs      *json.Number
		CacheScope *string
	}
	if err := readFields(res, map[string]any{"resultType": &r.ResultType, "ttlMs": &r.TTLMs, "cacheScope": &r.CacheScope}); err != nil {
		return fmt.Sprintf("result fields have the wrong type: %v", err)
	}
	switch {
	case r.ResultType == nil || *r.ResultType != "complete":
		return "resultType is missing or not \"complete\""
	case r.TTLMs == nil:
		return "ttlMs is missing"
	case r.CacheScope == nil || (*r.CacheScope != "public" && *r.CacheScope != "private"):
		return "cacheScope is missing or neither \"public\" nor \"private\""
	}
	if n, err := r.TTLMs.Int64(); err != nil || n < 0 {
		return fmt.Sprintf("ttlMs %s is not an integer >= 0", *r.TTLMs)
	}
	return ""
}
