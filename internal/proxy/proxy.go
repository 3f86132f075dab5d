package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/hop"
	"github.com/skills-sidecar/skills-sidecar/internal/idmap"
	"github.com/skills-sidecar/skills-sidecar/internal/lazydeadline"
	"github.com/skills-sidecar/skills-sidecar/internal/metrics"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Defaults for Options fields left zero.
const (
	DefaultMaxBodyBytes    = 4 << 20
	DefaultMaxEventBytes   = 32 << 20 // a 16 MiB skill file as base64, with room
	DefaultUpstreamTimeout = 60 * time.Second
	DefaultDialTimeout     = 5 * time.Second
	DefaultMaxDepth        = 64
	// DefaultClientBodyTimeout and DefaultSendTimeout are nginx's
	// client_body_timeout and send_timeout defaults.
	DefaultClientBodyTimeout = 60 * time.Second
	DefaultSendTimeout       = 60 * time.Second
)

// Local answers the methods the sidecar owns (skills/*, agents/*, reads of
// the files it serves). The proxy asks it about every single (non-batch)
// request before forwarding.
type Local interface {
	// ServeLocal returns the answer to msg and true, or false when the
	// request is the upstream's business. It writes nothing: the proxy
	// writes the answer (WriteReply), with msg's id.
	ServeLocal(r *http.Request, msg rewrite.Message) (reply.Reply, bool)
	// EditReply returns an edit to apply to the upstream's reply to msg (one
	// JSON-RPC message in, one out), or nil to pass the reply untouched.
	// For initialize and server/discover it sees the upstream's reply
	// before the declaration is spliced in.
	EditReply(r *http.Request, msg rewrite.Message) func(reply []byte) []byte
}

