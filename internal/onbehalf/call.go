package onbehalf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// ErrUnreachable wraps the error of a request made on a caller's behalf that
// got no HTTP reply at all (connection refused or reset, dial or header
// timeout); the transport's own error is wrapped too, so errors.Is still
// finds syscall.ECONNREFUSED or a timeout in it. A request whose caller's
// own context ended (the caller left, its deadline passed) is not one: its
// error is that context's.
var ErrUnreachable = errors.New("upstream unreachable")

// Refusal is the upstream's refusal of a request the sidecar made on a
// caller's behalf (401, 403, …): the one way such a refusal travels back.
// The proxy passes it on (proxy.WriteReply): the upstream's status and
// end-to-end headers, so an OAuth-aware client starts its flow as it would
// against the upstream, in a JSON-RPC error with the caller's own id.
type Refusal struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *Refusal) Error() string { return fmt.Sprintf("upstream refused: HTTP %d", r.Status) }

// maxRefusalBody bounds what is kept of a refusal's body.
const maxRefusalBody = 64 << 10

// DefaultMaxBytes bounds one reply when Upstream.MaxBytes is 0: a 16 MiB
// blob, base64-encoded.
const DefaultMaxBytes = 32 << 20

// Upstream sends requests to the upstream on a caller's behalf: with the
// caller's own headers (credentials, session, protocol version, trace), its
// network identity and, on the modern wire, the caller's _meta, so the
// upstream answers exactly what it would answer that caller.
type Upstream struct {
	// URL is the upstream MCP endpoint.
	URL *url.URL
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// MaxBytes bounds one reply; 0 means DefaultMaxBytes.
	MaxBytes int
	// Credentials are the headers that carry a caller's credentials (the
	// sidecar's --auth-headers); nil means DefaultCredentials. They travel
	// with every request made on a caller's behalf, and every cache of what
	// the upstream told one caller is keyed by them.
	Credentials []string
	// Purpose names the requests in their ids ("auth", …); "" means "call".
	Purpose string
	// StatusRefuses makes every reply with a status other than 200 a
	// *Refusal, a JSON-RPC error too: the gate's rule, for which an error
	// at 4xx (a version the upstream does not support) is the upstream's
	// word to the caller. Without it a JSON-RPC error at 400 or 404 (how
	// the modern wire answers some) is an answer like any other.
	StatusRefuses bool
}

// credentials returns the credential headers in force: u.Credentials, or
// DefaultCredentials.
func (u *Upstream) credentials() []string { return Credentials(u.Credentials) }

// CredentialHeaders returns the credential headers in force: what every
// cache of what the upstream told one caller is keyed by.
func (u *Upstream) CredentialHeaders() []string { return u.credentials() }

// Call sends method with params on the caller's behalf and returns the
// JSON-RPC message answering it: only a response or error carrying the
// request's own id does (ReadReply). No reply at all is an error wrapping
// ErrUnreachable, unless the caller's request ended first (that context's
// error); a refusal of the caller (see StatusRefuses) is a *Refusal.
func (u *Upstream) Call(r *http.Request, caller rewrite.Message, method string, params map[string]json.RawMessage) (rewrite.Message, error) {
	m, _, err := u.CallStatus(r, caller, method, params)
	return m, err
}

// CallStatus is Call, also returning the HTTP status the answer came with
// (0 when there was no reply), for a caller that judges the status as well
// as the message: the auth gate admits only a result at 200.
func (u *Upstream) CallStatus(r *http.Request, caller rewrite.Message, method string, params map[string]json.RawMessage) (rewrite.Message, int, error) {
	purpose := u.Purpose
	if purpose == "" {
		purpose = "call"
	}
	req, id, err := u.newRequest(r, caller, purpose, method, params)
	if err != nil {
		return rewrite.Message{}, 0, err
	}
	resp, err := Unredirected(u.Client).Do(req)
	var answer *reply.Answer
	if err != nil && errors.As(err, &answer) {
		// A transport below (the era bridge) answered in the upstream's
		// place (package reply): its answer is read as the upstream's.
		resp, err = answer.Response(req, id), nil
	}
	if err != nil {
		if cerr := r.Context().Err(); cerr != nil {
			// The caller left, or its request's own deadline passed: no
			// word on the upstream, which must not be taken for down.
			return rewrite.Message{}, 0, fmt.Errorf("upstream %s: %w", method, cerr)
		}
		// No reply at all (refused, reset, timed out): the upstream is
		// unreachable, which callers may treat apart from a bad reply.
		return rewrite.Message{}, 0, fmt.Errorf("upstream %s: %w: %w", method, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	limit := u.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if resp.StatusCode != http.StatusOK && (u.StatusRefuses || !isJSONRPCError(resp)) {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxRefusalBody))
		return rewrite.Message{}, resp.StatusCode, &Refusal{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	m, err := ReadReply(resp.Header.Get("Content-Type"), resp.Body, id, limit)
	if err != nil {
		return rewrite.Message{}, resp.StatusCode, fmt.Errorf("upstream %s: %w", method, err)
	}
	return m, resp.StatusCode, nil
}

// Unredirected is c (nil: http.DefaultClient) following no redirect: a
// redirect is the upstream's answer to the caller, its refusal (a login
// page, an endpoint elsewhere) as a forwarded call gets it, never an
// answer to be looked for at its target, which may admit anyone. The era
// probes (package bridge) are sent so too: what the upstream speaks is
// learned from the upstream, not from a server it points at.
func Unredirected(c *http.Client) *http.Client {
	if c == nil {
		c = http.DefaultClient
	}
	own := *c
	own.CheckRedirect = useLastResponse
	return &own
}

func useLastResponse(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// isJSONRPCError reports whether a non-200 reply is a JSON-RPC error (the
// modern wire answers some of them with 4xx) rather than a refusal of the
// caller (401, 403, …).
func isJSONRPCError(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "application/json" && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound)
}
