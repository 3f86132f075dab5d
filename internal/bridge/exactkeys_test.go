package bridge

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// TestLegacyFrontInitializeKeysAreExact: the legacy front reads a legacy
// initialize's params as a legacy server does, the go-sdk one here (its
// decoder matches member names exactly, as JavaScript objects are keyed):
// a member spelled in another case is absent, and of a member written
// twice the last exact spelling counts. The version the front answers and
// the capabilities and clientInfo it tells the upstream are those the
// go-sdk server reads from the same bytes.
func TestLegacyFrontInitializeKeysAreExact(t *testing.T) {
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` +
		`"protocolVersion":"2025-03-26","ProtocolVersion":"2025-06-18",` +
		`"capabilities":{"roots":{}},"Capabilities":{"sampling":{}},` +
		`"clientInfo":{"name":"exact","version":"1"},"CLIENTINFO":{"name":"folded","version":"1"}}}`

	// What a legacy go-sdk server reads.
	legacy := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	ls := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return legacy }, nil))
	defer ls.Close()
	_, body := post(t, ls.URL, init, nil)
	wantVersion, _ := rewrite.GetString(sseData(body), "result", "protocolVersion")
	var params *mcp.InitializeParams
	for ss := range legacy.Sessions() {
		params = ss.InitializeParams()
	}
	if wantVersion != "2025-03-26" || params == nil || params.Capabilities == nil || params.Capabilities.Sampling != nil ||
		params.ClientInfo == nil || params.ClientInfo.Name != "exact" {
		t.Fatalf("go-sdk server read version %q, params %+v: not the exact members", wantVersion, params)
	}

	var mu sync.Mutex
	var discover []byte
	fx := newFrontFixtureWith(t, 4, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			if m, _ := rewrite.GetString(b, "method"); m == "server/discover" {
				mu.Lock()
				discover = b
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	resp, body := post(t, fx.url, init, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("front initialize: %d %s", resp.StatusCode, body)
	}
	if v, _ := rewrite.GetString(sseData(body), "result", "protocolVersion"); v != wantVersion {
		t.Errorf("front answered protocolVersion %q; the go-sdk server %q", v, wantVersion)
	}
	mu.Lock()
	defer mu.Unlock()
	caps, _ := rewrite.GetKey(discover, []string{"params", "_meta", metaClientCaps})
	var c map[string]json.RawMessage
	if json.Unmarshal(caps, &c) != nil || c["sampling"] != nil || c["roots"] == nil {
		t.Errorf("front told the upstream clientCapabilities %s; want the exact member's, {\"roots\":{}}", caps)
	}
	if name, _ := rewrite.GetString(discover, "params", "_meta", metaClientInfo, "name"); name != "exact" {
		t.Errorf("front told the upstream clientInfo named %q; want %q", name, "exact")
	}
}

// sseData is the data of a body's first SSE event, or the body itself when
// it is plain JSON.
func sseData(body string) []byte {
	if rewrite.Valid([]byte(body)) {
		return []byte(body)
	}
	r := rewrite.NewReader(bytes.NewReader([]byte(body)), 1<<20)
	if ev, err := r.Next(); err == nil {
		return ev.Data
	}
	return []byte(body)
}

// FuzzInitializeParams holds initializeParams to a reading of the same
// params through a map, whose keys encoding/json matches exactly (last of
// duplicates winning), as a legacy server reads them.
func FuzzInitializeParams(f *testing.F) {
	f.Add([]byte(`{"protocolVersion":"2025-03-26","ProtocolVersion":"2025-06-18","capabilities":{},"Capabilities":{"sampling":{}}}`))
	f.Add([]byte(`{"protocolVersion":null,"clientInfo":{"name":"a"},"clientInfo":5,"protocol\u0056ersion":"x"}`))
	f.Add([]byte(` null `))
	f.Add([]byte(`{"ProtocolVersion":5}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) && len(bytes.TrimSpace(in)) > 0 {
			return // a request's params are valid JSON
		}
		version, caps, info, ok := initializeParams(in)
		var p map[string]json.RawMessage
		var want string
		wantOK := len(bytes.TrimSpace(in)) == 0 || json.Unmarshal(in, &p) == nil
		if raw, found := p["protocolVersion"]; found && json.Unmarshal(raw, &want) != nil {
			wantOK = false
		}
		if ok != wantOK {
			t.Fatalf("initializeParams(%q) ok %v; want %v", in, ok, wantOK)
		}
		if ok && (version != want || !bytes.Equal(caps, p["capabilities"]) || !bytes.Equal(info, p["clientInfo"])) {
			t.Fatalf("initializeParams(%q) = %q, %s, %s; want %q, %s, %s", in, version, caps, info, want, p["capabilities"], p["clientInfo"])
		}
	})
}

