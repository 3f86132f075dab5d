package idmap

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// TestSame: ids are JSON-RPC's (string or number), compared as the JSON
// values they are: go-sdk reads a number into a float64 and answers the
// integer (1.0 is answered 1), the TypeScript SDK JSON.parse's value
// (1.0 === 1, "\u0078" === "x"). A string is never a number, and what is
// neither is only its own bytes.
func TestSame(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{`1`, `1`, true},
		{`1`, `1.0`, true},
		{`1.0`, `1`, true},
		{`1`, `10e-1`, true},
		{`1`, `0.1E1`, true},
		{`1`, `1e+0`, true},
		{`100`, `1e2`, true},
		{`100`, `1E02`, true},
		{`0`, `-0`, true},
		{`0`, `0.000e5`, true},
		{`-3`, `-3.00`, true},
		{` 7 `, `7`, true},
		{`12345678901234567890123`, `12345678901234567890123.0`, true},
		{`"x"`, `"x"`, true},
		{`"x"`, `"\u0078"`, true},
		{`"\/"`, `"/"`, true},
		{`null`, `null`, true},
		{`1`, `2`, false},
		{`1`, `1.5`, false}, // go-sdk answers 1.5 with 1: not the same id
		{`-1`, `1`, false},
		{`1`, `"1"`, false},
		{`"1"`, `1`, false},
		{`1`, `10`, false},
		{`10`, `1e2`, false},
		{`9007199254740993`, `9007199254740992`, false}, // equal as float64s
		{`1`, `01`, false},                              // not JSON
		{`1`, `+1`, false},
		{`1`, `1.`, false},
		{`1`, `.1e1`, false},
		{`1`, `1e`, false},
		{`"x"`, `"x`, false},
		{`null`, `0`, false},
		{`1e999999999999999`, `10e999999999999998`, false}, // too large to compare: its bytes
		{``, `0`, false},
	} {
		if got := Same(json.RawMessage(c.a), json.RawMessage(c.b)); got != c.same {
			t.Errorf("Same(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
		if c.a != "" && c.b != "" {
			if got := Key(json.RawMessage(c.a)) == Key(json.RawMessage(c.b)); got != c.same {
				t.Errorf("Key(%s) == Key(%s) is %v, want %v", c.a, c.b, got, c.same)
			}
		}
	}
	if k := Key(nil); k != "" {
		t.Errorf("Key(nil) = %q, want empty", k)
	}
}

// TestSameAllocates: the relay compares the id of every response it
// reads; a comparison of ids of usual length allocates nothing.
func TestSameAllocates(t *testing.T) {
	a, b := json.RawMessage(`12.50`), json.RawMessage(`1250e-2`)
	if n := testing.AllocsPerRun(100, func() { Same(a, b) }); n != 0 {
		t.Errorf("Same allocates %v times, want 0", n)
	}
}

// kind is what a JSON text is, as encoding/json decodes it: "number",
// "string", or "" for anything else.
func kind(b []byte) string {
	if !json.Valid(b) {
		return ""
	}
	var v any
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	switch v.(type) {
	case json.Number:
		return "number"
	case string:
		return "string"
	}
	return ""
}

// FuzzSame checks Same against encoding/json and math/big: two strings
// are the same when they decode to the same text, two numbers when their
// exact values are equal; Same is symmetric and agrees with Key.
func FuzzSame(f *testing.F) {
	for _, s := range [][2]string{{`1`, `1.0`}, {`"x"`, `"\u0078"`}, {`-0.0e-0`, `0`}, {`1e3`, `1000.000`}, {`1`, `"1"`}, {`1.5`, `15e-1`}} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		same := Same(a, b)
		if same != Same(b, a) {
			t.Fatalf("Same(%q, %q) = %v, not symmetric", a, b, same)
		}
		if len(strings.TrimSpace(string(a))) > 0 && len(strings.TrimSpace(string(b))) > 0 && same != (Key(a) == Key(b)) {
			t.Fatalf("Same(%q, %q) = %v, Keys %q %q", a, b, same, Key(a), Key(b))
		}
		ka, kb := kind(a), kind(b)
		switch {
		case ka == "string" && kb == "string":
			var sa, sb string
			_ = json.Unmarshal(a, &sa)
			_ = json.Unmarshal(b, &sb)
			if same != (sa == sb) {
				t.Fatalf("Same(%q, %q) = %v, decoded %q and %q", a, b, same, sa, sb)
			}
		case ka == "number" && kb == "number":
			if strings.ContainsAny(string(a)+string(b), "eE") && (len(a) > 7 || len(b) > 7) {
				return // math/big would spell out a huge power of ten
			}
			ra, _ := new(big.Rat).SetString(strings.TrimSpace(string(a)))
			rb, _ := new(big.Rat).SetString(strings.TrimSpace(string(b)))
			if ra == nil || rb == nil {
				t.Fatalf("math/big cannot read %q or %q", a, b)
			}
			if same != (ra.Cmp(rb) == 0) {
				t.Fatalf("Same(%q, %q) = %v, values %v and %v", a, b, same, ra, rb)
			}
		case (ka == "string" && kb == "number") || (ka == "number" && kb == "string"):
			if same {
				t.Fatalf("Same(%q, %q): a string and a number", a, b)
			}
		}
	})
}
