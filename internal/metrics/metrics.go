// Package metrics owns the sidecar's Prometheus metrics: their names, help,
// labels and the small fixed sets their label values come from, so that no
// request, tool name or URI can grow the number of series.
//
// Metrics are built on a registry the caller creates (run, or a test) and
// passes in; the package must not register anything globally, hold state of
// its own, or take a label value from outside its fixed sets. A nil
// *Metrics is valid everywhere and records nothing.
package metrics

import (
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Namespace prefixes every metric name.
const Namespace = "skills_sidecar"

// Metrics are the sidecar's collectors. Create them with New.
type Metrics struct {
	requests             *prometheus.CounterVec
	requestDuration      *prometheus.HistogramVec
	upstreamResponse     *prometheus.HistogramVec
	declarationsInjected *prometheus.CounterVec
	catalogSkills        prometheus.Gauge
	catalogAgents        prometheus.Gauge
	catalogReloads       *prometheus.CounterVec
	catalogLastReload    prometheus.Gauge
	catalogProblems      *prometheus.GaugeVec
	catalogAmbiguous     *prometheus.GaugeVec
	catalogDropped       *prometheus.CounterVec
	digestRefreshes      prometheus.Counter
	digestMismatches     prometheus.Counter
	hashedBytes          prometheus.Counter
	activeStreams        prometheus.Gauge
	authVerdicts         *prometheus.CounterVec
	authCacheHits        prometheus.Counter
	notifications        *prometheus.CounterVec
	upstreamEra          *prometheus.GaugeVec
	bridgeSessions       prometheus.Gauge
	stdioProcesses       prometheus.Gauge
	stdioRestarts        prometheus.Counter
	stdioEvents          *prometheus.CounterVec
	callerRefusals       *prometheus.CounterVec
	hostCompatCollisions *prometheus.CounterVec

	series series // the per-request children, bound on first use
}

// New builds the metrics and registers them, with the Go and process
// collectors and build info, on reg.
func New(reg prometheus.Registerer, version string) *Metrics {
	buckets := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "requests_total",
			Help: "MCP requests handled, by method (a fixed list plus other), route (local: answered by the sidecar; upstream: forwarded) and outcome (HTTP status class, or aborted)."},
			[]string{"method", "route", "outcome"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "request_duration_seconds",
			Help: "Time from a request's arrival to the end of its reply (streams included), by method, route and outcome (as in requests_total).", Buckets: buckets},
			[]string{"method", "route", "outcome"}),
		upstreamResponse: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "upstream_response_seconds",
			Help: "Time the upstream took to send response headers, by method; compare with request_duration_seconds to see the sidecar's own cost.", Buckets: buckets},
			[]string{"method"}),
		declarationsInjected: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "declarations_injected_total",
			Help: "Handshake replies into which the extension declarations were spliced, by era (legacy: initialize; modern: server/discover)."},
			[]string{"era"}),
		catalogSkills: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "catalog_skills",
			Help: "Skills in the catalog being served."}),
		catalogAgents: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "catalog_agents",
			Help: "Agents in the catalog being served."}),
		catalogReloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "catalog_reloads_total",
			Help: "Plugin folder loads, by outcome (success, failure: the last good catalog kept)."},
			[]string{"outcome"}),
		catalogLastReload: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "catalog_last_reload_timestamp_seconds",
			Help: "Unix time of the last successful plugin folder load."}),
		catalogProblems: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "catalog_problems",
			Help: "Plugin items skipped or warned in the catalog being served, by kind (the lint kinds) and severity."},
			[]string{"kind", "severity"}),
		catalogAmbiguous: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "catalog_frontmatter_ambiguous",
			Help: "SKILL.md files in the catalog being served whose frontmatter YAML 1.1 hosts (PyYAML) read differently, by severity (skip; warn: served under frontmatter-portability warn). Also counted in catalog_problems as kind frontmatter."},
			[]string{"severity"}),
		catalogDropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "catalog_dropped_total",
			Help: "Skills and agents the previous catalog served that a successful reload no longer serves, by kind (skill, agent): removed by the author, or skipped because an update broke them."},
			[]string{"kind"}),
		digestRefreshes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "digest_refreshes_total",
			Help: "Reads of catalog files the upstream serves, made through the upstream to digest their bytes."}),
		digestMismatches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "digest_mismatches_total",
			Help: "Forwarded reads of catalog URIs whose bytes differed from the published digest (the entry was updated)."}),
		hashedBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "hashed_bytes_total",
			Help: "Bytes of upstream-served skill files hashed."}),
		activeStreams: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "active_streams",
			Help: "SSE streams open through the sidecar (GET streams and streamed POST replies)."}),
		authVerdicts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "auth_verdicts_total",
			Help: "Auth gate decisions for requests the sidecar answers itself, by verdict (allowed, refused, error)."},
			[]string{"verdict"}),
		authCacheHits: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "auth_cache_hits_total",
			Help: "Auth gate decisions answered from the verdict cache."}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "notifications_total",
			Help: "Change notifications the sidecar sent on its own behalf, by method (resources/list_changed, agents/list_changed, resources/updated, and prompts/list_changed and tools/list_changed with host-compat) and outcome (sent: written to a stream; coalesced: folded into one still pending on a slow stream)."},
			[]string{"method", "outcome"}),
		upstreamEra: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "upstream_era",
			Help: "1 for the protocol eras the upstream was last learned to speak (unknown, legacy, modern or dual), 0 for the others."},
			[]string{"era"}),
		bridgeSessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "bridge_sessions",
			Help: "Sessions the era bridge holds: legacy upstream sessions for 2026-07-28 callers, or sessions it minted for legacy callers of a modern-only upstream that hold state on this replica (a log level, subscriptions, GET streams; capped by the bridge; see docs/bridge.md)."}),
		stdioProcesses: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "stdio_processes",
			Help: "Processes of a stdio upstream (upstream-command) running: one per legacy session, the one shared by 2026-07-28 requests, and the start-up probe's."}),
		stdioRestarts: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "stdio_restarts_total",
			Help: "Times the shared process of a stdio upstream ended unasked and was started again (after a backoff)."}),
		stdioEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "stdio_events_total",
			Help: "What a stdio upstream's processes did that a client does not see, by event: skipped_line (stdout not JSON-RPC), line_too_long, dropped_message (no stream to take it, past a slow reader's queue bound, or past its share of the bytes held for slow readers, a reply then replaced by the refusal), unmatched_reply, timeout (a request cancelled), refused (a new session refused: every session it could replace busy), evicted (an idle session ended to make room), stderr_dropped (over the log budget)."},
			[]string{"event"}),
		callerRefusals: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "caller_refusals_total",
			Help: "Places in a bounded table callers share (held sessions, pending calls, listen streams, subscriptions) refused, by table and refusal (share: the caller held its own share, HTTP 429; full: the table, or a bound of one session's own, was full, HTTP 503)."},
			[]string{"table", "refusal"}),
		hostCompatCollisions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "host_compat_collisions_total",
			Help: "Prompts and tools of host-compat left out of a listing because the upstream uses the same name for that caller, by kind (prompt, tool)."},
			[]string{"kind"}),
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info",
		Help: "Always 1; labels carry the sidecar's version and Go version."}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(m.requests, m.requestDuration, m.upstreamResponse, m.declarationsInjected, m.catalogSkills, m.catalogAgents,
		m.catalogReloads, m.catalogLastReload, m.catalogProblems, m.catalogAmbiguous, m.catalogDropped, m.digestRefreshes, m.digestMismatches, m.hashedBytes, m.activeStreams,
		m.authVerdicts, m.authCacheHits, m.notifications, m.upstreamEra, m.bridgeSessions, m.stdioProcesses, m.stdioRestarts, m.stdioEvents, m.callerRefusals, m.hostCompatCollisions, buildInfo,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, v := range []string{"allowed", "refused", "error"} {
		m.authVerdicts.WithLabelValues(v)
	}
	for _, v := range []string{"success", "failure"} {
		m.catalogReloads.WithLabelValues(v)
	}
	for _, v := range []string{"skill", "agent"} {
		m.catalogDropped.WithLabelValues(v)
	}
	for _, v := range []string{"skip", "warn"} {
		m.catalogAmbiguous.WithLabelValues(v)
	}
	for _, v := range []string{"legacy", "modern"} {
		m.declarationsInjected.WithLabelValues(v)
	}
	for _, v := range []string{"prompt", "tool"} {
		m.hostCompatCollisions.WithLabelValues(v)
	}
	for _, method := range notificationMethods {
		for _, o := range []string{"sent", "coalesced"} {
			m.notifications.WithLabelValues(method, o)
		}
	}
	for _, e := range StdioEvents {
		m.stdioEvents.WithLabelValues(e)
	}
	m.UpstreamEra("unknown")
	return m
}

