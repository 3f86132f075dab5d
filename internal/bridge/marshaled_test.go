package bridge

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// marshaledCases are params, caps, info and log levels at the edges of
// what ModernParams writes directly: whitespace, escapes and <>& in
// values, keys that need encoding/json, repeated keys, a _meta of every
// kind, era keys the client sent itself.
var marshaledCases = []struct{ params, caps, info, level string }{
	{`{"name":"echo","arguments":{"message":"hi"},"_meta":{}}`, `{}`, `{"name":"bench","version":"1"}`, ""},
	{` { "name" : "a b" , "arguments" : { "x" : [ 1 , 2.50 , "<&>" ] } } `, `{"roots":{"listChanged":true}}`, `{"name":"c","version":"1"}`, "debug"},
	{`{"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"1999","io.modelcontextprotocol/logLevel":"x"},"Z":1,"a":2}`, `{}`, `{}`, ""},
	{`{"_meta":{"io.modelcontextprotocol/logLevel":"x"}}`, `{}`, `{}`, "info"},
	{`{"_meta":null,"uri":"demo://readme"}`, `{}`, `{}`, ""},
	{`null`, `{}`, `{}`, ""},
	{``, `{}`, `{}`, ""},
	{`  `, `{}`, `{}`, ""},
	{`{}`, `{"x":"\u2028 \u2029 < > &"}`, "{\"name\":\"\xe2\x80\xa8\"}", ""},
	{"{\"s\":\"\xe2\x80\xa9\\\"\\\\\",\"t\":\"\xff\"}", `{}`, `{}`, ""},
	{`{"a":1,"a":2}`, `{}`, `{}`, ""},
	{`{"_meta":{"k":1,"k":2}}`, `{}`, `{}`, ""},
	{`{"_meta":{},"_meta":{"k":1}}`, `{}`, `{}`, ""},
	{`{"a\u0062":1,"ab":2}`, `{}`, `{}`, ""},
	{`{"<":1}`, `{}`, `{}`, ""},
	{`{"é":1}`, `{}`, `{}`, ""},
	{`{"_meta":"x"}`, `{}`, `{}`, ""},
	{`{"_meta":[1]}`, `{}`, `{}`, ""},
	{`[1,2]`, `{}`, `{}`, ""},
	{`"s"`, `{}`, `{}`, ""},
	{`{"a":}`, `{}`, `{}`, ""},
	{`{}`, ``, `{}`, ""},
	{`{}`, `{`, `{}`, ""},
	{`{}`, `{}`, `{}`, "<b>"},
	{`{}`, `{}`, `{}`, "é"},
}

// TestModernParamsAsMarshalled: ModernParams and ModernRequest write the
// bytes encoding/json writes of the same maps, the error included, for
// every case, whether they write them directly or not.
func TestModernParamsAsMarshalled(t *testing.T) {
	direct := 0
	for _, c := range marshaledCases {
		if checkModernParams(t, []byte(c.params), []byte(c.caps), []byte(c.info), c.level) {
			direct++
		}
	}
	if direct < 10 {
		t.Errorf("only %d of %d cases written directly: the direct path is not taken", direct, len(marshaledCases))
	}
}

// checkModernParams holds ModernParams and ModernRequest to encoding/json
// on one input, and reports whether ModernParams wrote it directly.
func checkModernParams(t *testing.T, params, caps, info []byte, level string) bool {
	t.Helper()
	want, werr := modernParamsMarshal(params, caps, info, level)
	got, gerr := ModernParams(params, caps, info, level)
	if !bytes.Equal(got, want) || (gerr == nil) != (werr == nil) {
		t.Fatalf("ModernParams(%q, %q, %q, %q) = %q, %v; encoding/json writes %q, %v", params, caps, info, level, got, gerr, want, werr)
	}
	_, direct := modernParamsDirect(params, caps, info, level)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"a<b>\u2028","method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":  7 ,"method":"x\u003c"}`,
		`{"jsonrpc":"2.0","method":"ping"}`,
	} {
		msg, err := rewrite.ParseMessage([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range [][]byte{got, params, nil} {
			if g, w := ModernRequest(msg, p), modernRequestMarshal(msg, p); !bytes.Equal(g, w) {
				t.Fatalf("ModernRequest(%s, %q) = %q; encoding/json writes %q", body, p, g, w)
			}
		}
	}
	return direct
}

// FuzzModernParams holds the direct writing of ModernParams and
// ModernRequest to encoding/json's on any params, caps, info and level.
func FuzzModernParams(f *testing.F) {
	for _, c := range marshaledCases {
		f.Add([]byte(c.params), []byte(c.caps), []byte(c.info), c.level)
	}
	f.Fuzz(func(t *testing.T, params, caps, info []byte, level string) {
		checkModernParams(t, params, caps, info, level)
	})
}

// TestAppendMarshaled: appendMarshaled writes what json.Marshal writes of
// a json.RawMessage.
func TestAppendMarshaled(t *testing.T) {
	for _, v := range []string{`1`, ` { "a" : [ 1 , "x y" , "\"<>&\\" ] } `, "\"\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xaa\"", "\t\"\\\\\"\n", `{"a":{"b":"\" "}}`} {
		want, err := json.Marshal(json.RawMessage(v))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendMarshaled([]byte("x"), []byte(v)); string(got) != "x"+string(want) {
			t.Errorf("appendMarshaled(%q) = %q, want %q", v, got[1:], want)
		}
	}
}
