package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// goldenInputs returns the "in" sections of the corpus in the given mode.
func goldenInputs(f *testing.F, mode string) [][]byte {
	var ins [][]byte
	for _, path := range goldenFiles(f) {
		c, err := loadGolden(path)
		if err != nil {
			f.Fatal(err)
		}
		if c.mode == mode {
			ins = append(ins, c.in)
		}
	}
	return ins
}

func FuzzReader(f *testing.F) {
	for _, tc := range readerCases() {
		f.Add([]byte(tc.in))
	}
	for _, in := range goldenInputs(f, "sse") {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := readAll(bytes.NewReader(in), 1<<20)
		if err != io.EOF {
			t.Fatalf("final error = %v, want io.EOF", err)
		}
		if got := concatRaw(evs); !bytes.Equal(got, in) {
			t.Fatalf("concatenated Raw = %q, want the input %q", got, in)
		}
		slow, err := readAll(iotest.OneByteReader(bytes.NewReader(in)), 1<<20)
		if err != io.EOF || !bytes.Equal(concatRaw(slow), in) {
			t.Fatalf("one-byte reads: Raw %q, %v; want the input", concatRaw(slow), err)
		}
		if diff := cmp.Diff(fieldsOf(evs), fieldsOf(slow)); diff != "" {
			t.Fatalf("one-byte reads give other fields (-whole +one-byte):\n%s", diff)
		}
	})
}

func FuzzReframe(f *testing.F) {
	for _, tc := range reframeCases() {
		f.Add([]byte(tc.event), []byte(tc.data))
	}
	for _, tc := range readerCases() {
		f.Add([]byte(tc.in), []byte("{\n}"))
	}
	f.Fuzz(func(t *testing.T, stream, data []byte) {
		ev, err := NewReader(bytes.NewReader(stream), 0).Next()
		if err != nil {
			return
		}
		out := Reframe(ev, data)
		got, err := NewReader(bytes.NewReader(out), 0).Next()
		if err != nil {
			t.Fatalf("reading Reframe output %q: %v", out, err)
		}
		if !bytes.Equal(got.Raw, out) {
			t.Fatalf("Reframe output %q reads as more than one event, first %q", out, got.Raw)
		}
		want := bytes.ReplaceAll(bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
		if !bytes.Equal(got.Data, want) || got.ID != ev.ID || got.HasID != ev.HasID || got.Name != ev.Name {
			t.Fatalf("Reframe(%q, %q) = %q: data %q id %q/%v name %q; want data %q id %q/%v name %q",
				ev.Raw, data, out, got.Data, got.ID, got.HasID, got.Name, want, ev.ID, ev.HasID, ev.Name)
		}
	})
}

func FuzzParseBody(f *testing.F) {
	for _, tc := range messageCases() {
		f.Add([]byte(tc.in))
	}
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`))
	for _, m := range []string{`"tools/call"`, `"tools\/call"`, `"tools/cal"`, `"tools/calls"`, `"ping"`, `"initialize"`, `"notifications/initialized"`, `""`} {
		f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":` + m + `}`))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		msgs, batch, err := ParseBody(in)
		var one [1]Message
		into, intoBatch, intoErr := ParseBodyInto(in, &one)
		if !reflect.DeepEqual(into, msgs) || intoBatch != batch || fmt.Sprint(intoErr) != fmt.Sprint(err) {
			t.Fatalf("ParseBodyInto(%q) = %+v, %v, %v; ParseBody %+v, %v, %v", in, into, intoBatch, intoErr, msgs, batch, err)
		}
		if len(into) == 1 && !batch && &into[0] != &one[0] {
			t.Fatalf("ParseBodyInto(%q) did not use the room it was given", in)
		}
		if !json.Valid(in) {
			if !errors.Is(err, ErrParse) {
				t.Fatalf("ParseBody(%q) error = %v, want ErrParse", in, err)
			}
			return
		}
		if err != nil && !errors.Is(err, ErrInvalidRequest) {
			t.Fatalf("ParseBody(%q) error = %v, want nil or ErrInvalidRequest", in, err)
		}
		var elems []json.RawMessage
		if !batch {
			elems = []json.RawMessage{in}
		} else if json.Unmarshal(in, &elems) != nil {
			t.Fatalf("ParseBody(%q) says batch for a non-array", in)
		}
		if len(msgs) != len(elems) {
			t.Fatalf("ParseBody(%q) = %d messages, want %d", in, len(msgs), len(elems))
		}
		for i, m := range msgs {
			if want := refMessage(elems[i]); !reflect.DeepEqual(summary(m), want) {
				t.Fatalf("ParseBody(%q)[%d] = %+v, encoding/json says %+v", in, i, summary(m), want)
			}
		}
	})
}

