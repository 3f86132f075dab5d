package catalog

// Tags of the YAML 1.2 core schema (YAML 1.2.2 §10.3.2), as the converter
// names them in refusals.
const (
	tagNull   = "null"
	tagBool   = "boolean"
	tagInt    = "integer"
	tagFloat  = "float"
	tagInfNaN = "NaN or infinity"
	tagStr    = "string"
)

// coreTag resolves a plain scalar the way the YAML 1.2 core schema does. It is
// written out rather than taken from yaml.v3, whose resolver keeps YAML 1.1
// habits (`010` is octal there, `0b1` and `1_000` are integers).
func coreTag(s string) string {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return tagNull
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return tagBool
	case ".nan", ".NaN", ".NAN",
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		return tagInfNaN
	}
	switch {
	case isCoreInt(s):
		return tagInt
	case isCoreFloat(s):
		return tagFloat
	}
	return tagStr
}

// isCoreInt matches [-+]?[0-9]+ | 0o[0-7]+ | 0x[0-9a-fA-F]+.
func isCoreInt(s string) bool {
	switch {
	case len(s) > 2 && s[:2] == "0o":
		return allOf(s[2:], isOctal)
	case len(s) > 2 && s[:2] == "0x":
		return allOf(s[2:], isHex)
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return s != "" && allOf(s, isDigit)
}

// isCoreFloat matches [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?.
func isCoreFloat(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	intDigits := leadingDigits(s)
	s = s[intDigits:]
	fracDigits := 0
	if s != "" && s[0] == '.' {
		s = s[1:]
		fracDigits = leadingDigits(s)
		s = s[fracDigits:]
	}
	if intDigits == 0 && fracDigits == 0 {
		return false
	}
	if s == "" {
		return true
	}
	if s[0] != 'e' && s[0] != 'E' {
		return false
	}
	s = s[1:]
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return s != "" && allOf(s, isDigit)
}

func leadingDigits(s string) int {
	n := 0
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	return n
}

func allOf(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isOctal(c byte) bool { return '0' <= c && c <= '7' }
func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}