// StdioEvents are the values of stdio_events_total's event label.
var StdioEvents = []string{"skipped_line", "line_too_long", "dropped_message", "unmatched_reply", "timeout", "refused", "evicted", "stderr_dropped"}

// StdioProcesses records the stdio upstream's running processes.
func (m *Metrics) StdioProcesses(n int) {
	if m == nil {
		return
	}
	m.stdioProcesses.Set(float64(n))
}

// StdioRestart counts a restart of the stdio upstream's shared process.
func (m *Metrics) StdioRestart() {
	if m == nil {
		return
	}
	m.stdioRestarts.Inc()
}

// StdioEvent counts one of StdioEvents; another value is not recorded.
func (m *Metrics) StdioEvent(event string) {
	if m == nil || !slices.Contains(StdioEvents, event) {
		return
	}
	m.stdioEvents.WithLabelValues(event).Inc()
}

// UpstreamEras are the values of upstream_era's era label.
var UpstreamEras = []string{"unknown", "legacy", "modern", "dual"}

// UpstreamEra records the eras the upstream was learned to speak, one of
// UpstreamEras.
func (m *Metrics) UpstreamEra(era string) {
	if m == nil {
		return
	}
	for _, v := range UpstreamEras {
		val := 0.0
		if v == era {
			val = 1
		}
		m.upstreamEra.WithLabelValues(v).Set(val)
	}
}

