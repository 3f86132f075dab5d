package rewrite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrNotObject reports that an edit needed a JSON object (the document or a
// value on the path) and found something else.
var ErrNotObject = errors.New("rewrite: not a JSON object")

// ErrNotArray reports that AppendToArray found a value that is not an array.
var ErrNotArray = errors.New("rewrite: not a JSON array")

// ErrBadPath reports an edit whose path is empty or holds a key that is
// not valid UTF-8 (JSON cannot spell such a key).
var ErrBadPath = errors.New("rewrite: bad key path")

// GetKey returns the raw value found by following path through nested
// objects of the JSON document obj, and whether it is there. An empty path
// returns the whole document without surrounding whitespace. Of duplicate
// keys the last one counts, as in encoding/json. GetKey does not validate
// obj: on malformed input it reports false or an unspecified sub-slice, and
// never panics. The result aliases obj.
func GetKey(obj []byte, path []string) (json.RawMessage, bool) {
	start, end, ok := lookup(obj, path)
	if !ok {
		return nil, false
	}
	return obj[start:end:end], true
}

// GetString returns the string found by following path through nested
// objects of the JSON document obj, decoded as encoding/json decodes it, and
// whether there is a string there. It is GetKey for the common case of a
// string parameter, without encoding/json's allocations when the string
// needs no unescaping.
func GetString(obj []byte, path ...string) (string, bool) {
	raw, ok := GetKey(obj, path)
	if !ok {
		return "", false
	}
	b, ok := StringBytes(raw)
	return string(b), ok
}

// plainString reports whether the body of a JSON string literal needs no
// decoding: no escapes, quotes or control characters, and valid UTF-8.
func plainString(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if needsCloserLook(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	for _, c := range b[i:] {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(b)
}

// lookup returns the span of the value at path.
func lookup(b []byte, path []string) (start, end int, ok bool) {
	i := skipWS(b, 0)
	if len(path) == 0 {
		end, err := skipValue(b, i)
		return i, end, err == nil
	}
	// The walk of each object on the path finds the value's end; skipping
	// the whole document first would scan it twice.
	for _, key := range path {
		if i >= len(b) {
			return 0, 0, false
		}
		if b[i] != '{' {
			return 0, 0, false
		}
		m, found, _ := findKey(b, i, key)
		if !found {
			return 0, 0, false
		}
		i, end = m.valStart, m.valEnd
	}
	return i, end, true
}

// SetKey returns a copy of the JSON object obj in which the value at path is
// value. An existing value (the last of duplicate keys) is replaced in
// place; a missing key is inserted as the last member of its parent object,
// and missing intermediate objects are created. Every other byte of obj is
// kept: key order, whitespace, escapes, numbers as written. An inserted
// member copies the whitespace around the parent's last member, so a
// pretty-printed object stays pretty; created objects are compact.
//
// Errors: ErrParse when obj or value is not valid JSON, ErrNotObject when
// obj or a value on the path is not an object, ErrBadPath for no path or a
// key that is not valid UTF-8.
func SetKey(obj []byte, path []string, value json.RawMessage) ([]byte, error) {
	if err := checkEdit(obj, path, value); err != nil {
		return nil, fmt.Errorf("set key %s: %w", dotted(path), err)
	}
	return setKey(obj, path, trimWS(value))
}

// checkEdit validates the arguments of an edit.
func checkEdit(obj []byte, path []string, values ...[]byte) error {
	if len(path) == 0 {
		return ErrBadPath
	}
	for _, key := range path {
		if !utf8.ValidString(key) {
			return fmt.Errorf("key %q: %w", key, ErrBadPath)
		}
	}
	if !valid(obj) {
		return fmt.Errorf("document: %w", ErrParse)
	}
	for _, v := range values {
		if !valid(v) {
			return fmt.Errorf("value: %w", ErrParse)
		}
	}
	return nil
}

// setKey is SetKey on input already known to be valid.
func setKey(b []byte, path []string, value []byte) ([]byte, error) {
	i := skipWS(b, 0)
	for d, key := range path {
		if i >= len(b) || b[i] != '{' {
			return nil, fmt.Errorf("set key %s: at %q: %w", dotted(path), dotted(path[:d]), ErrNotObject)
		}
		m, found, it := findKey(b, i, key)
		if it.err != nil {
			return nil, fmt.Errorf("set key %s: %w", dotted(path), it.err)
		}
		if !found {
			return insertMember(b, i, &it, path[d:], value), nil
		}
		if d == len(path)-1 {
			return replaceSpan(b, m.valStart, m.valEnd, value), nil
		}
		i = m.valStart
	}
	return nil, fmt.Errorf("set key: %w", ErrBadPath)
}

// insertMember inserts "path[0]": {"path[1]": ... value} as the last member
// of the object at b[start], whose walk it has completed.
func insertMember(b []byte, start int, it *objIter, path []string, value []byte) []byte {
	pos := start + 1 // an empty object: right after '{'
	if it.count > 0 {
		pos = it.last.valEnd
	}
	out := make([]byte, 0, len(b)+len(value)+nestedSize(path)+16)
	out = append(out, b[:pos]...)
	if it.count > 0 {
		out = append(out, ',')
		out = append(out, b[it.lead:it.last.keyStart]...)
	}
	out = appendString(out, path[0])
	if it.count > 0 {
		out = append(out, b[it.last.keyEnd:it.last.valStart]...)
	} else {
		out = append(out, ':')
	}
	out = appendNested(out, path[1:], value)
	return append(out, b[pos:]...)
}

// appendNested appends {"p0":{"p1":...value}} (just value for no path).
func appendNested(dst []byte, path []string, value []byte) []byte {
	for _, key := range path {
		dst = append(dst, '{')
		dst = appendString(dst, key)
		dst = append(dst, ':')
	}
	dst = append(dst, value...)
	for range path {
		dst = append(dst, '}')
	}
	return dst
}

func nestedSize(path []string) int {
	n := 0
	for _, key := range path {
		n += len(key) + 5
	}
	return n
}

// replaceSpan returns a copy of b with b[start:end] replaced by repl.
func replaceSpan(b []byte, start, end int, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(repl))
	out = append(out, b[:start]...)
	out = append(out, repl...)
	return append(out, b[end:]...)
}

// trimWS returns b without leading and trailing JSON whitespace.
func trimWS(b []byte) []byte {
	i := skipWS(b, 0)
	j := len(b)
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func dotted(path []string) string {
	return strings.Join(path, ".")
}

// AppendToArray returns a copy of the JSON object obj in which elems are
// appended to the array at path, after its last element; a missing array
// is created as SetKey creates a value. Like SetKey it keeps every other
// byte, and appended elements copy the whitespace before the array's last
// element. For example, it adds the sidecar's entries to result.resources
// of a resources/list reply. No elems returns obj unchanged. Errors are
// SetKey's, plus ErrNotArray when the value at path is not an array.
func AppendToArray(obj []byte, path []string, elems ...json.RawMessage) ([]byte, error) {
	values := make([][]byte, len(elems))
	for i, e := range elems {
		values[i] = e
	}
	if err := checkEdit(obj, path, values...); err != nil {
		return nil, fmt.Errorf("append to %s: %w", dotted(path), err)
	}
	if len(elems) == 0 {
		return obj, nil
	}
	start, end, ok := lookup(obj, path)
	if !ok {
		return setKey(obj, path, append(appendElems([]byte("["), nil, elems, false), ']'))
	}
	if obj[start] != '[' {
		return nil, fmt.Errorf("append to %s: %w", dotted(path), ErrNotArray)
	}
	pos, lead := start+1, []byte(nil) // an empty array: right after '['
	spans := elements(obj[start:end])
	if n := len(spans); n > 0 {
		last := start + spans[n-1][0]
		pos = start + spans[n-1][1]
		ws := last
		for isSpace(obj[ws-1]) {
			ws--
		}
		lead = obj[ws:last]
	}
	out := make([]byte, 0, len(obj)+len(elems)*(len(lead)+64))
	out = appendElems(append(out, obj[:pos]...), lead, elems, len(spans) > 0)
	return append(out, obj[pos:]...), nil
}

// appendElems appends elems, each after lead and a comma (but the first
// when !comma).
func appendElems(dst, lead []byte, elems []json.RawMessage, comma bool) []byte {
	for i, e := range elems {
		if comma || i > 0 {
			dst = append(dst, ',')
		}
		dst = append(append(dst, lead...), trimWS(e)...)
	}
	return dst
}

// FirstElement returns the first element of the JSON array arr, and false
// when arr is not an array or is empty. Like GetKey it does not validate
// arr and never panics; the result aliases arr.
func FirstElement(arr []byte) (json.RawMessage, bool) {
	i := skipWS(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, false
	}
	i = skipWS(arr, i+1)
	if i >= len(arr) || arr[i] == ']' {
		return nil, false
	}
	end, err := skipValue(arr, i)
	if err != nil {
		return nil, false
	}
	return arr[i:end:end], true
}

// StringBytes returns the bytes the JSON string literal raw decodes to, as
// encoding/json decodes them, and false when raw is not a string literal.
// A literal that needs no decoding (no escapes, valid UTF-8) is returned
// without a copy, aliasing raw, so a megabyte of base64 or text costs one
// scan.
func StringBytes(raw []byte) ([]byte, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, false
	}
	if body := raw[1 : len(raw)-1]; plainString(body) {
		return body[:len(body):len(body)], true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil, false
	}
	return []byte(s), true
}

// DeleteKey returns a copy of the JSON object obj without the member at
// path (every member of that key, since of duplicates the last would
// otherwise come back), and whether there was one. Like SetKey it copies
// every other byte; the separator and whitespace before the removed member
// go with it (after it, for an object's first member). A missing key, or a
// missing or non-object parent on the path, returns obj and false.
//
// Errors: ErrParse when obj is not valid JSON, ErrNotObject when obj is not
// an object, ErrBadPath for no path or a key that is not valid UTF-8.
func DeleteKey(obj []byte, path []string) ([]byte, bool, error) {
	if err := checkEdit(obj, path); err != nil {
		return nil, false, fmt.Errorf("delete key %s: %w", dotted(path), err)
	}
	if i := skipWS(obj, 0); obj[i] != '{' {
		return nil, false, fmt.Errorf("delete key %s: %w", dotted(path), ErrNotObject)
	}
	out, deleted := obj, false
	for {
		start, _, ok := lookup(out, path[:len(path)-1])
		if !ok || out[start] != '{' {
			return out, deleted, nil
		}
		next, ok := deleteMember(out, start, path[len(path)-1])
		if !ok {
			return out, deleted, nil
		}
		out, deleted = next, true
	}
}

// deleteMember removes the first member named key of the object at
// b[start], and reports whether there was one.
func deleteMember(b []byte, start int, key string) ([]byte, bool) {
	it := newObjIter(b, start)
	prevEnd := -1
	for m, more := it.next(); more; m, more = it.next() {
		if !keyIs(b, m, key) {
			prevEnd = m.valEnd
			continue
		}
		if prevEnd >= 0 {
			// ", "key": value" goes, from the end of the member before.
			return replaceSpan(b, prevEnd, m.valEnd, nil), true
		}
		// The first member: it and the separator after it go, up to the
		// next key; alone, just it (the braces keep their whitespace).
		if n, more := it.next(); more {
			return replaceSpan(b, m.keyStart, n.keyStart, nil), true
		}
		if it.err != nil {
			return nil, false
		}
		return replaceSpan(b, m.keyStart, m.valEnd, nil), true
	}
	return nil, false
}

// Members calls f with each member of the JSON object obj, in the order
// written: its key as written between the quotes (escapes not decoded),
// whether the key holds a backslash escape, and its raw value; a false
// from f ends the walk. It reports whether obj (surrounding whitespace
// allowed) is an object it could walk to its closing brace, f not having
// stopped it. Members does not validate obj (check it first), never
// panics, and allocates nothing; key and value alias obj.
func Members(obj []byte, f func(key []byte, escaped bool, value json.RawMessage) bool) bool {
	start := skipWS(obj, 0)
	it := newObjIter(obj, start)
	for m, more := it.next(); more; m, more = it.next() {
		if !f(obj[m.keyStart+1:m.keyEnd-1], m.escaped, obj[m.valStart:m.valEnd:m.valEnd]) {
			return false
		}
	}
	return it.err == nil && it.i < len(obj) && obj[it.i] == '}' && skipWS(obj, it.i+1) == len(obj)
}