// Options configure a Proxy. The zero value of every field but Upstream works.
type Options struct {
	// Upstream is the upstream MCP endpoint; requests go to exactly this URL
	// whatever path they arrived on. Required.
	Upstream *url.URL
	// Transport carries requests to the upstream. Nil means a transport tuned
	// for one loopback upstream (keep-alive pool, DialTimeout,
	// UpstreamTimeout for response headers, no transparent compression).
	Transport http.RoundTripper
	// Local answers owned methods; nil forwards everything.
	Local Local
	// Declaration is spliced into initialize and server/discover results.
	// The zero value splices nothing.
	Declaration rewrite.Declaration
	// Logger receives exactly one line per request (record.go): debug for
	// one that went well, info for the sidecar's own refusals, warn for a
	// failure; nil logs nothing.
	Logger *zap.Logger
	// Metrics records requests, upstream latency, declarations and streams;
	// nil records nothing.
	Metrics *metrics.Metrics
	// Notify, when set, receives every legacy session's standalone GET
	// stream, to insert the sidecar's own change notifications between the
	// upstream's events, and serves such a stream itself when the upstream
	// answers the GET with 405 (notify.go); likewise every
	// subscriptions/listen stream whose filter asks for what the sidecar
	// honours (listen.go). Nil sends none.
	Notify *notify.Hub
	// Callers says whose place of the hub's streams a stream takes
	// (package caller); nil knows every caller by its address.
	Callers *caller.Resolver
	// AdmitStream, when set, is asked before the sidecar serves a legacy
	// session its own notification stream (an upstream that answered the
	// GET with 405 did not say whose the session is): nil admits the
	// caller of r to the session r names; an error leaves the upstream's
	// 405 as the answer. Nil serves every such GET.
	AdmitStream func(r *http.Request) error
	// OwnsURI, when set, reports whether uri is a skill URI the sidecar
	// serves itself: a subscriptions/listen filter's resourceSubscriptions
	// entry the sidecar then honours (listen.go). Nil honours none.
	OwnsURI func(uri string) bool
	// OnResourcesChanged, when set, is called for each JSON-RPC
	// notification notifications/resources/updated (with its params.uri)
	// or notifications/resources/list_changed (uri "") that passes through
	// in an SSE stream from the upstream (a GET stream or a POST's SSE
	// reply), with the client request the stream answers, so what was
	// learned about the upstream's resources can be forgotten. Only parsed
	// notifications count, never a message that carries the name as data.
	// It must not block.
	OnResourcesChanged func(r *http.Request, method, uri string)
	// MaxBodyBytes limits request bodies (413 past it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxEventBytes limits one SSE event or JSON reply the proxy must parse
	// to rewrite; 0 means DefaultMaxEventBytes.
	MaxEventBytes int
	// MaxDepth limits how deeply a request body's JSON nests (400 past it);
	// 0 means DefaultMaxDepth.
	MaxDepth int
	// AllowedOrigins are the Origin values accepted besides loopback origins
	// and the request's own host when that host is loopback or in
	// AllowedHosts; "*" accepts any. A request with any other Origin gets
	// 403 (DNS rebinding protection, MCP transport spec; origin.go).
	AllowedOrigins []string
	// AllowedHosts are the Host values (name, or name:port) accepted
	// besides loopback ones; "*" accepts any. On a loopback listener any
	// other Host gets 403, as go-sdk answers; on another listener nil
	// accepts every Host and a list accepts only those (origin.go).
	AllowedHosts []string
	// Listener is the address the MCP listener is bound to; a loopback
	// one turns the Host check on (origin.go). Nil judges each connection
	// by its local address, as go-sdk does; a listener bound to every
	// interface is better named here, so that a local proxy in the pod
	// (reaching it over 127.0.0.1 with a Service name as Host) is not
	// refused.
	Listener net.Addr
	// UpstreamTimeout bounds the wait for response headers when Transport is
	// nil; 0 means DefaultUpstreamTimeout.
	UpstreamTimeout time.Duration
	// DialTimeout bounds connecting when Transport is nil; 0 means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// ClientBodyTimeout bounds the wait for each read of a request body,
	// as nginx's client_body_timeout does (between reads, not the whole
	// body): past it the client gets 408 and its connection ends. 0 means
	// DefaultClientBodyTimeout.
	ClientBodyTimeout time.Duration
	// SendTimeout bounds each write of a reply to the client, as nginx's
	// send_timeout does: a client that accepts no bytes that long (a JSON
	// reply, an SSE stream, a detached GET stream, the sidecar's own
	// answers) has its connection closed, and the upstream request behind
	// it is ended. 0 means DefaultSendTimeout.
	SendTimeout time.Duration
}

// Proxy is the sidecar's MCP handler. Create it with New.
type Proxy struct {
	opts    Options
	target  *url.URL // every upstream request's URL: Upstream's, shared, never modified
	buffers *bufferPool
	headers headerPool // outbound request headers (relay.go)
	log     *zap.Logger

	// streams is canceled by EndStreams; standalone GET streams end on it.
	streams    context.Context
	endStreams context.CancelFunc
	detached   sync.WaitGroup // streams relayed off their handler (detach.go)
}

