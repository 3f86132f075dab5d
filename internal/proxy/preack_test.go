package proxy

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// events reads every event of an SSE stream.
func events(t *testing.T, stream string) []rewrite.Event {
	t.Helper()
	rd := rewrite.NewReader(strings.NewReader(stream), 0)
	var out []rewrite.Event
	for {
		ev, err := rd.Next()
		if len(ev.Raw) > 0 {
			out = append(out, ev)
		}
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPreAck: notifications before the acknowledgement are held up to the
// bound, those of the listen are released in order without a BOM, those
// without its subscriptionId are dropped, and anything that is not a
// notification, or past the bound, is not held.
func TestPreAck(t *testing.T) {
	t.Parallel()
	const (
		mine  = `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}}` + "\n\n"
		spelt = `data: {"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"\u0061"}}}` + "\n\n"
		other = `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}` + "\n\n"
		req   = `data: {"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n\n"
	)
	evs := events(t, "\xef\xbb\xbf"+mine+other+spelt+req)
	h := preAck{max: 1 << 10}
	for i, ev := range evs[:3] {
		if !h.hold(ev, []byte(`"a"`)) {
			t.Fatalf("hold(notification %d) = false, want true", i)
		}
	}
	if h.hold(evs[3], []byte(`"a"`)) {
		t.Error("hold(a request) = true, want false: only notifications wait for the acknowledgement")
	}
	h.keepOwn()
	var b bytes.Buffer
	if err := h.release(passThrough{w: &b}); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), mine+spelt; got != want {
		t.Errorf("released %q, want %q", got, want)
	}
	if h.hold(evs[1], []byte(`"a"`)) {
		t.Error("hold after release = true, want false")
	}

	small := preAck{max: len(evs[0].Raw)}
	if !small.hold(evs[0], []byte(`"a"`)) || small.hold(evs[2], []byte(`"a"`)) {
		t.Error("a bound of one event held a second, or not the first")
	}
}