// BridgeSessions records the legacy sessions the era bridge holds.
func (m *Metrics) BridgeSessions(n int) {
	if m == nil {
		return
	}
	m.bridgeSessions.Set(float64(n))
}

// CallerRefusalTable makes the series of a table's refusals exist at 0
// (package caller calls it for each table it builds; table names are
// constants of the code, so the label stays bounded).
func (m *Metrics) CallerRefusalTable(table string) {
	if m == nil {
		return
	}
	m.callerRefusals.WithLabelValues(table, "share")
	m.callerRefusals.WithLabelValues(table, "full")
}

// CallerRefusal counts a place of table refused to a caller: full when the
// table was full, otherwise over the caller's own share.
func (m *Metrics) CallerRefusal(table string, full bool) {
	if m == nil {
		return
	}
	r := "share"
	if full {
		r = "full"
	}
	m.callerRefusals.WithLabelValues(table, r).Inc()
}

// methodLabels are the method label's values; "other" stands for the rest.
var methodLabels = [...]string{
	"initialize", "server/discover", "ping",
	"tools/list", "tools/call", "prompts/list", "prompts/get",
	"resources/list", "resources/read", "resources/templates/list", "resources/directory/read",
	"resources/subscribe", "resources/unsubscribe", "subscriptions/listen", "completion/complete",
	"skills/list", "skills/get", "agents/list", "agents/get",
	"notification", "response", "batch", "invalid", "GET", "DELETE",
	"other",
}