// TestErasKeysAreExact: the era probes, and the check of whether a
// server/discover reply speaks 2026-07-28, read the upstream's replies
// with member names matched as the schema spells them, as a client of the
// upstream reads the same bytes (go-sdk decodes case-sensitively,
// JavaScript objects are keyed exactly): a member in another case is not
// there, and of a member written twice the last counts. The sidecar must
// not route by, or declare its extensions on, versions a client does not
// see.
func TestErasKeysAreExact(t *testing.T) {
	const ct = "application/json"
	discover := []byte(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"],"SupportedVersions":["2026-07-28"]}}`)
	if e, err := FromDiscover(ct, discover); err != nil || e.Modern || !e.Legacy {
		t.Errorf("FromDiscover of supportedVersions [2025-11-25] then SupportedVersions [2026-07-28] = %+v, %v; want legacy only", e, err)
	}
	if SpeaksModern(discover) {
		t.Errorf("SpeaksModern of supportedVersions [2025-11-25] then SupportedVersions [2026-07-28]: true; want false")
	}
	folded := []byte(`{"jsonrpc":"2.0","id":1,"result":{"SupportedVersions":["2026-07-28"]}}`)
	if e, err := FromDiscover(ct, folded); err == nil {
		t.Errorf("FromDiscover of only SupportedVersions = %+v; want undecided", e)
	}
	if SpeaksModern(folded) {
		t.Errorf("SpeaksModern of only SupportedVersions: true; want false")
	}
	refusal := []byte(`{"jsonrpc":"2.0","id":1,"error":{"Code":-32022,"message":"unsupported","data":{"supported":["2025-11-25"]}}}`)
	if e, err := FromDiscover(ct, refusal); err == nil {
		t.Errorf("FromDiscover of an error with only Code -32022 = %+v; want undecided", e)
	}
	refusal = []byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"],"Supported":["2025-11-25"]}}}`)
	if e, err := FromDiscover(ct, refusal); err != nil || !e.Modern || e.Legacy {
		t.Errorf("FromDiscover of -32022 with supported [2026-07-28] then Supported [2025-11-25] = %+v, %v; want modern only", e, err)
	}
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"result":{"ProtocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	if e, err := FromInitialize(ct, initialize); err == nil {
		t.Errorf("FromInitialize of only ProtocolVersion = %+v; want undecided", e)
	}
}

// FuzzErasKeys holds FromDiscover, FromInitialize and SpeaksModern to a
// reading of the same reply through maps, whose keys encoding/json matches
// exactly (last of duplicates winning), as a client of the upstream reads
// them.
func FuzzErasKeys(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"],"SupportedVersions":["2026-07-28"],"protocolVersion":"2025-06-18"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"Code":1,"data":{"supported":["2026-07-28"],"Supported":["2025-11-25"]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"data":{"supported":[1]}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":-32020,"data":"x"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := rewrite.ParseMessage(body)
		if err != nil {
			return
		}
		var result, errObj, data map[string]json.RawMessage
		_ = json.Unmarshal(m.Result, &result)
		_ = json.Unmarshal(m.Error, &errObj)
		var versions []string
		versionsOK := json.Unmarshal(result["supportedVersions"], &versions) == nil
		if _, found := result["supportedVersions"]; !found {
			versionsOK = true
		}
		want, wantOK := Eras{}, false
		switch m.Kind {
		case rewrite.KindResponse:
			if _, found := result["supportedVersions"]; found && versionsOK && len(versions) > 0 {
				want = fromVersions(versions, "server/discover")
				wantOK = want.Known
			}
		case rewrite.KindError:
			var code int
			if raw, found := errObj["code"]; found && json.Unmarshal(raw, &code) == nil {
				switch code {
				case reply.CodeUnsupportedVersion:
					_ = json.Unmarshal(errObj["data"], &data)
					var supported []string
					if json.Unmarshal(data["supported"], &supported) != nil {
						supported = nil
					}
					want, wantOK = fromVersions(supported, "server/discover"), true
					if !want.Known {
						want = Eras{Known: true, Modern: true, Via: "server/discover"}
					}
				case reply.CodeHeaderMismatch, reply.CodeMissingClientCapability:
					want, wantOK = Eras{Known: true, Modern: true, Versions: []string{ModernVersion}, Via: "server/discover"}, true
				}
			}
		}
		if got, err := FromDiscover("application/json", body); (err == nil) != wantOK || wantOK && !reflect.DeepEqual(got, want) {
			t.Fatalf("FromDiscover(%q) = %+v, %v; want %+v, ok %v", body, got, err, want, wantOK)
		}
		var v string
		wantInit := m.Kind == rewrite.KindResponse && json.Unmarshal(result["protocolVersion"], &v) == nil && v != "" && v < ModernVersion
		if got, err := FromInitialize("application/json", body); (err == nil) != wantInit || wantInit && got.Versions[0] != v {
			t.Fatalf("FromInitialize(%q) = %+v, %v; want version %q, ok %v", body, got, err, v, wantInit)
		}
		wantSpeaks := m.Kind == rewrite.KindResponse && versionsOK && slices.ContainsFunc(versions, func(v string) bool { return v >= ModernVersion })
		if got := SpeaksModern(body); got != wantSpeaks {
			t.Fatalf("SpeaksModern(%q) = %v; want %v", body, got, wantSpeaks)
		}
	})
}

