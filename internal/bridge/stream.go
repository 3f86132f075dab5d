package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// translate shapes the legacy reply to msg, the call c, for the modern
// wire: a JSON reply at once, an SSE reply event by event as it streams.
// The reply carries the client's id where the upstream's carries c.id.
func (t *Transport) translate(resp *http.Response, c *upcall, msg rewrite.Message) (*http.Response, error) {
	s := c.s
	mt, _ := wire.MediaType(resp.Header.Get("Content-Type"))
	switch mt {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.maxBytes())+1))
		c.close() // c.body is resp.Body
		if err != nil {
			return nil, err
		}
		if len(b) > t.maxBytes() {
			return nil, errTooLarge
		}
		out := withID(ModernReply(msg.Method, b, s.init.ServerInfo, t.scope()), c.id, msg.ID)
		resp.Body = io.NopCloser(bytes.NewReader(out))
		resp.ContentLength = int64(len(out))
		resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
		resp.StatusCode = replyStatus(out, resp.StatusCode)
		resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	case "text/event-stream":
		r := rewrite.NewReader(resp.Body, t.maxBytes())
		var first *peeked
		if !slices.Contains(modernMethods, msg.Method) {
			// A method the 2026-07-28 wire does not define: the legacy
			// server most likely refuses it at once, and the modern wire
			// carries that refusal as HTTP 404 (SEP-2575), which a stream
			// already under way could not.
			p := peek(r)
			if p.err == nil {
				if m, perr := rewrite.ParseMessage(p.ev.Data); perr == nil && m.Kind == rewrite.KindError && idmap.Same(m.ID, c.id) {
					c.close() // c.body is resp.Body
					// The upstream's error, translated, answers the caller
					// (the proxy gives it the caller's id).
					out := ModernReply(msg.Method, p.ev.Data, s.init.ServerInfo, t.scope())
					e, _ := rewrite.GetKey(out, []string{"error"})
					return nil, &reply.Answer{Status: replyStatus(out, http.StatusOK), ErrorObject: e}
				}
			}
			first = &p
		}
		pr, pw := io.Pipe()
		c.r = r
		if slices.Contains(mrtrMethods, msg.Method) {
			c.digest = callDigest(msg.Params)
		}
		go t.pumpReply(first, pw, c, msg.ID)
		resp.Body = pr
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	default:
		if resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound {
			// A refusal without a JSON-RPC body (go-sdk answers a method it
			// does not handle with a plain-text 400): the modern wire needs
			// a JSON-RPC error. For a method 2026-07-28 does not define that
			// is method-not-found, HTTP 404 (SEP-2575); for one it does, an
			// invalid request carrying the upstream's words.
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			c.close() // c.body is resp.Body
			text := string(bytes.TrimSpace(b))
			if text == "" {
				text = http.StatusText(resp.StatusCode)
			}
			if !slices.Contains(modernMethods, msg.Method) {
				return nil, refuse(http.StatusNotFound, reply.CodeMethodNotFound, text, nil)
			}
			return nil, refuse(resp.StatusCode, reply.CodeInvalidRequest, "the upstream refused the request: "+text, nil)
		}
		return passBody(resp, c.call), nil
	}
	return resp, nil
}

// peeked is what peek read of a stream: the events without data before the
// first one with data (comments, keep-alives and the empty priming event a
// resumable server sends first), raw, then that event, or the error that
// ended the read.
type peeked struct {
	skipped []byte
	ev      rewrite.Event
	err     error
}

// peek reads r up to its first event with data.
func peek(r *rewrite.Reader) peeked {
	var p peeked
	for {
		p.ev, p.err = r.Next()
		if p.err != nil || len(bytes.TrimSpace(p.ev.Data)) > 0 {
			return p
		}
		if !p.ev.HasID { // the held session's event ids stay with it (pumpReply)
			p.skipped = append(p.skipped, p.ev.Raw...)
		}
	}
}

// writeEvent writes data, one JSON-RPC message, to w as an SSE event
// framed by package reply, the one framing of the events the sidecar
// writes itself.
func writeEvent(w io.Writer, data []byte) error {
	_, err := w.Write(reply.Event(data))
	return err
}

