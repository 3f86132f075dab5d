package bridge

import (
	"slices"
	"testing"
)

// Reply shapes written from the 2026-07-28 schema (DiscoverResult,
// UnsupportedProtocolVersionError, HeaderMismatchError) and from what
// servers we did not write answer (go-sdk v1.8.0 stateful and stateless,
// server-everything), not from this package's output.
func TestFromDiscover(t *testing.T) {
	const sse = "text/event-stream"
	const js = "application/json"
	cases := []struct {
		name     string
		ct, body string
		want     string // Label, or "undecided"
		versions []string
	}{
		{"go-sdk stateful: legacy versions only", sse,
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"public\",\"supportedVersions\":[\"2025-11-25\",\"2025-06-18\"],\"capabilities\":{}}}\n\n",
			"legacy", []string{"2025-11-25", "2025-06-18"}},
		{"go-sdk stateless: both", sse,
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\",\"supportedVersions\":[\"2026-07-28\",\"2025-11-25\"],\"capabilities\":{}}}\n\n",
			"dual", []string{"2026-07-28", "2025-11-25"}},
		{"modern only", js,
			`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"public"}}`,
			"modern", []string{"2026-07-28"}},
		{"unsupported version names legacy ones", js,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}`,
			"legacy", []string{"2025-11-25"}},
		{"header mismatch is a modern server", js,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Mcp-Method does not match"}}`,
			"modern", []string{"2026-07-28"}},
		{"server-everything: not initialized", js,
			`{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`,
			"undecided", nil},
		{"method not found is no modern error", js,
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, "undecided", nil},
		{"HTML error page", "text/html", "<html>400</html>", "undecided", nil},
		{"empty supportedVersions", js, `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":[]}}`, "undecided", nil},
		{"SSE without a response", sse, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n", "undecided", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := FromDiscover(c.ct, []byte(c.body))
			got := e.Label()
			if err != nil {
				got = "undecided"
			}
			if got != c.want {
				t.Fatalf("got %s (%v), want %s", got, err, c.want)
			}
			if err == nil && !slices.Equal(e.Versions, c.versions) {
				t.Errorf("versions %v, want %v", e.Versions, c.versions)
			}
		})
	}
}

func TestFromInitialize(t *testing.T) {
	e, err := FromInitialize("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}`))
	if err != nil || e.Label() != "legacy" || e.LegacyVersion("") != "2025-06-18" {
		t.Fatalf("got %+v, %v", e, err)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no initialize in 2026-07-28"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2026-07-28"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
	} {
		if e, err := FromInitialize("application/json", []byte(body)); err == nil {
			t.Errorf("%s: decided %+v", body, e)
		}
	}
}

func TestSpeaksModern(t *testing.T) {
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2026-07-28"]}}`: true,
		`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25","2024-11-05"]}}`: false,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                                false,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`:                      false,
		`not json`: false,
	} {
		if got := SpeaksModern([]byte(body)); got != want {
			t.Errorf("SpeaksModern(%s) = %v, want %v", body, got, want)
		}
	}
}

func TestLegacyVersion(t *testing.T) {
	e := Eras{Known: true, Legacy: true, Versions: []string{"2024-11-05", "2026-07-28", "2025-11-25", "2025-03-26"}}
	if v := e.LegacyVersion("x"); v != "2025-11-25" {
		t.Errorf("got %s", v)
	}
	if v := (Eras{}).LegacyVersion("2025-11-25"); v != "2025-11-25" {
		t.Errorf("fallback: got %s", v)
	}
}

func FuzzFromDiscover(f *testing.F) {
	f.Add("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"]}}`))
	f.Add("text/event-stream", []byte("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32022,\"data\":{\"supported\":[\"x\"]}}}\n\n"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		e, err := FromDiscover(ct, body)
		if err == nil && !e.Known {
			t.Fatalf("decided but unknown: %+v", e)
		}
		if e2, err := FromInitialize(ct, body); err == nil && (!e2.Legacy || e2.Modern) {
			t.Fatalf("initialize decided %+v", e2)
		}
		_ = SpeaksModern(body)
	})
}

func TestServes(t *testing.T) {
	legacy := Eras{Known: true, Legacy: true}
	modern := Eras{Known: true, Modern: true}
	dual := Eras{Known: true, Legacy: true, Modern: true}
	cases := []struct {
		name            string
		e               Eras
		modern, bridged bool
		want            bool
	}{
		{"unknown serves modern", Eras{}, true, false, true},
		{"unknown serves legacy", Eras{}, false, false, true},
		{"legacy upstream, modern request, no bridge", legacy, true, false, false},
		{"legacy upstream, modern request, bridged", legacy, true, true, true},
		{"legacy upstream, legacy request", legacy, false, false, true},
		{"modern upstream, legacy request, no bridge", modern, false, false, false},
		{"modern upstream, legacy request, bridged", modern, false, true, true},
		{"modern upstream, modern request", modern, true, false, true},
		{"dual, modern", dual, true, false, true},
		{"dual, legacy", dual, false, false, true},
	}
	for _, c := range cases {
		if got := c.e.Serves(c.modern, c.bridged); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