// TestHandshakeTranslationKeysAreExact: the bridge translates one era's
// handshake result into the other's from the members a client of the
// upstream reads, their names matched exactly (go-sdk decodes
// case-sensitively, JavaScript objects are keyed exactly), the last of
// duplicates counting: a member in another case is not translated.
func TestHandshakeTranslationKeysAreExact(t *testing.T) {
	// A modern upstream's server/discover result, as a legacy initialize
	// result for the legacy front's callers.
	out, err := InitializeFromDiscover(json.RawMessage(`{"supportedVersions":["2026-07-28"],`+
		`"capabilities":{"tools":{"listChanged":true}},"Capabilities":{},"Instructions":"folded",`+
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1"}},"_META":{"io.modelcontextprotocol/serverInfo":{"name":"folded","version":"1"}}}`), "2025-11-25")
	if err != nil {
		t.Fatal(err)
	}
	var init map[string]json.RawMessage
	_ = json.Unmarshal(out, &init)
	if name, _ := rewrite.GetString(init["serverInfo"], "name"); name != "up" || init["instructions"] != nil || !bytes.Contains(init["capabilities"], []byte(`"tools"`)) {
		t.Errorf("initialize result from a discover result with folded members = %s; want the exact members' (tools, server up, no instructions)", out)
	}

	// A legacy upstream's initialize result, as a server/discover result
	// for modern callers.
	legacy := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		m, _ := rewrite.GetString(b, "method")
		if m == "ping" { // a legacy server MUST answer it (2025-11-25 basic/utilities/ping)
			w.Header().Set("Content-Type", "application/json")
			id, _ := rewrite.GetKey(b, []string{"id"})
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{}}`)
			return
		}
		if m != "initialize" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		_, _ = io.WriteString(w, initReply(b, `{"protocolVersion":"2025-11-25","ProtocolVersion":"2025-03-26",`+
			`"capabilities":{"tools":{"listChanged":true}},"Capabilities":{},"serverInfo":{"name":"up","version":"1"},`+
			`"ServerInfo":{"name":"folded","version":"1"},"Instructions":"folded"}`))
	})
	bt, u := newBridge(t, legacy, 0)
	code, body := call(t, bt, u, "", "{}", "server/discover")
	result, _ := rewrite.GetKey(sseData(body), []string{"result"})
	var discover struct {
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      *string         `json:"instructions"`
	}
	_ = json.Unmarshal(result, &discover) // the sidecar's own bytes: no folded members
	name, _ := rewrite.GetString(result, "_meta", metaServerInfo, "name")
	if code != http.StatusOK || slices.Contains(discover.SupportedVersions, "2025-03-26") || !bytes.Contains(discover.Capabilities, []byte(`"tools"`)) ||
		discover.Instructions != nil || name != "up" {
		t.Errorf("server/discover from an initialize result with folded members = %d %s; want the exact members' (2025-11-25, tools, server up, no instructions)", code, body)
	}
}

// FuzzHandshakeKeys holds readInitResult and InitializeFromDiscover to a
// reading of the same result through maps, whose keys encoding/json
// matches exactly (last of duplicates winning), as a client of the
// upstream reads them.
func FuzzHandshakeKeys(f *testing.F) {
	f.Add([]byte(`{"protocolVersion":"2025-11-25","ProtocolVersion":"x","capabilities":{"tools":{}},"Capabilities":{},"instructions":null}`))
	f.Add([]byte(`{"capabilities":{},"Instructions":"x","instructions":"y","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m"}},"serverInfo":{"name":"s"}}`))
	f.Add([]byte(`{"_meta":null,"serverInfo":{"name":"s"},"serverInfo":5}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			return // a result is valid JSON
		}
		var m map[string]json.RawMessage
		isMap := json.Unmarshal(in, &m) == nil
		var version string
		initOK := isMap && (m["protocolVersion"] == nil || json.Unmarshal(m["protocolVersion"], &version) == nil)
		var got initResult
		if err := readInitResult(in, &got); (err == nil) != initOK {
			t.Fatalf("readInitResult(%q): %v; want ok %v", in, err, initOK)
		}
		want := initResult{ProtocolVersion: version, Capabilities: m["capabilities"], ServerInfo: m["serverInfo"], Instructions: m["instructions"]}
		if initOK && !reflect.DeepEqual(got, want) {
			t.Fatalf("readInitResult(%q) = %+v; want %+v", in, got, want)
		}

		var instructions *string
		var meta map[string]json.RawMessage
		discoverOK := isMap && (m["instructions"] == nil || json.Unmarshal(m["instructions"], &instructions) == nil) &&
			(m["_meta"] == nil || json.Unmarshal(m["_meta"], &meta) == nil)
		out, err := InitializeFromDiscover(in, "2025-11-25")
		if (err == nil) != discoverOK {
			t.Fatalf("InitializeFromDiscover(%q): %v; want ok %v", in, err, discoverOK)
		}
		if !discoverOK {
			return
		}
		var res map[string]json.RawMessage
		_ = json.Unmarshal(out, &res)
		caps, info := m["capabilities"], meta[metaServerInfo]
		if !rewrite.IsObject(caps) {
			caps = json.RawMessage(`{}`)
		}
		if !rewrite.IsObject(info) {
			info = m["serverInfo"]
		}
		if !rewrite.IsObject(info) {
			info = frontServerInfo
		}
		var gotInstr *string
		_ = json.Unmarshal(res["instructions"], &gotInstr)
		if !jsonEqual(res["capabilities"], caps) || !jsonEqual(res["serverInfo"], info) ||
			(instructions == nil) != (gotInstr == nil) || instructions != nil && *instructions != *gotInstr {
			t.Fatalf("InitializeFromDiscover(%q) = %s; want capabilities %s, serverInfo %s, instructions %v", in, out, caps, info, instructions)
		}
	})
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
