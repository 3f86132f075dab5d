package idmap

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Same reports whether a and b, two encoded JSON-RPC ids, name the same
// request. An id is a string or a number (JSON-RPC 2.0; the MCP schemas'
// RequestId), and it is its value, not its spelling: a string its decoded
// text ("x" and "\u0078" are one id), a number its numeric value (1, 1.0
// and 10e-1 are one id, as go-sdk and the TypeScript SDK read them and
// answer them: 1). Anything else (null, not JSON) is only the same as
// the same bytes. A string is never a number.
func Same(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, b) {
		return true
	}
	var bufA, bufB [48]byte
	ka, okA := appendKey(bufA[:0], a)
	kb, okB := appendKey(bufB[:0], b)
	return okA && okB && bytes.Equal(ka, kb)
}

// Key is id, an encoded JSON-RPC id, as a map key under which the ids
// Same holds to be one are one key; "" for an empty id.
func Key(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	if k, ok := appendKey(nil, id); ok {
		return string(k)
	}
	return "r" + string(id)
}

// appendKey appends the canonical form of id to dst: 's' and the text of
// a string; 'n' and the value of a number, as its sign, its significant
// digits and the power of ten that scales them ("n1e0" for 1, 1.0 and
// 10e-1; "n0" for every zero). ok is false when id is neither, or a
// number whose exponent is too large to compare.
func appendKey(dst, id []byte) ([]byte, bool) {
	if len(id) > 0 && id[0] == '"' {
		s, ok := rewrite.StringBytes(id)
		if !ok {
			return dst, false
		}
		return append(append(dst, 's'), s...), true
	}
	return appendNumber(append(dst, 'n'), id)
}

// maxExponent bounds the exponents appendNumber compares: far past any
// id's, and far from overflowing an int with a number's length added.
const maxExponent = 1 << 40

// appendNumber appends the value of n, a JSON number (RFC 8259 §6: no
// leading zeros, no leading '+', digits on both sides of a '.'), to dst.
func appendNumber(dst, n []byte) ([]byte, bool) {
	i := 0
	neg := i < len(n) && n[i] == '-'
	if neg {
		i++
	}
	start := i
	for i < len(n) && isDigit(n[i]) {
		i++
	}
	whole := n[start:i]
	if len(whole) == 0 || (len(whole) > 1 && whole[0] == '0') {
		return dst, false
	}
	var frac []byte
	if i < len(n) && n[i] == '.' {
		i++
		start = i
		for i < len(n) && isDigit(n[i]) {
			i++
		}
		if frac = n[start:i]; len(frac) == 0 {
			return dst, false
		}
	}
	exp := 0
	if i < len(n) && (n[i] == 'e' || n[i] == 'E') {
		i++
		negExp := i < len(n) && n[i] == '-'
		if i < len(n) && (n[i] == '-' || n[i] == '+') {
			i++
		}
		start = i
		for ; i < len(n) && isDigit(n[i]); i++ {
			if exp = exp*10 + int(n[i]-'0'); exp > maxExponent {
				return dst, false
			}
		}
		if i == start {
			return dst, false
		}
		if negExp {
			exp = -exp
		}
	}
	if i != len(n) {
		return dst, false
	}
	// The digits of whole and frac, one run: the value is the run times
	// 10^(exp-len(frac)); its significant part is from its first nonzero
	// digit to its last.
	digit := func(k int) byte {
		if k < len(whole) {
			return whole[k]
		}
		return frac[k-len(whole)]
	}
	total := len(whole) + len(frac)
	first, last := 0, total-1
	for first < total && digit(first) == '0' {
		first++
	}
	if first == total {
		return append(dst, '0'), true // zero, whatever its sign
	}
	for digit(last) == '0' {
		last--
	}
	if neg {
		dst = append(dst, '-')
	}
	for k := first; k <= last; k++ {
		dst = append(dst, digit(k))
	}
	dst = append(dst, 'e')
	return strconv.AppendInt(dst, int64(exp-len(frac)+total-1-last), 10), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
