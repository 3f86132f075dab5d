package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

type setKeyCase struct {
	obj, value string
	path       []string
	want       string
	wantErr    error
}

// setKeyCases is the SetKey table; FuzzSetKey is seeded from it.
func setKeyCases() map[string]setKeyCase {
	return map[string]setKeyCase{
		"replace":          {obj: `{"a":1,"b":2}`, path: []string{"a"}, value: `3`, want: `{"a":3,"b":2}`},
		"replace object":   {obj: `{"a":{"x":[1,{"y":"}"}]},"b":2}`, path: []string{"a"}, value: `null`, want: `{"a":null,"b":2}`},
		"insert":           {obj: `{"a":1}`, path: []string{"b"}, value: `true`, want: `{"a":1,"b":true}`},
		"insert empty":     {obj: `{}`, path: []string{"a"}, value: `1`, want: `{"a":1}`},
		"insert empty ws":  {obj: "{ \n}", path: []string{"a"}, value: `1`, want: "{\"a\":1 \n}"},
		"insert pretty":    {obj: "{\n  \"a\": 1\n}", path: []string{"b"}, value: `2`, want: "{\n  \"a\": 1,\n  \"b\": 2\n}"},
		"insert spaced":    {obj: `{ "n" : 1.50e+2 , "s":"\u00e9" }`, path: []string{"t"}, value: `true`, want: `{ "n" : 1.50e+2 , "s":"\u00e9", "t":true }`},
		"create nested":    {obj: `{"a":{}}`, path: []string{"a", "b", "c"}, value: `1`, want: `{"a":{"b":{"c":1}}}`},
		"create top":       {obj: `{"x":0}`, path: []string{"a", "b"}, value: `[]`, want: `{"x":0,"a":{"b":[]}}`},
		"deep replace":     {obj: `{"r":{"c":{"e":{"k":0},"z":1}}}`, path: []string{"r", "c", "e", "k"}, value: `{"v":1}`, want: `{"r":{"c":{"e":{"k":{"v":1}},"z":1}}}`},
		"escaped key":      {obj: `{"\u0061":1}`, path: []string{"a"}, value: `2`, want: `{"\u0061":2}`},
		"last duplicate":   {obj: `{"a":1,"a":2}`, path: []string{"a"}, value: `3`, want: `{"a":1,"a":3}`},
		"value trimmed":    {obj: `{}`, path: []string{"a"}, value: " 5\n", want: `{"a":5}`},
		"key escaped":      {obj: `{}`, path: []string{`a"b`}, value: `1`, want: `{"a\"b":1}`},
		"outer whitespace": {obj: " {\"a\":1} \n", path: []string{"b"}, value: `2`, want: " {\"a\":1,\"b\":2} \n"},
		"not json":         {obj: `{"a":`, path: []string{"a"}, value: `1`, wantErr: ErrParse},
		"bad value":        {obj: `{}`, path: []string{"a"}, value: `{`, wantErr: ErrParse},
		"not object":       {obj: `[1]`, path: []string{"a"}, value: `1`, wantErr: ErrNotObject},
		"scalar on path":   {obj: `{"a":"s"}`, path: []string{"a", "b"}, value: `1`, wantErr: ErrNotObject},
		"empty path":       {obj: `{}`, value: `1`, wantErr: ErrBadPath},
		"key not utf-8":    {obj: `{}`, path: []string{"\xa8"}, value: `1`, wantErr: ErrBadPath},
	}
}

func TestSetKey(t *testing.T) {
	t.Parallel()
	for name, tc := range setKeyCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := SetKey([]byte(tc.obj), tc.path, []byte(tc.value))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("SetKey(%q, %q, %q) error = %v, want %v", tc.obj, tc.path, tc.value, err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Errorf("SetKey(%q, %q, %q) = %q, want %q", tc.obj, tc.path, tc.value, got, tc.want)
			}
		})
	}
}

func TestSetKeyLeavesInputAlone(t *testing.T) {
	t.Parallel()
	obj := append(make([]byte, 0, 64), `{"a":1}`...) // spare capacity an append could reuse
	if _, err := SetKey(obj, []string{"b"}, []byte(`2`)); err != nil {
		t.Fatal(err)
	}
	if got := string(obj[:cap(obj)][:7]); got != `{"a":1}` || obj[:8][7] != 0 {
		t.Errorf("SetKey wrote into its input: %q", obj[:cap(obj)])
	}
}