// New returns a Proxy forwarding to opts.Upstream.
func New(opts Options) (*Proxy, error) {
	if opts.Upstream == nil || opts.Upstream.Host == "" {
		return nil, errors.New("proxy: upstream URL required")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxEventBytes <= 0 {
		opts.MaxEventBytes = DefaultMaxEventBytes
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = DefaultUpstreamTimeout
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.ClientBodyTimeout <= 0 {
		opts.ClientBodyTimeout = DefaultClientBodyTimeout
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.Transport == nil {
		opts.Transport = NewTransport(opts.DialTimeout, opts.UpstreamTimeout, onbehalf.DefaultCredentials())
	}
	u := opts.Upstream
	p := &Proxy{opts: opts, log: opts.Logger,
		target: &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}}
	p.streams, p.endStreams = context.WithCancel(context.Background())
	if p.log == nil {
		p.log = zap.NewNop()
	}
	p.buffers = newBufferPool()
	return p, nil
}

// NewTransport returns the transport New uses when Options.Transport is nil:
// hop's synchronous keep-alive pool for a plain-HTTP upstream (see package
// hop for why), with dial and response-header timeouts and no transparent
// compression; an https upstream goes through net/http's Transport with the
// same settings, cloned per partition. Requests that differ in any of the
// credentials headers never share an upstream connection, over http or
// https (hop.Transport.Partition), so a reply read from a connection that
// carried it unasked cannot reach another caller; upstreamSpares
// connections are kept dialled ahead for the requests of callers without
// one.
func NewTransport(dial, header time.Duration, credentials []string) http.RoundTripper {
	d := &net.Dialer{Timeout: dial, KeepAlive: 30 * time.Second}
	// Per partition: hop clones this Transport for each (at most
	// hop.FallbackPartitions), so that all of them pool at most
	// upstreamMaxIdle connections, as the http pool does. With no
	// credentials to partition by it is used as it is, for every caller.
	idle := upstreamMaxIdle
	if len(credentials) > 0 {
		idle /= hop.FallbackPartitions
	}
	fallback := &http.Transport{
		Proxy:                 nil, // the upstream is on loopback: never via an HTTP proxy
		DialContext:           d.DialContext,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: header,
		ExpectContinueTimeout: time.Second,
		// Bytes pass through as the upstream encoded them; a reply the proxy
		// must rewrite is requested without Accept-Encoding instead.
		DisableCompression: true,
	}
	return &hop.Transport{
		DialTimeout:           dial,
		ResponseHeaderTimeout: header,
		IdleTimeout:           90 * time.Second,
		MaxIdle:               upstreamMaxIdle,
		Fallback:              fallback,
		Partition:             credentials,
		Spares:                upstreamSpares,
	}
}

// upstreamMaxIdle caps the idle upstream connections the transport pools.
const upstreamMaxIdle = 512

// upstreamSpares is how many never-used connections to the upstream the
// transport keeps dialled ahead (hop.Transport.Spares). A new caller's first
// skills/list page sends its discovery's two listings at once on the
// caller's behalf, and beside them the guessed reads of the files the page
// shows that the upstream serves (at most upstreamfiles.DefaultFileReads at
// once); with the pool partitioned by credentials each of them needs a
// connection no other caller used. Eight cover the listings and six reads.
// The cost is eight idle loopback sockets and their 2 KiB read buffers; a
// burst of more new callers than that dials as it did without spares.
const upstreamSpares = 8

// EndStreams ends every standalone GET stream cleanly, at an event boundary,
// and makes new ones end at once. Used on shutdown so that clients reconnect
// (with Last-Event-ID) to another replica while POSTs drain.
func (p *Proxy) EndStreams() {
	p.endStreams()
}

// ServeHTTP implements http.Handler for the MCP endpoint. It records each
// request's method, route and outcome, and logs it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// The writer and the plan live as long as each other (a detached
	// stream keeps both): one allocation for the two.
	ex := &exchange{sw: statusWriter{ResponseWriter: w, send: p.opts.SendTimeout}}
	sw := &ex.sw
	// net/http never resets a write deadline it did not set, so the one
	// left by this connection's previous reply may have passed: renewed
	// before net/http writes anything of its own (100 Continue).
	sw.renew()
	// Header.Get with a canonical key does not allocate; the era is only
	// worked out from it when the request's line is logged.
	ex.pl = plan{method: r.Method, start: start, version: r.Header.Get("Mcp-Protocol-Version")}
	pl := &ex.pl
	route := routeUpstream
	defer func() {
		// A reply cut short mid-body panics with http.ErrAbortHandler; it
		// is still a request to count and log (abort kept its error).
		if v := recover(); v != nil {
			p.record(pl, route, sw.outcome(true))
			panic(v)
		}
	}()
	route = p.serve(sw, r, pl)
	if pl.detached {
		return // the stream goes on; pump records it when it ends
	}
	// What net/http flushes after the handler returns (the rest of its
	// buffer, the last chunk) gets a fresh deadline: a quiet stream
	// outlives the one set for its last write.
	sw.renew()
	p.record(pl, route, sw.status)
}

// exchange is what ServeHTTP keeps for one request: its writer and its plan.
type exchange struct {
	sw statusWriter
	pl plan
}

// Routes a request can take, for metrics and logs.
const (
	routeLocal    = "local"
	routeUpstream = "upstream"
)

// serve handles one request and returns its route.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, pl *plan) string {
	var bodyDeadline time.Time // when the body's read deadline was set; zero: not
	arrived := r.Method == http.MethodPost && bodyBuffered(r)
	if r.Method == http.MethodPost && r.ContentLength != 0 && !arrived {
		// The body's first read is bounded from here, and so is a refusal
		// sent before the body is read: net/http then reads (to discard)
		// up to 256 KiB of it, which a stalled client would make wait for
		// ever. readBody renews the deadline per read and clears it. A body
		// that came whole with its head (the usual JSON-RPC message) makes
		// no read wait, and costs no deadline: two moves of the poller's
		// timer per request.
		bodyDeadline = time.Now()
		_ = http.NewResponseController(w).SetReadDeadline(bodyDeadline.Add(p.opts.ClientBodyTimeout))
	}
	if !hostAllowed(r.Host, p.loopbackListener(r), p.opts.AllowedHosts) {
		writeError(w, nil, &reply.Error{Status: http.StatusForbidden, Code: reply.CodeInvalidRequest, Message: "host " + strconv.Quote(r.Host) + " is not allowed"})
		return routeLocal
	}
	if o := r.Header.Get("Origin"); o != "" {
		vouched := loopbackHost(r.Host) || hostListed(r.Host, p.opts.AllowedHosts)
		if !originAllowed(o, r.Host, vouched, p.opts.AllowedOrigins) {
			writeError(w, nil, &reply.Error{Status: http.StatusForbidden, Code: reply.CodeInvalidRequest, Message: "origin " + strconv.Quote(o) + " is not allowed"})
			return routeLocal
		}
	}
	if r.Method != http.MethodPost {
		// Only a GET that resumes with Last-Event-ID can replay an
		// initialize reply; other GET streams, DELETE and the rest pass
		// straight through, holding no parse buffer while they idle.
		if r.Method == http.MethodGet {
			pl.kind = kindGet
			if r.Header.Get("Last-Event-ID") != "" {
				pl.kind = kindResumed
			}
			pl.session = r.Header.Get("Mcp-Session-Id")
		}
		p.relay(w, r, pl, nil)
		if r.Method == http.MethodDelete && pl.upstreamStatus >= 200 && pl.upstreamStatus < 300 {
			// The session ended: its subscriptions to the sidecar's URIs
			// go. Only when the upstream (or the legacy front) ended it: a
			// DELETE it refused, such as another user's of a session bound
			// to its owner (go-sdk's 403), ended nothing.
			p.opts.Notify.Forget(r.Header.Get("Mcp-Session-Id"))
		}
		return routeUpstream
	}
	pl.method = "invalid" // until the body proves otherwise
	timeout := p.opts.ClientBodyTimeout
	if arrived {
		timeout = 0 // nothing to wait for
	}
	body, err := readBody(w, r, p.opts.MaxBodyBytes, timeout, bodyDeadline)
	if err != nil {
		writeError(w, nil, err)
		return routeLocal
	}
	if err := rewrite.CheckDepth(body, p.opts.MaxDepth); err != nil {
		writeError(w, nil, &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeInvalidRequest, Message: "invalid request: " + err.Error()})
		return routeLocal
	}
	msgs, batch, perr := rewrite.ParseBodyInto(body, &pl.one)
	if perr != nil {
		writeError(w, nil, parseError(perr))
		return routeLocal
	}
	pl.method = messageLabel(msgs, batch)
	pl.kind = kindSingle
	if batch {
		pl.kind = kindBatch
	}
	if !batch {
		pl.params = msgs[0].Params // for the log line's era; aliases body
	}
	if !batch && p.opts.Local != nil && msgs[0].Kind == rewrite.KindRequest {
		if rep, ok := p.opts.Local.ServeLocal(r, msgs[0]); ok {
			if clientGone(r, rep.Err) {
				return routeLocal // nobody is listening
			}
			WriteReply(w, msgs[0].ID, rep)
			return routeLocal
		}
	}
	for _, m := range msgs {
		if m.Kind == rewrite.KindRequest && isHandshake(m.Method) {
			pl.handshake = append(pl.handshake, m.ID)
		}
	}
	if m := msgs[0]; !batch && m.Kind == rewrite.KindRequest {
		pl.id = m.ID
		var local func([]byte) []byte
		if p.opts.Local != nil {
			local = p.opts.Local.EditReply(r, m)
			if o, ok := p.opts.Local.(Observing); ok {
				pl.observe = o.ObserveReply(r, m)
			}
		}
		switch {
		case m.Method == "initialize":
			pl.edit = then(local, p.splicer(eraLegacy))
		case m.Method == "server/discover":
			pl.edit = then(local, p.discoverSplicer())
		case m.Method == rewrite.MethodListen:
			// No edit: the reply is a stream listen.go relays itself.
			pl.listen = p.planListen(m)
		default:
			pl.edit = local
		}
	}
	p.relay(w, r, pl, body)
	if n, ok := p.opts.Local.(Notified); ok && !batch && msgs[0].Kind == rewrite.KindNotification && pl.upstreamStatus == http.StatusAccepted {
		n.Notified(r, msgs[0])
	}
	return routeUpstream
}

