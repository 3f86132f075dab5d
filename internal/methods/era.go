package methods

import (
	"encoding/json"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// Wire constants of the 2026-07-28 era (package wire owns them).
const (
	ModernVersion  = wire.ModernVersion
	metaProtocol   = wire.MetaProtocolVersion
	metaClientCaps = wire.MetaClientCapabilities
	metaServerInfo = wire.MetaServerInfo
)

// era is what the request's own fields say about its protocol era.
type era struct {
	modern  bool
	version string
}

// checkEra applies the per-request checks of the modern wire (package
// wire: a request that claims the modern era by any sign is checked by
// wire.CheckRequest: both _meta fields, the routing headers present and
// agreeing with the body, Mcp-Name decoded, the one version). A request
// that claims nothing is legacy: its session carries the era, and a
// version header, when present, must name a legacy version
// (wire.CheckLegacyVersion), as the upstream would require of it.
func checkEra(h http.Header, msg rewrite.Message) (era, *reply.Error) {
	if !wire.ClaimsModern(h, msg.Params) {
		return era{}, wire.CheckLegacyVersion(h, wire.LegacyVersions)
	}
	v, err := wire.CheckRequest(h, msg)
	if err != nil {
		return era{}, err
	}
	return era{modern: true, version: v}, nil
}

func quote(s string) string {
	return string(rewrite.AppendString(nil, s))
}

// paramString returns params[key] when it is a string; ok is false when the
// key is absent or not a string.
func paramString(params json.RawMessage, key string) (string, bool) {
	return rewrite.GetString(params, key)
}
