package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// legacyVersion is the protocol version the soak's sessions negotiate.
const legacyVersion = "2025-11-25"

// maxReplyBytes bounds how much of one reply a client reads.
const maxReplyBytes = 16 << 20

// Load is the client side of the soak: request workers that mix
// tools/call, skills/list walks and resources/read in a legacy session each,
// and stream workers that open sessions and hold GET streams.
type Load struct {
	// URL is the sidecar's MCP endpoint.
	URL string
	// Client sends every request; its transport should keep about as many
	// idle connections as there are workers.
	Client *http.Client
	// Skills is how many skills the catalog holds (SkillName(0) …).
	Skills int
	// MaxRequests caps the HTTP requests sent over the whole run; sessions
	// still open when it is reached are ended, so up to one DELETE per
	// worker may follow.
	MaxRequests int64
	// RequestTimeout bounds one request; a request that hits it hung.
	RequestTimeout time.Duration
	// StreamHold is the longest a GET stream is held open; each is held
	// for a random time between half of it and all of it.
	StreamHold time.Duration
	// SessionRequests is how many requests a request worker sends in one
	// session before it ends it with DELETE and opens another. A worker
	// whose last upstream call (tools/call) failed keeps its session past
	// that count, as a client riding out an outage would: so a session
	// open when the upstream restarts is still open after it, and the
	// restarted upstream's 404 for it is what the soak checks clients
	// recover from.
	SessionRequests int
	// Stats receives every outcome.
	Stats *Stats

	sent atomic.Int64
	ids  atomic.Int64
}

// session is a client's legacy session; id "" means none is open.
type session struct{ id string }

// Run starts requestWorkers and streamWorkers and returns when they have
// stopped: when soft is done (the planned end: requests in flight finish)
// or hard is done (interrupted: requests in flight are cancelled), or the
// request cap is reached.
func (l *Load) Run(hard, soft context.Context, requestWorkers, streamWorkers int) {
	var wg sync.WaitGroup
	for w := range requestWorkers {
		wg.Go(func() { l.requestWorker(hard, soft, w) })
	}
	for w := range streamWorkers {
		wg.Go(func() { l.streamWorker(hard, soft, requestWorkers+w) })
	}
	wg.Wait()
}

// Sent returns how many requests were sent.
func (l *Load) Sent() int64 { return l.sent.Load() }

// take reserves one request under the cap.
func (l *Load) take() bool { return l.sent.Add(1) <= l.MaxRequests }

func (l *Load) requestWorker(hard, soft context.Context, w int) {
	rng := rand.New(rand.NewPCG(uint64(w)+1, 0x50a4))
	s := &session{}
	defer l.closeSession(hard, s)
	again := false
	sent, upstreamOK := 0, true
	for soft.Err() == nil {
		if s.id == "" {
			if !l.open(hard, s, again) {
				backoff(soft)
				continue
			}
			again, sent, upstreamOK = false, 0, true
		}
		if sent >= l.SessionRequests && upstreamOK {
			l.closeSession(hard, s)
			continue
		}
		if !l.take() {
			return
		}
		sent++
		var o Outcome
		switch r := rng.IntN(100); {
		case r < 45:
			o = l.toolsCall(hard, s, rng)
			upstreamOK = o.Class == ClassResult
		case r < 70:
			o = l.walk(hard, s)
		default:
			o = l.read(hard, s, rng)
		}
		if isSessionGone(o) {
			s.id, again = "", true
		}
		if o.Class != ClassResult {
			backoff(soft)
		}
	}
}

func (l *Load) streamWorker(hard, soft context.Context, w int) {
	rng := rand.New(rand.NewPCG(uint64(w)+1, 0x57e4))
	for soft.Err() == nil && l.take() {
		s := &session{}
		if !l.open(hard, s, false) {
			backoff(soft)
			continue
		}
		hold := l.StreamHold/2 + time.Duration(rng.Int64N(int64(l.StreamHold/2)+1))
		l.stream(hard, s, hold)
		l.closeSession(hard, s)
	}
}

// backoff pauses after a failure so that an outage is not a busy loop.
func backoff(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
}

// reply is what a request ended with.
type reply struct {
	Outcome
	result json.RawMessage
	header http.Header
}

