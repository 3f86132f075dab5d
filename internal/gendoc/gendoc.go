// Package gendoc owns the generated sections of the project's Markdown
// documents: the text between a start and an end marker that a test keeps
// equal to what the code generates (the configuration, metrics and
// annotation tables), so documentation cannot drift from the code.
//
// It must not read or write any file but the document it is given, nor
// generate anything itself: the tables come from their owners.
package gendoc

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrNoMarkers means the document lacks the start or the end marker.
var ErrNoMarkers = errors.New("gendoc: markers not found")

// Section returns the text between start and end in doc.
func Section(doc, start, end string) (string, error) {
	i := strings.Index(doc, start)
	if i < 0 {
		return "", fmt.Errorf("%w: %q", ErrNoMarkers, start)
	}
	j := strings.Index(doc[i+len(start):], end)
	if j < 0 {
		return "", fmt.Errorf("%w: %q", ErrNoMarkers, end)
	}
	return doc[i+len(start) : i+len(start)+j], nil
}

// Replace returns doc with the text between start and end replaced by want.
func Replace(doc, start, end, want string) (string, error) {
	got, err := Section(doc, start, end)
	if err != nil {
		return "", err
	}
	i := strings.Index(doc, start) + len(start)
	return doc[:i] + want + doc[i+len(got):], nil
}

// Check compares the section of the file at path with want. With update it
// rewrites the section instead and reports no difference. It returns the
// stale text when the section differs.
func Check(path, start, end, want string, update bool) (stale string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	got, err := Section(string(b), start, end)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	if got == want {
		return "", nil
	}
	if !update {
		return got, nil
	}
	doc, err := Replace(string(b), start, end, want)
	if err != nil {
		return "", err
	}
	return "", os.WriteFile(path, []byte(doc), 0o644)
}
