package bridge

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkPassThrough measures what the era bridge adds to a request for
// a dual-era upstream: through the LegacyFront and the Transport as they
// were chained, and through a Route that sends it straight on. The
// upstream is a stub that answers at once, so only the bridge's own cost
// is timed (go test -bench PassThrough -benchmem ./internal/bridge).
func BenchmarkPassThrough(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &Detector{}
	d.Set(Eras{Known: true, Legacy: true, Modern: true, Versions: []string{"2025-11-25", ModernVersion}})
	resp := &http.Response{StatusCode: 200, Body: http.NoBody}
	stub := roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	bt := &Transport{Next: stub, Eras: d.Current}
	bt.Start(ctx)
	front := &LegacyFront{Next: bt, Eras: d.Current, Upstream: u}
	front.Start(ctx)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{{"chained", front}, {"route", &Route{Eras: d.Current, Direct: stub, Bridged: front}}} {
		b.Run(c.name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodPost, u.String(), strings.NewReader(body))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// A legacy-only upstream: every POST reaches the Transport, which
	// reads its body to see whether the caller is a 2026-07-28 one; a
	// legacy caller's request then goes on untouched.
	legacy := &Detector{}
	legacy.Set(Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}})
	lt := &Transport{Next: stub, Eras: legacy.Current}
	lt.Start(ctx)
	lf := &LegacyFront{Next: lt, Eras: legacy.Current, Upstream: u}
	lf.Start(ctx)
	for _, c := range []struct {
		name string
		body func() io.ReadCloser
	}{
		{"legacy-only", func() io.ReadCloser { return io.NopCloser(strings.NewReader(body)) }},
		{"legacy-only-proxy-body", func() io.ReadCloser { return &bytesBody{*bytes.NewReader([]byte(body))} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			rt := &Route{Eras: legacy.Current, Direct: stub, Bridged: lf}
			req, _ := http.NewRequest(http.MethodPost, u.String(), nil)
			b.ReportAllocs()
			for b.Loop() {
				req.Body, req.GetBody = c.body(), nil
				if _, err := rt.RoundTrip(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bytesBody is a request body as the proxy's relay makes one: its bytes
// in memory, told by Bytes.
type bytesBody struct{ bytes.Reader }

func (*bytesBody) Close() error { return nil }

func (b *bytesBody) Bytes() []byte {
	rest := make([]byte, b.Len())
	_, _ = b.ReadAt(rest, b.Size()-int64(b.Len()))
	return rest // a copy here: the proxy's returns its slice
}

// TestPassThroughLeavesTheBodyWhole: a POST the Transport looks at and
// passes on (a legacy caller, a legacy-only upstream) reaches the next
// transport with its body whole and unread, whether the body tells its
// bytes (as the proxy's does) or must be read to be seen.
func TestPassThroughLeavesTheBodyWhole(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	legacy := &Detector{}
	legacy.Set(Eras{Known: true, Legacy: true, Versions: []string{"2025-11-25"}})
	var got string
	next := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			t.Error(err)
		}
		got = string(b)
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	})
	bt := &Transport{Next: next, Eras: legacy.Current}
	bt.Start(ctx)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
	for name, rc := range map[string]func() io.ReadCloser{
		"read":      func() io.ReadCloser { return io.NopCloser(strings.NewReader(body)) },
		"in memory": func() io.ReadCloser { return &bytesBody{*bytes.NewReader([]byte(body))} },
	} {
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
		req.Body = rc()
		got = ""
		if _, err := bt.RoundTrip(req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != body {
			t.Errorf("%s: the next transport read %q, want %q", name, got, body)
		}
	}
}
