package bridge

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// A subscriptions/listen over a held session sends the filter's
// resourceSubscriptions to the legacy server as resources/subscribe, one
// request each: one listen of a body full of URIs (the same one repeated,
// here) must not become thousands of upstream requests. Like a minted
// session's subscriptions (at most 256, each URI at most 8 KiB), a
// listen's are bounded, and each URI is subscribed once.
func TestListenSubscriptionsBounded(t *testing.T) {
	var subscribes atomic.Int64
	s := mcp.NewServer(&mcp.Implementation{Name: "subs", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true}},
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			subscribes.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	bt, u := newBridge(t, testupstream.Handler(s, nil), 0)
	listen := func(uris []string) (int, string) {
		list, _ := json.Marshal(uris)
		body := `{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":` + string(list) + `},` +
			strings.Replace(testMeta, "%s", "{}", 1) + `}}`
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		resp, err := roundTrip(bt, modernPost(ctx, u, "subscriptions/listen", body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		return resp.StatusCode, ""
	}

	same := make([]string, 2000)
	for i := range same {
		same[i] = "test://one"
	}
	subscribes.Store(0)
	if code, _ := listen(same); code == 200 {
		if n := subscribes.Load(); n > 1 {
			t.Errorf("one URI listed %d times: %d resources/subscribe sent upstream, want 1", len(same), n)
		}
	}

	many := make([]string, 2000)
	for i := range many {
		many[i] = "test://r/" + strconv.Itoa(i)
	}
	subscribes.Store(0)
	code, body := listen(many)
	if n := subscribes.Load(); n > DefaultMaxFrontSubscriptions {
		t.Errorf("a listen of %d URIs: %d resources/subscribe sent upstream (HTTP %d), want at most %d", len(many), n, code, DefaultMaxFrontSubscriptions)
	}
	if code == 200 {
		t.Errorf("a listen of %d URIs: 200, want it refused (-32602)", len(many))
	} else if !strings.Contains(body, "-32602") {
		t.Errorf("a listen of %d URIs: %d %.300s, want -32602", len(many), code, body)
	}
}
