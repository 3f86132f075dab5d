package rewrite

import "encoding/binary"

// maxNesting is encoding/json's nesting limit: json.Valid refuses a
// document with more than this many open objects and arrays.
const maxNesting = 10000

// Valid reports whether b is one JSON value, exactly as encoding/json's
// Valid does, at valid's cost: for the packages that check JSON they were
// handed or built before writing it into a message.
func Valid(b []byte) bool { return valid(b) }

// IsObject reports whether the JSON value raw, white space around it
// allowed, is an object.
func IsObject(raw []byte) bool {
	i := skipWS(raw, 0)
	return i < len(raw) && raw[i] == '{'
}

// IsNull reports whether the JSON value raw, white space around it
// allowed, is null, which readers of MCP messages take for an absent
// member (go-sdk decodes it to the zero value; a JavaScript client's
// optional members test it as false).
func IsNull(raw []byte) bool {
	i := skipWS(raw, 0)
	return len(raw) >= i+4 && string(raw[i:i+4]) == "null" && skipWS(raw, i+4) == len(raw)
}

// IsObjectOrNull reports whether the JSON value raw is an object or null,
// what encoding/json decodes into a struct.
func IsObjectOrNull(raw []byte) bool { return IsObject(raw) || IsNull(raw) }

// valid reports whether b is one JSON value (RFC 8259) with optional
// surrounding whitespace, exactly as json.Valid does: strings are not
// checked for valid UTF-8, control characters in them are refused, and
// nesting deeper than encoding/json's limit is refused. It exists because
// json.Valid walks every byte through a state function; valid skips the
// bodies of strings eight bytes at a time, so checking a reply that
// carries a megabyte of base64 costs a few hundred microseconds, not
// several milliseconds. FuzzValid holds it to json.Valid.
func valid(b []byte) bool {
	var stack []byte // the open containers, '{' or '['
	i := skipWS(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		var ok bool
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) >= maxNesting {
				return false
			}
			stack = append(stack, c)
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i, ok = i+1, true
				break
			}
			if c == '{' {
				if i, ok = checkMember(b, i); !ok {
					return false
				}
			}
			continue
		case '"':
			i, ok = scanString(b, i)
		case 't':
			i, ok = literal(b, i, "true")
		case 'f':
			i, ok = literal(b, i, "false")
		case 'n':
			i, ok = literal(b, i, "null")
		default:
			i, ok = scanNumber(b, i)
		}
		if !ok {
			return false
		}
		// After a value: close containers, or move to the next element.
		for {
			i = skipWS(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipWS(b, i+1)
			if top == '{' {
				if i, ok = checkMember(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// checkMember checks an object member's key and colon at b[i] and returns where
// its value starts.
func checkMember(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return 0, false
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipWS(b, i+1), true
}

// SWAR constants: one in every byte, the high bit of every byte.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// needsCloserLook reports whether any of the eight bytes in x is a quote,
// a backslash or a control character: the bytes that end a string's plain
// run. (x-ones*n)&^x&highs is nonzero exactly when some byte of x is below
// n (n <= 0x80); XOR with a repeated byte turns that byte into zero.
func needsCloserLook(x uint64) bool {
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0
}

// scanString checks the string literal opening at b[i] and returns the
// index after it. Eight bytes at a time it looks for the bytes that need a
// closer look: a quote, a backslash, or a control character.
func scanString(b []byte, i int) (int, bool) {
	j := i + 1
	for {
		for j+8 <= len(b) {
			if needsCloserLook(binary.LittleEndian.Uint64(b[j:])) {
				break
			}
			j += 8
		}
		if j >= len(b) {
			return 0, false
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1, true
		case c == '\\':
			n, ok := escape(b, j)
			if !ok {
				return 0, false
			}
			j += n
		case c < 0x20:
			return 0, false
		default:
			j++
		}
	}
}

// escape checks the escape sequence at b[j] ('\\') and returns its length.
func escape(b []byte, j int) (int, bool) {
	if j+1 >= len(b) {
		return 0, false
	}
	switch b[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		if j+6 > len(b) {
			return 0, false
		}
		for _, h := range b[j+2 : j+6] {
			if !isHex(h) {
				return 0, false
			}
		}
		return 6, true
	}
	return 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// literal checks that b[i:] starts with word.
func literal(b []byte, i int, word string) (int, bool) {
	if len(b)-i < len(word) || string(b[i:i+len(word)]) != word {
		return 0, false
	}
	return i + len(word), true
}

// scanNumber checks the number at b[i]:
// -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

// digits returns the index after the run of decimal digits at b[i].
func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