// messageLabel names a POST for metrics: the method of a request, or the
// kind of message it carries.
func messageLabel(msgs []rewrite.Message, batch bool) string {
	switch {
	case batch:
		return "batch"
	case msgs[0].Kind == rewrite.KindRequest:
		return msgs[0].Method
	case msgs[0].Kind == rewrite.KindNotification:
		return "notification"
	default:
		return "response"
	}
}

// splicer returns the edit that adds the sidecar's declaration to a
// handshake reply of era; anything it cannot splice passes as it was.
func (p *Proxy) splicer(era string) func(msg []byte) []byte {
	return func(msg []byte) []byte {
		out, changed, err := rewrite.SpliceDeclaration(msg, p.opts.Declaration)
		if err != nil || !changed {
			return msg
		}
		p.opts.Metrics.DeclarationInjected(era)
		return out
	}
}

// then returns the edit that applies first (nil: none), then second: a
// handshake reply is shown to Local (which learns the upstream's
// capabilities from it) before the declaration is spliced in.
func then(first, second func([]byte) []byte) func([]byte) []byte {
	if first == nil {
		return second
	}
	return func(msg []byte) []byte { return second(first(msg)) }
}

func isHandshake(method string) bool {
	return method == "initialize" || method == "server/discover"
}

// bodyBuffered reports whether the whole body of r, of declared length,
// is in memory already (package h1's body says what its connection's
// buffer holds of it), so that reading it waits on nothing.
func bodyBuffered(r *http.Request) bool {
	return r.ContentLength > 0 && int64(buffered(r.Body)) >= r.ContentLength
}