// methodIndex is each method label's place in methodLabels; built once, read only.
var methodIndex = func() map[string]int {
	ix := make(map[string]int, len(methodLabels))
	for i, l := range methodLabels {
		ix[l] = i
	}
	return ix
}()

// methodSlot is MethodLabel and the label's place in methodLabels.
func methodSlot(method string) (string, int) {
	if i, ok := methodIndex[method]; ok {
		return method, i
	}
	return "other", len(methodLabels) - 1
}

// MethodLabel maps a JSON-RPC method (or an HTTP verb for GET and DELETE)
// to its bounded label value.
func MethodLabel(method string) string {
	l, _ := methodSlot(method)
	return l
}

// outcomeLabels are OutcomeLabel's values, in the order of outcomeSlot.
var outcomeLabels = [...]string{"aborted", "2xx", "3xx", "4xx", "5xx"}

// outcomeSlot is the place of status's outcome in outcomeLabels.
func outcomeSlot(status int) int {
	switch {
	case status == 0:
		return 0
	case status < 300:
		return 1
	case status < 400:
		return 2
	case status < 500:
		return 3
	default:
		return 4
	}
}

// OutcomeLabel maps an HTTP status to its class; 0 means the reply was
// aborted before a status was sent.
func OutcomeLabel(status int) string {
	return outcomeLabels[outcomeSlot(status)]
}

// routeLabels are the routes a request takes (the proxy's); another route
// is looked up by its labels on every request.
var routeLabels = [...]string{"local", "upstream"}

// requestSeries are the children of one method, route and outcome.
type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// upstreamSeries is the child of one method label.
type upstreamSeries struct{ duration prometheus.Observer }

// series holds the children of the per-request metrics, bound on first
// use: a request then costs no hashing of label values and no lock, where
// WithLabelValues pays both each time. A slot is filled once (two requests
// may both bind it: prometheus hands both the same child); a series
// appears in the exposition when first recorded, as before.
type series struct {
	requests [len(methodLabels) * len(routeLabels) * len(outcomeLabels)]atomic.Pointer[requestSeries]
	upstream [len(methodLabels)]atomic.Pointer[upstreamSeries]
}

// Request records one finished request.
func (m *Metrics) Request(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	method, mi := methodSlot(method)
	oi := outcomeSlot(status)
	ri := slices.Index(routeLabels[:], route)
	if ri < 0 {
		m.requests.WithLabelValues(method, route, outcomeLabels[oi]).Inc()
		m.requestDuration.WithLabelValues(method, route, outcomeLabels[oi]).Observe(d.Seconds())
		return
	}
	slot := &m.series.requests[(mi*len(routeLabels)+ri)*len(outcomeLabels)+oi]
	s := slot.Load()
	if s == nil {
		s = &requestSeries{
			count: m.requests.WithLabelValues(method, route, outcomeLabels[oi]),
			// Latency by outcome too: a fast 4xx refusal and a slow 2xx
			// stream are different costs, and mixing them hides both.
			duration: m.requestDuration.WithLabelValues(method, route, outcomeLabels[oi]),
		}
		slot.Store(s)
	}
	s.count.Inc()
	s.duration.Observe(d.Seconds())
}

// UpstreamResponse records the upstream's time to response headers.
func (m *Metrics) UpstreamResponse(method string, d time.Duration) {
	if m == nil {
		return
	}
	method, mi := methodSlot(method)
	slot := &m.series.upstream[mi]
	s := slot.Load()
	if s == nil {
		s = &upstreamSeries{duration: m.upstreamResponse.WithLabelValues(method)}
		slot.Store(s)
	}
	s.duration.Observe(d.Seconds())
}

// DeclarationInjected records a spliced declaration; era is "legacy" or "modern".
func (m *Metrics) DeclarationInjected(era string) {
	if m == nil {
		return
	}
	m.declarationsInjected.WithLabelValues(era).Inc()
}

