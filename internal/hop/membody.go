package hop

import (
	"bytes"
	"io"
	"net/http"
)

// MemBody is a request body already in memory, for the requests the
// sidecar builds or rebuilds from bytes it holds (the proxy's, the era
// bridge's): it tells its unread bytes without reading them (Bytes), so
// hop sends a retry without GetBody and a transport that looks at a body
// (the era bridge) reads none of it. One allocation, or none when kept in
// a larger value, where io.NopCloser around a bytes.Reader and a GetBody
// closure cost three.
type MemBody struct {
	bytes.Reader
	b []byte
}

// NewMemBody returns a MemBody that reads b.
func NewMemBody(b []byte) *MemBody {
	m := &MemBody{}
	m.Reset(b)
	return m
}

// Reset makes m read b.
func (m *MemBody) Reset(b []byte) {
	m.Reader.Reset(b)
	m.b = b
}

// Bytes returns what is left to read of m, without reading it: not to be
// modified.
func (m *MemBody) Bytes() []byte { return m.b[len(m.b)-m.Len():] }

// Close does nothing: there is nothing to release.
func (*MemBody) Close() error { return nil }

// SetBody makes req send b from m, reset to it, with its ContentLength. A
// request hop does not carry (Carries) goes to net/http's Transport, which
// rewinds a body by GetBody alone: that request gets one too, reading b
// afresh; one hop carries does not need it, and saves its allocation.
// Whether hop carries req is judged on its URL's scheme and its Upgrade
// field, so SetBody comes after those are final.
func SetBody(req *http.Request, m *MemBody, b []byte) {
	m.Reset(b)
	req.Body, req.ContentLength, req.GetBody = m, int64(len(b)), nil
	if !Carries(req) {
		req.GetBody = func() (io.ReadCloser, error) { return NewMemBody(b), nil }
	}
}