// readBody reads the whole request body up to max bytes, each read within
// timeout of the one before (client_body_timeout; 0: the body is all in
// memory already, and no read waits). A client that stalls longer gets 408
// and loses its connection, as nginx answers, since the rest of its body
// can no longer be told from a next request. set is when the caller last
// set the read deadline (zero: it did not).
func readBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration, set time.Time) ([]byte, *reply.Error) {
	if r.ContentLength > max {
		return nil, reply.TooLarge(max)
	}
	src := r.Body
	if r.ContentLength < 0 {
		// A declared length at most max is already enforced by net/http's
		// body reader; only a body of unknown length needs the limit.
		src = http.MaxBytesReader(w, src, max)
	}
	body := stallReader{r: src, rc: *http.NewResponseController(w), timeout: timeout, at: set, set: !set.IsZero()}
	b, err := readAll(&body, r.ContentLength)
	if err == nil {
		body.done()
		return b, nil
	}
	// The error targets are declared only here: taken by address for
	// errors.As, they live on the heap, two allocations per request.
	var mbe *http.MaxBytesError
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	if !timedOut {
		body.done()
	}
	switch {
	case errors.As(err, &mbe):
		return nil, reply.TooLarge(max)
	case timedOut:
		// The deadline stays passed: net/http would otherwise wait for the
		// rest of the body to discard it before closing the connection.
		w.Header().Set("Connection", "close")
		return nil, &reply.Error{Status: http.StatusRequestTimeout, Code: reply.CodeInvalidRequest,
			Message: fmt.Sprintf("request body stalled for more than %s", timeout)}
	default:
		return nil, &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeParseError, Message: "read request body: " + err.Error()}
	}
}

