package upstreamfiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// mayAnswer reports whether some client could take a response with the
// raw JSON-RPC id got as the reply to its request sent with the raw id
// want. Clients match ids more loosely than byte for byte: the TypeScript
// SDK looks a response up by Number(id), so "1", " 1", "0x1" and 1.0 all
// answer a request 1; go-sdk turns the number of a request's id and of a
// response's alike into an int64 by truncation, so 1.5 answers a request
// 1 and 1 a request 1.5; equal strings match however they are escaped.
// The answer errs towards yes: a message wrongly counted as a reply costs
// only an observation (two replies publish nothing), one wrongly passed
// over could publish a digest of bytes no client took.
func mayAnswer(want, got []byte) bool {
	if bytes.Equal(want, got) {
		return true
	}
	ws, wstr := idString(want)
	gs, gstr := idString(got)
	if wstr && gstr && ws == gs {
		return true
	}
	wn, wok := idNumber(want)
	gn, gok := idNumber(got)
	if !wok || !gok {
		return false
	}
	if wn == gn {
		return true
	}
	if isJSONNumber(want) && isJSONNumber(got) {
		return goSDKSameID(wn, gn)
	}
	return false
}

// goSDKSameID reports whether go-sdk could give JSON numbers w and g the
// same id: it decodes a number as a float64 (refusing one beyond
// float64's range) and keeps int64(f), which truncates towards zero
// inside [-2^63, 2^63). Outside that range Go leaves the conversion's
// result to the implementation (amd64 gives -2^63 whatever the sign,
// arm64 saturates, soft float gives 0), so such an id is taken to answer,
// and be answered by, any number; so is ±Infinity, which go-sdk refuses.
func goSDKSameID(w, g float64) bool {
	if !inInt64Range(w) || !inInt64Range(g) {
		return true
	}
	return math.Trunc(w) == math.Trunc(g)
}

// inInt64Range: -2^63 <= f < 2^63, where int64(f) is f truncated (false
// for NaN).
func inInt64Range(f float64) bool {
	return f >= -(1<<63) && f < 1<<63
}

// idString decodes a JSON string id.
func idString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func isJSONNumber(raw []byte) bool {
	return len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9')
}

// idNumber is JavaScript's Number() of a JSON id value: a number as
// JSON.parse reads it, a string by the StringToNumber rules, null and
// false 0, true 1. NaN (and an object or array, which readScan refuses
// as an id) is false.
func idNumber(raw []byte) (float64, bool) {
	switch {
	case len(raw) == 0:
		return 0, false
	case raw[0] == '"':
		s, ok := idString(raw)
		if !ok {
			return 0, false
		}
		return jsNumber(s)
	case string(raw) == "null", string(raw) == "false":
		return 0, true
	case string(raw) == "true":
		return 1, true
	case isJSONNumber(raw):
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, err == nil || errors.Is(err, strconv.ErrRange) // out of range: ±Infinity or 0, as in JavaScript
	}
	return 0, false
}

// jsNumber converts a string as JavaScript's Number() does (ECMA-262
// StringToNumber): white space and line terminators trimmed, "" is 0,
// "Infinity" with an optional sign, 0x/0o/0b integers without a sign, or
// a decimal literal with an optional sign, fraction and exponent. false:
// NaN.
func jsNumber(s string) (float64, bool) {
	s = strings.TrimFunc(s, isJSSpace)
	switch s {
	case "":
		return 0, true
	case "Infinity", "+Infinity":
		return math.Inf(1), true
	case "-Infinity":
		return math.Inf(-1), true
	}
	if len(s) > 2 && s[0] == '0' {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[1]]
		if base != 0 {
			return radixNumber(s[2:], base)
		}
	}
	if !isDecimalLiteral(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil || errors.Is(err, strconv.ErrRange)
}

// radixNumber reads digits of base (no sign, no separator) rounded to the
// nearest float64.
func radixNumber(digits string, base int) (float64, bool) {
	for _, c := range digits {
		if v := hexValue(byte(c)); c > unicode.MaxASCII || v < 0 || v >= base {
			return 0, false
		}
	}
	n, ok := new(big.Int).SetString(digits, base)
	if !ok {
		return 0, false
	}
	f, _ := new(big.Float).SetInt(n).Float64()
	return f, true
}

// isDecimalLiteral: [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?
func isDecimalLiteral(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		k := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - k
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// isJSSpace: ECMA-262 WhiteSpace and LineTerminator.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', 0xA0, 0xFEFF, 0x2028, 0x2029:
		return true
	}
	return unicode.Is(unicode.Zs, r)
}
