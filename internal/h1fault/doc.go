// Package h1fault owns a judge of HTTP/1.1 servers, written from the text
// of RFC 9112 (message syntax) and RFC 9110 (semantics) rather than from
// any server's code: Cases lists faults a client can put on the wire
// (request smuggling, header limits, slowloris, pipelining, Expect:
// 100-continue, half-closed and vanished clients, keep-alive, response
// framing), each a function that dials a server over loopback, writes
// literal bytes and checks what comes back; Handler is the handler the
// server under test must serve for them; ReadResponse is the judge's own
// strict reader of what a server answers.
//
// It is a test peer only: nothing in the sidecar imports it. It must not
// judge with the code it judges: it reads the wire itself, and net/http
// appears in it only as the Handler interface it serves through (its
// tests also run net/http's server as the first server judged). Every
// wait in it is bounded and generous: a case fails on "never", not on
// "slow"; the cases marked Timeouts are the only ones that wait on the
// server's timeouts, and are meant to run against a server started with
// short ones while the rest run against one with long ones. Each case
// names the RFC section it checks (and, for RFC 9112 6.3, the item of its
// list) or, where the RFC leaves a choice, the net/http behaviour it holds
// a server to.
package h1fault
