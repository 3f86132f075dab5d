package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// brokenServer is a fake MCP endpoint whose tools/call replies are SSE
// streams that end after a notification, and whose resources/read replies
// are empty 200s: requests that end without a result or an error. Its
// sessions, skills/list and GET streams work.
func brokenServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		case http.MethodDelete:
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if json.Unmarshal(body, &msg) != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
		}
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", "s1")
			reply(`{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"0"}}`)
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "skills/list":
			reply(`{"skills":[{"uri":"skill://soak-000/SKILL.md","frontmatter":{"description":"x"}},{"uri":"skill://soak-001/SKILL.md","frontmatter":{"description":"y"}}]}`)
		case "tools/call":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		case "resources/read":
			w.Header().Set("Content-Type", "application/json")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestLoadCatchesRepliesWithoutResult drives the real client loop against
// brokenServer and shows the run failing on it.
//
// The run lasts until every kind of activity the checks look at has
// happened (a tools/call and a resources/read sent, a walk of skills/list
// complete, a stream held its full time), however slow the machine, and no
// longer; a minute bounds a loop that never gets there, whose checks then
// say what was missing. What the replies were counted as is not waited for.
func TestLoadCatchesRepliesWithoutResult(t *testing.T) {
	t.Parallel()
	srv := brokenServer(t)
	l := &Load{URL: srv.URL, Client: srv.Client(), Skills: 2, MaxRequests: 5000, RequestTimeout: 5 * time.Second,
		StreamHold: 100 * time.Millisecond, SessionRequests: 50, Stats: NewStats()}
	soft, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		for soft.Err() == nil {
			sum, _ := l.Stats.Summary()
			if sum.Requests["tools/call"].Sent > 0 && sum.Requests["resources/read"].Sent > 0 &&
				sum.Requests["skills/list"].Sent > 0 && sum.Walks.Complete > 0 && sum.Streams.HeldFull > 0 {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	l.Run(context.Background(), soft, 4, 1)

	sum, _ := l.Stats.Summary()
	for _, m := range []string{"tools/call", "resources/read"} {
		if s := sum.Requests[m]; s.Sent == 0 || s.NoReply != s.Sent {
			t.Errorf("%s = %+v, want every request counted as ended without result or error", m, s)
		}
	}
	if s := sum.Requests["skills/list"]; s.Results == 0 || s.Results != s.Sent || sum.Walks.Complete == 0 {
		t.Errorf("skills/list = %+v, walks %+v; want every page a result and complete walks", s, sum.Walks)
	}
	if sum.Streams.Opened == 0 || sum.Streams.HeldFull == 0 {
		t.Errorf("streams = %+v, want streams opened and held", sum.Streams)
	}
	if sum.NoReply == 0 || len(sum.NoReplyBody) == 0 {
		t.Errorf("summary: %d ended without result or error, samples %q; want some", sum.NoReply, sum.NoReplyBody)
	}
	failed := failedNames(clientChecks(sum, ClientSummary{}, nil, chaosLog{}, 0))
	if !slices.Contains(failed, "every request ended with a result or an error") {
		t.Errorf("failed checks = %v, want the no-reply check among them", failed)
	}
	if l.Sent() > l.MaxRequests+3 || int64(sum.Total) > l.Sent() {
		t.Errorf("sent %d requests, cap %d", l.Sent(), l.MaxRequests)
	}
}

// TestLoadRespectsCap: the workers stop at the request cap well before
// the duration ends.
func TestLoadRespectsCap(t *testing.T) {
	t.Parallel()
	srv := brokenServer(t)
	l := &Load{URL: srv.URL, Client: srv.Client(), Skills: 2, MaxRequests: 40, RequestTimeout: 5 * time.Second,
		StreamHold: 50 * time.Millisecond, SessionRequests: 50, Stats: NewStats()}
	soft, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	l.Run(context.Background(), soft, 3, 1)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("Run took %v with a cap of 40 requests", took)
	}
	sum, _ := l.Stats.Summary()
	if sum.Total > 40+4 {
		t.Errorf("sent %d requests, want at most the cap of 40 and a DELETE per worker", sum.Total)
	}
}

// outageServer is a fake sidecar in front of an upstream that goes away
// at down and comes back, forgetting its sessions, at up. skills/list is
// answered throughout, as the sidecar answers it itself; tools/call,
// initialize and DELETE fail with 502 while the upstream is away, and a
// session opened before it went away gets 404 after it is back.
func outageServer(t *testing.T, down, up time.Time) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		away := !now.Before(down) && now.Before(up)
		epoch := "before"
		if !now.Before(up) {
			epoch = "after"
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "skills/list" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"skills":[{"uri":"skill://soak-000/SKILL.md","frontmatter":{"description":"x"}},{"uri":"skill://soak-001/SKILL.md","frontmatter":{"description":"y"}}]}}`, msg.ID)
			return
		}
		if away {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"upstream unreachable"}}`, orNull(msg.ID))
			return
		}
		if id := r.Header.Get("Mcp-Session-Id"); msg.Method != "initialize" && id != epoch {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		switch msg.Method {
		case "initialize":
			w.Header().Set("Mcp-Session-Id", epoch)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"fake","version":"0"}}}`, msg.ID)
		case "tools/call":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[]}}`, msg.ID)
		case "":
			// DELETE
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func orNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	return id
}

// TestLoadKeepsSessionsThroughAnOutage: a worker whose upstream calls fail
// keeps its session, even with requests served locally running its count
// far past SessionRequests, so the restarted upstream's 404 reaches it and
// it opens a session again. Ending sessions by count alone during the
// outage left the soak's restart check to chance.
func TestLoadKeepsSessionsThroughAnOutage(t *testing.T) {
	t.Parallel()
	down := time.Now().Add(300 * time.Millisecond)
	up := down.Add(600 * time.Millisecond)
	srv := outageServer(t, down, up)
	l := &Load{URL: srv.URL, Client: srv.Client(), Skills: 2, MaxRequests: 20000, RequestTimeout: 5 * time.Second,
		StreamHold: 50 * time.Millisecond, SessionRequests: 10, Stats: NewStats()}
	soft, cancel := context.WithDeadline(context.Background(), up.Add(400*time.Millisecond))
	defer cancel()
	l.Run(context.Background(), soft, 2, 0)

	sum, _ := l.Stats.Summary()
	if sum.Requests["tools/call"].Errors == 0 {
		t.Fatalf("tools/call = %+v, want errors during the outage", sum.Requests["tools/call"])
	}
	if sum.Sessions.Reinitialized == 0 {
		t.Errorf("sessions = %+v, want sessions opened again after the restarted upstream's 404", sum.Sessions)
	}
}
