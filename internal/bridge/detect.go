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
	// Client sends the probes; nil means http.DefaultClient.
	Client *http.Client
	// Interval is the re-probe period once known; 0 means 30s.
	Interval time.Duration
	// RetryInterval is the probe period while unknown; 0 means 2s.
	RetryInterval time.Duration
	// Once stops the probes once the eras are known. For a stdio upstream:
	// the command the sidecar runs does not turn into another server while
	// it runs, and each legacy probe costs it a process start.
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

// Run probes until ctx ends (with Once, until the eras are known).
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
		e, err := d.Probe(ctx)
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
		if d.Once && d.Current().Known {
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
	discover := `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + ModernVersion + `","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":` + probeClientInfo + `}}}`
	h := http.Header{"Mcp-Protocol-Version": {ModernVersion}, "Mcp-Method": {"server/discover"}}
	ct, body, _, err := d.post(ctx, h, discover)
	if err != nil {
		return Eras{}, err
	}
	modern, derr := FromDiscover(ct, body)
	if derr == nil && modern.Legacy {
		return modern, nil
	}
	initialize := `{"jsonrpc":"2.0","id":"skills-sidecar-era-probe","method":"initialize","params":{` +
		`"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":` + probeClientInfo + `}}`
	ct, body, sid, err := d.post(ctx, http.Header{}, initialize)
	if err != nil {
		if derr == nil {
			return modern, nil
		}
		return Eras{}, err
	}
	if sid != "" {
		d.endSession(ctx, sid)
	}
	legacy, lerr := FromInitialize(ct, body)
	switch {
	case derr == nil && lerr == nil:
		return Merge(modern, legacy), nil
	case derr == nil:
		return modern, nil
	case lerr == nil:
		return legacy, nil
	}
	return Eras{}, lerr
}

// noAnswer is a probe that got no HTTP answer: the upstream was not
// reached (refused, reset, timed out before its headers).
type noAnswer struct{ err error }

func (e noAnswer) Error() string { return e.err.Error() }
func (e noAnswer) Unwrap() error { return e.err }

func (d *Detector) client() *http.Client {
	if d.Client == nil {
		return http.DefaultClient
	}
	return d.Client
}

// post sends one probe and returns the reply's media type, body and
// session id. Any HTTP status is an answer: the body decides. The probes
// are the sidecar's own, made for no caller (at start and on a timer,
// with no caller's credentials, identity or trace), so they are built
// here and not by package onbehalf, the builder of requests made for a
// caller (onebuilder_test.go at the repository's root allows them).
func (d *Detector) post(ctx context.Context, h http.Header, body string) (string, []byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL.String(), bytes.NewReader([]byte(body)))
	if err != nil {
		return "", nil, "", err
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := d.client().Do(req)
	if err != nil {
		return "", nil, "", noAnswer{err}
	}
	defer resp.Body.Close()
	b, err := readUntilReply(resp, maxProbeReply)
	if err != nil {
		return "", nil, "", err
	}
	return resp.Header.Get("Content-Type"), b, resp.Header.Get("Mcp-Session-Id"), nil
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
