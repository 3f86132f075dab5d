package methods

import (
	"encoding/json"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Wire constants of the 2026-07-28 era (SEP-2575).
const (
	ModernVersion  = rewrite.ModernVersion
	metaProtocol   = rewrite.MetaProtocolVersion
	metaClientCaps = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo = "io.modelcontextprotocol/serverInfo"
	headerProtocol = "Mcp-Protocol-Version" // canonical, so Header.Get need not allocate to canonicalise it
	headerMethod   = "Mcp-Method"
	headerName     = "Mcp-Name"
)

// era is what the request's own fields say about its protocol era.
type era struct {
	modern  bool
	version string
}

// checkEra applies the per-request checks of the modern wire: a request is
// modern when its params carry _meta with a protocol version, or its
// MCP-Protocol-Version header names 2026-07-28 or later. A modern request
// must carry both _meta fields (else -32602, HTTP 400), a supported version
// (else -32022, HTTP 400), and headers that agree with the body (else
// -32020, HTTP 400). A header that is absent is not checked: the body is
// authoritative and some clients do not send the optional ones.
func checkEra(h http.Header, msg rewrite.Message, nameParam string) (era, *reply.Error) {
	metaVersion, hasVersion := metaString(msg.Params, metaProtocol)
	_, hasCaps := rewrite.GetKey(msg.Params, []string{"_meta", metaClientCaps})
	hv := h.Get(headerProtocol)
	if !hasVersion && !hasCaps && hv < ModernVersion {
		return era{}, nil // legacy: the session carries the era
	}
	if !hasVersion || !hasCaps {
		return era{}, &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeInvalidParams,
			Message: "modern request must carry _meta " + metaProtocol + " and " + metaClientCaps}
	}
	if metaVersion != ModernVersion {
		return era{}, &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeUnsupportedVersion,
			Message: "unsupported protocol version " + metaVersion,
			Data:    map[string]any{"supported": []string{ModernVersion}, "requested": metaVersion}}
	}
	if hv != "" && hv != metaVersion {
		return era{}, mismatch(headerProtocol, hv, metaVersion)
	}
	if m := h.Get(headerMethod); m != "" && m != msg.Method {
		return era{}, mismatch(headerMethod, m, msg.Method)
	}
	if nameParam != "" {
		if n := h.Get(headerName); n != "" {
			if want, _ := paramString(msg.Params, nameParam); n != want {
				return era{}, mismatch(headerName, n, want)
			}
		}
	}
	return era{modern: true, version: metaVersion}, nil
}

// claimsModern reports whether a request claims the modern era by any of
// the signs checkEra reads (it may still be refused by checkEra).
func claimsModern(h http.Header, msg rewrite.Message) bool {
	if _, ok := rewrite.GetKey(msg.Params, []string{"_meta", metaProtocol}); ok {
		return true
	}
	if _, ok := rewrite.GetKey(msg.Params, []string{"_meta", metaClientCaps}); ok {
		return true
	}
	return h.Get(headerProtocol) >= ModernVersion
}

func mismatch(header, got, want string) *reply.Error {
	return &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeHeaderMismatch,
		Message: header + " header " + quote(got) + " does not match the request body's " + quote(want)}
}

func quote(s string) string {
	return string(rewrite.AppendString(nil, s))
}

func metaString(params json.RawMessage, key string) (string, bool) {
	return rewrite.GetString(params, "_meta", key)
}

// paramString returns params[key] when it is a string; ok is false when the
// key is absent or not a string.
func paramString(params json.RawMessage, key string) (string, bool) {
	return rewrite.GetString(params, key)
}