// envelopeSummary is what FuzzParseBody compares with encoding/json.
type envelopeSummary struct {
	Kind                              Kind
	ID, Method, Params, Result, Error string
}

func summary(m Message) envelopeSummary {
	if m.Kind == KindInvalid {
		return envelopeSummary{}
	}
	return envelopeSummary{m.Kind, string(m.ID), m.Method, string(m.Params), string(m.Result), string(m.Error)}
}

// refMessage classifies one message with encoding/json, by the rules
// ParseMessage documents: an independent oracle for the byte scanner.
func refMessage(b []byte) envelopeSummary {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil || m == nil {
		return envelopeSummary{}
	}
	var version, method string
	if json.Unmarshal(m["jsonrpc"], &version) != nil || version != "2.0" {
		return envelopeSummary{}
	}
	id, hasID := m["id"]
	idOK := hasID && isIDType(id)
	s := envelopeSummary{ID: string(id), Params: string(m["params"]), Result: string(m["result"]), Error: string(m["error"])}
	rawMethod, hasMethod := m["method"]
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case hasMethod:
		p := s.Params
		// encoding/json decodes null into a string without complaint;
		// JSON-RPC wants the method to be a string.
		if rawMethod[0] != '"' || json.Unmarshal(rawMethod, &method) != nil || hasResult || hasError || (hasID && !idOK) ||
			(p != "" && p[0] != '{' && p[0] != '[' && p != "null") {
			return envelopeSummary{}
		}
		s.Method, s.Kind = method, KindNotification
		if hasID {
			s.Kind = KindRequest
		}
	case hasResult && !hasError && idOK:
		s.Kind, s.Params = KindResponse, ""
	case hasError && !hasResult && (idOK || string(id) == "null") && s.Error[0] == '{':
		s.Kind, s.Params = KindError, ""
	default:
		return envelopeSummary{}
	}
	return s
}

func FuzzSpliceDeclaration(f *testing.F) {
	for _, tc := range spliceCases() {
		f.Add([]byte(tc.in))
	}
	for _, in := range goldenInputs(f, "json") {
		f.Add(in)
	}
	d := SkillsSidecar()
	f.Fuzz(func(t *testing.T, in []byte) {
		out, changed, err := SpliceDeclaration(in, d)
		if !json.Valid(in) {
			if !errors.Is(err, ErrParse) || !bytes.Equal(out, in) {
				t.Fatalf("SpliceDeclaration(%q) = %q, %v; want the input and ErrParse", in, out, err)
			}
			return
		}
		if err != nil || !json.Valid(out) || changed == bytes.Equal(out, in) {
			t.Fatalf("SpliceDeclaration(%q) = %q, %v, %v; want valid JSON, changed iff different", in, out, changed, err)
		}
		again, changedAgain, err := SpliceDeclaration(out, d)
		if err != nil || changedAgain || !bytes.Equal(again, out) {
			t.Fatalf("splicing %q twice gives %q, %v, %v; want it unchanged", out, again, changedAgain, err)
		}
		if changed {
			if want, got := refSplice(t, in, d), decode(t, out); !reflect.DeepEqual(got, want) {
				t.Fatalf("SpliceDeclaration(%q) = %q, which decodes to %v; want %v", in, out, got, want)
			}
		}
	})
}

