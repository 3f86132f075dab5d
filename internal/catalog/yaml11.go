package catalog

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// YAML 1.1 readers (PyYAML's safe_load, and so every Python host that
// verifies an install field by field) type plain scalars with the implicit
// resolvers of the YAML 1.1 type repository (yaml.org/type: bool, int, float,
// null, timestamp, merge, value) rather than the YAML 1.2 core schema the
// sidecar publishes. This file reads a plain scalar the 1.1 way, to find the
// ones whose JSON value differs; TestAgreesWithPyYAML checks it against
// PyYAML itself.

// A reading11 is what a YAML 1.1 reader makes of one plain scalar.
type reading11 int

const (
	read11Str       reading11 = iota // a string, the scalar's text
	read11Null                       // null
	read11Bool                       // a boolean; see bool11
	read11Int                        // an integer; see int11
	read11Float                      // a float; see float11
	read11Date                       // a calendar date, which a host turns back into the same text
	read11Timestamp                  // a date with a time: a datetime, no JSON string equals it
	read11Error                      // the reader refuses the document (no constructor, a bad date)
)

// The YAML 1.1 implicit resolvers, in the order a 1.1 reader tries them.
// They differ from the 1.2 core schema in: yes/no/on/off booleans; `0`
// prefixed octal, 0b binary, `_` separators and base-60 (`1:30`) numbers;
// floats that need a dot and a signed exponent; timestamps; `<<` and `=`
// as tags even outside a mapping key.
var (
	bool11Re  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	float11Re = regexp.MustCompile(`^(?:` +
		`[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?` + // 1.5, 1., 1_0.5e+3
		`|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?` + // .5 (no sign)
		`|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*` + // base 60: 1:30.5
		`|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	int11Re = regexp.MustCompile(`^(?:` +
		`[-+]?0b[01_]+` + // binary
		`|[-+]?0[0-7_]+` + // octal
		`|[-+]?(?:0|[1-9][0-9_]*)` + // decimal
		`|[-+]?0x[0-9a-fA-F_]+` + // hexadecimal
		`|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`) // base 60: 1:30
	null11Re      = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	timestamp11Re = regexp.MustCompile(`^(?:` +
		`[0-9]{4}-[0-9]{2}-[0-9]{2}` + // a date alone
		`|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?` +
		`(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)$`)
)

// typedFirst11 holds the first characters of every spelling the resolvers
// above match.
const typedFirst11 = "yYnNtTfFoO-+0123456789.~<="

// read11 resolves the plain scalar s as a YAML 1.1 reader does; for a
// number, num is its exact value (nil for NaN and the infinities).
// Mapping keys differ in one way: see key11.
func read11(s string) (r reading11, num *big.Rat) {
	// A 1.1 reader tries only the resolvers registered for a scalar's first
	// character; a scalar starting with any other is a string.
	if s != "" && !strings.Contains(typedFirst11, s[:1]) {
		return read11Str, nil
	}
	switch {
	case bool11Re.MatchString(s):
		return read11Bool, nil
	case float11Re.MatchString(s):
		return float11(s)
	case int11Re.MatchString(s):
		return int11(s)
	case s == "<<", s == "=":
		// Tags (merge, value) a safe loader has no constructor for: a
		// value refuses the document (see key11 for keys).
		return read11Error, nil
	case null11Re.MatchString(s):
		return read11Null, nil
	case timestamp11Re.MatchString(s):
		return timestamp11(s), nil
	}
	return read11Str, nil
}

// bool11 is the value of a scalar read11 reads as a boolean.
func bool11(s string) bool {
	switch s[0] {
	case 'y', 'Y', 't', 'T':
		return true
	case 'o', 'O':
		return s == "on" || s == "On" || s == "ON"
	}
	return false
}

// int11 constructs an integer the 1.1 way: `_` dropped, a leading 0 is
// octal, 0b binary, 0x hexadecimal, `:` separates base-60 digits.
func int11(s string) (reading11, *big.Rat) {
	v, neg := sign11(strings.ReplaceAll(s, "_", ""))
	n := new(big.Int)
	ok := true
	switch {
	case v == "0":
	case strings.HasPrefix(v, "0b"):
		_, ok = n.SetString(v[2:], 2)
	case strings.HasPrefix(v, "0x"):
		_, ok = n.SetString(v[2:], 16)
	case v[0] == '0':
		_, ok = n.SetString(v, 8)
	case strings.Contains(v, ":"):
		for _, part := range strings.Split(v, ":") {
			d, ok := new(big.Int).SetString(part, 10)
			if !ok {
				return read11Error, nil
			}
			n.Mul(n, big.NewInt(60)).Add(n, d)
		}
	default:
		_, ok = n.SetString(v, 10)
	}
	if !ok {
		return read11Error, nil // "0b_", "0x_": no digits left
	}
	if neg {
		n.Neg(n)
	}
	return read11Int, new(big.Rat).SetInt(n)
}

// float11 constructs a float the 1.1 way: `_` dropped, `:` separates base-60
// digits; infinities and NaN have no JSON number (the core schema refuses
// them first).
func float11(s string) (reading11, *big.Rat) {
	v, neg := sign11(strings.ToLower(strings.ReplaceAll(s, "_", "")))
	var f float64
	switch {
	case v == ".inf", v == ".nan":
		return read11Float, nil
	case strings.Contains(v, ":"):
		base := 1.0
		parts := strings.Split(v, ":")
		for i := len(parts) - 1; i >= 0; i-- {
			d, err := strconv.ParseFloat(parts[i], 64)
			if err != nil {
				return read11Error, nil
			}
			f += d * base
			base *= 60
		}
	default:
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil && !math.IsInf(f, 0) {
			return read11Error, nil
		}
	}
	if neg {
		f = -f
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return read11Float, nil
	}
	return read11Float, new(big.Rat).SetFloat64(f)
}

// sign11 strips one leading sign.
func sign11(v string) (rest string, neg bool) {
	if v != "" && (v[0] == '-' || v[0] == '+') {
		return v[1:], v[0] == '-'
	}
	return v, false
}

// timestamp11 tells a date alone (which must exist in the proleptic
// Gregorian calendar, years 1 to 9999, or the reader refuses the document)
// from a date with a time.
func timestamp11(s string) reading11 {
	if len(s) != len("2006-01-02") {
		return read11Timestamp
	}
	if _, err := time.Parse("2006-01-02", s); err != nil || s[:4] == "0000" {
		return read11Error
	}
	return read11Date
}

// key11 resolves a plain mapping key as a YAML 1.1 reader does: as read11,
// except that PyYAML's safe loader turns a `=` key (the value tag) back into
// the string "=". A `<<` key is a merge, which the core schema refuses
// first.
func key11(s string) (reading11, *big.Rat) {
	if s == "=" {
		return read11Str, nil
	}
	return read11(s)
}
