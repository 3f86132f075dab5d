package proxy

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// An outbound POST's body can be sent again by whatever carries it: a
// request hop carries has a body that tells its bytes (hop rewinds it
// from them, and the era bridge reads them), and no GetBody; one it hands
// to net/http's Transport (https), which rewinds with GetBody alone, has
// a GetBody that gives the whole body, however much of it was read.
func TestOutboundBodyCanBeSentAgain(t *testing.T) {
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	for _, upstream := range []string{"http://127.0.0.1:1/mcp", "https://127.0.0.1:1/mcp"} {
		t.Run(upstream, func(t *testing.T) {
			u, _ := url.Parse(upstream)
			p, err := New(Options{Upstream: u})
			if err != nil {
				t.Fatal(err)
			}
			r, _ := http.NewRequest(http.MethodPost, "http://sidecar/mcp", strings.NewReader(body))
			pl := &plan{kind: kindSingle}
			out := p.outbound(context.Background(), r, pl, []byte(body))
			if b, ok := out.Body.(interface{ Bytes() []byte }); !ok || string(b.Bytes()) != body {
				t.Fatalf("the outbound body does not tell its bytes")
			}
			if _, err := io.ReadAll(io.LimitReader(out.Body, 10)); err != nil {
				t.Fatal(err)
			}
			if hop.Carries(out) {
				if out.GetBody != nil {
					t.Error("a request hop carries has a GetBody: an allocation it does not use")
				}
				return
			}
			if out.GetBody == nil {
				t.Fatal("a request for net/http's Transport has no GetBody: it could not be retried")
			}
			rc, err := out.GetBody()
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := io.ReadAll(rc); string(got) != body {
				t.Errorf("GetBody gave %q, want the whole body", got)
			}
		})
	}
}

// A POST the proxy sends knows the message the proxy parsed from it
// (rewrite.Parsed), so that a transport below does not parse it again,
// and that message is the one a parse of the bytes sent gives, judged by
// rewrite.ParseMessage; a batch knows none, and neither does a body once
// any of it was read.
func TestSentBodyKnowsItsMessage(t *testing.T) {
	type seen struct {
		msg, parsed rewrite.Message
		ok, perr    bool
		afterRead   bool
	}
	var got seen
	called := false
	capture := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		b, _ := req.Body.(interface{ Bytes() []byte })
		called = true
		got.msg, got.ok = rewrite.MessageOf(req.Body)
		if b != nil {
			var err error
			got.parsed, err = rewrite.ParseMessage(b.Bytes())
			got.perr = err != nil
		}
		var one [1]byte
		_, _ = req.Body.Read(one[:])
		_, got.afterRead = rewrite.MessageOf(req.Body)
		return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Body: http.NoBody, Request: req}, nil
	})
	u, _ := url.Parse("http://127.0.0.1:1/mcp")
	p, err := New(Options{Upstream: u, Transport: capture})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		body string
		one  bool
	}{
		"request":      {` {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":"\u00e9"}}}`, true},
		"notification": {`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`, true},
		"response":     {`{"jsonrpc":"2.0","id":"x","result":{}}`, true},
		"batch":        {`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, false},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(c.body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			got, called = seen{}, false
			p.ServeHTTP(httptest.NewRecorder(), r)
			if !called {
				t.Fatal("the request was not sent")
			}
			if got.ok != c.one {
				t.Fatalf("MessageOf the body sent: ok %v, want %v", got.ok, c.one)
			}
			if got.afterRead {
				t.Error("MessageOf a body partly read: ok, want a parse of what is left")
			}
			if !c.one {
				return
			}
			if got.perr {
				t.Fatal("the bytes sent do not parse")
			}
			if diff := cmp.Diff(got.parsed, got.msg); diff != "" {
				t.Errorf("the message the body knows is not its bytes' (-parsed +known):\n%s", diff)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A sent body made to read other bytes forgets the message of the old.
func TestSentBodyResetForgetsItsMessage(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`
	m, err := rewrite.ParseMessage([]byte(call))
	if err != nil {
		t.Fatal(err)
	}
	b := &sentBody{msg: &m}
	b.MemBody.Reset([]byte(call))
	if _, ok := rewrite.MessageOf(b); !ok {
		t.Fatal("a sent body with its message: MessageOf not ok")
	}
	b.Reset([]byte(`{"jsonrpc":"2.0","id":8,"method":"ping"}`))
	if got, ok := rewrite.MessageOf(b); ok {
		t.Errorf("after Reset to other bytes, MessageOf = %s %s, ok; want no message", got.ID, got.Method)
	}
}