// errBodyOverLength is a body reader that gave more than the request's
// Content-Length.
var errBodyOverLength = errors.New("body longer than its Content-Length")

// readAllUpfront is the most readAll sets aside before the body's bytes
// arrive: a declared length is only a claim, and a client that sends the
// head of a 4 MiB body and then one byte a minute must not hold 4 MiB
// per connection. Common messages are far smaller, so they still take one
// buffer; a larger body grows it as its bytes come.
const readAllUpfront = 64 << 10

// readAll reads r to its end like io.ReadAll, into one buffer of the
// declared length when there is one (size >= 0) and it is at most
// readAllUpfront, where io.ReadAll would start small and grow. The buffer
// has a byte to spare, so that the end of the body is seen without
// growing it. A body longer than declared, which neither server lets
// through, is an error (errBodyOverLength) as soon as it shows, so the
// declared length, checked against the limit, bounds what is read. Without
// a declared length it starts at io.ReadAll's 512 bytes and grows as
// io.ReadAll does.
//
// It takes readBody's stallReader itself so that it stays on the stack:
// behind an io.Reader (io.ReadAll, or a generic function's shape) it
// would escape, an allocation per request.
func readAll(r *stallReader, size int64) ([]byte, error) {
	upfront := int64(512)
	if size >= 0 {
		upfront = min(size, readAllUpfront) + 1
	}
	b := make([]byte, 0, upfront)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case size >= 0 && int64(len(b)) > size:
			return b, errBodyOverLength
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)]
		}
	}
}

// stallReader reads a request body with a read deadline renewed before
// every read. Where the connection takes no deadline (HTTP/2, a test
// recorder), or with no timeout (a body already in memory), it reads
// without one.
type stallReader struct {
	r       io.ReadCloser
	rc      http.ResponseController // by value: one allocation less per request
	timeout time.Duration
	set     bool      // a deadline was set, to be cleared by done
	at      time.Time // when it was last moved; renewed lazily (package lazydeadline)
}

func (s *stallReader) Read(p []byte) (int, error) {
	if s.timeout <= 0 {
		return s.r.Read(p)
	}
	if now := time.Now(); lazydeadline.Due(s.at, now, s.timeout) {
		if s.rc.SetReadDeadline(now.Add(s.timeout)) == nil {
			s.set = true
		}
		s.at = now
	}
	return s.r.Read(p)
}

func (s *stallReader) Close() error { return s.r.Close() }

// done clears the deadline: net/http's own read that watches for the
// client leaving must not time out while the upstream is at work.
func (s *stallReader) done() {
	if s.set {
		_ = s.rc.SetReadDeadline(time.Time{})
	}
}

