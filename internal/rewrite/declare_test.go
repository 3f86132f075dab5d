package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

const sidecarExt = `"extensions":{"io.modelcontextprotocol/skills":{"directoryRead":true},"io.modelcontextprotocol/agents":{"listChanged":true}}`

type spliceCase struct {
	in, want    string
	wantChanged bool
	wantErr     error
}

// spliceCases is the SpliceDeclaration table (the txtar corpus holds the
// realistic replies); FuzzSpliceDeclaration is seeded from both.
func spliceCases() map[string]spliceCase {
	return map[string]spliceCase{
		"initialize": {
			in:          `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`,
			want:        `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},` + sidecarExt + `,"resources":{"listChanged":true}},"serverInfo":{"name":"s","version":"1"}}}`,
			wantChanged: true,
		},
		"empty capabilities": {
			in:          `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`,
			want:        `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{` + sidecarExt + `,"resources":{"listChanged":true}}}}`,
			wantChanged: true,
		},
		"no capabilities": {
			in:          `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`,
			want:        `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{` + sidecarExt + `,"resources":{"listChanged":true}}}}`,
			wantChanged: true,
		},
		"already spliced": {
			in:   `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"resources":{"subscribe":true,"listChanged":true},` + sidecarExt + `}}}`,
			want: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"resources":{"subscribe":true,"listChanged":true},` + sidecarExt + `}}}`,
		},
		// The upstream's resources without listChanged: the sidecar's own
		// list_changed for its skill entries makes the flag true.
		"upstream resources without listChanged": {
			in:          `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"resources":{"subscribe":true}}}}`,
			want:        `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"resources":{"subscribe":true,"listChanged":true},` + sidecarExt + `}}}`,
			wantChanged: true,
		},
		"upstream resources listChanged false": {
			in:          `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"resources":{"listChanged":false}}}}`,
			want:        `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"resources":{"listChanged":true},` + sidecarExt + `}}}`,
			wantChanged: true,
		},
		"error response": {in: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"capabilities"}}`, want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"capabilities"}}`},
		"other result":   {in: `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, want: `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		"request":        {in: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`, want: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}`},
		"capabilities null": {
			in:          `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":null}}`,
			want:        `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{` + sidecarExt + `,"resources":{"listChanged":true}}}}`,
			wantChanged: true,
		},
		"extensions not object": {in: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"extensions":[]}}}`, want: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"extensions":[]}}}`},
		"result not object":     {in: `{"jsonrpc":"2.0","id":1,"result":"capabilities"}`, want: `{"jsonrpc":"2.0","id":1,"result":"capabilities"}`},
		"not an object":         {in: `[1]`, want: `[1]`},
		"not json":              {in: `{"result":{"capabilities":{}}`, want: `{"result":{"capabilities":{}}`, wantErr: ErrParse},
	}
}

func TestSpliceDeclaration(t *testing.T) {
	t.Parallel()
	for name, tc := range spliceCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, changed, err := SpliceDeclaration([]byte(tc.in), SkillsSidecar())
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("SpliceDeclaration(%s) error = %v, want %v", tc.in, err, tc.wantErr)
			}
			if string(got) != tc.want || changed != tc.wantChanged {
				t.Errorf("SpliceDeclaration(%s) = %s, %v, want %s, %v", tc.in, got, changed, tc.want, tc.wantChanged)
			}
		})
	}
}

func TestSpliceDeclarationReplacesUpstreamSettings(t *testing.T) {
	t.Parallel()
	in := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"extensions":{"io.modelcontextprotocol/skills":{ "directoryRead" : false },"x.y/z":{"k":1}},"resources":{}}}}`
	want := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"extensions":{"io.modelcontextprotocol/skills":{"directoryRead":true},"x.y/z":{"k":1},"io.modelcontextprotocol/agents":{"listChanged":true}},"resources":{"listChanged":true}}}}`
	got, changed, err := SpliceDeclaration([]byte(in), SkillsSidecar())
	if err != nil || !changed || string(got) != want {
		t.Errorf("SpliceDeclaration(%s) = %s, %v, %v, want %s, true, nil", in, got, changed, err, want)
	}
}

