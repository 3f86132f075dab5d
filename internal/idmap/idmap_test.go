package idmap

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// TestMinter: ids are JSON strings naming the carrier, never repeated,
// also under concurrent use, and two minters of one name do not share
// ids.
func TestMinter(t *testing.T) {
	m := NewMinter("bridge")
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				id := m.Next()
				var s string
				if err := json.Unmarshal(id, &s); err != nil || !strings.HasPrefix(s, "skills-sidecar-bridge-") {
					t.Errorf("id %s: not a string naming the carrier (%v)", id, err)
				}
				mu.Lock()
				if seen[string(id)] {
					t.Errorf("id %s minted twice", id)
				}
				seen[string(id)] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if a, b := NewMinter("x").Next(), NewMinter("x").Next(); string(a) == string(b) {
		t.Errorf("two minters of one name both minted %s", a)
	}
}

// TestCancelled: the notification names the id as given and carries the
// reason as a JSON string, whatever it holds.
func TestCancelled(t *testing.T) {
	for _, c := range []struct {
		id     string
		reason string
	}{
		{`"skills-sidecar-bridge-1"`, "the client closed its stream"},
		{`7`, `quote " backslash \ newline` + "\n" + `tab` + "\t"},
	} {
		b := Cancelled(json.RawMessage(c.id), c.reason)
		checkCancelled(t, b, c.id, c.reason)
	}
}

func checkCancelled(t *testing.T, b []byte, id, reason string) {
	t.Helper()
	m, err := rewrite.ParseMessage(b)
	if err != nil || m.Kind != rewrite.KindNotification || m.Method != "notifications/cancelled" {
		t.Fatalf("%s: not a notifications/cancelled (%v)", b, err)
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || !sameJSON(p.RequestID, []byte(id)) || p.Reason != reason {
		t.Errorf("%s: requestId %s reason %q, want %s %q (%v)", b, p.RequestID, p.Reason, id, reason, err)
	}
}

// FuzzCancelled: any reason, and any id a minter or a caller's request
// holds (a JSON string or number), makes one valid notification naming it.
func FuzzCancelled(f *testing.F) {
	f.Add("skills-sidecar-stdio-1", "timed out", false)
	f.Add("", "\u2028\x00\"\\", true)
	f.Fuzz(func(t *testing.T, s, reason string, number bool) {
		id, _ := json.Marshal(s)
		if number {
			id = json.RawMessage("12")
		}
		b := Cancelled(id, reason)
		if !json.Valid(b) {
			t.Fatalf("invalid JSON: %q", b)
		}
		if utf8.ValidString(reason) { // an invalid one is carried with U+FFFD in place
			checkCancelled(t, b, string(id), reason)
		}
	})
}

// sameJSON reports whether a and b encode the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}