// refSplice applies d to the decoded message the way SpliceDeclaration
// documents, with maps instead of bytes.
func refSplice(t *testing.T, msg []byte, d Declaration) any {
	v := decode(t, msg)
	res := v.(map[string]any)["result"].(map[string]any)
	caps, _ := res["capabilities"].(map[string]any)
	if caps == nil {
		caps = map[string]any{}
		res["capabilities"] = caps
	}
	exts, _ := caps["extensions"].(map[string]any)
	if exts == nil {
		exts = map[string]any{}
		caps["extensions"] = exts
	}
	for _, ext := range d.Extensions {
		exts[ext.ID] = decode(t, ext.Settings)
	}
	r, ok := caps["resources"]
	ok = ok && r != nil // null reads as absent
	switch {
	case !ok && d.AddResources && d.ResourcesListChanged:
		caps["resources"] = map[string]any{"listChanged": true}
	case !ok && d.AddResources:
		caps["resources"] = map[string]any{}
	case ok && d.ResourcesListChanged:
		if m, isObj := r.(map[string]any); isObj {
			m["listChanged"] = true
		}
	}
	return v
}

func decode(t *testing.T, b []byte) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func FuzzSetKey(f *testing.F) {
	for _, tc := range setKeyCases() {
		k1, k2 := "", ""
		if len(tc.path) > 0 {
			k1 = tc.path[0]
		}
		if len(tc.path) > 1 {
			k2 = tc.path[1]
		}
		f.Add([]byte(tc.obj), k1, k2, []byte(tc.value))
	}
	f.Fuzz(func(t *testing.T, obj []byte, k1, k2 string, value []byte) {
		path := []string{k1}
		if k2 != "" {
			path = append(path, k2)
		}
		out, err := SetKey(obj, path, value)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("SetKey(%q, %q, %q) = %q, not valid JSON", obj, path, value, out)
		}
		got, ok := GetKey(out, path)
		if !ok || !bytes.Equal(got, trimWS(value)) {
			t.Fatalf("GetKey(SetKey(%q, %q, %q)) = %q, %v; want the value", obj, path, value, got, ok)
		}
		want := decode(t, obj)
		m := want.(map[string]any)
		if len(path) == 2 {
			if m[k1] == nil {
				m[k1] = map[string]any{}
			}
			m = m[k1].(map[string]any)
		}
		m[path[len(path)-1]] = decode(t, value)
		if got := decode(t, out); !reflect.DeepEqual(got, want) {
			t.Fatalf("SetKey(%q, %q, %q) = %q, decodes to %v, want %v", obj, path, value, out, got, want)
		}
	})
}

func FuzzAppendToArray(f *testing.F) {
	for _, tc := range appendCases() {
		if len(tc.path) == 1 && len(tc.elems) > 0 {
			f.Add([]byte(tc.obj), tc.path[0], []byte(tc.elems[0]))
		}
	}
	f.Fuzz(func(t *testing.T, obj []byte, key string, elem []byte) {
		out, err := AppendToArray(obj, []string{key}, elem)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("AppendToArray(%q, %q, %q) = %q, not valid JSON", obj, key, elem, out)
		}
		want := decode(t, obj).(map[string]any)
		arr, _ := want[key].([]any)
		want[key] = append(arr, decode(t, elem))
		if got := decode(t, out); !reflect.DeepEqual(got, any(want)) {
			t.Fatalf("AppendToArray(%q, %q, %q) = %q, decodes to %v, want %v", obj, key, elem, out, got, want)
		}
	})
}