// StreamOpened and StreamClosed track active SSE streams.
func (m *Metrics) StreamOpened() {
	if m != nil {
		m.activeStreams.Inc()
	}
}

// StreamClosed marks the end of a stream StreamOpened counted.
func (m *Metrics) StreamClosed() {
	if m != nil {
		m.activeStreams.Dec()
	}
}

// Problem is one catalog problem's labels. Ambiguous marks a frontmatter
// problem that is only a YAML 1.1 ambiguity (catalog.Problem.Ambiguous).
type Problem struct {
	Kind, Severity string
	Ambiguous      bool
}

// CatalogReload records a catalog load: ok, and for a success the counts and the
// problems of the catalog now served.
func (m *Metrics) CatalogReload(ok bool, at time.Time, skills, agents int, problems []Problem) {
	if m == nil {
		return
	}
	if !ok {
		m.catalogReloads.WithLabelValues("failure").Inc()
		return
	}
	m.catalogReloads.WithLabelValues("success").Inc()
	m.catalogLastReload.Set(float64(at.UnixNano()) / 1e9)
	m.catalogSkills.Set(float64(skills))
	m.catalogAgents.Set(float64(agents))
	m.catalogProblems.Reset()
	ambiguous := map[string]int{"skip": 0, "warn": 0}
	for _, p := range problems {
		m.catalogProblems.WithLabelValues(p.Kind, p.Severity).Inc()
		if p.Ambiguous {
			ambiguous[p.Severity]++
		}
	}
	for sev, n := range ambiguous {
		m.catalogAmbiguous.WithLabelValues(sev).Set(float64(n))
	}
}

// CatalogDropped records the skills and agents a successful reload stopped serving.
func (m *Metrics) CatalogDropped(skills, agents int) {
	if m != nil {
		m.catalogDropped.WithLabelValues("skill").Add(float64(skills))
		m.catalogDropped.WithLabelValues("agent").Add(float64(agents))
	}
}

// DigestRefresh, DigestMismatch and HashedBytes record the upstream-served file path.
func (m *Metrics) DigestRefresh() {
	if m != nil {
		m.digestRefreshes.Inc()
	}
}

// DigestMismatch records a forwarded read whose bytes differed.
func (m *Metrics) DigestMismatch() {
	if m != nil {
		m.digestMismatches.Inc()
	}
}

// HashedBytes records n bytes hashed.
func (m *Metrics) HashedBytes(n int64) {
	if m != nil {
		m.hashedBytes.Add(float64(n))
	}
}

// HostCompatCollision records a host-compat entry left out of a listing
// because the upstream uses its name; kind is "prompt" or "tool" (any
// other records nothing).
func (m *Metrics) HostCompatCollision(kind string) {
	if m != nil && (kind == "prompt" || kind == "tool") {
		m.hostCompatCollisions.WithLabelValues(kind).Inc()
	}
}

// AuthVerdict records an auth gate decision; cached tells a cache hit.
func (m *Metrics) AuthVerdict(verdict string, cached bool) {
	if m == nil {
		return
	}
	m.authVerdicts.WithLabelValues(verdict).Inc()
	if cached {
		m.authCacheHits.Inc()
	}
}

// notificationMethods are the label values of notifications_total: the
// notifications package notify sends, without their "notifications/" prefix.
var notificationMethods = []string{"resources/list_changed", "agents/list_changed", "resources/updated", "prompts/list_changed", "tools/list_changed"}

// Notification records one of the sidecar's own notifications (its method,
// with or without the "notifications/" prefix) sent or coalesced. A method
// outside the fixed set records nothing.
func (m *Metrics) Notification(method string, coalesced bool) {
	if m == nil {
		return
	}
	method = strings.TrimPrefix(method, "notifications/")
	for _, n := range notificationMethods {
		if n == method {
			o := "sent"
			if coalesced {
				o = "coalesced"
			}
			m.notifications.WithLabelValues(method, o).Inc()
			return
		}
	}
}