// post sends one JSON-RPC request in s and classifies how it ended.
func (l *Load) post(ctx context.Context, s *session, method, params string) reply {
	id := strconv.FormatInt(l.ids.Add(1), 10)
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":` + strconv.Quote(method) + `,"params":` + params + `}`
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, l.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.URL, strings.NewReader(body))
	if err != nil {
		panic(err) // the URL was checked at start
	}
	l.header(req, s, "application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	var r reply
	resp, err := l.Client.Do(req)
	if err != nil {
		r.Outcome = ClassifyTransport(err, false)
	} else {
		r.header = resp.Header
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		_ = resp.Body.Close()
		if err != nil {
			r.Outcome = ClassifyTransport(err, true)
		} else {
			r.Outcome, r.result = classify(resp.StatusCode, resp.Header.Get("Content-Type"), b, id)
			if r.Class == ClassNoReply {
				l.Stats.NoReplySample(method, b)
			}
		}
	}
	l.Stats.Record(method, r.Outcome, start, time.Now())
	return r
}

func (l *Load) header(req *http.Request, s *session, accept string) {
	req.Header.Set("Accept", accept)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", legacyVersion)
	}
}

// open runs the legacy opening handshake: initialize, then
// notifications/initialized (MCP 2025-11-25, lifecycle).
func (l *Load) open(ctx context.Context, s *session, again bool) bool {
	if !l.take() || !l.take() {
		return false
	}
	r := l.post(ctx, s, "initialize", `{"protocolVersion":"`+legacyVersion+`","capabilities":{},"clientInfo":{"name":"soak","version":"0"}}`)
	id := r.header.Get("Mcp-Session-Id")
	if r.Class != ClassResult || id == "" {
		return false
	}
	s.id = id
	start := time.Now()
	o := l.send(ctx, s, http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	l.Stats.Record("notifications/initialized", o, start, time.Now())
	if o.Class != ClassResult {
		s.id = ""
		return false
	}
	l.Stats.SessionOpened(again)
	return true
}

// closeSession ends s with DELETE; a 404 (already gone) is counted as an
// error of its kind and otherwise ignored.
func (l *Load) closeSession(ctx context.Context, s *session) {
	if s.id == "" {
		return
	}
	l.sent.Add(1)
	start := time.Now()
	o := l.send(context.WithoutCancel(ctx), s, http.MethodDelete, "")
	l.Stats.Record("DELETE", o, start, time.Now())
	if o.Class == ClassResult {
		l.Stats.SessionDeleted()
	}
	s.id = ""
}

// send makes a request that has no JSON-RPC response (a notification or
// DELETE): any 2xx status is its result.
func (l *Load) send(ctx context.Context, s *session, method, body string) Outcome {
	ctx, cancel := context.WithTimeout(ctx, l.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, l.URL, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	l.header(req, s, "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.Client.Do(req)
	if err != nil {
		return ClassifyTransport(err, false)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	_ = resp.Body.Close()
	if err != nil {
		return ClassifyTransport(err, true)
	}
	if resp.StatusCode/100 == 2 {
		return Outcome{Class: ClassResult}
	}
	return Classify(resp.StatusCode, resp.Header.Get("Content-Type"), b, "null")
}

func (l *Load) toolsCall(ctx context.Context, s *session, rng *rand.Rand) Outcome {
	text := "soak-" + strconv.FormatUint(rng.Uint64(), 36)
	r := l.post(ctx, s, "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"}}`)
	if r.Class == ClassResult {
		var res struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(r.result, &res) != nil || len(res.Content) != 1 || res.Content[0].Text != text {
			l.Stats.WrongContent()
		}
	}
	return r.Outcome
}

func (l *Load) read(ctx context.Context, s *session, rng *rand.Rand) Outcome {
	name := SkillName(rng.IntN(l.Skills))
	file := "SKILL.md"
	if rng.IntN(2) == 0 {
		file = "reference/notes.md"
	}
	uri := "skill://" + name + "/" + file
	r := l.post(ctx, s, "resources/read", `{"uri":"`+uri+`"}`)
	if r.Class == ClassResult {
		var res struct {
			Contents []struct {
				URI  string `json:"uri"`
				Text string `json:"text"`
			} `json:"contents"`
		}
		if json.Unmarshal(r.result, &res) != nil || len(res.Contents) != 1 || res.Contents[0].URI != uri ||
			!strings.Contains(res.Contents[0].Text, name) {
			l.Stats.WrongContent()
		}
	}
	return r.Outcome
}

// skillsPage is the part of a skills/list result a walk reads.
type skillsPage struct {
	Skills []struct {
		URI         string `json:"uri"`
		Frontmatter struct {
			Description string `json:"description"`
		} `json:"frontmatter"`
	} `json:"skills"`
	NextCursor string `json:"nextCursor"`
}

// walk follows skills/list from the first page to the last. Cursors name
// the last entry served, so a walk across reloads still sees each of the
// (unchanging) skill names once.
func (l *Load) walk(ctx context.Context, s *session) Outcome {
	_, o, _ := l.walkAll(ctx, s)
	return o
}

// walkAll is walk that also returns the descriptions seen, by URI.
func (l *Load) walkAll(ctx context.Context, s *session) (map[string]string, Outcome, error) {
	seen := map[string]string{}
	dup := false
	cursor := ""
	for pages := 1; ; pages++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + strconv.Quote(cursor) + `}`
		}
		r := l.post(ctx, s, "skills/list", params)
		var page skillsPage
		if r.Class == ClassResult && json.Unmarshal(r.result, &page) != nil {
			l.Stats.WrongContent()
			r.Class = ClassError
		}
		if r.Class != ClassResult {
			l.Stats.Walked(pages, false, false)
			return nil, r.Outcome, errWalk
		}
		revs := map[string]bool{}
		for _, sk := range page.Skills {
			if _, ok := seen[sk.URI]; ok {
				dup = true
			}
			seen[sk.URI] = sk.Frontmatter.Description
			revs[revOf(sk.Frontmatter.Description)] = true
		}
		if len(revs) > 1 {
			l.Stats.MixedPage()
		}
		if page.NextCursor == "" {
			l.Stats.Walked(pages, true, !dup && len(seen) == l.Skills)
			return seen, r.Outcome, nil
		}
		if pages >= 1000 || !l.take() {
			l.Stats.Walked(pages, false, false)
			return nil, r.Outcome, errWalk
		}
		cursor = page.NextCursor
	}
}

// revOf returns the revision tag in a description, or "".
func revOf(desc string) string {
	i := strings.Index(desc, "(rev ")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(desc[i:], ')')
	if j < 0 {
		return ""
	}
	return desc[i : i+j+1]
}

// errWalk says a skills/list walk stopped at a page that was not a result.
var errWalk = errors.New("soak: skills/list walk stopped")

// stream opens a GET stream in s and holds it for hold, or until it ends.
func (l *Load) stream(ctx context.Context, s *session, hold time.Duration) {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var held atomic.Bool
	timer := time.AfterFunc(hold, func() { held.Store(true); cancel() })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.URL, nil)
	if err != nil {
		panic(err)
	}
	l.header(req, s, "text/event-stream")
	resp, err := l.Client.Do(req)
	if err != nil {
		o := ClassifyTransport(err, false)
		if held.Load() {
			o = Outcome{Class: ClassNoReply, Kind: fmt.Sprintf("no response headers within %v", hold)}
		}
		l.Stats.Record("GET stream", o, start, time.Now())
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
		l.Stats.Record("GET stream", Classify(resp.StatusCode, resp.Header.Get("Content-Type"), b, "null"), start, time.Now())
		return
	}
	l.Stats.Record("GET stream", Outcome{Class: ClassResult}, start, time.Now())
	l.Stats.StreamOpened()
	_, err = io.Copy(io.Discard, resp.Body)
	end := time.Now()
	switch {
	case held.Load():
		l.Stats.StreamEnded(false, "", start, end)
	case err == nil:
		l.Stats.StreamEnded(true, "clean end of stream", start, end)
	default:
		l.Stats.StreamEnded(true, strings.TrimPrefix(ClassifyTransport(err, true).Kind, "transport: "), start, end)
	}
}

// finalWalk walks skills/list once in a fresh session and returns the
// descriptions served, by URI.
func (l *Load) finalWalk(ctx context.Context) (map[string]string, error) {
	l.MaxRequests = l.sent.Load() + 1000
	s := &session{}
	if !l.open(ctx, s, false) {
		return nil, errors.New("soak: could not open a session after the load")
	}
	defer l.closeSession(ctx, s)
	seen, o, err := l.walkAll(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, o.Kind)
	}
	return seen, nil
}