// pumpReply copies c's legacy SSE reply to pw as the reply to the
// client's request clientID: the response translated (and given the
// client's id), log messages the request did not ask for dropped, and a
// server-to-client request turned into an input_required result, an
// error, or an answer upstream (serverRequest). first is what translate
// peeked, if anything.
func (t *Transport) pumpReply(first *peeked, pw *io.PipeWriter, c *upcall, clientID json.RawMessage) {
	// done ends the client's stream. Unless the call now waits for a
	// retry (kept: its upstream stream stays open for it), the call ends
	// first, so that a client that has read its reply whole finds the
	// session idle again.
	done := func(kept bool, err error) {
		if !kept {
			c.close()
		}
		pw.CloseWithError(err)
	}
	if first != nil {
		if _, err := pw.Write(first.skipped); err != nil {
			done(false, err)
			return
		}
	}
	for {
		var ev rewrite.Event
		var err error
		if first != nil {
			ev, err, first = first.ev, first.err, nil
		} else {
			ev, err = c.r.Next()
		}
		if err != nil {
			if err == io.EOF {
				err = nil
				if c.resumed {
					// The upstream ended the call it had kept open for the
					// client's input without a reply.
					_ = writeEvent(pw, reply.ErrorMessage(clientID, &reply.Error{Code: reply.CodeInternalError, Message: "the upstream ended the call before its reply",
						Data: map[string]string{"reason": "upstream_ended_call"}}))
				}
			}
			done(false, err)
			return
		}
		if ev.Data == nil || (ev.HasID && len(bytes.TrimSpace(ev.Data)) == 0) {
			if ev.HasID {
				continue // a priming event: an id of the held session's stream
			}
			if _, err := pw.Write(ev.Raw); err != nil { // comments, keep-alives
				done(false, err)
				return
			}
			continue
		}
		m, perr := rewrite.ParseMessage(ev.Data)
		out := ev.Raw // what needs no change goes as the server framed it
		if ev.HasID {
			// The held session's event ids are not the caller's: its
			// stream could not be resumed with them, and they would tell
			// one caller of a shared session about the others' events.
			out = reply.Event(ev.Data)
		}
		switch {
		case perr != nil:
		case (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) && idmap.Same(m.ID, c.id):
			// The answer is the last message of its stream on the modern
			// wire; a legacy server may keep its stream open after it
			// (closing it is only a SHOULD there), so the bridge ends the
			// call here rather than wait for the server.
			c.call.detach() // answered: the client's leaving now cancels nothing
			if b := withID(ModernReply(c.method, ev.Data, c.s.init.ServerInfo, t.scope()), c.id, clientID); !bytes.Equal(b, ev.Data) {
				out = rewrite.Reframe(ev, b)
				if ev.HasID {
					out = reply.Event(b)
				}
			}
			_, err := pw.Write(out)
			done(false, err)
			return
		case m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError:
			// An answer to no request of this client's (the bridge gives
			// each request its own upstream id): not the client's to see.
			continue
		case m.Kind == rewrite.KindRequest:
			event, end, pending := t.serverRequest(c, clientID, m)
			if event != nil {
				_ = writeEvent(pw, event)
			}
			if end {
				// A pending call may be a retry's already: c is not
				// touched again here.
				done(pending, nil)
				return
			}
			continue
		case m.Kind == rewrite.KindNotification && m.Method == "notifications/message" && !c.logs:
			continue
		}
		if _, err := pw.Write(out); err != nil {
			done(false, err)
			return
		}
	}
}

