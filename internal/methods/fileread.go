package methods

import (
	"encoding/base64"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// A resources/read of a file the sidecar serves is written straight from
// the snapshot's bytes, encoded (JSON-escaped text or base64) a chunk at a
// time as the client takes them. Building the whole encoded result per
// request cost a copy of the file, 4/3 of it for a blob, for every reader,
// held for as long as the reader took: ten clients that never read a 12 MB
// file held 160 MB. Now a reader holds one chunk's buffer, and the file is
// held once, by the snapshot.

// encodeChunk is how many bytes of a file are encoded at a time: a
// multiple of 3, so base64 chunks join without padding, and small enough
// that its buffer (at most 6 times as much when every byte must be
// escaped) costs a slow reader little.
const encodeChunk = 8190

// fileResult is the result of a resources/read of f: head, the encoded
// bytes of f, then tail; n is the length of all three.
type fileResult struct {
	head, tail []byte
	f          *catalog.File
	n          int
}

// readResult builds the result of a resources/read of f without encoding
// its bytes: their encoded length comes from the view, once per file.
func (h *Handler) readResult(v *view, e era, uri string, f *catalog.File) *fileResult {
	head := make([]byte, 0, len(uri)+len(f.MIMEType)+64)
	head = append(head, `{"contents":[{"uri":`...)
	head = rewrite.AppendString(head, uri)
	head = append(head, `,"mimeType":`...)
	head = rewrite.AppendString(head, f.MIMEType)
	if f.Text {
		head = append(head, `,"text":"`...)
	} else {
		head = append(head, `,"blob":"`...)
	}
	tail := []byte(`"}]`)
	if e.modern {
		tail = h.finish(tail, e, true)
	} else {
		tail = append(tail, '}')
	}
	return &fileResult{head: head, tail: tail, f: f, n: len(head) + v.encodedLen(f) + len(tail)}
}

// Len implements reply.Body.
func (r *fileResult) Len() int { return r.n }

// Encode implements reply.Body: it writes the result to w, encoding f a
// chunk at a time.
func (r *fileResult) Encode(w io.Writer) error {
	if _, err := w.Write(r.head); err != nil {
		return err
	}
	buf := make([]byte, 0, 6*encodeChunk+2)
	err := eachChunk(r.f, buf, encodeChunk, func(enc []byte) error {
		_, err := w.Write(enc)
		return err
	})
	if err != nil {
		return err
	}
	_, err = w.Write(r.tail)
	return err
}

// eachChunk calls fn with the encoding of f's bytes, size bytes (a
// multiple of 3) at a time, in buf (which it reuses): base64 for a blob,
// the JSON string escape of text without its quotes. Text chunks end on
// rune boundaries, so each escapes as it would within the whole.
func eachChunk(f *catalog.File, buf []byte, size int, fn func([]byte) error) error {
	data := f.Data
	for i := 0; i < len(data); {
		end := min(i+size, len(data))
		j := end
		var enc []byte
		if f.Text {
			j = runeEnd(data, i, end)
			enc = rewrite.AppendString(buf[:0], data[i:j])
			enc = enc[1 : len(enc)-1]
		} else {
			enc = base64.StdEncoding.AppendEncode(buf[:0], data[i:j])
		}
		if err := fn(enc); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// runeEnd moves the end of the chunk data[i:end] to the last rune
// boundary at or before end, as a decode of the whole file from i (itself a
// boundary) finds them: an invalid byte is a rune of its own, as the JSON
// escaping treats it. A rune that begins at i and is longer than the chunk
// ends the chunk where it ends. So the chunks' escapes join to the
// escaping of the whole file.
func runeEnd(data []byte, i, end int) int {
	j := i
	for j < end {
		_, w := utf8.DecodeRune(data[j:])
		if j+w > end {
			if j == i {
				return j + w
			}
			return j
		}
		j += w
	}
	return j
}

// encodedLen is the length of f's encoding in a resources/read result
// (see eachChunk), computed once per file and view.
func (v *view) encodedLen(f *catalog.File) int {
	if !f.Text {
		return base64.StdEncoding.EncodedLen(len(f.Data))
	}
	if n, ok := v.textLen.Load(f); ok {
		return n.(int)
	}
	n := 0
	buf := make([]byte, 0, 6*encodeChunk+2)
	_ = eachChunk(f, buf, encodeChunk, func(enc []byte) error { n += len(enc); return nil })
	v.textLen.Store(f, n)
	return n
}

// notFound is the error of a resources/read of a URI the catalog does
// not serve: -32602 on the modern wire, -32002 on the legacy one.
func notFound(e era, uri string) *reply.Error {
	code := reply.CodeResourceNotFound
	if e.modern {
		code = reply.CodeInvalidParams
	}
	return &reply.Error{Status: http.StatusOK, Code: code, Message: "resource not found: " + quote(uri), Data: map[string]string{"uri": uri}}
}
