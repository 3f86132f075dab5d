package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// ModernVersion is the first protocol version of the stateless era.
const ModernVersion = wire.ModernVersion

// Eras is what the upstream was learned to speak.
type Eras struct {
	// Known is false until a probe got an answer it could read.
	Known bool
	// Legacy and Modern say which eras the upstream serves.
	Legacy, Modern bool
	// Versions are the protocol versions the upstream named, as it ordered
	// them (server/discover supportedVersions, a -32022's data.supported, or
	// the one version an initialize negotiated).
	Versions []string
	// Via names the probe that decided: "server/discover" or "initialize".
	Via string
}

// Label is the metric label and log word for e: unknown, legacy, modern or
// dual.
func (e Eras) Label() string {
	switch {
	case !e.Known:
		return "unknown"
	case e.Legacy && e.Modern:
		return "dual"
	case e.Modern:
		return "modern"
	case e.Legacy:
		return "legacy"
	default:
		return "unknown"
	}
}

// String is a one-line account for /readyz and logs.
func (e Eras) String() string {
	if !e.Known {
		return "unknown (not yet probed, or the upstream did not answer the probes)"
	}
	return e.Label() + " (" + strings.Join(e.Versions, ", ") + "; learned from " + e.Via + ")"
}

// LegacyVersion returns the newest legacy version the upstream named, or
// fallback when it named none. Dates sort as strings.
func (e Eras) LegacyVersion(fallback string) string {
	best := ""
	for _, v := range e.Versions {
		if v < ModernVersion && v > best {
			best = v
		}
	}
	if best == "" {
		return fallback
	}
	return best
}

// fromVersions classifies a list of protocol versions.
func fromVersions(versions []string, via string) Eras {
	e := Eras{Known: true, Versions: versions, Via: via}
	for _, v := range versions {
		if v >= ModernVersion {
			e.Modern = true
		} else if v != "" {
			e.Legacy = true
		}
	}
	if !e.Legacy && !e.Modern {
		e.Known = false
	}
	return e
}

// errUndecided means a probe's reply says nothing about the eras.
var errUndecided = errors.New("bridge: reply does not tell the era")

// FromDiscover reads the upstream's reply to a modern server/discover
// probe: a result lists supportedVersions; a recognised modern error
// (-32020, -32021, -32022) means a modern server, and a -32022 names the
// versions it supports. Anything else (an HTTP error without a JSON-RPC
// body, "server not initialized", -32601) is undecided: the caller falls
// back to initialize, as the 2026-07-28 client rule says.
func FromDiscover(contentType string, body []byte) (Eras, error) {
	m, err := replyMessage(contentType, body)
	if err != nil {
		return Eras{}, err
	}
	switch m.Kind {
	case rewrite.KindResponse:
		var versions []string
		if found, ok := decodeAt(m.Result, &versions, "supportedVersions"); !found || !ok || len(versions) == 0 {
			return Eras{}, errUndecided
		}
		e := fromVersions(versions, "server/discover")
		if !e.Known {
			return Eras{}, errUndecided
		}
		return e, nil
	case rewrite.KindError:
		var code int
		if found, ok := decodeAt(m.Error, &code, "code"); !found || !ok {
			return Eras{}, errUndecided
		}
		switch code {
		case reply.CodeUnsupportedVersion:
			var supported []string // mistyped: none named
			if _, ok := decodeAt(m.Error, &supported, "data", "supported"); !ok {
				supported = nil
			}
			if e := fromVersions(supported, "server/discover"); e.Known {
				// A server that refuses 2026-07-28 by its modern code is
				// still reached by modern rules only for what it names.
				return e, nil
			}
			return Eras{Known: true, Modern: true, Via: "server/discover"}, nil
		case reply.CodeHeaderMismatch, reply.CodeMissingClientCapability:
			return Eras{Known: true, Modern: true, Versions: []string{ModernVersion}, Via: "server/discover"}, nil
		}
	}
	return Eras{}, errUndecided
}