// TestSpliceDeclarationNullIsAbsent: a capability, capabilities or
// extensions given as null is absent to a client that reads the reply
// (go-sdk decodes null into a pointer, map or struct as its zero value; a
// JavaScript client's optional members test null as false): the splice
// declares what it declares when the member is missing, replacing the null
// in place, so the client is told of the extensions and capabilities the
// sidecar serves.
func TestSpliceDeclarationNullIsAbsent(t *testing.T) {
	t.Parallel()
	d := SkillsSidecar()
	d.Prompts = true
	for _, tc := range []struct{ withNull, without string }{
		{`{"protocolVersion":"v","capabilities":null}`, `{"protocolVersion":"v"}`},
		{`{"supportedVersions":["v"],"capabilities":null,"serverInfo":{}}`, `{"supportedVersions":["v"],"serverInfo":{}}`},
		{`{"protocolVersion":"v","capabilities":{"tools":{},"extensions":null}}`, `{"protocolVersion":"v","capabilities":{"tools":{}}}`},
		{`{"protocolVersion":"v","capabilities":{"resources":null,"tools":{}}}`, `{"protocolVersion":"v","capabilities":{"tools":{}}}`},
		{`{"protocolVersion":"v","capabilities":{"prompts":null}}`, `{"protocolVersion":"v","capabilities":{}}`},
	} {
		msg := func(res string) []byte { return []byte(`{"jsonrpc":"2.0","id":1,"result":` + res + `}`) }
		got, changed, err := SpliceDeclaration(msg(tc.withNull), d)
		want, _, _ := SpliceDeclaration(msg(tc.without), d)
		if err != nil || !changed || !json.Valid(got) {
			t.Errorf("SpliceDeclaration(%s) = %s, %v, %v; want it spliced", tc.withNull, got, changed, err)
			continue
		}
		var g, w any
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("SpliceDeclaration(%s) = %s\nwant the value of %s", tc.withNull, got, want)
		}
		if again, changed, _ := SpliceDeclaration(got, d); changed || !bytes.Equal(again, got) {
			t.Errorf("splicing %s again changed it: %s", got, again)
		}
	}
}

