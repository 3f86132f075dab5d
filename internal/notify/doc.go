// Package notify owns the notifications the sidecar sends on its own behalf
// when the plugin folder changes: notifications/resources/list_changed and
// notifications/agents/list_changed when a reload changed what the skills
// or agents methods answer (with host compatibility also
// notifications/prompts/list_changed and notifications/tools/list_changed
// when the skills change), and notifications/resources/updated for the
// skill files a session subscribed to. It keeps the registry of open
// streams (a legacy session's standalone GET stream, a modern
// subscriptions/listen stream) and of the legacy sessions' subscriptions to
// the skill URIs the sidecar serves itself, and it interleaves its messages
// with the upstream's bytes on each stream at an SSE event boundary, never
// inside an event.
//
// Invariants:
//   - Publish never blocks: it marks what each stream has pending and
//     starts a short-lived writer for a stream that has none running. A
//     stream whose client reads slowly coalesces: a list_changed still
//     pending is not queued twice (one re-list answers both), and the
//     resources/updated URIs pending per stream are bounded
//     (MaxPendingURIs); past that the stream gets list_changed instead,
//     which makes the client re-read everything. Nothing waits for a slow
//     client but that client's own stream.
//   - An event the sidecar inserts has no id: line. Per the SSE processing
//     model (WHATWG HTML §9.2.6) an event without an id field leaves the
//     client's last event ID as the upstream last set it, so a client that
//     reconnects sends Last-Event-ID of an upstream event and the upstream
//     replays from there. The sidecar's own notifications are not replayed;
//     a client that reconnects re-lists, as the MCP resumption rules leave
//     it to do, so what it missed while away is not lost.
//   - Modern streams carry _meta["io.modelcontextprotocol/subscriptionId"]
//     (the listen request's raw id) and get nothing before the stream's
//     notifications/subscriptions/acknowledged has been written (2026-07-28
//     basic/patterns/subscriptions).
//   - Every registry is bounded (Options); a stream past the bound is not
//     registered and relays the upstream untouched.
//   - The subscriptions of all sessions and the streams are tables callers
//     share (package caller, notify_subscriptions and notify_streams): one
//     caller holds at most its share of each. A subscriber at its share
//     makes room from its own idle sessions only, else gets a
//     *caller.Refusal; a stream past its caller's share relays the
//     upstream untouched. A session with a stream open never loses its
//     subscriptions.
//
// It must not: log, touch the network or metrics (it reports what it sent
// and coalesced through Options.Count, and its tables count their
// refusals through the caller.Table they are), or hold a lock while it
// writes to a client, except the one stream lock that orders that stream's
// own writes.
package notify
