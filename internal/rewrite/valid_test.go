package rewrite

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// TestValidAgreesWithEncodingJSON: valid says what json.Valid says on the
// cases most likely to split them.
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	cases := []string{
		``, ` `, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`, `.5`, `+1`, `1 2`,
		`true`, `tru`, `truex`, `null `, ` false`, `nul`,
		`""`, `"`, `"\"`, `"\\"`, `"a\/b"`, `"\u12"`, `"\u12G4"`, `"\uABCD"`, `"\x"`, "\"\x1f\"", "\"\x7f\xff\"",
		`"0123456789abcdef"`, `"0123456\"89abcdef"`, "\"0123456789\tabcdef\"", `"01234567\\89abcdef"`,
		`{}`, `{ }`, `{"a":1}`, `{"a" : [1, 2, {"b": null}] }`, `{"a"}`, `{"a":}`, `{,}`, `{"a":1,}`, `{1:2}`,
		`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[]`, `[]]`, `{]`, `[}`, `{"a":1}}`,
		"\t[\r\n1\n]\r", `["a",{"b":["c",{}]}]`,
	}
	for _, c := range cases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// TestValidNesting: the nesting limit is encoding/json's, to the level.
func TestValidNesting(t *testing.T) {
	t.Parallel()
	for _, depth := range []int{maxNesting - 1, maxNesting, maxNesting + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closeWith := "]"
			if open != "[" {
				closeWith = "}"
			}
			doc := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(closeWith, depth))
			if got, want := valid(doc), json.Valid(doc); got != want {
				t.Errorf("valid(%d × %q) = %v, json.Valid says %v", depth, open, got, want)
			}
		}
	}
}

// FuzzValid holds valid to json.Valid on any input.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"u","blob":"aGVsbG8gd29ybGQh"}]}}`,
		`[1,-2.5e+3,"x\u00e9\n",true,false,null,{}]`, "\"abcdefgh\x01\"", `"abcdefg\"hijk"`, `{"a":{"b":[[{}]]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := valid(in), json.Valid(in); got != want {
			t.Fatalf("valid(%q) = %v, json.Valid says %v", in, got, want)
		}
	})
}

// BenchmarkValid compares valid with json.Valid on a reply carrying 1 MiB
// of base64, and on a small request.
func BenchmarkValid(b *testing.B) {
	blob := base64.StdEncoding.EncodeToString(make([]byte, 1<<20))
	docs := map[string][]byte{
		"1MiB-blob": []byte(`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"skill://s/b","blob":"` + blob + `"}]}}`),
		"request":   []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`),
	}
	for name, doc := range docs {
		b.Run(name+"/valid", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				valid(doc)
			}
		})
		b.Run(name+"/json.Valid", func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				json.Valid(doc)
			}
		})
	}
}

// TestJSONShapes holds IsObject, IsNull and IsObjectOrNull to the JSON
// grammar (RFC 8259: white space is space, tab, line feed and carriage
// return) and to what encoding/json decodes into a struct without error.
func TestJSONShapes(t *testing.T) {
	for _, tc := range []struct {
		raw          string
		object, null bool
	}{
		{`{}`, true, false},
		{" \t\r\n{\"a\":1} ", true, false},
		{`null`, false, true},
		{" null\n", false, true},
		{`nul`, false, false},
		{`nullx`, false, false},
		{`"null"`, false, false},
		{`[]`, false, false},
		{`0`, false, false},
		{"\v{}", false, false}, // vertical tab is not JSON white space
		{``, false, false},
		{`   `, false, false},
	} {
		if got := IsObject([]byte(tc.raw)); got != tc.object {
			t.Errorf("IsObject(%q) = %v, want %v", tc.raw, got, tc.object)
		}
		if got := IsNull([]byte(tc.raw)); got != tc.null {
			t.Errorf("IsNull(%q) = %v, want %v", tc.raw, got, tc.null)
		}
		if got := IsObjectOrNull([]byte(tc.raw)); got != (tc.object || tc.null) {
			t.Errorf("IsObjectOrNull(%q) = %v", tc.raw, got)
		}
		// A struct decodes from exactly the values IsObjectOrNull accepts.
		var s struct{}
		if json.Valid([]byte(tc.raw)) {
			if ok := json.Unmarshal([]byte(tc.raw), &s) == nil; ok != (tc.object || tc.null) {
				t.Errorf("%q: encoding/json decodes into a struct: %v, IsObjectOrNull says %v", tc.raw, ok, tc.object || tc.null)
			}
		}
	}
}
