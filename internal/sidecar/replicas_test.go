package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/kubeletvolume"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics/metricstest"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/sessionid"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
)

// replicas are n sidecars in front of one modern-only upstream, each
// reading its own copy of the session keys Secret (so a test can update
// one copy before the others, as kubelets sync at different moments),
// behind a front that sends each request to the next replica in turn, as a
// Service without session affinity may.
type replicas struct {
	url      string // the round-robin front's MCP endpoint
	sidecars []*sidecartest.Sidecar
	dirs     []string
	served   []atomic.Int64 // requests each replica got through the front
}

func startReplicas(t *testing.T, n int, keys ...[]byte) *replicas {
	t.Helper()
	up := httptest.NewServer(modernonly.Handler(modernonly.NewServer()))
	t.Cleanup(up.Close)
	r := &replicas{served: make([]atomic.Int64, n)}
	var proxies []*httputil.ReverseProxy
	for i := range n {
		dir := filepath.Join(t.TempDir(), "session-keys")
		r.dirs = append(r.dirs, dir)
		r.writeKeys(t, i, keys...)
		s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{
			Config:              func(c *config.Config) { c.SessionKeysFile = filepath.Join(dir, "keys") },
			SessionKeysInterval: 2 * time.Millisecond,
		})
		s.WaitEras(t)
		r.sidecars = append(r.sidecars, s)
		target, _ := url.Parse(s.Server.URL)
		proxies = append(proxies, &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(target) }, FlushInterval: -1})
	}
	var next atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		i := int(next.Add(1)-1) % n
		r.served[i].Add(1)
		proxies[i].ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	r.url = front.URL + "/mcp"
	return r
}

// writeKeys updates replica i's copy of the Secret as the kubelet does.
func (r *replicas) writeKeys(t *testing.T, i int, keys ...[]byte) {
	t.Helper()
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(sessionid.EncodeKey(k) + "\n")
	}
	if err := kubeletvolume.Write(r.dirs[i], map[string][]byte{"keys": []byte(b.String())}); err != nil {
		t.Fatal(err)
	}
}

// rotate applies one rotation step to replica i and waits (a bounded
// poll) until it seals with first and opens with every key given.
func (r *replicas) rotate(t *testing.T, i int, keys ...[]byte) {
	t.Helper()
	r.writeKeys(t, i, keys...)
	want, _ := sessionid.NewKeys(keys[0])
	sidecartest.WaitFor(t, time.Minute, func() bool {
		k := r.sidecars[i].SessionKeys.Keys()
		id, _ := k.Seal(sessionid.State{Version: "v", Expires: time.Now().Add(time.Hour)}, nil)
		_, err := want.Open(id, nil, time.Now())
		return err == nil && k.Len() == len(keys)
	}, fmt.Sprintf("replica %d to take the rotated keys", i))
}

// use runs a round of a legacy session's requests through the front:
// more than one per replica, so every replica serves the session.
func use(t *testing.T, ctx context.Context, cs *mcp.ClientSession, n int, what string) {
	t.Helper()
	for i := range 2 * n {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": i, "b": 1}})
		if err != nil || res.IsError {
			t.Fatalf("%s: tools/call %d: %v %+v", what, i, err, res)
		}
		if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), fmt.Sprintf(`"sum":%d`, i+1)) {
			t.Fatalf("%s: add(%d, 1) = %s", what, i, b)
		}
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("%s: tools/list: %v", what, err)
	}
	if err := cs.Ping(ctx, nil); err != nil {
		t.Fatalf("%s: ping: %v", what, err)
	}
}

