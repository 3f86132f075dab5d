package proxy

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/hop"
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
