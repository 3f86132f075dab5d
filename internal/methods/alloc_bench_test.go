package methods_test

import (
	"net/http"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/methods"
)

// discardWriter is the least a ResponseWriter can cost: one header map,
// cleared between requests, and no body kept. With it the allocations a
// benchmark reports are the handler's own.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header  { return w.h }
func (w *discardWriter) WriteHeader(code int) { w.status = code }

// WriteString is there because net/http's own writer has it: without it,
// io.WriteString would allocate a copy the real server never makes.
func (w *discardWriter) WriteString(s string) (int, error) {
	w.Write(nil)
	w.n += len(s)
	return len(s), nil
}

func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

// BenchmarkServeLocalAllocs counts the allocations the sidecar's own
// answers cost per request, over 1,000 skills, without the HTTP server's
// (net/http's own, about 25 per request, come on top in a real server).
func BenchmarkServeLocalAllocs(b *testing.B) {
	snap := load1000(b)
	h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap }})
	uri := "skill://" + genName(7) + "/SKILL.md"
	calls := []struct {
		method string
		params map[string]any
	}{
		{"skills/list", nil},
		{"skills/get", map[string]any{"uri": uri}},
		{"resources/read", map[string]any{"uri": uri}},
	}
	for _, call := range calls {
		for _, modern := range []bool{false, true} {
			name := call.method + "/legacy"
			if modern {
				name = call.method + "/modern"
			}
			b.Run(name, func(b *testing.B) {
				req, msg := localRequest(b, modern, call.method, call.params)
				w := &discardWriter{h: http.Header{}}
				if !serveLocal(h, w, req, msg) || w.status != http.StatusOK {
					b.Fatalf("%s = %d, want an answer", call.method, w.status)
				}
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					w.status, w.n = 0, 0
					serveLocal(h, w, req, msg)
				}
			})
		}
	}
}

// BenchmarkHostCompatPassThrough is what host-compat adds to the requests
// it does not take, the common case: deciding that a tools/call of one of
// the upstream's tools is not the sidecar's, over 1,000 skills, with
// host-compat off and on. It must stay allocation free.
func BenchmarkHostCompatPassThrough(b *testing.B) {
	snap := load1000(b)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap },
				HostCompat: methods.HostCompat{Prompts: on, Tools: on}})
			req, msg := localRequest(b, false, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
			if _, ok := h.ServeLocal(req, msg); ok {
				b.Fatal("tools/call echo taken by the sidecar")
			}
			b.ReportAllocs()
			for b.Loop() {
				h.ServeLocal(req, msg)
			}
		})
	}
}

// TestHostCompatPassThroughAllocs pins what BenchmarkHostCompatPassThrough
// measures: a forwarded tools/call or prompts/get costs host-compat no
// allocation, escaped names aside. The proxy asks the handler three things
// about every request it forwards (ServeLocal, then EditReply and
// ObserveReply): none of them allocates for a request the sidecar neither
// answers, edits nor watches, with host-compat on or off.
func TestHostCompatPassThroughAllocs(t *testing.T) {
	snap := load1000(t)
	for _, on := range []bool{false, true} {
		h := methods.New(methods.Options{Snapshot: func() *catalog.Snapshot { return snap },
			HostCompat: methods.HostCompat{Prompts: on, Tools: on}})
		for _, method := range []string{"tools/call", "prompts/get"} {
			req, msg := localRequest(t, false, method, map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
			if n := testing.AllocsPerRun(100, func() { h.ServeLocal(req, msg) }); n != 0 {
				t.Errorf("host-compat %v, ServeLocal of %s of the upstream's name: %v allocations, want 0", on, method, n)
			}
			if e := h.EditReply(req, msg); e != nil {
				t.Errorf("host-compat %v: an edit of the reply to %s of the upstream's name", on, method)
			}
			if n := testing.AllocsPerRun(100, func() { h.EditReply(req, msg) }); n != 0 {
				t.Errorf("host-compat %v, EditReply of %s: %v allocations, want 0", on, method, n)
			}
			if n := testing.AllocsPerRun(100, func() { h.ObserveReply(req, msg) }); n != 0 {
				t.Errorf("host-compat %v, ObserveReply of %s: %v allocations, want 0", on, method, n)
			}
		}
	}
}
