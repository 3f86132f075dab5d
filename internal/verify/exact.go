package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// members reads a JSON object as clients read it: member names matched
// exactly and, of a name written twice, the last (go-sdk v1.8.0's decoder,
// which turns encoding/json's case-insensitive matching off; JSON.parse in
// a TypeScript client). Decoding into a struct would match "Text" for
// "text", reading a reply one way where every client reads it another, so
// the verifier reads each object through members and each member with
// member.
func members(b []byte) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("null, want an object")
	}
	return m, nil
}

// member decodes m[name] into dst, which must hold no struct (a string,
// a number, a slice of them, a map[string]any): member names inside are
// then exact too. An absent or null member leaves dst alone and reports
// false.
func member(m map[string]json.RawMessage, name string, dst any) (bool, error) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return false, err
	}
	return true, nil
}

// readFields reads the object b's members named in dst, each into its
// destination (as member does), and fails on the first that does not
// decode.
func readFields(b []byte, dst map[string]any) error {
	m, err := members(b)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(dst)) {
		if _, err := member(m, name, dst[name]); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
