package inject

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// maxWatchEventBytes bounds one event of a watch stream: one object, as
// maxAPIBytes bounds one read, plus its envelope.
const maxWatchEventBytes = maxAPIBytes + 4096

// Watch event types (the API server's watch.EventType values).
const (
	watchAdded    = "ADDED"
	watchModified = "MODIFIED"
	watchDeleted  = "DELETED"
	watchBookmark = "BOOKMARK"
	watchError    = "ERROR"
)

// errWatchEvent marks a watch stream line that is not a watch event.
var errWatchEvent = errors.New("inject: not a watch event")

// parseWatchEvent reads one line of a JSON watch stream ({"type": ...,
// "object": ...}, one per line) and returns its type; for an ERROR event,
// whose object is a Status, it returns that status as an *APIError. It
// reads nothing else of the object: the injector only needs to know that
// something changed.
func parseWatchEvent(line []byte) (string, error) {
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"object"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return "", fmt.Errorf("%w: %v", errWatchEvent, err)
	}
	switch ev.Type {
	case watchAdded, watchModified, watchDeleted, watchBookmark:
		return ev.Type, nil
	case watchError:
		return ev.Type, &APIError{Code: ev.Object.Code, Message: ev.Object.Message}
	}
	return "", fmt.Errorf("%w: type %q", errWatchEvent, ev.Type)
}

// Watch watches the one object name in the collection at path (e.g.
// /api/v1/namespaces/NS/secrets) and calls changed for every event that
// adds, modifies or deletes it, until the API server ends the stream
// (after about timeout), ctx is done, or the stream breaks; it returns
// nil only for the end the API server chose. The stream starts with the
// object's current state (no resourceVersion: an ADDED event for it when it
// exists), so a caller that watches again after any return misses no
// change. RBAC: the verb watch on the object's name (the field selector
// metadata.name is what lets a rule with resourceNames allow it).
func (a *APIClient) Watch(ctx context.Context, path, name string, timeout time.Duration, changed func()) error {
	q := url.Values{
		"watch":               {"true"},
		"fieldSelector":       {"metadata.name=" + name},
		"timeoutSeconds":      {strconv.Itoa(int(timeout / time.Second))},
		"allowWatchBookmarks": {"false"},
	}
	// A hang guard beyond the API server's own timeout.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	req, err := a.newRequest(ctx, http.MethodGet, path+"?"+q.Encode(), "", nil)
	if err != nil {
		return err
	}
	// No client timeout: the stream lasts as long as the watch.
	client := &http.Client{Transport: a.Client.Transport}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("watch %s %s: %w", path, name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("watch %s %s: %w", path, name, readAPIError(resp))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxWatchEventBytes)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		typ, err := parseWatchEvent(sc.Bytes())
		if err != nil {
			return fmt.Errorf("watch %s %s: %w", path, name, err)
		}
		if typ != watchBookmark {
			changed()
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("watch %s %s: %w", path, name, err)
	}
	return nil
}