func connect(t *testing.T, ctx context.Context, u string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "legacy-through-replicas", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("legacy connect through the replicas: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestLegacySessionsAcrossReplicas: a go-sdk legacy client works through
// two (and three) sidecars behind a round-robin front, in front of one
// modern-only upstream: the session the front mints on one replica is
// served by the others. A key rotation done in three steps, each reaching
// one replica before the others, drops no session; an id tampered with
// by one byte, presented with another caller's credentials, or expired,
// is 404 on every replica.
func TestLegacySessionsAcrossReplicas(t *testing.T) {
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			t.Parallel()
			oldKey, newKey := sessionid.NewRandomKey(), sessionid.NewRandomKey()
			r := startReplicas(t, n, oldKey)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			first := connect(t, ctx, r.url)
			use(t, ctx, first, n, "before the rotation")
			for i := range n {
				if r.served[i].Load() < 2 {
					t.Fatalf("replica %d served %d requests: the front does not spread the session", i, r.served[i].Load())
				}
			}

			// Step 1: the new key after the old one, replica by replica,
			// the session in use between each.
			for i := range n {
				r.rotate(t, i, oldKey, newKey)
				use(t, ctx, first, n, fmt.Sprintf("step 1 on %d of %d replicas", i+1, n))
			}
			// Step 2: the new key first. A replica already at step 2 seals
			// with the new key (a session minted on replica 0 right after
			// its step); the others open it since step 1.
			list := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
			legacy := func(id string, kv ...string) http.Header {
				return sidecartest.Header(append([]string{"Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-11-25"}, kv...)...)
			}
			var early string
			for i := range n {
				r.rotate(t, i, newKey, oldKey)
				if i == 0 {
					resp, body := sidecartest.Post(t, r.sidecars[0].URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
					if early = resp.Header.Get("Mcp-Session-Id"); early == "" {
						t.Fatalf("initialize on replica 0 at step 2: %d %s", resp.StatusCode, body)
					}
				}
				for range n {
					if resp, body := sidecartest.Post(t, r.url, list, legacy(early)); resp.StatusCode != http.StatusOK {
						t.Fatalf("step 2 on %d of %d replicas: the session replica 0 sealed with the new key: %d %s", i+1, n, resp.StatusCode, body)
					}
				}
				use(t, ctx, first, n, fmt.Sprintf("step 2 on %d of %d replicas (old session)", i+1, n))
			}
			second := connect(t, ctx, r.url)
			use(t, ctx, second, n, "after step 2 (new session)")
			// Step 3, after the old key's sessions expired: the old key
			// dropped. The sessions the new key sealed are untouched.
			for i := range n {
				r.rotate(t, i, newKey)
				use(t, ctx, second, n, fmt.Sprintf("step 3 on %d of %d replicas", i+1, n))
			}

			sid := second.ID()
			tampered := []byte(sid)
			tampered[len(tampered)/3] ^= 1 // one bit of one byte, still base64url
			cred := onbehalf.CredentialKey(http.Header{}, onbehalf.DefaultCredentials()...)
			keys, _ := sessionid.NewKeys(newKey)
			forge := func(expires time.Time) string {
				id, err := keys.Seal(sessionid.State{Version: "2025-11-25", Capabilities: json.RawMessage(`{}`),
					ClientInfo: json.RawMessage(`{"name":"x","version":"1"}`), Expires: expires}, cred[:])
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			// Each request in turn on every replica.
			for i := range n {
				for name, c := range map[string]struct {
					h    http.Header
					want int
				}{
					"the session":                {legacy(sid), http.StatusOK},
					"sealed by the key, valid":   {legacy(forge(time.Now().Add(time.Hour))), http.StatusOK},
					"sealed by the key, expired": {legacy(forge(time.Now().Add(-time.Second))), http.StatusNotFound},
					"tampered by one byte":       {legacy(string(tampered)), http.StatusNotFound},
					"another caller":             {legacy(sid, "Authorization", "Bearer someone-else"), http.StatusNotFound},
					"the old key's session":      {legacy(first.ID()), http.StatusNotFound},
				} {
					for range n { // lands once on each replica
						if resp, body := sidecartest.Post(t, r.url, list, c.h); resp.StatusCode != c.want {
							t.Errorf("round %d, %s: HTTP %d %s, want %d", i, name, resp.StatusCode, body, c.want)
						}
					}
				}
			}
		})
	}
}

// TestProcessKeyWarning: a sidecar whose legacy front is in use (a
// modern-only upstream) and that reads no keys file warns, once, that
// its minted sessions work on this replica only; with the file it does
// not.
func TestProcessKeyWarning(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(modernonly.Handler(modernonly.NewServer()))
	t.Cleanup(up.Close)
	dir := filepath.Join(t.TempDir(), "session-keys")
	if err := kubeletvolume.Write(dir, map[string][]byte{"keys": []byte(sessionid.EncodeKey(sessionid.NewRandomKey()) + "\n")}); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		file string
		want int
	}{
		"no file":     {filepath.Join(dir, "absent"), 1},
		"a keys file": {filepath.Join(dir, "keys"), 0},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			core, logs := observer.New(zap.WarnLevel)
			s := sidecartest.Start(t, up.URL+"/mcp", sidecartest.Options{Logger: zap.New(core),
				Config: func(cfg *config.Config) { cfg.SessionKeysFile = c.file }})
			// The era gauge is set after the warning is decided.
			sidecartest.WaitFor(t, time.Minute, func() bool { return eraGauge(t, s, "modern") == 1 }, "the upstream to be learned modern-only")
			if got := logs.FilterMessageSnippet("a key of this process alone").Len(); got != c.want {
				t.Errorf("warnings about the process key = %d, want %d (logs: %v)", got, c.want, logs.All())
			}
		})
	}
}

// eraGauge is the value of skills_sidecar_upstream_era for era.
func eraGauge(t *testing.T, s *sidecartest.Sidecar, era string) float64 {
	t.Helper()
	v, _ := metricstest.Sample(metricstest.Gather(t, s.Registry), "skills_sidecar_upstream_era", map[string]string{"era": era})
	return v
}

// TestDroppedKeyEndsOpenStreams: a key dropped from the keys file ends
// the sessions it sealed at once, as the rotation documents: a GET stream
// already open on one ends (the read is bounded by a hang guard only), and
// the session's next request is 404 (2025-11-25 Streamable HTTP, session
// management: the client initializes again).
func TestDroppedKeyEndsOpenStreams(t *testing.T) {
	t.Parallel()
	oldKey, newKey := sessionid.NewRandomKey(), sessionid.NewRandomKey()
	r := startReplicas(t, 1, oldKey, newKey)
	resp, body := sidecartest.Post(t, r.sidecars[0].URL, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.sidecars[0].URL, nil)
	req.Header = sidecartest.Header("Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25", "Accept", "text/event-stream")
	stream, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: HTTP %d", stream.StatusCode)
	}
	r.rotate(t, 0, newKey) // the session's key dropped
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stream.Body); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the GET stream of a session whose key was dropped is still open")
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp, body := sidecartest.Post(t, r.sidecars[0].URL, list, sidecartest.Header("Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-11-25")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the dropped key's session: HTTP %d %s, want 404", resp.StatusCode, body)
	}
}