func TestDeclarationValidate(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		d       Declaration
		wantErr error
	}{
		"sidecar":        {d: SkillsSidecar()},
		"zero":           {d: Declaration{}},
		"nil settings":   {d: Declaration{Extensions: []Extension{{ID: "a/b"}}}},
		"empty id":       {d: Declaration{Extensions: []Extension{{Settings: json.RawMessage(`{}`)}}}, wantErr: ErrBadDeclaration},
		"array settings": {d: Declaration{Extensions: []Extension{{ID: "a/b", Settings: json.RawMessage(`[]`)}}}, wantErr: ErrBadDeclaration},
		"bad settings":   {d: Declaration{Extensions: []Extension{{ID: "a/b", Settings: json.RawMessage(`{`)}}}, wantErr: ErrBadDeclaration},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if err := tc.d.Validate(); !errors.Is(err, tc.wantErr) {
				t.Errorf("Validate() = %v, want %v", err, tc.wantErr)
			}
			msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v"}}`)
			if _, _, err := SpliceDeclaration(msg, tc.d); !errors.Is(err, tc.wantErr) {
				t.Errorf("SpliceDeclaration with the declaration: error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestSpliceZeroDeclaration(t *testing.T) {
	t.Parallel()
	in := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v"}}`
	if got, changed, err := SpliceDeclaration([]byte(in), Declaration{}); string(got) != in || changed || err != nil {
		t.Errorf("SpliceDeclaration(%s, zero) = %s, %v, %v, want it unchanged", in, got, changed, err)
	}
}

func TestLooksLikeHandshakeResult(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want bool
	}{
		"initialize":         {in: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{}}}`, want: true},
		"discover":           {in: `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{},"supportedVersions":["v"]}}`, want: true},
		"escaped key":        {in: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","\u0063apabilities":{}}}`, want: true},
		"no capabilities":    {in: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v"}}`},
		"capabilities array": {in: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":[]}}`},
		"no version":         {in: `{"jsonrpc":"2.0","id":1,"result":{"capabilities":{}}}`},
		"nested only":        {in: `{"jsonrpc":"2.0","id":1,"result":{"x":{"protocolVersion":"v","capabilities":{}}}}`},
		"request":            {in: `{"jsonrpc":"2.0","id":1,"method":"initialize","result":{"protocolVersion":"v","capabilities":{}}}`},
		"error":              {in: `{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"},"result":{"protocolVersion":"v","capabilities":{}}}`},
		"notification":       {in: `{"jsonrpc":"2.0","method":"notifications/message","params":{"protocolVersion":"v","capabilities":{}}}`},
		"truncated":          {in: `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{}`},
		"garbage":            {in: `}{`},
		"empty":              {in: ``},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := LooksLikeHandshakeResult([]byte(tc.in)); got != tc.want {
				t.Errorf("LooksLikeHandshakeResult(%s) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestSpliceBatch(t *testing.T) {
	t.Parallel()
	const (
		initReply = `{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"v","capabilities":{}}}`
		spliced   = `{"jsonrpc":"2.0","id":"i","result":{"protocolVersion":"v","capabilities":{` + sidecarExt + `,"resources":{"listChanged":true}}}}`
		other     = `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"v","capabilities":{}}}`
	)
	byID := func(id json.RawMessage) bool { return string(id) == `"i"` }
	tests := map[string]struct {
		in, want    string
		isHandshake func(json.RawMessage) bool
		wantChanged bool
	}{
		"by id":           {in: "[ " + other + " ,\n" + initReply + "]", isHandshake: byID, want: "[ " + other + " ,\n" + spliced + "]", wantChanged: true},
		"by shape":        {in: "[" + initReply + "," + `{"jsonrpc":"2.0","id":3,"result":{}}` + "]", want: "[" + spliced + "," + `{"jsonrpc":"2.0","id":3,"result":{}}` + "]", wantChanged: true},
		"none":            {in: "[" + other + "]", isHandshake: byID, want: "[" + other + "]"},
		"single object":   {in: initReply + "\n", isHandshake: byID, want: spliced + "\n", wantChanged: true},
		"scalar elements": {in: `[1,"i",null]`, isHandshake: byID, want: `[1,"i",null]`},
		"empty":           {in: `[]`, want: `[]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, changed, err := SpliceBatch([]byte(tc.in), tc.isHandshake, SkillsSidecar())
			if err != nil || string(got) != tc.want || changed != tc.wantChanged {
				t.Errorf("SpliceBatch(%s) = %s, %v, %v, want %s, %v, nil", tc.in, got, changed, err, tc.want, tc.wantChanged)
			}
		})
	}
	if _, _, err := SpliceBatch([]byte(`[`), nil, SkillsSidecar()); !errors.Is(err, ErrParse) {
		t.Errorf("SpliceBatch([) error = %v, want ErrParse", err)
	}
}

// TestSplicePromptsTools: host compatibility declares prompts and tools
// with listChanged, adding them when the upstream lacks them and setting
// the flag in the upstream's own objects, every other byte kept.
func TestSplicePromptsTools(t *testing.T) {
	t.Parallel()
	d := Declaration{Prompts: true, Tools: true}
	tests := map[string]struct{ in, want string }{
		"absent": {
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"logging":{}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"logging":{},"prompts":{"listChanged":true},"tools":{"listChanged":true}}}}`,
		},
		"upstream's own": {
			`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{ "x":1 },"prompts":{"listChanged":false}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{ "x":1, "listChanged":true },"prompts":{"listChanged":true}}}}`,
		},
		"already so": {
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true}}}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":true}}}}`,
		},
	}
	for name, tc := range tests {
		got, _, err := SpliceDeclaration([]byte(tc.in), d)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: SpliceDeclaration(%s) = %s, %v, want %s", name, tc.in, got, err, tc.want)
		}
	}
	// The sidecar's declaration alone leaves both alone.
	in := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{"tools":{}}}}`
	got, _, _ := SpliceDeclaration([]byte(in), SkillsSidecar())
	if v, ok := GetKey(got, []string{"result", "capabilities", "tools"}); !ok || string(v) != "{}" {
		t.Errorf("SkillsSidecar() spliced tools = %s, want {} untouched", v)
	}
	if _, ok := GetKey(got, []string{"result", "capabilities", "prompts"}); ok {
		t.Errorf("SkillsSidecar() added prompts: %s", got)
	}
}
