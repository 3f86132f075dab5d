package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// AnnotationPrefix is the prefix of every pod annotation the sidecar reads.
const AnnotationPrefix = "skills-sidecar.io/"

// EnvPrefix is the prefix of every environment variable the sidecar reads.
const EnvPrefix = "SKILLS_SIDECAR_"

// Config is the sidecar's runtime configuration. The zero value is not
// useful; start from Defaults.
//
// Each field is one key. Its tags declare the key's name (flag `--name`,
// environment SKILLS_SIDECAR_NAME with dashes as underscores, annotation
// skills-sidecar.io/name), its default and its one-line help; docs/configuration.md's
// configuration table is generated from them (see Table).
type Config struct {
	// Listen is the address of the MCP listener; the endpoint is /mcp. The
	// default port, 17080, and metrics-listen's, 17090, are used by no
	// common app or sidecar default (8080 and 9090 are the commonest app
	// and Prometheus ports; Istio takes 15000-15090, Linkerd 4140-4191,
	// Consul 19000-21255, Dapr 3500 and 50001), sit below the kernel's
	// ephemeral range (32768 and up), where an outgoing connection could
	// hold them, and above 1024, so the non-root sidecar may bind them.
	Listen string `key:"listen" default:":17080" help:"Address (host:port) of the MCP listener. The MCP endpoint is /mcp."`
	// Upstream is the URL of the MCP server the sidecar fronts. Empty means
	// the embedded demo upstream.
	Upstream string `key:"upstream" default:"" help:"URL of the upstream MCP endpoint (streamable HTTP), e.g. http://127.0.0.1:3000/mcp. Empty starts the embedded demo server and example plugin."`
	// UpstreamCommand is the argv of a stdio MCP server run as the
	// upstream, as a JSON array; serve -- CMD ARGS... sets it too.
	UpstreamCommand string `key:"upstream-command" default:"" help:"A stdio MCP server to run as the upstream instead of dialling upstream: its argv as a JSON array, e.g. [\"npx\",\"@modelcontextprotocol/server-everything\",\"stdio\"]. skills-sidecar serve [flags] -- CMD ARGS... sets it from the command line. See docs/stdio.md."`
	// PluginDir is the plugin folder (Claude Code layout) to serve. Empty
	// serves the embedded example when the demo upstream runs, and no
	// skills otherwise.
	PluginDir string `key:"plugin-dir" default:"" help:"Plugin folder (Claude Code layout: skills/, agents/, .claude-plugin/plugin.json), normally a mounted ConfigMap. Empty: the embedded example with the demo upstream, none otherwise."`
	// PluginLayout is how PluginDir holds the plugin (catalog.Layout*).
	PluginLayout string `key:"plugin-layout" default:"tree" help:"How plugin-dir holds the plugin: tree (the folder itself) or configmaps (one folder per ConfigMap mounted whole, keys encoding the paths as skills-sidecar inject configmap writes them; what the injector mounts)."`
	// MetricsListen is the address of the metrics and health listener.
	MetricsListen string `key:"metrics-listen" default:":17090" help:"Address of the listener for /metrics, /healthz and /readyz, kept apart from MCP traffic. Empty disables it."`
	// AnnotationsFile is the downward API file of the pod's annotations.
	AnnotationsFile string `key:"annotations-file" default:"/etc/skills-sidecar/podinfo/annotations" help:"Downward API file with the pod's annotations; skills-sidecar.io/* keys in it configure the sidecar. A missing file is not an error."`
	// UpstreamTimeout bounds the wait for the upstream's response headers.
	UpstreamTimeout time.Duration `key:"upstream-timeout" default:"60s" help:"How long to wait for the upstream's response headers before answering 504. Streams, once started, are never cut by it."`
	// ClientBodyTimeout bounds each read of a request body.
	ClientBodyTimeout time.Duration `key:"client-body-timeout" default:"60s" help:"How long a request body may stall between two reads (nginx's client_body_timeout) before the client gets HTTP 408 and its connection is closed."`
	// SendTimeout bounds each write of a reply to the client.
	SendTimeout time.Duration `key:"send-timeout" default:"60s" help:"How long a client may accept no bytes of a reply (JSON, SSE, a GET stream, the sidecar's own answers) before its connection is closed and the upstream request behind it ended (nginx's send_timeout). A stream that is merely quiet is not cut."`
	// DialTimeout bounds connecting to the upstream.
	DialTimeout time.Duration `key:"dial-timeout" default:"5s" help:"How long to wait for a TCP connection to the upstream. A connection not made in time is answered 504 upstream_timeout, as a late reply is; a refused one 502 upstream_unreachable."`
	// DrainTimeout bounds graceful shutdown.
	DrainTimeout time.Duration `key:"drain-timeout" default:"20s" help:"On SIGTERM or SIGINT: how long in-flight requests may take to finish before they are cut. Standalone GET streams are ended at once, cleanly, so clients reconnect elsewhere."`
	// ShutdownDelay keeps the listener open after the signal.
	ShutdownDelay time.Duration `key:"shutdown-delay" default:"0s" help:"On SIGTERM or SIGINT: how long to keep accepting requests, with /readyz at 503, before draining starts, so that Kubernetes takes the pod out of its Services first. Set a few seconds when the sidecar runs as a regular container; a native sidecar is signalled only after the server has exited. At most 10m."`
	// MaxBodyBytes limits a request body.
	MaxBodyBytes int64 `key:"max-body-bytes" default:"4194304" help:"Largest request body accepted, in bytes; larger gets HTTP 413."`
	// MaxProcs is the processors the sidecar process runs Go code on.
	MaxProcs int `key:"max-procs" default:"1" help:"Processors the sidecar's process runs Go code on (GOMAXPROCS). 1, the default, costs about a fifth less CPU per forwarded request than two, and a sidecar takes its CPU from the server beside it (docs/performance.md); its own heavy work (hashing large skill files, loading a large plugin) then has one core. 0 keeps Go's default (the container's CPU limit, at least 2). A GOMAXPROCS environment variable wins over both."`
	// MaxHeaderBytes limits the request header block.
	MaxHeaderBytes int `key:"max-header-bytes" default:"65536" help:"Largest request head accepted (request line and header fields), in bytes; larger gets HTTP 431, and a request line alone longer than it 414. With http-server net/http, 4 KiB more is accepted and both get 431."`
	// HTTPServer selects the HTTP/1.1 server of the MCP listener.
	HTTPServer string `key:"http-server" default:"own" help:"The HTTP/1.1 server of the MCP listener. own: the sidecar's, which parses plain request heads itself, writes a complete reply (up to 64 KiB) in one write, and watches for clients going away only during slow or streamed requests, at less CPU per forwarded request; net/http: Go's standard server. Both answer the same bytes alike but where the sidecar's follows RFC 9112 more strictly (docs/security.md, \"The HTTP/1.1 server\")."`
	// MaxJSONDepth limits how deeply a request body nests.
	MaxJSONDepth int `key:"max-json-depth" default:"64" help:"Deepest nesting of objects and arrays accepted in a request body; deeper gets HTTP 400 and -32600."`
	// AllowedOrigins extends the Origin check.
	AllowedOrigins string `key:"allowed-origins" default:"" help:"Comma-separated Origin values accepted besides loopback origins and the request's own host when that host is loopback or in allowed-hosts (* accepts any); any other present Origin gets HTTP 403."`
	// AllowedHosts extends the Host check (DNS rebinding protection).
	AllowedHosts string `key:"allowed-hosts" default:"" help:"Comma-separated Host values (name, or name:port) accepted besides loopback ones (* accepts any). On a loopback listen address any other Host gets HTTP 403; on another address empty accepts every Host and a list only those. Set it when the sidecar is reachable from browsers under names you know."`
	// MaxEventBytes limits one SSE event the sidecar must parse.
	MaxEventBytes int `key:"max-event-bytes" default:"33554432" help:"Largest single SSE event or JSON reply from the upstream that the sidecar holds to rewrite (initialize, server/discover, resources/list); a larger one ends the stream loudly, never truncated. A forwarded read of an upstream-served skill file is hashed as it passes and never held, so this limit does not apply to it."`
	// PageSize is the page length of skills/list, agents/list, directory
	// reads and the sidecar's part of resources/list.
	PageSize int `key:"page-size" default:"100" help:"Entries per page of skills/list, agents/list, resources/directory/read and the sidecar's part of resources/list: 1 to 10000."`
	// CacheTTLMs is ttlMs of the sidecar's cacheable results.
	CacheTTLMs int64 `key:"cache-ttl-ms" default:"0" help:"ttlMs of the sidecar's cacheable results (skills/*, agents/*); 0 means immediately stale."`
	// CacheScope is cacheScope of the sidecar's cacheable results.
	CacheScope string `key:"cache-scope" default:"private" help:"cacheScope of the sidecar's cacheable results: private (default; results may depend on the caller) or public."`
	// DropUnknownTools makes agents/get leave out tools the upstream lacks.
	DropUnknownTools bool `key:"drop-unknown-tools" default:"false" help:"agents/get leaves out tool names the upstream does not offer (such as Claude Code host tools like Read or Bash) instead of failing with invalid_agent_definition."`
	// AuthGate selects how callers of the sidecar's own methods are admitted.
	AuthGate string `key:"auth-gate" default:"upstream" help:"upstream: answer skills/*, agents/* and skill files only for callers the upstream admits (checked with a forwarded ping carrying the caller's headers, cached briefly); none: admit everyone, for upstreams without auth."`
	// AuthHeaders are the headers that identify a caller.
	AuthHeaders string `key:"auth-headers" default:"Authorization,Cookie" help:"Comma-separated headers that carry a caller's credentials. They go with the sidecar's own calls to the upstream on a caller's behalf, and the gate's, tools' and upstream files' caches are keyed by a hash of them."`
	// AuthCacheTTL is how long an admission is trusted.
	AuthCacheTTL time.Duration `key:"auth-cache-ttl" default:"10s" help:"How long the auth gate trusts an admission for the same credentials and session before asking the upstream again."`
	// TrustedProxies are the peers whose forwarded headers name the client.
	TrustedProxies string `key:"trusted-proxies" default:"" help:"Comma-separated CIDR prefixes (or addresses) of proxies in front of the sidecar whose X-Forwarded-For or Forwarded header names the client. A caller without verified credentials is known by its address: the TCP peer's, or, from a trusted proxy only, the first untrusted address of that header read from the right. Empty trusts none: a header a client sends never makes it another caller."`
	// CallerSharePercent is the part of each shared table one caller may hold.
	CallerSharePercent int `key:"caller-share-percent" default:"25" help:"The part, in percent (1-100), of each bounded table callers share (era bridge sessions, calls waiting for input, listen streams, subscriptions) that one caller may hold, at least one place; past it the caller gets HTTP 429 with Retry-After, and everyone gets 503 when the whole table is full. A caller is its verified credentials (auth-gate upstream), otherwise its address (see trusted-proxies); docs/security.md says more."`
	// UpstreamFiles selects whether the upstream's own skill files win.
	UpstreamFiles string `key:"upstream-files" default:"auto" help:"auto: learn from the upstream's resources/list and resources/templates/list (taken with the caller's credentials) which catalog URIs it serves itself, publish digests of its bytes for those and forward their reads; off: serve every catalog file from the plugin folder without asking."`
	// UpstreamFilesTTL is how long what was learned is trusted.
	UpstreamFilesTTL time.Duration `key:"upstream-files-ttl" default:"60s" help:"How long the verdicts and digests learned from the upstream are cached per authorization context before they are asked again."`
	// UpstreamFilesShared caches one set of verdicts for every caller.
	UpstreamFilesShared bool `key:"upstream-files-shared" default:"false" help:"Declare that the upstream serves every caller the same skill files, so what one caller's listings and reads learn is reused for all (default: cached per authorization context)."`
	// EraBridge selects whether the sidecar bridges protocol eras the
	// upstream does not speak itself.
	EraBridge string `key:"era-bridge" default:"auto" help:"auto: learn which protocol eras the upstream speaks (server/discover, then initialize) and serve 2026-07-28 clients of a legacy-only upstream over legacy sessions the sidecar holds for them (one per credentials, client address and client capabilities), and legacy clients of a modern-only upstream over sessions the sidecar mints (initialize answered from server/discover); a dual-era upstream is passed through untouched; off: never translate, and declare and answer the sidecar's own methods only on the eras the upstream speaks."`
	// SessionKeysFile holds the keys that seal the session ids the era
	// bridge mints for legacy clients (package sessionid). The default is
	// where the injector mounts the namespace's session keys Secret.
	SessionKeysFile string `key:"session-keys-file" default:"/etc/skills-sidecar/session-keys/keys" help:"File of keys, one per line, each the base64 of 32 random bytes (the first seals, all open), that seal the session ids the era bridge mints for legacy clients of a modern-only upstream, so every replica reading the same keys serves every such session (docs/replicas.md); re-read when it changes. Missing: a random key of this process, and those sessions work only on the replica that minted them (a warning says so once the upstream is found modern-only)."`
	// ToolsCacheTTL is how long agents/get reuses a caller's tools/list.
	ToolsCacheTTL time.Duration `key:"tools-cache-ttl" default:"10s" help:"How long agents/get reuses the upstream's tools/list fetched for one caller (credentials and session); 0s fetches it on every call. Never shared between callers."`
	// HostCompat lists the host-compatibility surfaces served besides the
	// Skills extension: "prompts", "tools" (HostCompatList splits it).
	HostCompat string `key:"host-compat" default:"" help:"Comma-separated: prompts (one prompt per skill, returning its SKILL.md and links to its files, and per agent, returning its instructions) and/or tools (a tool that loads a skill by name and one that reads a skill file), appended to the upstream's own prompts/list and tools/list, for hosts that do not speak the Skills extension. Empty (default) adds nothing."`
	// HostCompatPrefix starts the name of every prompt and tool host-compat
	// adds.
	HostCompatPrefix string `key:"host-compat-prefix" default:"skill_" help:"Prefix of the prompt and tool names host-compat adds: prompts are the prefix and the skill's path (/ written __), tools the prefix and load or read. 1 to 32 letters, digits, _ and -."`
	// LimitMode is what happens to a skill over the SEP-2640 limits.
	LimitMode string `key:"limit-mode" default:"skip" help:"A skill over 512 files or 16 MiB: skip (default; SEP-2640 says SHOULD NOT serve) or warn (serve it and report)."`
	// FrontmatterPortability is what happens to a skill whose frontmatter
	// YAML 1.1 hosts read differently.
	FrontmatterPortability string `key:"frontmatter-portability" default:"skip" help:"A SKILL.md whose frontmatter has a plain value or key that YAML 1.1 readers such as PyYAML type differently (yes, on, 0755, 1:30, 1_000, 1e3, a timestamp with a time), so such hosts refuse the skill: skip (default) or warn (serve it and report). Quoting the value fixes the skill."`
	// PollInterval is the catalog's polling fallback.
	PollInterval time.Duration `key:"poll-interval" default:"10s" help:"How often the plugin folder is fingerprinted as a fallback to file system events; ConfigMap updates are normally seen at once."`
	// LogLevel is the minimum level logged.
	LogLevel string `key:"log-level" default:"info" help:"Minimum log level: debug, info, warn or error."`
	// LogFormat selects the log encoding.
	LogFormat string `key:"log-format" default:"auto" help:"Log encoding: json, console, or auto (console for the embedded demo, json otherwise)."`
}

