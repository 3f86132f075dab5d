package rewrite

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/*.txtar with the current output")

// goldenCase is one testdata/*.txtar archive. Its comment is a description
// plus option lines:
//
//	mode: json | sse | batch   what "in" is (default json)
//	eol: lf | crlf | cr        every "\n" of in and want becomes this first
//	trim: true                 drop the final line ending of in and want
//	handshake-ids: 1 "a"       batch mode: raw ids of handshake requests
//	                           (default: judge by LooksLikeHandshakeResult)
//
// The output must equal want, byte for byte.
type goldenCase struct {
	path     string
	archive  *txtar.Archive
	mode     string
	eol      string
	trim     bool
	ids      []string
	in, want []byte
}

func loadGolden(path string) (*goldenCase, error) {
	a, err := txtar.ParseFile(path)
	if err != nil {
		return nil, err
	}
	c := &goldenCase{path: path, archive: a, mode: "json", eol: "\n"}
	for _, line := range strings.Split(string(a.Comment), "\n") {
		if err := c.option(line); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, f := range a.Files {
		switch f.Name {
		case "in":
			c.in = c.decode(f.Data)
		case "want":
			c.want = c.decode(f.Data)
		default:
			return nil, fmt.Errorf("%s: unknown section %q", path, f.Name)
		}
	}
	if c.in == nil || c.want == nil {
		return nil, fmt.Errorf("%s: needs -- in -- and -- want -- sections", path)
	}
	return c, nil
}

func (c *goldenCase) option(line string) error {
	key, value, ok := strings.Cut(line, ": ")
	if !ok || strings.ContainsAny(key, " .,") {
		return nil // description
	}
	switch key {
	case "mode":
		c.mode = value
	case "eol":
		eols := map[string]string{"lf": "\n", "crlf": "\r\n", "cr": "\r"}
		if c.eol, ok = eols[value]; !ok {
			return fmt.Errorf("unknown eol %q", value)
		}
	case "trim":
		c.trim = value == "true"
	case "handshake-ids":
		c.ids = strings.Fields(value)
	default:
		return fmt.Errorf("unknown option %q", key)
	}
	return nil
}

// decode turns a section as stored into the bytes under test.
func (c *goldenCase) decode(data []byte) []byte {
	b := bytes.ReplaceAll(data, []byte("\n"), []byte(c.eol))
	if c.trim {
		b = bytes.TrimSuffix(b, []byte(c.eol))
	}
	return b
}

// encode is decode's inverse, for -update.
func (c *goldenCase) encode(b []byte) []byte {
	if c.trim {
		b = append(bytes.Clone(b), c.eol...)
	}
	return bytes.ReplaceAll(b, []byte(c.eol), []byte("\n"))
}

// run applies the transformation the case's mode names, reading SSE through
// src so that tests can vary the read boundaries.
func (c *goldenCase) run(src io.Reader) ([]byte, error) {
	switch c.mode {
	case "json":
		out, _, err := SpliceDeclaration(c.in, SkillsSidecar())
		return out, err
	case "batch":
		var isHandshake func(json.RawMessage) bool
		if c.ids != nil {
			isHandshake = func(id json.RawMessage) bool { return slices.Contains(c.ids, string(id)) }
		}
		out, _, err := SpliceBatch(c.in, isHandshake, SkillsSidecar())
		return out, err
	case "sse":
		return spliceStream(src, SkillsSidecar())
	}
	return nil, fmt.Errorf("unknown mode %q", c.mode)
}

// spliceStream is the proxy's SSE path on a stream whose requests are
// unknown: every event passes as read, except that an event carrying a
// handshake result is re-framed around the spliced message.
func spliceStream(src io.Reader, d Declaration) ([]byte, error) {
	r := NewReader(src, 0)
	var out []byte
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if ev.Data != nil && LooksLikeHandshakeResult(ev.Data) {
			msg, changed, err := SpliceDeclaration(ev.Data, d)
			if err != nil {
				return out, err
			}
			if changed {
				out = append(out, Reframe(ev, msg)...)
				continue
			}
		}
		out = append(out, ev.Raw...)
	}
}

// check runs the case with whole and one-byte reads and reports how the
// output differs from want.
func (c *goldenCase) check() ([]byte, error) {
	got, err := c.run(bytes.NewReader(c.in))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.path, err)
	}
	if !bytes.Equal(got, c.want) {
		return got, fmt.Errorf("%s: output differs from want:\n got: %q\nwant: %q", c.path, got, c.want)
	}
	if c.mode == "sse" {
		slow, err := c.run(iotest.OneByteReader(bytes.NewReader(c.in)))
		if err != nil || !bytes.Equal(slow, got) {
			return got, fmt.Errorf("%s: one-byte reads give %q, %v; whole reads %q", c.path, slow, err, got)
		}
	}
	return got, nil
}

func goldenFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	return files
}

func TestGolden(t *testing.T) {
	for _, path := range goldenFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			c, err := loadGolden(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.check()
			if err == nil || got == nil || !*update {
				if err != nil {
					t.Error(err)
				}
				return
			}
			for i := range c.archive.Files {
				if c.archive.Files[i].Name == "want" {
					c.archive.Files[i].Data = c.encode(got)
				}
			}
			if err := os.WriteFile(path, txtar.Format(c.archive), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestGoldenDetectsMismatch shows the golden check failing: with want
// equal to the input (the splice forgotten) and with one byte of want
// changed.
func TestGoldenDetectsMismatch(t *testing.T) {
	t.Parallel()
	for _, path := range goldenFiles(t) {
		c, err := loadGolden(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(c.in, c.want) {
			continue // a pass-through case
		}
		broken := *c
		broken.want = c.in
		if _, err := broken.check(); err == nil {
			t.Errorf("%s: check passed with want = in", path)
		}
		broken.want = bytes.Clone(c.want)
		broken.want[len(broken.want)/2] ^= 1
		if _, err := broken.check(); err == nil {
			t.Errorf("%s: check passed with one byte of want flipped", path)
		}
	}
}
