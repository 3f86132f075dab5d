package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// ErrBadKey is returned by DecodeKey for a key that EncodeKey cannot have
// written.
var ErrBadKey = errors.New("catalog: not an encoded plugin path")

// MaxKeyLen is the longest ConfigMap key the API server accepts (a DNS
// subdomain's length).
const MaxKeyLen = 253

// EncodeKey turns a slash-separated path inside the plugin folder into a
// ConfigMap key, which may only hold [-._a-zA-Z0-9]: "/" becomes "__"; a
// leading "." becomes "_2E", so no key starts with "." (the kubelet's own
// entries in a ConfigMap volume start with ".."); "_" and every other byte
// outside [-.a-zA-Z0-9] becomes "_" and two upper-case hex digits. For
// example skills/refunds/SKILL.md becomes skills__refunds__SKILL.md and
// scripts/run_me.py becomes scripts__run_5Fme.py. The encoding is the
// contract between `skills-sidecar inject configmap` and the sidecar's
// LayoutConfigMaps; docs/kubernetes.md states it.
func EncodeKey(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			b.WriteString("__")
		case c == '.' && i == 0:
			b.WriteString("_2E")
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "_%02X", c)
		}
	}
	return b.String()
}

// DecodeKey reverses EncodeKey and checks that the result is a clean
// relative path in UTF-8 (fs.ValidPath: no empty, "." or ".." segment). It accepts escapes EncodeKey
// would not have written (such as "_2E" in the middle of a name), so two
// keys can decode to one path; LayoutConfigMaps refuses that. Errors wrap
// ErrBadKey.
func DecodeKey(k string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_' && i+1 < len(k) && k[i+1] == '_':
			b.WriteByte('/')
			i++
		case c == '_' && i+2 < len(k) && isUpperHex(k[i+1]) && isUpperHex(k[i+2]):
			b.WriteByte(unhex(k[i+1])<<4 | unhex(k[i+2]))
			i += 2
		case c == '_':
			return "", fmt.Errorf("%w: %q has a lone _ at %d", ErrBadKey, k, i)
		default:
			b.WriteByte(c)
		}
	}
	p := b.String()
	if p == "" {
		return "", fmt.Errorf("%w: empty key", ErrBadKey)
	}
	if !fs.ValidPath(p) || p == "." {
		return "", fmt.Errorf("%w: %q decodes to %q, not a clean relative UTF-8 path", ErrBadKey, k, p)
	}
	return p, nil
}

func isUpperHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c - 'A' + 10
}
