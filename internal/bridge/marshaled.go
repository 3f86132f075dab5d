package bridge

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The legacy front's requests written without encoding/json's maps and
// reflection, to the byte as encoding/json writes them (ModernParams).

// plainKey reports whether s, the body of a JSON string, reads the same
// decoded and as encoding/json writes it again: printable ASCII without
// quote, backslash or the <, > and & it escapes.
func plainKey(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendMarshaled appends v, valid JSON, as encoding/json writes a
// json.RawMessage it marshals: without whitespace between tokens, with <,
// > and & written \u003c, \u003e, \u0026 and U+2028, U+2029 written
// \u2028, \u2029.
func appendMarshaled(dst, v []byte) []byte {
	const hex = "0123456789abcdef"
	inString, escaped := false, false
	start := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			start = i + 1
			escaped = false
			continue
		case c == 0xe2 && i+2 < len(v) && v[i+1] == 0x80 && v[i+2]&^1 == 0xa8:
			dst = append(dst, v[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[v[i+2]&0xf])
			i += 2
			start = i + 1
			escaped = false
			continue
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			dst = append(dst, v[start:i]...)
			start = i + 1
		}
	}
	return append(dst, v[start:]...)
}

// The keys and the value ModernParams writes itself, made once.
var (
	keyMeta       = []byte("_meta")
	keyProtocol   = []byte(metaProtocol)
	keyCaps       = []byte(metaClientCaps)
	keyInfo       = []byte(metaClientInfo)
	keyLogLevel   = []byte(metaLogLevel)
	modernVersion = []byte(`"` + ModernVersion + `"`)
)

// member is a key, as written, and its value.
type member struct {
	key, value []byte
}

// plainMembers appends to ms the members of the object obj and reports
// whether every key is plain (plainKey) and none repeats.
func plainMembers(ms []member, obj []byte) ([]member, bool) {
	ok := rewrite.Members(obj, func(k []byte, _ bool, v json.RawMessage) bool {
		if !plainKey(k) {
			return false
		}
		ms = append(ms, member{k, v})
		return true
	})
	return ms, ok
}

// sortMembers sorts ms by key, as encoding/json writes a map, and reports
// whether no key repeats.
func sortMembers(ms []member) bool {
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.key, b.key) })
	for i := 1; i < len(ms); i++ {
		if bytes.Equal(ms[i-1].key, ms[i].key) {
			return false
		}
	}
	return true
}

// modernParamsDirect is ModernParams written directly; false when it
// leaves the params to encoding/json: params that are not an object or
// null (encoding/json's error), a key that is not plain or repeats, a
// _meta that is not an object or null, caps or info that are not JSON, a
// log level that is not plain.
func modernParamsDirect(params json.RawMessage, caps, info json.RawMessage, logLevel string) (json.RawMessage, bool) {
	if !plainKey([]byte(logLevel)) || !rewrite.Valid(caps) || !rewrite.Valid(info) {
		return nil, false
	}
	var top, meta [16]member
	ps, ms := top[:0], meta[:0]
	var rawMeta []byte
	if t := bytes.TrimSpace(params); len(t) > 0 && string(t) != "null" {
		if !rewrite.Valid(t) {
			return nil, false
		}
		var ok bool
		if ps, ok = plainMembers(ps, t); !ok || !sortMembers(ps) {
			return nil, false
		}
		if i, found := slices.BinarySearchFunc(ps, keyMeta, func(m member, k []byte) int { return bytes.Compare(m.key, k) }); found {
			rawMeta = ps[i].value
			ps = slices.Delete(ps, i, i+1)
		}
	}
	if len(rawMeta) > 0 && string(rawMeta) != "null" {
		var ok bool
		if ms, ok = plainMembers(ms, rawMeta); !ok || !sortMembers(ms) {
			return nil, false
		}
	}
	// The session's era keys replace the client's.
	ms = slices.DeleteFunc(ms, func(m member) bool {
		switch string(m.key) {
		case metaProtocol, metaClientCaps, metaClientInfo:
			return true
		case metaLogLevel:
			return logLevel != ""
		}
		return false
	})
	ms = append(ms, member{keyProtocol, modernVersion}, member{keyCaps, caps}, member{keyInfo, info})
	if logLevel != "" {
		ms = append(ms, member{keyLogLevel, nil}) // written below
	}
	sortMembers(ms)
	ps = append(ps, member{key: keyMeta})
	sortMembers(ps)
	out := make([]byte, 0, len(params)+len(caps)+len(info)+len(logLevel)+160)
	out = append(out, '{')
	for i, p := range ps {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, '"'), p.key...), `":`...)
		if p.value != nil {
			out = appendMarshaled(out, p.value)
			continue
		}
		out = append(out, '{')
		for j, m := range ms {
			if j > 0 {
				out = append(out, ',')
			}
			out = append(append(append(out, '"'), m.key...), `":`...)
			if m.value == nil {
				out = append(append(append(out, '"'), logLevel...), '"')
				continue
			}
			out = appendMarshaled(out, m.value)
		}
		out = append(out, '}')
	}
	return append(out, '}'), true
}
