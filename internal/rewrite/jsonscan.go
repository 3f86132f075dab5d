package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// errSyntax is what the scanner reports on bytes it cannot walk. Public entry
// points check validity first (valid, which is json.Valid's twin), so
// callers normally see ErrParse instead.
var errSyntax = errors.New("rewrite: malformed JSON")

// The scanner below walks JSON text by byte offsets without building values.
// It is written for input that valid has accepted, but it never panics
// and reports errSyntax when it meets bytes it cannot walk, so the cheap
// look-ups (LooksLikeHandshakeResult, GetKey) may run it on unchecked input.

// skipWS returns the index of the first non-whitespace byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string that opens at b[i] ('"')
// and whether the string holds a backslash escape. It jumps from quote to
// backslash with bytes.IndexByte, so a long string (a base64 blob) costs a
// memory scan, not a loop per byte; q, the next quote, is looked for again
// only once an escape has carried the walk past it, so many escapes before
// one quote stay linear.
func skipString(b []byte, i int) (end int, escaped bool, err error) {
	j, q := i+1, -1
	for {
		if j >= len(b) {
			return 0, false, errSyntax
		}
		if q < j {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return 0, false, errSyntax
			}
			q = j + k
		}
		k := bytes.IndexByte(b[j:q], '\\')
		if k < 0 {
			return q + 1, escaped, nil
		}
		escaped = true
		j += k + 2 // the backslash and the byte it escapes
	}
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errSyntax
	}
	switch b[i] {
	case '"':
		end, _, err := skipString(b, i)
		return end, err
	case '{', '[':
		return skipContainer(b, i)
	}
	j := i
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	if j == i {
		return 0, errSyntax
	}
	return j, nil
}

// skipContainer returns the index after the object or array opening at b[i].
// It counts depth iteratively, so deep nesting cannot exhaust the stack.
func skipContainer(b []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			end, _, err := skipString(b, j)
			if err != nil {
				return 0, err
			}
			j = end - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, errSyntax
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', ']', '}', '[', '{', '"':
		return true
	}
	return false
}

// member is one "key": value pair of an object, by offsets into the text.
type member struct {
	keyStart, keyEnd int  // the key including its quotes
	valStart, valEnd int  // the value
	escaped          bool // the key holds a backslash escape
}

// objIter walks the members of one object without allocating.
type objIter struct {
	b     []byte
	i     int // next byte to look at; after the walk, the index of '}'
	count int
	err   error
	last  member // the member returned last
	lead  int    // where the whitespace before last's key starts
}

// newObjIter starts a walk of the object opening at b[start].
func newObjIter(b []byte, start int) objIter {
	it := objIter{b: b, i: start + 1}
	if start >= len(b) || b[start] != '{' {
		it.err = errSyntax
	}
	return it
}

// next returns the next member; false at the closing brace or on error
// (then it.err is set).
func (it *objIter) next() (member, bool) {
	if it.err != nil {
		return member{}, false
	}
	b := it.b
	i := skipWS(b, it.i)
	if it.count > 0 {
		if i < len(b) && b[i] == '}' {
			it.i = i
			return member{}, false
		}
		if i >= len(b) || b[i] != ',' {
			return it.fail()
		}
		i++
	} else if i < len(b) && b[i] == '}' {
		it.i = i
		return member{}, false
	}
	lead := it.i
	if it.count > 0 {
		lead = i
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '"' {
		return it.fail()
	}
	m := member{keyStart: i}
	var err error
	if m.keyEnd, m.escaped, err = skipString(b, i); err != nil {
		return it.fail()
	}
	i = skipWS(b, m.keyEnd)
	if i >= len(b) || b[i] != ':' {
		return it.fail()
	}
	m.valStart = skipWS(b, i+1)
	if m.valEnd, err = skipValue(b, m.valStart); err != nil {
		return it.fail()
	}
	it.i = m.valEnd
	it.count++
	it.last, it.lead = m, lead
	return m, true
}

func (it *objIter) fail() (member, bool) {
	it.err = errSyntax
	return member{}, false
}

// keyIs reports whether the member's key, unescaped, equals name. A key
// with escapes or invalid UTF-8 (which encoding/json turns into U+FFFD) is
// decoded the way encoding/json decodes it.
func keyIs(b []byte, m member, name string) bool {
	raw := b[m.keyStart+1 : m.keyEnd-1]
	if !m.escaped && utf8.Valid(raw) {
		return string(raw) == name
	}
	var s string
	if err := json.Unmarshal(b[m.keyStart:m.keyEnd], &s); err != nil {
		return false
	}
	return s == name
}

// findKey returns the last member of the object at b[start] whose key is
// name (encoding/json keeps the last of duplicate keys, so that is the one
// every Go peer sees), and the walk's final state for insertions.
func findKey(b []byte, start int, name string) (found member, ok bool, it objIter) {
	it = newObjIter(b, start)
	for m, more := it.next(); more; m, more = it.next() {
		if keyIs(b, m, name) {
			found, ok = m, true
		}
	}
	return found, ok && it.err == nil, it
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x7f {
			q, _ := json.Marshal(s) // a string always marshals
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
