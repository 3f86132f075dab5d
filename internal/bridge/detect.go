package bridge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
)

// Detector learns the upstream's eras and keeps them current.
//
// It probes at start (every RetryInterval until an answer is read) and then
// every Interval, so an upstream that restarts as another server, or comes
// back after being unreachable, is re-learned; an unreachable upstream
// keeps the eras last learned (its reply, when it returns, is what
// re-decides them). Probes carry no caller's credentials: an upstream that
// refuses anonymous probes stays unknown, and then nothing is bridged and
// the sidecar behaves as it does without a bridge.
type Detector struct {
	// URL is the upstream MCP endpoint.
	URL *url.URL
	// Client sends the probes (following no redirect: a 3xx is the
	// upstream's answer); nil means http.DefaultClient.
	Client *http.Client
	// Interval is the re-probe period once known; 0 means 30s.
	Interval time.Duration
	// RetryInterval is the probe period while unknown; 0 means 2s.
	RetryInterval time.Duration
	// Once stops the probes after the first settled one: both wires
	// answered (a failed initialize counts only when the server answered
	// it below HTTP 500), or a discover that lists a legacy version. For a
	// stdio upstream: the command the sidecar runs does not turn into
	// another server while it runs, and each legacy probe costs it a
	// process start.
	Once bool
	// Logger gets one line each time the eras change; nil logs nothing.
	Logger *zap.Logger
	// OnChange, when set, is called with the new eras each time they change.
	OnChange func(Eras)

	// eras is the value last learned, replaced whole (never mutated), so
	// that every request's look at it is one atomic load.
	eras   atomic.Pointer[Eras]
	probed atomic.Bool
}

// Probed reports whether a probe of Run's has got an HTTP answer from the
// upstream, whatever it learned: until then a request the bridge should
// carry may pass through untranslated, so readiness waits for it.
func (d *Detector) Probed() bool { return d != nil && d.probed.Load() }

// Current returns the eras last learned.
func (d *Detector) Current() Eras {
	if d == nil {
		return Eras{}
	}
	if e := d.eras.Load(); e != nil {
		return *e
	}
	return Eras{}
}

// Set records eras as learned (Probe's result; tests set it directly).
func (d *Detector) Set(e Eras) {
	var old Eras
	if p := d.eras.Swap(&e); p != nil {
		old = *p
	}
	if old.Label() == e.Label() && old.String() == e.String() {
		return
	}
	if d.Logger != nil {
		d.Logger.Info("upstream protocol eras learned", zap.String("eras", e.Label()), zap.Strings("versions", e.Versions), zap.String("via", e.Via))
	}
	if d.OnChange != nil {
		d.OnChange(e)
	}
}

// Run probes until ctx ends (with Once, until a probe settled them).
func (d *Detector) Run(ctx context.Context) {
	interval, retry := d.Interval, d.RetryInterval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	if retry <= 0 {
		retry = 2 * time.Second
	}
	for {
		wait := interval
		e, settled, err := d.probe(ctx)
		if err == nil {
			d.Set(e)
		} else if !d.Current().Known {
			wait = retry
		}
		// Probed once the upstream answered, whatever it said; a probe that
		// never reached it (the upstream not up yet) does not count.
		if !errors.As(err, new(noAnswer)) {
			d.probed.Store(true)
		}
		if d.Once && settled {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// probeClientInfo names the sidecar in its probes.
const probeClientInfo = `{"name":"skills-sidecar-era-probe","version":"1"}`

// Probe asks the upstream once: server/discover on the modern wire, then
// initialize on the legacy one unless the first reply decided. A discover
// that found the modern era only is followed by an initialize too, since a
// dual-era server may list only its modern version there. The probe's
// legacy session is ended with DELETE.
func (d *Detector) Probe(ctx context.Context) (Eras, error) {
	e, _, err := d.probe(ctx)
	return e, err
}

// probe is Probe, also telling whether its answer is settled: the discover
// listed a legacy version, or the initialize got an answer below HTTP 500
// (a result, or the server's own refusal of the legacy wire). A modern
// answer whose initialize failed in transit or with 5xx (a stdio server
// whose process could not start) is not: it may yet be dual.
func (d *Detector) probe(ctx context.Context) (Eras, bool, error) {
	discover := `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":` + probeClientInfo + `}}}`
	h := http.Header{"Mcp-Protocol-Version": {ModernVersion}, "Mcp-Method": {"server/discover"}}
	ct, body, _, _, err := d.post(ctx, h, discover)
	if err != nil {
		return Eras{}, false, err
	}
	modern, derr := FromDiscover(ct, body)
	if derr == nil && modern.Legacy {
		return modern, true, nil
	}
	initialize := `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","method":"initialize","params":{` +
		`"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":` + probeClientInfo + `}}`
	ct, body, sid, status, err := d.post(ctx, http.Header{}, initialize)
	if err != nil {
		if derr == nil {
			return modern, false, nil
		}
		return Eras{}, false, err
	}
	if sid != "" {
		d.endSession(ctx, sid)
	}
	settled := status < http.StatusInternalServerError
	legacy, lerr := FromInitialize(ct, body)
	switch {
	case derr == nil && lerr == nil:
		return Merge(modern, legacy), true, nil
	case derr == nil:
		return modern, settled, nil
	case lerr == nil:
		return legacy, true, nil
	}
	return Eras{}, false, lerr
}

// noAnswer is a probe that got no HTTP answer: the upstream was not
// reached (refused, reset, timed out before its headers).
type noAnswer struct{ err error }

func (e noAnswer) Error() string { return e.err.Error() }
func (e noAnswer) Unwrap() error { return e.err }

// client is Client following no redirect. A redirect is the upstream's
// answer, read as any other (no result in its body: not this era); its
// target, another server, never decides what the upstream speaks.
func (d *Detector) client() *http.Client {
	return onbehalf.Unredirected(d.Client)
}

// post sends one probe and returns the reply's media type, body, session
// id and HTTP status. Any HTTP status is an answer: the body decides. The probes
// are the sidecar's own, made for no caller (at start and on a timer,
// with no caller's credentials, identity or trace), so they are built
// here and not by package onbehalf, the builder of requests made for a
// caller (onebuilder_test.go at the repository's root allows them).
func (d *Detector) post(ctx context.Context, h http.Header, body string) (ct string, b []byte, sid string, status int, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL.String(), bytes.NewReader([]byte(body)))
	if err != nil {
		return "", nil, "", 0, err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := d.client().Do(req)
	if err != nil {
		return "", nil, "", 0, noAnswer{err}
	}
	defer resp.Body.Close()
	b, err = readUntilReply(resp, maxProbeReply)
	if err != nil {
		return "", nil, "", 0, err
	}
	return resp.Header.Get("Content-Type"), b, resp.Header.Get("Mcp-Session-Id"), resp.StatusCode, nil
}

func (d *Detector) endSession(ctx context.Context, sid string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, d.URL.String(), nil)
	if err != nil {
		return
	}
	req.Header.Set("Mcp-Session-Id", sid)
	if resp, err := d.client().Do(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
	}
}