// listen serves subscriptions/listen on a legacy session of its own, whose
// GET stream it relays; the session ends with the stream.
func (t *Transport) listen(req *http.Request, msg rewrite.Message, caps json.RawMessage) (*http.Response, error) {
	filter, err := ParseListen(msg.Params)
	if err != nil {
		return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams, "invalid subscriptions/listen params: notifications must be an object of booleans and resourceSubscriptions an array of strings", nil)
	}
	// Each URI becomes a resources/subscribe request upstream and is held
	// for the stream's life: once each, and as bounded as a minted
	// session's subscriptions (legacyfront.go), so one listen's body
	// cannot become thousands of upstream requests.
	var uris []string
	seen := map[string]bool{}
	for _, uri := range filter.ResourceSubscriptions {
		switch {
		case seen[uri]:
			continue
		case len(uri) > MaxSubscriptionURI:
			return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams,
				"era bridge: a subscribed URI is at most "+strconv.Itoa(MaxSubscriptionURI)+" bytes", map[string]string{"reason": "bridge_subscription_uri_too_long"})
		case len(uris) == DefaultMaxFrontSubscriptions:
			return nil, refuse(http.StatusBadRequest, reply.CodeInvalidParams,
				"era bridge: a listen subscribes to at most "+strconv.Itoa(DefaultMaxFrontSubscriptions)+" resources", map[string]string{"reason": "bridge_listen_subscriptions_too_many"})
		}
		seen[uri] = true
		uris = append(uris, uri)
	}
	filter.ResourceSubscriptions = uris
	// The listen's session is held like the others (counted against
	// MaxSessions, making room by closing idle ones) but never evicted or
	// expired: it ends with its stream.
	s := t.h.pin(t.Callers.Of(req), func(s *session) { t.open(req, s, msg, caps) })
	if err := sessionFailure(s); err != nil {
		return nil, err
	}
	honoured := filter.Honoured(s.init.Capabilities)
	for _, uri := range honoured.ResourceSubscriptions {
		b := marshal(map[string]any{"jsonrpc": "2.0", "id": upstreamID(), "method": "resources/subscribe",
			"params": map[string]string{"uri": uri}})
		if r, err := t.postOn(req.Context(), s, b); err == nil {
			drain(r)
		}
	}
	pr, pw := io.Pipe()
	go func() {
		// The session is dropped (which ends it upstream) before the
		// client's stream closes, so that a client that saw the end finds
		// its place free.
		var cerr error
		defer func() {
			t.h.drop(s)
			pw.CloseWithError(cerr)
		}()
		if writeEvent(pw, Acknowledged(msg.ID, honoured)) != nil {
			return
		}
		resp, err := t.do(s.held().Listen(req.Context()))
		if err != nil {
			cerr = err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusMethodNotAllowed {
			// No GET stream: nothing will come; hold the stream until the
			// client leaves, as a quiet modern server would.
			<-req.Context().Done()
			return
		}
		if resp.StatusCode == http.StatusNotFound {
			// The session is gone: the client's stream ends, with no
			// answer, and it listens anew (on a new session).
			return
		}
		if resp.StatusCode != http.StatusOK {
			// Any other refusal would refuse a new listen alike: the
			// listen is answered with an error, so a client does not
			// reconnect in a loop.
			_ = writeEvent(pw, reply.ErrorMessage(msg.ID, &reply.Error{Code: reply.CodeInternalError, Message: "the upstream refused the listen's stream: HTTP " + strconv.Itoa(resp.StatusCode),
				Data: map[string]string{"reason": "upstream_refused_stream"}}))
			return
		}
		// The upstream ending the stream ends the client's.
		t.serverStream(s, resp.Body, func(ev rewrite.Event) error {
			if ev.Data == nil {
				_, err := pw.Write(ev.Raw) // comments, keep-alives
				return err
			}
			if out, ok := ListenNotification(ev.Data, msg.ID, honoured); ok {
				return writeEvent(pw, out)
			}
			return nil
		})
	}()
	return nil, &reply.Answer{Events: pr}
}

// serverStream reads body, the GET stream of s (the server's messages
// tied to no call), until it ends or pass fails. A request of the
// server's there is answered by the bridge (answerItself): nobody else
// can, and a server that pings (go-sdk's KeepAlive) ends a session whose
// ping goes unanswered. The stream's event ids stay with the held
// session; every other event goes to pass (nil: dropped). It returns
// what watch needs to open the stream anew.
func (t *Transport) serverStream(s *session, body io.Reader, pass func(rewrite.Event) error) (end streamEnd) {
	r := rewrite.NewReader(body, t.maxBytes())
	for {
		ev, err := r.Next()
		if err != nil {
			return end
		}
		if ev.HasID {
			end.id, end.hasID = ev.ID, true
		}
		if ev.Data == nil && ev.HasID {
			continue
		}
		if ev.Data != nil {
			end.messages = end.messages || len(bytes.TrimSpace(ev.Data)) > 0
			if m, err := rewrite.ParseMessage(ev.Data); err == nil && m.Kind == rewrite.KindRequest {
				t.answerItself(s, m)
				continue
			}
		}
		if pass != nil && pass(ev) != nil {
			return end
		}
	}
}

