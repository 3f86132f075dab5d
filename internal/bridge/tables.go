package bridge

// The bridge's tables (package caller), each shared per caller: one
// caller holds at most its share of each, whatever credentials,
// capabilities or forwarded headers it varies. The names are the tables'
// data.table and metric label.
//
// The holder (2026-07-28 callers of a legacy-only upstream): every legacy
// session held (listen streams' included), the listen streams among them
// (at most half of the sessions, so that bridged calls always have room),
// and the calls waiting for a client's retry.
//
// The legacy front (legacy callers of a modern-only upstream): minted
// sessions holding state on this replica, their GET streams, their
// subscriptions, and the ids a DELETE revoked here. Its sessions and
// streams keep the names (and so the data.reason) of the holder's, which
// is never active at the same time.
const (
	tableSessions = "bridge_sessions"
	tableListens  = "bridge_listens"
	tablePending  = "bridge_pending"

	tableFrontSessions      = tableSessions
	tableFrontStreams       = "bridge_streams"
	tableFrontSubscriptions = "bridge_subscriptions"
	tableFrontRevocations   = "bridge_revocations"

	// The bounds of one minted session's own (its GET streams, its
	// subscriptions): no caller shares them, so a refusal is a full
	// table's (caller.SessionBound), counted under these names.
	tableFrontSessionStreams       = "bridge_session_streams"
	tableFrontSessionSubscriptions = "bridge_session_subscriptions"
)
