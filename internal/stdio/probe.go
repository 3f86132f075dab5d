package stdio

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// The probe's requests: a 2026-07-28 server/discover, and a legacy
// initialize for a server that does not answer it.
const (
	probeDiscover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + wire.ModernVersion + `","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"skills-sidecar-stdio-probe","version":"1"}}}}`
	probeInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"skills-sidecar-stdio-probe","version":"1"}}}`
)

// DefaultProbe is how long one probe process is given to answer.
const DefaultProbe = 30 * time.Second

// probe learns once whether the server serves 2026-07-28 requests
// statelessly (it answers server/discover), each question in a process of
// its own that is then ended, retrying with backoff (one probe at a time,
// 800 ms doubling to 30 s between them) until a process answers or ctx
// ends. Until then the era is unknown: requests without a session wait
// for it. A process that answered its handshake makes the Transport ready.
func (t *Transport) probe(ctx context.Context) {
	for n := 1; ; n++ {
		modern, answered := t.ask(ctx, probeDiscover)
		if !modern && answered {
			_, answered = t.ask(ctx, probeInitialize)
		}
		if answered {
			t.modern = modern
			t.ready.Store(true)
			close(t.probed)
			t.Logger.Info("stdio upstream probed", zap.Bool("serves 2026-07-28", modern))
			return
		}
		t.Logger.Warn("stdio upstream did not answer its probe; retrying", zap.Strings("command", t.Command[:1]))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff(n + 3)):
		}
	}
}

// ask sends one request to a fresh process and reports whether the reply
// was a result and whether there was a reply at all. Only the server's
// own reply (a result or a JSON-RPC error) is an answer: a process that
// exited, or that sent none within the Probe wait, leaves the era
// unknown, and the probe asks again. The wait is its own, not
// RequestTimeout: a server may be slow to start (one that downloads
// itself first, a JVM), and the sidecar's timeout error is not the
// server's refusal of server/discover.
func (t *Transport) ask(ctx context.Context, request string) (result, answered bool) {
	p, err := t.spawn("probe", false)
	if err != nil {
		t.Logger.Warn("stdio upstream did not start", zap.Error(err))
		return false, false
	}
	defer p.end()
	msg, _ := rewrite.ParseMessage([]byte(request))
	c, err := p.start(msg, caller.ID{})
	if err != nil {
		return false, false
	}
	ctx, cancel := context.WithTimeout(ctx, t.Probe)
	defer cancel()
	defer c.msgs.close()
	for {
		select {
		case m := <-c.msgs.ch:
			c.msgs.sent(c.msgs.taken(m)) // read here, not handed on: out of the budget
		case m := <-c.final:
			c.msgs.sent(m)
			r, err := rewrite.ParseMessage(m)
			if err != nil {
				return false, false
			}
			if p.isDead() && r.Kind == rewrite.KindError {
				return false, false // the process exited: no answer
			}
			return r.Kind == rewrite.KindResponse, true
		case <-ctx.Done():
			if !p.forget(c) {
				// Answered as the wait ran out (or by the process's
				// end): that reply leaves the budget too.
				c.msgs.sent(<-c.final)
			}
			return false, false
		}
	}
}
