package bridge

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
)

// readUntilReply reads a reply body up to its JSON-RPC response: all of a
// JSON body (at most limit bytes), or the events of an SSE body up to and
// including the one that carries a response, so a stream the server keeps
// open after it is not waited on.
func readUntilReply(resp *http.Response, limit int) ([]byte, error) {
	mt, _ := wire.MediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
		if len(b) > limit {
			return nil, errTooLarge
		}
		return b, err
	}
	var out bytes.Buffer
	r := rewrite.NewReader(resp.Body, limit)
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out.Bytes(), nil
			}
			return nil, err
		}
		if out.Len()+len(ev.Raw) > limit {
			return nil, errTooLarge
		}
		out.Write(ev.Raw)
		if out.Len() > 0 && out.Bytes()[out.Len()-1] != '\n' {
			out.WriteString("\n\n")
		}
		if m, perr := rewrite.ParseMessage(ev.Data); perr == nil && (m.Kind == rewrite.KindResponse || m.Kind == rewrite.KindError) {
			return out.Bytes(), nil
		}
	}
}

var errTooLarge = errors.New("bridge: upstream reply too large")
