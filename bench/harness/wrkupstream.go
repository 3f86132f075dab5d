package harness

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/demo"
	"github.com/skills-sidecar/skills-sidecar/internal/modernonly"
)

// StreamHeader asks the wrk upstream for an SSE reply; without it the
// reply is application/json.
const StreamHeader = "Bench-Stream"

// NewWrkUpstream returns the upstream scripts/bench-wrk.sh measures
// against: the demo server (what `demo-upstream --stateless --json` serves,
// so its tools/call costs the same) plus the harness's `progress` tool,
// stateless for both eras. Requests carrying StreamHeader get an SSE reply,
// so a `progress` call streams its notifications; all others a JSON one.
func NewWrkUpstream() http.Handler {
	srv := demo.NewServer()
	addProgress(srv)
	get := func(*http.Request) *mcp.Server { return srv }
	json := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	sse := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(StreamHeader) != "" {
			sse.ServeHTTP(w, r)
			return
		}
		json.ServeHTTP(w, r)
	})
}

// ServeWrkUpstream serves NewWrkUpstream until ctx ends.
func ServeWrkUpstream(ctx context.Context, o ServeOptions) error {
	return serve(ctx, o, NewWrkUpstream())
}

// ServeModernOnlyUpstream serves a modern-only upstream (package
// modernonly: 2026-07-28 only, legacy requests refused) until ctx ends,
// for the sealed-session path of scripts/bench-wrk.sh: the sidecar in front
// of it mints sealed session ids for legacy callers.
func ServeModernOnlyUpstream(ctx context.Context, o ServeOptions) error {
	return serve(ctx, o, modernonly.Handler(modernonly.NewServer()))
}