// FuzzGetString checks GetString against encoding/json: on a valid object,
// the string at "a" (or at "a" inside "m") is what encoding/json decodes,
// and anything that is not a string there reports false.
func FuzzGetString(f *testing.F) {
	for _, s := range []string{`{"a":"x"}`, `{"a":"\u00e9\n"}`, `{"a":1}`, `{"m":{"a":"\ud800"}}`, `{"a":"é","a":"last"}`, `{"a":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			GetString(in, "a") // must not panic
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(in, &top) != nil {
			if _, ok := GetString(in, "a"); ok {
				t.Fatalf("GetString(%q, a) found a string in a non-object", in)
			}
			return
		}
		check := func(raw json.RawMessage, has bool, path ...string) {
			got, ok := GetString(in, path...)
			var want string
			wantOK := has && len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &want) == nil
			if ok != wantOK || got != want {
				t.Fatalf("GetString(%q, %q) = %q, %v; encoding/json says %q, %v", in, path, got, ok, want, wantOK)
			}
		}
		raw, has := top["a"]
		check(raw, has, "a")
		var m map[string]json.RawMessage
		if json.Unmarshal(top["m"], &m) == nil {
			raw, has = m["a"]
			check(raw, has, "m", "a")
		}
	})
}

// FuzzAppendString checks AppendString against json.Marshal on any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\x00\x01\b\f\n\r\t\x1f", "<a href='x'>&</a>", "\u2028\u2029é😀", "\xff\xfe bad", "\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("AppendString(%q) = %s, json.Marshal says %s", s, got[1:], want)
		}
		if got := AppendString(nil, []byte(s)); string(got) != string(want) {
			t.Fatalf("AppendString([]byte(%q)) = %s, json.Marshal says %s", s, got, want)
		}
	})
}

// FuzzReplyID holds ReplyID's one walk to the two look-ups it replaces: on
// any JSON, a reply id exactly when GetKey finds an "id" and no "method".
func FuzzReplyID(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":"a","method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress"}`, ` {"id":null,"error":{}} `, `[{"id":1}]`, `{"i\u0064":2}`, `{"id":1,"id":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := ReplyID(in) // must not panic on anything
		if !json.Valid(in) {
			return
		}
		_, hasMethod := GetKey(in, []string{"method"})
		want, hasID := GetKey(in, []string{"id"})
		if wantOK := hasID && !hasMethod; ok != wantOK || ok && !bytes.Equal(got, want) {
			t.Fatalf("ReplyID(%q) = %s, %v; GetKey finds id %s, %v and method %v", in, got, ok, want, hasID, hasMethod)
		}
	})
}

func FuzzDeleteKey(f *testing.F) {
	for _, tc := range deleteKeyCases() {
		k1, k2 := tc.path[0], ""
		if len(tc.path) > 1 {
			k2 = tc.path[1]
		}
		f.Add([]byte(tc.obj), k1, k2)
	}
	f.Fuzz(func(t *testing.T, obj []byte, k1, k2 string) {
		path := []string{k1}
		if k2 != "" {
			path = append(path, k2)
		}
		out, deleted, err := DeleteKey(obj, path)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("DeleteKey(%q, %q) = %q, not valid JSON", obj, path, out)
		}
		if _, ok := GetKey(out, path); ok {
			t.Fatalf("DeleteKey(%q, %q) = %q still has the key", obj, path, out)
		}
		want := decode(t, obj).(map[string]any)
		m := want
		if len(path) == 2 {
			m, _ = want[k1].(map[string]any)
		}
		_, had := m[path[len(path)-1]]
		if had != deleted {
			t.Fatalf("DeleteKey(%q, %q) deleted = %v, the key was there: %v", obj, path, deleted, had)
		}
		if m != nil {
			delete(m, path[len(path)-1])
		}
		if got := decode(t, out); !reflect.DeepEqual(got, any(want)) {
			t.Fatalf("DeleteKey(%q, %q) = %q, decodes to %v, want %v", obj, path, out, got, want)
		}
	})
}