// streamEnd is what serverStream saw of a stream: the last event id the
// server gave (hasID: it gave one) and whether any message came.
type streamEnd struct {
	id              string
	hasID, messages bool
}

// Re-opening a held session's GET stream (watch).
const (
	// maxRewatch is how many times in a row the bridge opens a held
	// session's GET stream anew when each ended (or failed) without a
	// message; then it stops watching the session.
	maxRewatch = 3
	// rewatchInterval is the backoff's unit: the first new stream is
	// opened at once, the next after one interval, then two, four, …
	rewatchInterval = time.Second
	// maxEventID bounds the event id kept for Last-Event-ID.
	maxEventID = 1 << 10
)

// rewatchDelay is how long watch waits before its quiet-th new stream in
// a row after one that brought no message.
func rewatchDelay(quiet int) time.Duration {
	if quiet <= 1 {
		return 0
	}
	return rewatchInterval << (quiet - 2)
}

// Why watch stopped watching a session (watchHooks.ended).
const (
	watchDropped   = "dropped"   // the session was dropped (endSession)
	watchNoStream  = "no stream" // 405, or a reply that is no event stream
	watchForgotten = "forgotten" // 404: the upstream forgot the session
	watchQuiet     = "quiet"     // maxRewatch streams in a row without a message
)

// watchHooks are the tests' view of watch: delay, when set, replaces
// rewatchDelay; ended is told why a watch stopped.
type watchHooks struct {
	delay func(quiet int) time.Duration
	ended func(why string)
}

// watch opens the GET stream of s, a session held for callers' requests
// (a listen's session reads its own), and answers the server's requests
// on it until the session is dropped (endSession stops it). A legacy
// client MAY open that stream, and open it again at any time (2025-11-25
// basic/transports); go-sdk's KeepAlive sends its pings there, and closes
// a session whose ping it cannot deliver, which ended every held session
// after one interval and lost the calls waiting on it for a client's
// input. A stream the upstream ends is opened anew, with Last-Event-ID
// when its events had ids, so a server that keeps what it sent meanwhile
// replays it: at once after a stream that brought a message, else with a
// backoff, and not past maxRewatch in a row without one. An upstream that
// offers no stream (405) or forgot the session (404) is not asked again.
func (t *Transport) watch(s *session) {
	if s.id == "" {
		return // no session: a server without one sends no requests
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.unwatch = cancel
	go func() {
		defer cancel()
		why := t.watchStreams(ctx, s)
		if t.hooks.ended != nil {
			t.hooks.ended(why)
		}
	}()
}

// watchStreams is watch's loop; it returns why it stopped.
func (t *Transport) watchStreams(ctx context.Context, s *session) string {
	var lastID string
	for quiet := 0; ; {
		resp, err := t.do(s.held().Resume(ctx, lastID))
		messages := false
		switch {
		case ctx.Err() != nil:
			if err == nil {
				resp.Body.Close()
			}
			return watchDropped
		case err != nil:
			// The upstream not reached: counted as a quiet stream.
		case resp.StatusCode == http.StatusNotFound:
			drain(resp)
			return watchForgotten
		case resp.StatusCode == http.StatusMethodNotAllowed:
			drain(resp)
			return watchNoStream
		case resp.StatusCode != http.StatusOK:
			// Any other refusal: counted as a quiet stream, and the next
			// one is opened fresh (go-sdk refuses with 400 a Last-Event-ID
			// whose events it no longer keeps): what it would have
			// replayed is lost either way.
			drain(resp)
			lastID = ""
		default:
			if mt, _ := wire.MediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
				drain(resp)
				return watchNoStream
			}
			end := t.serverStream(s, resp.Body, nil)
			resp.Body.Close()
			messages = end.messages
			if end.hasID {
				lastID = end.id
				if len(lastID) > maxEventID {
					lastID = "" // not kept: the stream is opened without it
				}
			}
		}
		if ctx.Err() != nil {
			return watchDropped
		}
		if messages {
			quiet = 0
		} else if quiet++; quiet > maxRewatch {
			return watchQuiet
		}
		delay := rewatchDelay(quiet)
		if t.hooks.delay != nil {
			delay = t.hooks.delay(quiet)
		}
		if delay > 0 {
			tm := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				tm.Stop()
				return watchDropped
			case <-tm.C:
			}
		}
	}
}