// FromInitialize reads the upstream's reply to a legacy initialize probe:
// a result with a protocolVersion means the legacy era.
func FromInitialize(contentType string, body []byte) (Eras, error) {
	m, err := replyMessage(contentType, body)
	if err != nil {
		return Eras{}, err
	}
	if m.Kind != rewrite.KindResponse {
		return Eras{}, errUndecided
	}
	v, ok := rewrite.GetString(m.Result, "protocolVersion")
	if !ok || v == "" || v >= ModernVersion {
		return Eras{}, errUndecided
	}
	return Eras{Known: true, Legacy: true, Versions: []string{v}, Via: "initialize"}, nil
}

// Merge returns the eras of a dual probe: a discover that found the modern
// era only and an initialize that found the legacy era.
func Merge(a, b Eras) Eras {
	out := Eras{Known: a.Known || b.Known, Legacy: a.Legacy || b.Legacy, Modern: a.Modern || b.Modern, Via: a.Via}
	if out.Via == "" {
		out.Via = b.Via
	} else if b.Via != "" && b.Via != a.Via {
		out.Via += " and " + b.Via
	}
	out.Versions = slices.Clone(a.Versions)
	for _, v := range b.Versions {
		if !slices.Contains(out.Versions, v) {
			out.Versions = append(out.Versions, v)
		}
	}
	return out
}

// maxProbeReply bounds a probe reply read.
const maxProbeReply = 1 << 20

// replyMessage returns the response message of a JSON or SSE reply body.
func replyMessage(contentType string, body []byte) (rewrite.Message, error) {
	mt, _ := wire.MediaType(contentType)
	if mt != "text/event-stream" {
		m, err := rewrite.ParseMessage(body)
		if err != nil {
			return rewrite.Message{}, errUndecided
		}
		return m, nil
	}
	r := rewrite.NewReader(bytes.NewReader(body), maxProbeReply)
	for {
		ev, err := r.Next()
		if err != nil {
			return rewrite.Message{}, errUndecided
		}
		if m, perr := rewrite.ParseMessage(ev.Data); perr == nil && (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) {
			return m, nil
		}
	}
}

// SpeaksModern reports whether a server/discover reply (one JSON-RPC
// message) lists 2026-07-28 in supportedVersions: only then does the
// sidecar declare its extensions in it, since a client would otherwise be
// promised methods on a wire the rest of the server refuses.
func SpeaksModern(msg []byte) bool {
	m, err := rewrite.ParseMessage(msg)
	if err != nil || m.Kind != rewrite.KindResponse {
		return false
	}
	var versions []string
	if _, ok := decodeAt(m.Result, &versions, "supportedVersions"); !ok {
		return false
	}
	return slices.ContainsFunc(versions, func(v string) bool { return v >= ModernVersion })
}

// decodeAt decodes into dst the member of the JSON value obj that path
// names, its names matched exactly and the last of duplicates counting
// (rewrite.GetKey), as a peer's decoder reads them: not folded, as
// encoding/json matches a struct's fields. found is false when there is
// no such member; ok is false when there is one that does not decode.
func decodeAt(obj json.RawMessage, dst any, path ...string) (found, ok bool) {
	raw, found := rewrite.GetKey(obj, path)
	if !found {
		return false, true
	}
	return true, json.Unmarshal(raw, dst) == nil
}

// Serves reports whether the sidecar may declare and answer its own methods
// on the modern (true) or legacy (false) era in front of an upstream that
// speaks e: when the upstream speaks that era itself, or when bridged says
// the era bridge translates that era for it. Unknown eras serve both, as
// the sidecar did before it learned them: nothing is refused on a guess.
func (e Eras) Serves(modern, bridged bool) bool {
	if !e.Known {
		return true
	}
	if modern {
		return e.Modern || (bridged && e.Legacy)
	}
	return e.Legacy || (bridged && e.Modern)
}
