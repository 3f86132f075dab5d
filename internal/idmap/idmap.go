// Package idmap owns how the sidecar names the requests it carries for
// callers over an upstream connection they share (the era bridge's held
// sessions, the stdio adapter's processes): each request goes upstream
// under an id minted here, never a caller's own (two callers may both
// send id 1, which a shared session refuses or, worse, answers to the
// wrong one), and what names a request upstream (its
// notifications/cancelled) names it by that id. The caller's id goes back
// onto what answers it where the reply is read (rewrite.SetKey). Where
// the era bridge matches a reply or a cancellation to a request, ids are
// compared as the JSON values they are (Same, Key: 1.0 is 1), not as
// bytes.
//
// It is pure: no I/O, no table of calls (each carrier keeps its own, as
// its streams differ), nothing but a counter and the comparison.
package idmap

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync/atomic"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Minter mints the ids of one carrier: JSON strings
// "skills-sidecar-<name>-<random>-<n>", unique within the process and,
// by the random part, across its restarts (an upstream that kept a
// session cannot take a new request for an old one). Safe for concurrent
// use.
type Minter struct {
	prefix string
	n      atomic.Uint64
}

// NewMinter returns the minter of the carrier name (a short word of
// letters, digits and dashes: it is not escaped).
func NewMinter(name string) *Minter {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return &Minter{prefix: `"skills-sidecar-` + name + "-" + hex.EncodeToString(b[:]) + "-"}
}

// Next returns a fresh id.
func (m *Minter) Next() json.RawMessage {
	return json.RawMessage(m.prefix + strconv.FormatUint(m.n.Add(1), 10) + `"`)
}

// Cancelled is the notifications/cancelled that tells the upstream the
// request it knows as id is given up, with reason (2025-11-25
// basic/utilities/cancellation; the legacy wire's, which needs it: a
// dropped stream is no cancellation there).
func Cancelled(id json.RawMessage, reason string) []byte {
	out := append([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), id...)
	out = append(out, `,"reason":`...)
	return append(rewrite.AppendString(out, reason), "}}"...)
}
