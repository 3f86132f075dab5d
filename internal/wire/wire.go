package wire

import (
	"encoding/base64"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// The 2026-07-28 wire (SEP-2575, SEP-2243). Versions are dates, so any
// later version is modern too.
const (
	ModernVersion = "2026-07-28"

	// The _meta keys of a modern request and result.
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"

	// The routing headers, canonical (Header.Get need not canonicalise).
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
)

// ClaimsModern reports whether a request claims the 2026-07-28 era by any
// sign: its _meta carries a protocol version or client capabilities, or
// its MCP-Protocol-Version header names 2026-07-28 or later. A request
// that claims it is judged by the modern rules (and refused when it
// breaks them), never passed on as legacy.
func ClaimsModern(h http.Header, params []byte) bool {
	return ClaimsModernVersion(h.Get(HeaderProtocolVersion), params)
}

// ClaimsModernVersion is ClaimsModern for a request whose
// MCP-Protocol-Version header is version ("" when absent).
func ClaimsModernVersion(version string, params []byte) bool {
	if version >= ModernVersion {
		return true
	}
	if _, ok := rewrite.GetKey(params, []string{"_meta", MetaProtocolVersion}); ok {
		return true
	}
	_, ok := rewrite.GetKey(params, []string{"_meta", MetaClientCapabilities})
	return ok
}

// NameParam is the param a method's Mcp-Name header mirrors: "name" for
// tools/call and prompts/get, "uri" for resources/read, "" for others.
func NameParam(method string) string {
	switch method {
	case "tools/call", "prompts/get":
		return "name"
	case "resources/read":
		return "uri"
	}
	return ""
}

// CheckHeaders checks the routing headers of a modern request whose body
// has method and params and whose _meta names version, as a 2026-07-28
// server must before it dispatches (a mismatch is HTTP 400 -32020):
// MCP-Protocol-Version must equal version and Mcp-Method method, both
// present; Mcp-Name, decoded (DecodeHeaderValue), must equal the body's
// target (NameParam) whenever the body has one, so it too is required
// then. It returns "" when they agree, else a message naming the header.
func CheckHeaders(h http.Header, method string, params []byte, version string) string {
	if v := h.Get(HeaderProtocolVersion); v != version {
		return mismatch("MCP-Protocol-Version", v, version)
	}
	if m := h.Get(HeaderMethod); m != method {
		return mismatch(HeaderMethod, m, method)
	}
	if p := NameParam(method); p != "" {
		if want, has := rewrite.GetString(params, p); has {
			raw := h.Get(HeaderName)
			if got, ok := DecodeHeaderValue(raw); !ok || got != want {
				return mismatch(HeaderName, raw, want)
			}
		}
	}
	return ""
}

func mismatch(header, got, want string) string {
	return header + " header " + strconv.Quote(got) + " does not match the request body's " + strconv.Quote(want)
}

// The sentinel form of a header value (2026-07-28 Streamable HTTP, value
// encoding): the standard base64 of the value's UTF-8 bytes between these.
const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// EncodeHeaderValue encodes v for an Mcp-Name (or Mcp-Param-*) header: as
// it is when it is non-empty visible ASCII that does not start like the
// sentinel, else as =?base64?{standard base64 of its UTF-8 bytes}?=.
func EncodeHeaderValue(v string) string {
	plain := v != "" && !strings.HasPrefix(v, base64Prefix)
	for i := 0; plain && i < len(v); i++ {
		if v[i] < '!' || v[i] > '~' {
			plain = false
		}
	}
	if plain {
		return v
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + base64Suffix
}

// DecodeHeaderValue reads a header value written by EncodeHeaderValue (or
// by any client following the same rule): the sentinel form decoded, a
// plain value as it is. ok is false for a sentinel whose payload is not
// canonical standard base64 of valid UTF-8, which no conformant sender
// writes: such a header matches nothing.
func DecodeHeaderValue(s string) (v string, ok bool) {
	if len(s) < len(base64Prefix)+len(base64Suffix) || !strings.HasPrefix(s, base64Prefix) || !strings.HasSuffix(s, base64Suffix) {
		return s, true
	}
	payload := s[len(base64Prefix) : len(s)-len(base64Suffix)]
	b, err := base64.StdEncoding.Strict().DecodeString(payload)
	if err != nil || !utf8.Valid(b) || base64.StdEncoding.EncodeToString(b) != payload {
		return "", false
	}
	return string(b), true
}

// CheckRequest applies the per-request rules every 2026-07-28 server
// enforces before it dispatches, to a request that ClaimsModern, in the
// order the conformance suite expects them: both era fields of _meta
// present (else HTTP 400 -32602), the routing headers present and
// agreeing with the body (CheckHeaders: HTTP 400 -32020), the one modern
// version (else HTTP 400 -32022 with data.supported and data.requested).
// It returns the request's version, or the error to answer with.
func CheckRequest(h http.Header, msg rewrite.Message) (string, *reply.Error) {
	version, hasVersion := rewrite.GetString(msg.Params, "_meta", MetaProtocolVersion)
	_, hasCaps := rewrite.GetKey(msg.Params, []string{"_meta", MetaClientCapabilities})
	if !hasVersion || !hasCaps {
		return "", &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeInvalidParams,
			Message: "modern request must carry _meta " + MetaProtocolVersion + " and " + MetaClientCapabilities}
	}
	if m := CheckHeaders(h, msg.Method, msg.Params, version); m != "" {
		return "", &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeHeaderMismatch, Message: m}
	}
	if version != ModernVersion {
		return "", &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeUnsupportedVersion,
			Message: "unsupported protocol version " + strconv.Quote(version),
			Data:    map[string]any{"supported": []string{ModernVersion}, "requested": version}}
	}
	return version, nil
}

// LegacyVersions are the protocol revisions before 2026-07-28, newest
// first: the versions a legacy session may name in its
// MCP-Protocol-Version header. Those go-sdk v1.8.0 accepts, and
// 2024-10-07, which the TypeScript SDK's servers still accept: the
// sidecar's own methods refuse no version an upstream behind it may have
// negotiated.
var LegacyVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"}

// CheckLegacyVersion applies the streamable HTTP transport's rule to a
// request a legacy server answers: an MCP-Protocol-Version header below
// 2026-07-28 that names none of the supported versions is HTTP 400, as
// go-sdk answers it. The JSON-RPC error is the modern unsupported-version
// error in the legacy numbering (-32004), with data.supported and
// data.requested. An absent header is no error (the server then assumes
// 2025-03-26), nor is a modern one: the modern rules judge it
// (CheckRequest).
func CheckLegacyVersion(h http.Header, supported []string) *reply.Error {
	v := h.Get(HeaderProtocolVersion)
	if v == "" || v >= ModernVersion {
		return nil
	}
	for _, s := range supported {
		if v == s {
			return nil
		}
	}
	return &reply.Error{Status: http.StatusBadRequest, Code: reply.CodeLegacyUnsupportedVersion,
		Message: "unsupported protocol version " + strconv.Quote(v),
		Data:    map[string]any{"supported": supported, "requested": v}}
}

// MediaType is the media type of a Content-Type and the error, as
// mime.ParseMediaType gives them, without the map that parser allocates
// for each reply when the value is one of the two MCP servers send as
// they are, "application/json" and "text/event-stream".
func MediaType(contentType string) (string, error) {
	switch contentType {
	case "application/json", "text/event-stream":
		return contentType, nil
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return mt, err
}