func TestGetKey(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		obj    string
		path   []string
		want   string
		wantOK bool
	}{
		"top":             {obj: `{"a":1}`, path: []string{"a"}, want: `1`, wantOK: true},
		"nested":          {obj: `{"a":{"b":[1, 2]}}`, path: []string{"a", "b"}, want: `[1, 2]`, wantOK: true},
		"string value":    {obj: `{"a":"x\"}"}`, path: []string{"a"}, want: `"x\"}"`, wantOK: true},
		"missing":         {obj: `{"a":1}`, path: []string{"b"}},
		"missing nested":  {obj: `{"a":{}}`, path: []string{"a", "b"}},
		"through scalar":  {obj: `{"a":1}`, path: []string{"a", "b"}},
		"last duplicate":  {obj: `{"a":1,"a":2}`, path: []string{"a"}, want: `2`, wantOK: true},
		"escaped key":     {obj: `{"\u0061":true}`, path: []string{"a"}, want: `true`, wantOK: true},
		"whole":           {obj: " {} ", want: `{}`, wantOK: true},
		"array":           {obj: `[{"a":1}]`, path: []string{"a"}},
		"truncated":       {obj: `{"a":1,"b":`, path: []string{"b"}},
		"unclosed string": {obj: `{"a`, path: []string{"a"}},
		"empty":           {obj: ``, path: []string{"a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, ok := GetKey([]byte(tc.obj), tc.path)
			if ok != tc.wantOK || string(got) != tc.want {
				t.Errorf("GetKey(%q, %q) = %q, %v, want %q, %v", tc.obj, tc.path, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

type appendCase struct {
	obj     string
	path    []string
	elems   []string
	want    string
	wantErr error
}

// appendCases is the AppendToArray table; FuzzAppendToArray is seeded from
// it.
func appendCases() map[string]appendCase {
	return map[string]appendCase{
		"resources/list": {
			obj:   `{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"file:///a"}],"nextCursor":"c"}}`,
			path:  []string{"result", "resources"},
			elems: []string{`{"uri":"skill://x/SKILL.md"}`, ` {"uri":"skill://y/SKILL.md"} `},
			want:  `{"jsonrpc":"2.0","id":3,"result":{"resources":[{"uri":"file:///a"},{"uri":"skill://x/SKILL.md"},{"uri":"skill://y/SKILL.md"}],"nextCursor":"c"}}`,
		},
		"empty array":  {obj: `{"a":[ ]}`, path: []string{"a"}, elems: []string{`1`, `2`}, want: `{"a":[1,2 ]}`},
		"pretty":       {obj: "{\"a\": [\n  1,\n  2\n]}", path: []string{"a"}, elems: []string{`3`}, want: "{\"a\": [\n  1,\n  2,\n  3\n]}"},
		"missing":      {obj: `{"r":{}}`, path: []string{"r", "a"}, elems: []string{`"x"`}, want: `{"r":{"a":["x"]}}`},
		"nothing":      {obj: `{"a":[1]}`, path: []string{"a"}, want: `{"a":[1]}`},
		"not array":    {obj: `{"a":{}}`, path: []string{"a"}, elems: []string{`1`}, wantErr: ErrNotArray},
		"bad element":  {obj: `{"a":[]}`, path: []string{"a"}, elems: []string{`{`}, wantErr: ErrParse},
		"scalar above": {obj: `{"a":1}`, path: []string{"a", "b"}, elems: []string{`1`}, wantErr: ErrNotObject},
		"no path":      {obj: `{}`, elems: []string{`1`}, wantErr: ErrBadPath},
	}
}

func TestAppendToArray(t *testing.T) {
	t.Parallel()
	for name, tc := range appendCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var elems []json.RawMessage
			for _, e := range tc.elems {
				elems = append(elems, json.RawMessage(e))
			}
			got, err := AppendToArray([]byte(tc.obj), tc.path, elems...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("AppendToArray(%q, %q, %q) error = %v, want %v", tc.obj, tc.path, tc.elems, err, tc.wantErr)
			}
			if err == nil && string(got) != tc.want {
				t.Errorf("AppendToArray(%q, %q, %q) = %q, want %q", tc.obj, tc.path, tc.elems, got, tc.want)
			}
		})
	}
}

type deleteKeyCase struct {
	obj     string
	path    []string
	want    string
	deleted bool
}

func deleteKeyCases() map[string]deleteKeyCase {
	return map[string]deleteKeyCase{
		"middle":        {obj: `{"a":1,"b":2,"c":3}`, path: []string{"b"}, want: `{"a":1,"c":3}`, deleted: true},
		"last":          {obj: `{"a":1, "b":2}`, path: []string{"b"}, want: `{"a":1}`, deleted: true},
		"first":         {obj: `{ "a":1, "b":2 }`, path: []string{"a"}, want: `{ "b":2 }`, deleted: true},
		"only":          {obj: `{ "a":[1,{"}":2}] }`, path: []string{"a"}, want: `{  }`, deleted: true},
		"nested":        {obj: `{"p":{"_meta":{"x":1,"y":"&<>"}},"q":1e2}`, path: []string{"p", "x"}, want: `{"p":{"_meta":{"x":1,"y":"&<>"}},"q":1e2}`},
		"nested found":  {obj: `{"p":{"x":"\u2028","y":1.0}}`, path: []string{"p", "x"}, want: `{"p":{"y":1.0}}`, deleted: true},
		"duplicates":    {obj: `{"a":1,"b":2,"a":3}`, path: []string{"a"}, want: `{"b":2}`, deleted: true},
		"escaped key":   {obj: `{"\u0061":1,"b":"\/"}`, path: []string{"a"}, want: `{"b":"\/"}`, deleted: true},
		"missing":       {obj: `{"a":1}`, path: []string{"z"}, want: `{"a":1}`},
		"parent absent": {obj: `{"a":1}`, path: []string{"p", "a"}, want: `{"a":1}`},
		"parent scalar": {obj: `{"p":"x"}`, path: []string{"p", "a"}, want: `{"p":"x"}`},
		"pretty":        {obj: "{\n  \"a\": 1,\n  \"b\": 2\n}", path: []string{"b"}, want: "{\n  \"a\": 1\n}", deleted: true},
	}
}

func TestDeleteKey(t *testing.T) {
	for name, tc := range deleteKeyCases() {
		t.Run(name, func(t *testing.T) {
			got, deleted, err := DeleteKey([]byte(tc.obj), tc.path)
			if err != nil {
				t.Fatalf("DeleteKey: %v", err)
			}
			if string(got) != tc.want || deleted != tc.deleted {
				t.Errorf("DeleteKey(%s, %q) = %s, %v; want %s, %v", tc.obj, tc.path, got, deleted, tc.want, tc.deleted)
			}
		})
	}
	for _, bad := range []string{`[1]`, `{"a":`, `"s"`} {
		if _, _, err := DeleteKey([]byte(bad), []string{"a"}); err == nil {
			t.Errorf("DeleteKey(%s) = nil error, want one", bad)
		}
	}
}

// TestMembers: Members walks an object's members in order, keys as
// written, and refuses what is not one object.
func TestMembers(t *testing.T) {
	type kv struct {
		key     string
		escaped bool
		value   string
	}
	walk := func(obj string) ([]kv, bool) {
		var got []kv
		ok := Members([]byte(obj), func(k []byte, esc bool, v json.RawMessage) bool {
			got = append(got, kv{string(k), esc, string(v)})
			return true
		})
		return got, ok
	}
	got, ok := walk(` { "a" : 1 , "b\"c":{"x":[1,"}"]},"a":"s" } `)
	want := []kv{{"a", false, "1"}, {`b\"c`, true, `{"x":[1,"}"]}`}, {"a", false, `"s"`}}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Members = %v, %v; want %v, true", got, ok, want)
	}
	if got, ok := walk(`{}`); !ok || len(got) != 0 {
		t.Errorf("Members({}) = %v, %v; want none, true", got, ok)
	}
	for _, bad := range []string{``, `[]`, `"a"`, `{"a":1`, `{"a":1}x`, `{"a":1,}`, `{"a"}`, `{"a":1}{}`, `null`} {
		if _, ok := walk(bad); ok {
			t.Errorf("Members(%q) reported an object", bad)
		}
	}
	n := 0
	if Members([]byte(`{"a":1,"b":2}`), func([]byte, bool, json.RawMessage) bool { n++; return false }) || n != 1 {
		t.Errorf("a walk f stopped: called %d times and reported whole", n)
	}
}

// FuzzMembers: on any valid JSON object, Members sees what encoding/json
// sees: the last value of each key, the keys as decoded.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"a\u0062":[{"c":"}"}], "d" : null}`, `[1]`, `{"\ud800":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		if !json.Valid(obj) {
			Members(obj, func([]byte, bool, json.RawMessage) bool { return true }) // must not panic
			return
		}
		var want map[string]json.RawMessage
		isObj := json.Unmarshal(obj, &want) == nil && want != nil
		got := map[string]json.RawMessage{}
		ok := Members(obj, func(k []byte, _ bool, v json.RawMessage) bool {
			var key string
			if err := json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key); err != nil {
				t.Fatalf("Members(%q): key %q is not a JSON string's body", obj, k)
			}
			got[key] = v
			return true
		})
		if ok != isObj {
			t.Fatalf("Members(%q) reported %v, encoding/json an object: %v", obj, ok, isObj)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("Members(%q) saw %d keys, encoding/json %d", obj, len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(got[k], v) {
				t.Fatalf("Members(%q)[%q] = %s, encoding/json %s", obj, k, got[k], v)
			}
		}
	})
}
