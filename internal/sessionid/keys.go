package sessionid

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
)

// MaxKeysFile is the largest keys file ParseKeys reads, in bytes: MaxKeys
// lines of base64 with room for comments.
const MaxKeysFile = 64 << 10

// ParseKeys reads a keys file: one key per line, the standard (or URL)
// base64 of KeySize random bytes, padded or not; blank lines and lines
// starting with # are skipped; the first key seals. An error names the
// line, never its content (it may be a key).
func ParseKeys(b []byte) (*Keys, error) {
	if len(b) > MaxKeysFile {
		return nil, fmt.Errorf("sessionid: keys file larger than %d bytes", MaxKeysFile)
	}
	var raw [][]byte
	for i, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		k, ok := decodeKey(line)
		if !ok {
			return nil, fmt.Errorf("sessionid: keys file line %d: not the base64 of %d bytes", i+1, KeySize)
		}
		raw = append(raw, k)
	}
	if len(raw) == 0 {
		return nil, errors.New("sessionid: keys file holds no key")
	}
	return NewKeys(raw...)
}

func decodeKey(line []byte) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		k := make([]byte, enc.DecodedLen(len(line)))
		n, err := enc.Strict().Decode(k, line)
		if err == nil && n == KeySize {
			return k[:n], true
		}
	}
	return nil, false
}

// EncodeKey is the line of a keys file that holds k.
func EncodeKey(k []byte) string { return base64.StdEncoding.EncodeToString(k) }