// Warnings returns what in c is valid but probably not meant, one sentence
// each naming its key; the sidecar logs them at start. An upstream URL with
// no path sends every request to "/", while MCP servers conventionally
// serve streamable HTTP at /mcp, the injector's default upstream-path.
func (c *Config) Warnings() []string {
	var out []string
	if u, err := url.Parse(c.Upstream); c.Upstream != "" && err == nil && u.Host != "" && u.Path == "" && u.Opaque == "" {
		out = append(out, fmt.Sprintf("upstream: %s://%s has no path, so requests go to \"/\"; MCP servers usually serve at /mcp (the injector's default upstream-path): write the path explicitly", u.Scheme, u.Host))
	}
	return out
}

// Validate reports every problem with c at once, joined, each naming its key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		bad("listen", "%q is not host:port", c.Listen)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			bad("metrics-listen", "%q is not host:port", c.MetricsListen)
		}
	}
	if c.Upstream != "" {
		// The URL may hold credentials (userinfo, a token in the query):
		// messages quote it redacted, and not at all when it does not parse.
		u, err := url.Parse(c.Upstream)
		switch {
		case err != nil:
			bad("upstream", "not a URL")
		case u.Scheme != "http" && u.Scheme != "https":
			bad("upstream", "%q: scheme must be http or https", RedactURL(c.Upstream))
		case u.Host == "":
			bad("upstream", "%q has no host", RedactURL(c.Upstream))
		}
	}
	if c.UpstreamCommand != "" {
		switch argv, err := c.UpstreamArgv(); {
		case err != nil:
			bad("upstream-command", "%v", err)
		case c.Upstream != "":
			bad("upstream-command", "set together with upstream: a stdio command is the upstream, so leave upstream empty")
		case len(argv) == 0 || argv[0] == "":
			bad("upstream-command", "names no program")
		}
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"upstream-timeout", c.UpstreamTimeout}, {"dial-timeout", c.DialTimeout}, {"drain-timeout", c.DrainTimeout},
		{"client-body-timeout", c.ClientBodyTimeout}, {"send-timeout", c.SendTimeout}} {
		if d.v <= 0 {
			bad(d.key, "must be positive, got %s", d.v)
		}
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay > 10*time.Minute {
		bad("shutdown-delay", "must be between 0s and 10m, got %s", c.ShutdownDelay)
	}
	if c.MaxBodyBytes <= 0 {
		bad("max-body-bytes", "must be positive, got %d", c.MaxBodyBytes)
	}
	if c.MaxProcs < 0 {
		bad("max-procs", "must be 0 (Go's default) or more, got %d", c.MaxProcs)
	}
	if c.MaxHeaderBytes <= 0 {
		bad("max-header-bytes", "must be positive, got %d", c.MaxHeaderBytes)
	}
	if c.MaxJSONDepth <= 0 {
		bad("max-json-depth", "must be positive, got %d", c.MaxJSONDepth)
	}
	if c.MaxEventBytes <= 0 {
		bad("max-event-bytes", "must be positive, got %d", c.MaxEventBytes)
	}
	if c.PageSize <= 0 || c.PageSize > 10000 {
		bad("page-size", "must be between 1 and 10000, got %d", c.PageSize)
	}
	if c.CacheTTLMs < 0 {
		bad("cache-ttl-ms", "must not be negative, got %d", c.CacheTTLMs)
	}
	if c.CacheScope != "private" && c.CacheScope != "public" {
		bad("cache-scope", "%q is neither private nor public", c.CacheScope)
	}
	if c.PluginLayout != "tree" && c.PluginLayout != "configmaps" {
		bad("plugin-layout", "%q is neither tree nor configmaps", c.PluginLayout)
	}
	if c.LimitMode != "skip" && c.LimitMode != "warn" {
		bad("limit-mode", "%q is neither skip nor warn", c.LimitMode)
	}
	if c.FrontmatterPortability != "skip" && c.FrontmatterPortability != "warn" {
		bad("frontmatter-portability", "%q is neither skip nor warn", c.FrontmatterPortability)
	}
	if c.AuthGate != "upstream" && c.AuthGate != "none" {
		bad("auth-gate", "%q is neither upstream nor none", c.AuthGate)
	}
	if strings.TrimSpace(c.AuthHeaders) == "" && c.AuthGate == "upstream" {
		bad("auth-headers", "must name at least one header when auth-gate is upstream")
	}
	if c.AuthCacheTTL <= 0 {
		bad("auth-cache-ttl", "must be positive, got %s", c.AuthCacheTTL)
	}
	if _, err := c.TrustedProxyPrefixes(); err != nil {
		bad("trusted-proxies", "%v", err)
	}
	if c.CallerSharePercent < 1 || c.CallerSharePercent > 100 {
		bad("caller-share-percent", "must be between 1 and 100, got %d", c.CallerSharePercent)
	}
	if c.HTTPServer != "own" && c.HTTPServer != "net/http" {
		bad("http-server", "%q is neither own nor net/http", c.HTTPServer)
	}
	if c.EraBridge != "auto" && c.EraBridge != "off" {
		bad("era-bridge", "%q is neither auto nor off", c.EraBridge)
	}
	if c.UpstreamFiles != "auto" && c.UpstreamFiles != "off" {
		bad("upstream-files", "%q is neither auto nor off", c.UpstreamFiles)
	}
	if c.ToolsCacheTTL < 0 {
		bad("tools-cache-ttl", "must not be negative, got %s", c.ToolsCacheTTL)
	}
	for _, v := range c.HostCompatList() {
		if v != "prompts" && v != "tools" {
			bad("host-compat", "%q is neither prompts nor tools", v)
		}
	}
	if !validNamePrefix(c.HostCompatPrefix) {
		bad("host-compat-prefix", "%q: use 1 to 32 letters, digits, _ or -", c.HostCompatPrefix)
	}
	if c.UpstreamFilesTTL <= 0 {
		bad("upstream-files-ttl", "must be positive, got %s", c.UpstreamFilesTTL)
	}
	if c.PollInterval <= 0 {
		bad("poll-interval", "must be positive, got %s", c.PollInterval)
	}
	if !ValidLogLevel(c.LogLevel) {
		bad("log-level", "%q is not one of debug, info, warn, error", c.LogLevel)
	}
	if !oneOf(c.LogFormat, "auto", "json", "console") {
		bad("log-format", "%q is not one of auto, json, console", c.LogFormat)
	}
	return errors.Join(errs...)
}

