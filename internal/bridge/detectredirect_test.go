package bridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
)

// An upstream that answers the probes with a redirect (307 keeps the POST
// and its body) has its eras decided by nothing it said: the probe does
// not follow it, so the server the redirect names (here a real go-sdk
// server that would answer both eras) is never asked, and a 3xx, read as
// any other answer whose body holds no result, leaves the eras unknown.
func TestProbeFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := demo.Handler(&mcp.StreamableHTTPOptions{Stateless: true})
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		other.ServeHTTP(w, r)
	}))
	defer target.Close()
	var asked atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	d := &Detector{URL: u, Client: up.Client()}
	e, err := d.Probe(context.Background())
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the redirect's target got %d probes, want 0", n)
	}
	if e.Known {
		t.Errorf("eras %s (%+v) learned from a redirect, want unknown", e.Label(), e)
	}
	if err == nil {
		t.Error("a probe answered only with redirects reported no error")
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("the upstream got %d probes, want 2 (discover, then initialize)", n)
	}
}
