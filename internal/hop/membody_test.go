package hop

import (
	"io"
	"net/http"
	"testing"
)

// A request body in memory tells what is left of it without reading it,
// and a transport below that looks (the era bridge) leaves it whole.
func TestMemBodyBytesIsWhatIsLeft(t *testing.T) {
	m := NewMemBody([]byte("abcdef"))
	if got := string(m.Bytes()); got != "abcdef" {
		t.Errorf("unread: Bytes = %q, want abcdef", got)
	}
	p := make([]byte, 2)
	if n, _ := m.Read(p); n != 2 {
		t.Fatalf("read %d bytes, want 2", n)
	}
	if got := string(m.Bytes()); got != "cdef" {
		t.Errorf("after reading 2: Bytes = %q, want cdef", got)
	}
	if rest, _ := io.ReadAll(m); string(rest) != "cdef" {
		t.Errorf("after Bytes the body reads %q, want cdef", rest)
	}
}

// TestSetBody: a request hop carries gets the body alone (hop rewinds it
// from Bytes); one it hands to net/http's Transport, which rewinds by
// GetBody alone, gets a GetBody that reads the whole body afresh, however
// much of the first was read.
func TestSetBody(t *testing.T) {
	for _, tc := range []struct {
		url     string
		upgrade string
		getBody bool
	}{
		{"http://upstream/mcp", "", false},
		{"https://upstream/mcp", "", true},
		{"http://upstream/mcp", "websocket", true},
	} {
		req, err := http.NewRequest(http.MethodPost, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.upgrade != "" {
			req.Header.Set("Upgrade", tc.upgrade)
		}
		var m MemBody
		SetBody(req, &m, []byte("hello"))
		if req.Body != &m || req.ContentLength != 5 || string(m.Bytes()) != "hello" {
			t.Errorf("%s %q: Body %T, ContentLength %d, Bytes %q; want the MemBody, 5, hello", tc.url, tc.upgrade, req.Body, req.ContentLength, m.Bytes())
		}
		if (req.GetBody != nil) != tc.getBody {
			t.Errorf("%s %q: GetBody set %v, want %v", tc.url, tc.upgrade, req.GetBody != nil, tc.getBody)
			continue
		}
		if req.GetBody == nil {
			continue
		}
		io.ReadAll(req.Body)
		rc, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(rc); string(b) != "hello" {
			t.Errorf("%s %q: GetBody reads %q after the body was read, want hello", tc.url, tc.upgrade, b)
		}
	}
}