// ValidLogLevel reports whether v is a value log-level accepts: debug,
// info, warn or error, in any ASCII case. zap parses more (warning, fatal,
// panic), which the sidecar refuses at start and so at run time too.
func ValidLogLevel(v string) bool { return oneOf(v, "debug", "info", "warn", "error") }

// oneOf reports whether v is one of allowed, in any ASCII case. Only ASCII
// is folded: strings.EqualFold alone would take a long s (U+017F) for "s"
// and the Kelvin sign for "k", and the value's users compare in ASCII.
func oneOf(v string, allowed ...string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] >= utf8.RuneSelf {
			return false
		}
	}
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return true
		}
	}
	return false
}

// UpstreamArgv returns UpstreamCommand decoded: nil when it is empty, an
// error naming what is wrong when it is not a JSON array of strings.
func (c *Config) UpstreamArgv() ([]string, error) {
	if c.UpstreamCommand == "" {
		return nil, nil
	}
	var argv []string
	if err := json.Unmarshal([]byte(c.UpstreamCommand), &argv); err != nil {
		return nil, errors.New(`not a JSON array of strings, like ["npx","@modelcontextprotocol/server-everything","stdio"]`)
	}
	return argv, nil
}

// RedactURL returns raw, a URL, fit for a log line or a message: without
// its userinfo and with its query and fragment replaced by REDACTED, since
// either may carry a credential. A value that does not parse as a URL is
// replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "REDACTED"
	}
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if u.Opaque != "" {
		return u.Scheme + ":REDACTED"
	}
	s := r.String()
	if u.RawQuery != "" || u.ForceQuery {
		s += "?REDACTED"
	}
	if u.Fragment != "" {
		s += "#REDACTED"
	}
	return s
}

// HostCompatList returns HostCompat split on commas, trimmed.
func (c *Config) HostCompatList() []string { return splitList(c.HostCompat) }

// validNamePrefix reports whether p may start a tool name: 1 to 32 of the
// characters tool names allow everywhere hosts pass them to models
// (letters, digits, _ and -; the MCP spec also allows ".", which some
// model APIs refuse).
func validNamePrefix(p string) bool {
	if p == "" || len(p) > 32 {
		return false
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// AuthHeaderList returns AuthHeaders split on commas, trimmed.
func (c *Config) AuthHeaderList() []string { return splitList(c.AuthHeaders) }

// AllowedHostList returns AllowedHosts split on commas, trimmed.
func (c *Config) AllowedHostList() []string { return splitList(c.AllowedHosts) }

// TrustedProxyPrefixes returns TrustedProxies as prefixes: each entry a
// CIDR prefix, or one address (a /32 or /128).
func (c *Config) TrustedProxyPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range splitList(c.TrustedProxies) {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("%q is neither a CIDR prefix nor an address", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// AllowedOriginList returns AllowedOrigins split on commas, trimmed.
func (c *Config) AllowedOriginList() []string { return splitList(c.AllowedOrigins) }

func splitList(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}
