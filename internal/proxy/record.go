package proxy

import (
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// Messages of the per-request log line, one per request. Operators and the
// soak count lines by message, so these are part of the interface.
const (
	msgRequest = "request"         // debug: every request that ended well
	msgRefused = "request refused" // info: the sidecar refused the caller
	msgFailed  = "request failed"  // warn: 5xx, no reply, or a reply cut short
)

// record counts and logs a request that has ended: exactly one line per
// request, at a level chosen by levelFor, carrying method, era, route,
// outcome, status, upstream status, duration and (for failures) the error.
// The line never carries header values, ids or bodies (no tokens,
// raw session ids or skill bodies).
func (p *Proxy) record(pl *plan, route string, status int) {
	d := time.Since(pl.start)
	p.opts.Metrics.Request(pl.method, route, status, d)
	lvl, msg := levelFor(route, status, pl.err != nil)
	// Check first: at the default level the debug line costs nothing but
	// this call, and the era is only worked out for a line that is written.
	ce := p.log.Check(lvl, msg)
	if ce == nil {
		return
	}
	upstream := zap.Skip()
	if route == routeUpstream {
		upstream = zap.Int("upstream_status", pl.upstreamStatus)
	}
	failure := zap.Skip()
	if pl.err != nil {
		failure = zap.Error(pl.err)
	}
	ce.Write(zap.String("method", metrics.MethodLabel(pl.method)), zap.String("era", pl.era()),
		zap.String("route", route), zap.String("outcome", metrics.OutcomeLabel(status)),
		zap.Int("status", status), upstream, zap.Duration("duration", d), failure)
}

// levelFor picks the level and message of a request's line. Failures (a
// 5xx, no status at all, or an upstream error however the reply began) are
// warn. The sidecar's own refusals of a caller (route local: the auth
// gate's 401 or 403, the Origin check's 403, a body over the limit's 413)
// are info, so an operator at the default level sees who is being turned
// away without seeing every request; any other 4xx (a malformed body, an
// unknown skill) is the client's mistake and, like every success and every
// status the upstream chose itself, is debug.
func levelFor(route string, status int, failed bool) (zapcore.Level, string) {
	switch {
	case failed || status == 0 || status >= 500:
		return zapcore.WarnLevel, msgFailed
	case route == routeLocal && refusal(status):
		return zapcore.InfoLevel, msgRefused
	default:
		return zapcore.DebugLevel, msgRequest
	}
}

func refusal(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusRequestEntityTooLarge
}

// Eras of a request, for logs; the first two are also the era label of the
// declarations metric.
const (
	eraLegacy  = "legacy"  // sessions: initialize, Mcp-Session-Id, GET streams
	eraModern  = "modern"  // 2026-07-28, stateless (SEP-2575)
	eraUnknown = "unknown" // refused before its body said, and no header did
)

// era says which protocol era a request belongs to, by the one rule
// (wire.ClaimsModern): a request whose params carry _meta with a protocol
// version or client capabilities is modern, and so is one whose
// MCP-Protocol-Version header names 2026-07-28 or later; anything else that
// says which version it speaks (a lower header, a JSON-RPC body without
// that _meta, a GET stream or a DELETE, which only sessions have) is
// legacy. It reads only what serve kept in the plan, and is worked out only
// for a line that is logged.
func (pl *plan) era() string {
	switch {
	case wire.ClaimsModernVersion(pl.version, pl.params):
		return eraModern
	case pl.version != "", pl.parsed(), pl.method == http.MethodGet, pl.method == http.MethodDelete:
		return eraLegacy
	}
	return eraUnknown
}
