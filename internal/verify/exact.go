package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// members reads a JSON object as clients read it: member names matched
// exactly and, of a name written twice, the last (go-sdk v1.8.0's decoder,
// which turns encoding/json's case-insensitive matching off; JSON.parse in
// a TypeScript client). Decoding into a struct would match "Text" for
// "text", reading a reply one way where every client reads it another, so
// the verifier reads each object through members and each member with
// member.
func members(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null, want an object")
	}
	return m, nil
}

// member decodes m[name] into dst, which must hold no struct (a string,
// a number, a slice of them, a map[string]any): member names inside are
// then exact too. An absent or null member leaves dst alone and reports
// false.
func member(m map[string]json.RawMessage, name string, dst any) (bool, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return false, err
	}
	return true, nil
}

// readFields reads the object b's members named in dst, each into its
// destination (as member does), and fails on the first that does not
// decode.
func readFields(b []byte, dst map[string]any) error {
	m, err := members(b)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(dst)) {
		if _, err := member(m, name, dst[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// freeForm are the members whose value is a map of data, not of the
// schema's members (every client reads them as maps, names exact): of
// their objects only a name written twice is read two ways. A JSON
// Schema's properties "id" and "ID" are two properties.
var freeForm = map[string]bool{"_meta": true, "metadata": true, "inputSchema": true, "outputSchema": true, "experimental": true}

// twoWays says how clients could read the JSON-RPC message b two ways, or
// returns "". Such a message has no one reading to judge, so verify fails
// it whatever it reads:
//   - bytes that are not UTF-8: Go puts one U+FFFD per bad byte, the WHATWG
//     decoder a TypeScript client reads its body with one per maximal
//     subpart;
//   - an escaped lone surrogate (\ud800 unpaired): Go and Node read U+FFFD
//     when hashing, Python keeps it and cannot encode it;
//   - a member name written twice in one object: go-sdk and JSON.parse
//     take the last, other readers the first or refuse the message;
//   - two member names of one object that differ only in case (Text beside
//     text): a client decoding into structs with encoding/json, whose name
//     matching is case-insensitive, reads the later one for both.
func twoWays(b []byte) string {
	if !utf8.Valid(b) {
		return "it has bytes that are not UTF-8"
	}
	if s := loneSurrogate(b); s != "" {
		return "it has an escaped lone surrogate " + s
	}
	if !json.Valid(b) {
		// decodeMessage reports it. Walked, a value cut short ("[" then
		// a byte no value starts with) would stop the walk's Token at that
		// byte for good while More still saw a value there: the walk
		// never ended. Valid also bounds the nesting the walk recurses
		// through (10000, encoding/json's).
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	return walkNames(dec, false)
}

// walkNames reads one value from dec and returns the first member name
// written twice, or (outside free-form maps) differing only in case from
// another of its object, described; "" if none or the value does not
// decode (decodeMessage reports that).
func walkNames(dec *json.Decoder, free bool) string {
	tok, err := dec.Token()
	if err != nil {
		return ""
	}
	switch tok {
	case json.Delim('['):
		for dec.More() {
			if p := walkNames(dec, free); p != "" {
				return p
			}
		}
		_, _ = dec.Token()
	case json.Delim('{'):
		seen := map[string]string{} // folded name -> name as written
		for dec.More() {
			t, err := dec.Token()
			name, ok := t.(string)
			if err != nil || !ok {
				return ""
			}
			key := foldName(name)
			if free {
				key = name
			}
			switch prev, dup := seen[key]; {
			case dup && prev == name:
				return fmt.Sprintf("member %q is written twice in one object", name)
			case dup:
				return fmt.Sprintf("members %q and %q of one object differ only in case", prev, name)
			}
			seen[key] = name
			if p := walkNames(dec, free || freeForm[name]); p != "" {
				return p
			}
		}
		_, _ = dec.Token()
	}
	return ""
}

// foldName maps names equal under Unicode simple case folding (as
// strings.EqualFold and encoding/json's name matching compare them) to
// one string: each rune becomes the least of its folding orbit.
func foldName(s string) string {
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// loneSurrogate returns the first \uXXXX escape in a string of the JSON
// text b that is a surrogate not paired (a high one followed by a low
// one), or "".
func loneSurrogate(b []byte) string {
	hex4 := func(i int) rune {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	inString := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(b) && b[i+1] == 'u':
			r := hex4(i)
			switch {
			case r >= 0xD800 && r < 0xDC00:
				if lo := hex4(i + 6); lo >= 0xDC00 && lo < 0xE000 {
					i += 11
					continue
				}
				return string(b[i:min(i+6, len(b))])
			case r >= 0xDC00 && r < 0xE000:
				return string(b[i : i+6])
			}
			i += 5
		case c == '\\':
			i++ // the escaped character
		}
	}
	return ""
}
