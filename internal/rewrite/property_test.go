package rewrite

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// gen builds random JSON-RPC traffic from a seeded source, so a failure
// names a seed that reproduces it.
type gen struct {
	rnd *rand.Rand
	ws  []string // whitespace it may put between tokens
}

func newGen(seed uint64, ws ...string) *gen {
	return &gen{rnd: rand.New(rand.NewPCG(seed, seed^0x5eed)), ws: ws}
}

func (g *gen) pick(options ...string) string { return options[g.rnd.IntN(len(options))] }

func (g *gen) space() string {
	if g.rnd.IntN(3) > 0 {
		return ""
	}
	return g.pick(g.ws...)
}

// value returns a random JSON value nested at most depth deep.
func (g *gen) value(depth int) string {
	switch n := g.rnd.IntN(8); {
	case depth > 0 && n < 2:
		return g.object(depth-1, nil)
	case depth > 0 && n < 3:
		var elems []string
		for range g.rnd.IntN(4) {
			elems = append(elems, g.space()+g.value(depth-1)+g.space())
		}
		return "[" + strings.Join(elems, ",") + "]"
	case n < 5:
		return g.pick(`""`, `"text"`, `"caf\u00e9"`, `"a\"b\\c"`, `"{[:,]}"`, `"capabilities"`, `"é"`)
	case n < 7:
		return g.pick(`0`, `-1`, `1.50`, `2e10`, `-0.0E-3`, `9007199254740993`)
	}
	return g.pick(`true`, `false`, `null`)
}

// object returns a random object; its keys never include avoid's.
func (g *gen) object(depth int, avoid []string) string {
	keys := []string{"a", "name", "tools", "x-y", "\\u0061b", "capabilities", "protocolVersion", "supportedVersions", "resources", "_meta"}
	var members []string
	for range g.rnd.IntN(5) {
		k := g.pick(keys...)
		if slices.Contains(avoid, k) {
			continue
		}
		members = append(members, g.space()+`"`+k+`"`+g.space()+":"+g.space()+g.value(depth)+g.space())
	}
	return "{" + strings.Join(members, ",") + "}"
}

// reply returns a random message that is not an initialize or
// server/discover result: a response with another result, an error, a
// notification or a request (whose params may look like anything).
func (g *gen) reply() string {
	id := g.pick(`1`, `"abc"`, `-7`, `"\u0031"`)
	var body string
	switch g.rnd.IntN(4) {
	case 0:
		body = `"id":` + id + `,"result":` + g.object(3, []string{"capabilities", "protocolVersion", "supportedVersions"})
	case 1:
		body = `"id":` + id + `,"error":{"code":-32601,"message":"m","data":` + g.value(2) + `}`
	case 2:
		body = `"method":"notifications/message","params":` + g.object(3, nil)
	default:
		body = `"id":` + id + `,"method":"initialize","params":{"protocolVersion":"v","capabilities":` + g.object(2, nil) + `}`
	}
	return g.space() + `{"jsonrpc":"2.0",` + body + "}" + g.space()
}

// stream returns a random SSE stream of non-handshake replies.
func (g *gen) stream() string {
	var b strings.Builder
	if g.rnd.IntN(5) == 0 {
		b.WriteString("\xef\xbb\xbf")
	}
	for range 1 + g.rnd.IntN(6) {
		eol := g.pick("\n", "\r\n", "\r")
		for range g.rnd.IntN(3) {
			b.WriteString(g.pick(": ping", "id: 42", "retry: 1000", "event: message", "event: other", "x: y", "id") + eol)
		}
		for _, line := range strings.Split(g.reply(), "\n") {
			b.WriteString(g.pick("data: ", "data:") + line + eol)
		}
		b.WriteString(eol)
	}
	if g.rnd.IntN(4) == 0 {
		b.WriteString("data: {\"jsonrpc\":\"2.0\",\"method\":\"partial\"}")
	}
	return b.String()
}

// randomReader returns its bytes in random-sized reads.
type randomReader struct {
	data []byte
	rnd  *rand.Rand
}

func (r *randomReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(1+r.rnd.IntN(16), len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// TestSpliceIsIdentityOnOtherReplies: SpliceDeclaration changes no byte of
// a reply that is not a handshake result.
func TestSpliceIsIdentityOnOtherReplies(t *testing.T) {
	t.Parallel()
	for seed := range uint64(2000) {
		msg := newGen(seed, " ", "\t", "\n", "\r\n").reply()
		got, changed, err := SpliceDeclaration([]byte(msg), SkillsSidecar())
		if err != nil || changed || string(got) != msg {
			t.Fatalf("seed %d: SpliceDeclaration(%q) = %q, %v, %v; want it unchanged", seed, msg, got, changed, err)
		}
		if LooksLikeHandshakeResult([]byte(msg)) {
			t.Fatalf("seed %d: LooksLikeHandshakeResult(%q) = true", seed, msg)
		}
	}
}

// TestStreamIsIdentityOnOtherReplies: the proxy's SSE path (read, splice
// handshake results, write Raw or re-framed events) reproduces a stream of
// other replies byte for byte, whatever the read boundaries.
func TestStreamIsIdentityOnOtherReplies(t *testing.T) {
	t.Parallel()
	for seed := range uint64(500) {
		g := newGen(seed, " ", "\t", "\n")
		in := g.stream()
		got, err := spliceStream(&randomReader{data: []byte(in), rnd: g.rnd}, SkillsSidecar())
		if err != nil || string(got) != in {
			t.Fatalf("seed %d: stream %q came out as %q, %v", seed, in, got, err)
		}
	}
}

// TestPropertyCheckCanFail feeds the identity check a handshake result, which
// it must report as changed, so the properties above are not vacuous.
func TestPropertyCheckCanFail(t *testing.T) {
	t.Parallel()
	msg := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"v","capabilities":{}}}`
	got, changed, _ := SpliceDeclaration([]byte(msg), SkillsSidecar())
	if !changed || bytes.Equal(got, []byte(msg)) {
		t.Errorf("SpliceDeclaration(%s) left a handshake result unchanged", msg)
	}
	in := fmt.Sprintf("id: 1\ndata: %s\n\n", msg)
	if out, _ := spliceStream(strings.NewReader(in), SkillsSidecar()); string(out) == in {
		t.Errorf("spliceStream(%q) left a handshake event unchanged", in)
	}
}
