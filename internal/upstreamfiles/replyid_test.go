package upstreamfiles

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestJSNumber: the values are what Node's Number() gave for each string
// (NaN: not a number).
func TestJSNumber(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1": "1", " 1 ": "1", "\u00a01\u2028": "1", "01": "1", "1.0": "1", "1e0": "1", "+1": "1",
		"0x1": "1", "0X1": "1", "0o1": "1", "0b1": "1", "-0x1": "NaN", "0x": "NaN", "1_0": "NaN",
		"1n": "NaN", "Infinity": "+Inf", "-Infinity": "-Inf", "infinity": "NaN", "": "0", "  ": "0",
		".1e1": "1", "1.": "1", "1e": "NaN", "0x10": "16", "0b102": "NaN", "1,0": "NaN", "١": "NaN",
		"\ufeff1": "1", "\u30001": "1", "\u180e1": "NaN", "0x1p0": "NaN",
		"9007199254740993": "9.007199254740992e+15", "1e400": "+Inf", "-1e400": "-Inf", "1e-400": "0",
		"NaN": "NaN", "abc": "NaN",
	} {
		f, ok := jsNumber(in)
		got := "NaN"
		if ok {
			got = strconv.FormatFloat(f, 'g', -1, 64)
			if math.IsInf(f, 1) {
				got = "+Inf"
			}
		}
		if got != want {
			t.Errorf("jsNumber(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestMayAnswer: the id spellings clients match to a request's, and ones
// none does.
func TestMayAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		want, got string
		match     bool
	}{
		{`1`, `1`, true},
		{`1`, `"1"`, true},   // TypeScript SDK: Number("1")
		{`1`, `1.0`, true},   // both SDKs
		{`1`, `1e0`, true},   // both SDKs
		{`1`, `" 1"`, true},  // Number trims
		{`1`, `"0x1"`, true}, // Number reads hex
		{`1`, `1.5`, true},   // go-sdk truncates
		{`1`, `true`, true},  // Number(true)
		{`0`, `null`, true},  // Number(null)
		{`0`, `-0`, true},
		{`"a"`, `"\u0061"`, true},
		{`"1"`, `1`, true},
		{`1`, `2`, false},
		{`1`, `"1x"`, false},
		{`1`, `"one"`, false},
		{`"a"`, `"b"`, false},
		{`1`, `null`, false},
		{`2`, `1.5`, false},
		{`1`, `1e400`, true}, // go-sdk refuses it; counted towards yes
		{`1.5`, `1`, true},   // go-sdk truncates the request's id too
		{`1.5`, `1.7`, true},
		{`-0.5`, `0`, true},
		{`2.5`, `1.5`, false},
		{`1e19`, `-9223372036854775808`, true}, // int64 of 1e19 is implementation-dependent
		{`1e300`, `-1e300`, true},
		{`1e300`, `1`, true},
	} {
		if got := mayAnswer([]byte(tc.want), []byte(tc.got)); got != tc.match {
			t.Errorf("mayAnswer(%s, %s) = %v, want %v", tc.want, tc.got, got, tc.match)
		}
	}
}

// FuzzMayAnswer: every response go-sdk's own decoder matches to a request
// (jsonrpc.DecodeMessage, compared by ID as its client does) is one
// mayAnswer counts; and an id always answers itself.
func FuzzMayAnswer(f *testing.F) {
	for _, s := range [][2]string{{`1`, `1.0`}, {`1`, `"1"`}, {`7`, `7.9`}, {`"x"`, `"\u0078"`}, {`0`, `null`}, {`1`, `1e400`}, {`1.5`, `1`}, {`1.5`, `1.7`}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, want, got string) {
		// readScan keeps an id's bytes without the white space around them.
		var w, g bytes.Buffer
		if json.Compact(&w, []byte(want)) != nil || json.Compact(&g, []byte(got)) != nil {
			return
		}
		want, got = w.String(), g.String()
		if !mayAnswer([]byte(want), []byte(want)) {
			t.Fatalf("mayAnswer(%s, %s) = false", want, want)
		}
		req, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + want + `,"method":"resources/read"}`))
		if err != nil {
			return
		}
		resp, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + got + `,"result":{}}`))
		if err != nil {
			return
		}
		r, ok1 := req.(*jsonrpc.Request)
		s, ok2 := resp.(*jsonrpc.Response)
		if ok1 && ok2 && r.ID.IsValid() && r.ID == s.ID && !mayAnswer([]byte(want), []byte(got)) {
			t.Fatalf("go-sdk takes id %s as the reply to %s; mayAnswer does not", got, want)
		}
	})
}
