package methods

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/skills-sidecar/skills-sidecar/internal/caller"
	"github.com/skills-sidecar/skills-sidecar/internal/notify"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// Subscriptions records legacy sessions' subscriptions to the sidecar's own
// skill URIs; *notify.Hub implements it.
type Subscriptions interface {
	// Subscribe records that session sid subscribed to uri for caller
	// who; an error means a bound was reached and nothing was recorded
	// (notify.ErrURITooLong: the URI's own length; a *caller.Refusal: who
	// holds its share of the subscriptions).
	Subscribe(sid, uri string, who caller.ID) error
	// Unsubscribe forgets one subscription; an unknown one is no error.
	Unsubscribe(sid, uri string)
}

// ownsSubscription reports whether a resources/subscribe or
// resources/unsubscribe is the sidecar's to answer: a legacy request
// (2025-11-25 basic/resources; the modern wire subscribes through
// subscriptions/listen) for a skill:// URI while the sidecar serves skills,
// with a hub to record it in. A URI the catalog does not hold yet is
// accepted: a skill file that appears is a change of it, and catalog.Diff
// reports it. Everything else goes to the upstream, which sends its own
// notifications/resources/updated.
func (h *Handler) ownsSubscription(r *http.Request, msg rewrite.Message, v *view, uri string) bool {
	if h.opts.Subscriptions == nil || !h.ownsURI(v, uri) {
		return false
	}
	e, _ := checkEra(r.Header, msg)
	return !e.modern
}

// subscribe answers resources/subscribe or resources/unsubscribe of a skill
// URI for the caller's session: the empty result of the spec, or an error
// when there is no session to send the notifications to or the session is
// past the hub's bounds.
func (h *Handler) subscribe(msg rewrite.Message, r *http.Request, uri string) ([]byte, error) {
	sid := r.Header.Get("Mcp-Session-Id")
	if sid == "" {
		// A sessionless (stateless) legacy server has no standalone GET
		// stream to carry notifications on: saying yes would be a lie.
		return nil, &reply.Error{Status: http.StatusOK, Code: reply.CodeInvalidRequest,
			Message: msg.Method + " needs a session (Mcp-Session-Id): notifications/resources/updated goes to the session's GET stream"}
	}
	if msg.Method == "resources/unsubscribe" {
		h.opts.Subscriptions.Unsubscribe(sid, uri)
		return []byte("{}"), nil
	}
	var refused *caller.Refusal
	if err := h.opts.Subscriptions.Subscribe(sid, uri, h.opts.Callers.Of(r)); errors.Is(err, notify.ErrURITooLong) {
		return nil, &reply.Error{Status: http.StatusOK, Code: reply.CodeInvalidParams,
			Message: msg.Method + ": a subscribed URI is at most " + strconv.Itoa(notify.MaxSubscriptionURI) + " bytes"}
	} else if errors.As(err, &refused) {
		// As every bounded table refuses (docs/security.md): over the
		// caller's share 429 with Retry-After, caller_share_exhausted;
		// the table full, or the session past its own bound, 503
		// <table>_exhausted; the era bridge refuses a subscription on
		// its minted sessions so.
		return nil, refused.Reply()
	} else if err != nil {
		// The hub's only other error is a bound of its own
		// (notify.ErrLimit); its text names no secret.
		return nil, &reply.Error{Status: http.StatusOK, Code: reply.CodeInternalError, Message: err.Error() + ": " + quote(uri) + " not subscribed"}
	}
	return []byte("{}"), nil
}