func parseError(err error) *reply.Error {
	switch {
	case errors.Is(err, rewrite.ErrParse):
		return &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeParseError, Message: "parse error: body is not JSON"}
	default:
		return &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeInvalidRequest, Message: "invalid request: " + err.Error()}
	}
}

// plan is what the request path learned that the response path needs.
type plan struct {
	method    string              // the metrics label source: JSON-RPC method or HTTP verb
	id        json.RawMessage     // the single request's id, for error replies
	edit      func([]byte) []byte // edits the single request's reply; nil: none
	observe   rewrite.Observer    // watches the single request's reply as it passes (tap.go); nil: none
	handshake []json.RawMessage   // ids of initialize/server/discover requests
	kind      kind
	session   string      // a standalone GET's Mcp-Session-Id, for notify.go
	who       caller.ID   // a detached GET stream's caller, for notify.go
	listen    *listenPlan // a subscriptions/listen the sidecar honours part of (listen.go)
	// detached says what became of a GET stream, not what it is: relayed
	// off its handler (detach.go), which records it.
	detached bool
	start    time.Time

	// For the request's log line (record.go).
	version        string          // the MCP-Protocol-Version header
	params         json.RawMessage // a single message's params: its _meta names the era
	upstreamStatus int             // the upstream's status; 0: it never answered
	err            error           // why the upstream exchange failed; nil: it did not

	// Room kept with the plan for what the request path would otherwise
	// allocate apart: the lone message of a body that is no batch, the
	// outbound request, its body and its X-Forwarded-* values, the context
	// that carries the client's request below (package caller).
	one       [1]rewrite.Message
	out       http.Request
	body      sentBody
	forwarded onbehalf.Forwarded
	caller    caller.Bound
}

// sentBody is the body of a POST the proxy sends: the client's bytes in
// memory (hop.MemBody) and, when they are one message, the message the
// proxy parsed from them (rewrite.Parsed), so that a transport below that
// must know it (the era bridge, the stdio adapter) does not parse it again.
type sentBody struct {
	hop.MemBody
	msg *rewrite.Message // the message of the bytes (the plan's); nil: a batch
}

// ParsedMessage implements rewrite.Parsed: the message, as long as none of
// the bytes it was parsed from has been read.
func (b *sentBody) ParsedMessage() (rewrite.Message, bool) {
	if b.msg == nil || int64(b.Len()) != b.Size() {
		return rewrite.Message{}, false
	}
	return *b.msg, true
}

// Reset makes b read p, bytes that carry no message it knows: the
// promoted MemBody.Reset would keep the message of the bytes before.
func (b *sentBody) Reset(p []byte) {
	b.MemBody.Reset(p)
	b.msg = nil
}

// kind is what a request is, as far as the response path cares: one value
// where there were four booleans that could contradict each other.
type kind uint8

const (
	kindOther   kind = iota // DELETE and the rest, or a POST whose body is not (yet) JSON-RPC
	kindSingle              // a POST of one JSON-RPC message
	kindBatch               // a POST of a JSON-RPC batch
	kindGet                 // a standalone GET stream: ended early on shutdown
	kindResumed             // a GET stream resumed with Last-Event-ID: look for replayed handshake replies
)

// get reports whether the request is a standalone GET stream, resumed or not.
func (pl *plan) get() bool { return pl.kind == kindGet || pl.kind == kindResumed }

// parsed reports whether the request's body was read and is JSON-RPC.
func (pl *plan) parsed() bool { return pl.kind == kindSingle || pl.kind == kindBatch }

func (pl *plan) isHandshakeID(id json.RawMessage) bool {
	for _, h := range pl.handshake {
		if idmap.Same(h, id) {
			return true
		}
	}
	return false
}

// edits reports whether the reply needs the response path's attention.
func (pl *plan) edits() bool {
	return pl.edit != nil || pl.kind == kindResumed || (pl.kind == kindBatch && len(pl.handshake) > 0)
}
