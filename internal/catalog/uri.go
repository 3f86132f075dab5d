package catalog

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Scheme is the URI scheme of every skill file and directory (SEP-2640).
const Scheme = "skill://"

// ErrBadPath is wrapped by every error of [ValidatePath] and [PathFromURI].
var ErrBadPath = errors.New("catalog: invalid skill path")

// maxPathBytes bounds a path so a hostile URI cannot make lookups expensive.
const maxPathBytes = 4096

// ValidatePath reports whether p can be a skill path or a file path under
// skills/: non-empty, slash-separated, relative, with no empty, "." or ".."
// segment, no segment starting with "." (dot-files are never served) and
// only characters that stand for themselves in a URI. Allowed are letters,
// digits and marks of any script and the ASCII characters
// - . _ ~ ! $ & ' ( ) * + , ; = : @; refused are spaces, controls, invisible
// and unassigned characters, and % ? # [ ] \ " < > ^ ` { | }, which a client
// would have to percent-encode and might then send in either form.
// A path that passes names a place inside the root, never outside it.
func ValidatePath(p string) error {
	if p == "" {
		return fmt.Errorf("%w: empty", ErrBadPath)
	}
	if len(p) > maxPathBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrBadPath, maxPathBytes)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: not valid UTF-8", ErrBadPath)
	}
	for seg := range strings.SplitSeq(p, "/") {
		if reason := segmentProblem(seg); reason != "" {
			return fmt.Errorf("%w: %q: segment %q %s", ErrBadPath, truncate(p, 200), truncate(seg, 80), reason)
		}
	}
	return nil
}

// segmentProblem says what is wrong with one path segment, or "" when
// nothing is; see ValidatePath.
func segmentProblem(seg string) string {
	switch {
	case seg == "":
		return "is empty"
	case seg == "." || seg == "..":
		return "is a relative reference"
	case seg[0] == '.':
		return "starts with a dot"
	}
	for _, r := range seg {
		if !uriSafeRune(r) {
			return fmt.Sprintf("has the character %U %q, which a skill:// URI cannot hold unescaped", r, r)
		}
	}
	return ""
}

// uriSafeRune reports whether r may appear unescaped in a skill path: an RFC
// 3986 unreserved or sub-delimiter character, ':' or '@', or a visible
// non-ASCII letter, digit, mark, symbol or punctuation (RFC 3987 ucschar).
func uriSafeRune(r rune) bool {
	if r < utf8.RuneSelf {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
			return true
		}
		return strings.ContainsRune("-._~!$&'()*+,;=:@", r)
	}
	if r == utf8.RuneError || unicode.IsSpace(r) {
		return false
	}
	// Only assigned, visible categories: this leaves out controls, format
	// (invisible) characters, private use, surrogates, unassigned code
	// points and separators.
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

// URIFromPath returns the skill:// URI of a path under skills/. p must have
// passed [ValidatePath].
func URIFromPath(p string) string { return Scheme + p }

// PathFromURI returns the path under skills/ that a skill:// URI names, after
// checking it with [ValidatePath]. Directory URIs have no trailing slash, so
// "skill://a/" is refused.
func PathFromURI(uri string) (string, error) {
	p, ok := strings.CutPrefix(uri, Scheme)
	if !ok {
		return "", fmt.Errorf("%w: %q is not a %s URI", ErrBadPath, truncate(uri, 80), Scheme)
	}
	if err := ValidatePath(p); err != nil {
		return "", err
	}
	return p, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
