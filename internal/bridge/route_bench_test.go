package bridge

import (
	"context"
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
}
