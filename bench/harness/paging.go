package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// maxPages bounds one paged listing, so a server that loops its cursors
// fails the request instead of hanging the worker.
const maxPages = 1000

// pagedWorker lists everything call returns, following nextCursor, as one
// sample: a client that wants all 1,000 skills pages through them, so a
// listing is compared whole whatever page size each server picks. The
// worker also counts pages and bytes of its last listing into *shape.
func pagedWorker(call Call, url string, shape *listingShape) func(context.Context, *http.Client) (Worker, error) {
	return func(_ context.Context, c *http.Client) (Worker, error) {
		var buf bytes.Buffer
		first := call.Body(Modern)
		do := func(ctx context.Context, rec func(time.Duration)) error {
			t0 := time.Now()
			body, pages, total := first, 0, 0
			for {
				hdr := call.Header(Modern, "")
				if _, err := post(ctx, c, url, hdr, body, &buf); err != nil {
					return err
				}
				pages++
				total += buf.Len()
				cursor, err := nextCursor(buf.Bytes())
				if err != nil {
					return err
				}
				if cursor == "" {
					break
				}
				if pages >= maxPages {
					return fmt.Errorf("%w: more than %d pages", errReply, maxPages)
				}
				next := call
				next.Params = `{"cursor":` + strconv.Quote(cursor) + `}`
				body = next.Body(Modern)
			}
			rec(time.Since(t0))
			if shape != nil {
				shape.set(pages, total)
			}
			return nil
		}
		return Worker{Do: do}, nil
	}
}

// listingShape records the size of one listing, for the row's note.
type listingShape struct{ pages, bytes int }

func (s *listingShape) set(pages, bytes int) { s.pages, s.bytes = pages, bytes }

// String describes the listing, e.g. "10 page(s), 312 KiB".
func (s *listingShape) String() string {
	return fmt.Sprintf("%d page(s), %.0f KiB", s.pages, float64(s.bytes)/1024)
}

// nextCursor returns result.nextCursor of a JSON-RPC reply sent as JSON or
// as SSE (the last data line holding a result), or "" when there is none.
func nextCursor(reply []byte) (string, error) {
	msg := bytes.TrimSpace(reply)
	if len(msg) == 0 || msg[0] != '{' {
		msg = nil
		for line := range bytes.Lines(reply) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok && bytes.Contains(d, []byte(`"result"`)) {
				msg = bytes.TrimSpace(d)
			}
		}
	}
	var r struct {
		Result struct {
			NextCursor string `json:"nextCursor"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return "", fmt.Errorf("%w: decode listing page: %w", errReply, err)
	}
	return r.Result.NextCursor, nil
}
