package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The loopback addresses of the attacker and of the caller who must still
// be served (127.0.0.0/8 is all loopback on Linux): with the gate off, a
// caller is its address.
const attackerIP, otherIP = "127.0.0.2", "127.0.0.3"

var (
	clientsMu sync.Mutex
	clients   = map[string]*http.Client{}
)

// from is the HTTP client whose connections come from ip.
func from(ip string) *http.Client {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	if c := clients[ip]; c != nil {
		return c
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 64}}
	clients[ip] = c
	return c
}

// closeClients closes every client's idle connections: the attacker, and
// the other caller, have gone.
func closeClients() {
	clientsMu.Lock()
	defer clientsMu.Unlock()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
}

func statusOK(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	return nil
}

// usage is what a process holds.
type usage struct {
	rssKB int
	fds   int
}

// sample reads the resident memory and the open descriptors of pid.
func sample(pid int) (usage, error) {
	var u usage
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			u.rssKB, _ = strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return u, err
	}
	u.fds = len(fds)
	return u, nil
}

// exchange is one request's outcome: its status, Retry-After, session id
// and the start of its body; open streams are kept on t until the
// attacker goes.
type exchange struct {
	status  int
	retry   string
	session string
	body    string
}

// send POSTs body (or GETs, when body is "") to t from ip with the headers
// h. With stream set, a 200 reply is kept open on t (a listen or GET
// stream the attacker holds); any other reply is read whole.
func send(ctx context.Context, t *target, ip, body string, h map[string]string, stream bool) (exchange, error) {
	method, rd := http.MethodPost, io.Reader(strings.NewReader(body))
	if body == "" {
		method, rd = http.MethodGet, nil
	}
	var cancel context.CancelFunc
	if stream {
		ctx, cancel = context.WithCancel(ctx)
	} else {
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url, rd)
	if err != nil {
		cancel()
		return exchange{}, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := from(ip).Do(req)
	if err != nil {
		cancel()
		return exchange{}, err
	}
	e := exchange{status: resp.StatusCode, retry: resp.Header.Get("Retry-After"), session: resp.Header.Get("Mcp-Session-Id")}
	if stream && resp.StatusCode == http.StatusOK {
		t.keep(closer(func() { cancel(); resp.Body.Close() }))
		return e, nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	cancel()
	e.body = string(b)
	return e, nil
}

type closer func()

func (c closer) Close() error { c(); return nil }

// modern is a 2026-07-28 request of method, whose _meta declares the
// client capability x<i> (a new capability set each time), with the
// headers the modern wire requires.
func modern(i int, method, params string) (string, map[string]string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",`+
		`"io.modelcontextprotocol/clientCapabilities":{"x%d":{}},"io.modelcontextprotocol/clientInfo":{"name":"attack","version":"1"}}}}`, i, method, params, i)
	return body, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
}

// tally counts statuses.
type tally map[int]int

func (c tally) String() string {
	var parts []string
	for _, s := range []int{200, 429, 503} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d×%d", c[s], s))
		}
	}
	for s, n := range c {
		if s != 200 && s != 429 && s != 503 {
			parts = append(parts, fmt.Sprintf("%d×%d", n, s))
		}
	}
	return strings.Join(parts, " ")
}

// refusedPastShare checks that an attack was served up to its share and
// refused (429) after it, and says how it went.
func refusedPastShare(t *target, what string, c tally, problems *[]string) {
	fmt.Fprintf(t.out, "  %-52s %s\n", what, c)
	if c[200] == 0 || c[429] == 0 || c[200]+c[429] != total(c) {
		*problems = append(*problems, fmt.Sprintf("%s: %s, want some served then 429 past the share", what, c))
	}
}

// refusedPastSessionBound checks that requests were served until one
// session's own bound and refused with 503 past it: a bound of a
// session's own is a full table of its own, not a caller's share
// (docs/security.md), so no 429.
func refusedPastSessionBound(t *target, what string, c tally, problems *[]string) {
	fmt.Fprintf(t.out, "  %-52s %s\n", what, c)
	if c[200] == 0 || c[503] == 0 || c[200]+c[503] != total(c) {
		*problems = append(*problems, fmt.Sprintf("%s: %s, want some served then 503 past the session's own bound", what, c))
	}
}

func total(c tally) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// served checks that the other caller got 200.
func served(t *target, what string, e exchange, err error, problems *[]string) {
	if err != nil || e.status != http.StatusOK {
		*problems = append(*problems, fmt.Sprintf("%s: %d %v %.200s, want 200", what, e.status, err, e.body))
		return
	}
	fmt.Fprintf(t.out, "  %-52s 200\n", what)
}

// forged are the X-Forwarded-For values the attacker cycles through: none
// of them comes from a trusted proxy, so none makes it another caller.
var forged = []string{"", "198.51.100.1", "198.51.100.2, 127.0.0.9", "203.0.113.7"}

// attackLegacyUpstream: in front of a legacy-only upstream, one address
// holds sessions with a new capability set each time (300, the table
// holds 256, its share 64), then listen streams (40, of 128, its share
// 32), with forged X-Forwarded-For.
func attackLegacyUpstream(ctx context.Context, t *target) []string {
	var problems []string
	sessions := tally{}
	for i := range 300 {
		body, h := modern(i, "tools/list", "")
		h["X-Forwarded-For"] = forged[i%len(forged)]
		e, err := send(ctx, t, attackerIP, body, h, false)
		if err != nil {
			problems = append(problems, "session "+strconv.Itoa(i)+": "+err.Error())
			break
		}
		sessions[e.status]++
	}
	// Past its share the attacker's own least recently used idle session
	// makes room (it is not refused while it has one): what is bounded is
	// what it holds.
	held := gauge(ctx, t, "skills_sidecar_bridge_sessions")
	fmt.Fprintf(t.out, "  %-52s %s, %d held\n", "held sessions, 300 capability sets", sessions, held)
	if held < 0 || held > 64 {
		problems = append(problems, fmt.Sprintf("held sessions: %d held after the attack, want at most its share, 64", held))
	}
	t.mark("sessions held")
	body, h := modern(1000, "tools/list", "")
	e, err := send(ctx, t, otherIP, body, h, false)
	served(t, "another address's tools/list", e, err, &problems)
	listens := tally{}
	for i := range 40 {
		body, h := modern(2000+i, "subscriptions/listen", `"notifications":{"toolsListChanged":true},`)
		h["X-Forwarded-For"] = forged[i%len(forged)]
		e, err := send(ctx, t, attackerIP, body, h, true)
		if err != nil {
			problems = append(problems, "listen "+strconv.Itoa(i)+": "+err.Error())
			break
		}
		listens[e.status]++
	}
	refusedPastShare(t, "listen streams, 40 kept open", listens, &problems)
	t.mark("listens open")
	body, h = modern(3000, "subscriptions/listen", `"notifications":{"toolsListChanged":true},`)
	e, err = send(ctx, t, otherIP, body, h, true)
	served(t, "another address's listen", e, err, &problems)
	return problems
}

// legacy is a 2025-11-25 request on session sid ("" for initialize).
func legacy(i int, method, params, sid string) (string, map[string]string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s}}`, i, method, params)
	h := map[string]string{}
	if sid != "" {
		h["Mcp-Session-Id"], h["Mcp-Protocol-Version"] = sid, "2025-11-25"
	}
	return body, h
}

// initialize mints a legacy session for ip.
func initialize(ctx context.Context, t *target, ip string, i int) (string, error) {
	body, h := legacy(i, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"attack","version":"1"}`, "")
	e, err := send(ctx, t, ip, body, h, false)
	if err != nil {
		return "", err
	}
	if e.status != http.StatusOK || e.session == "" {
		return "", fmt.Errorf("initialize: %d %.200s", e.status, e.body)
	}
	return e.session, nil
}

// attackModernUpstream: in front of a modern-only upstream, one address
// mints 10 legacy sessions, subscribes 300 URIs on one of them (a session
// holds 256, past which it is refused 503, a bound of its own) and 20 of
// 1 MiB (refused for their length), and opens 80 GET streams (8 a
// session; the table holds 256, its share 64).
func attackModernUpstream(ctx context.Context, t *target) []string {
	var problems []string
	var sids []string
	for i := range 10 {
		sid, err := initialize(ctx, t, attackerIP, i)
		if err != nil {
			return append(problems, err.Error())
		}
		sids = append(sids, sid)
	}
	subs, long := tally{}, tally{}
	huge := strings.Repeat("a", 1<<20)
	for i := range 300 {
		body, h := legacy(100+i, "resources/subscribe", fmt.Sprintf(`"uri":"demo://attack/%d"`, i), sids[0])
		e, err := send(ctx, t, attackerIP, body, h, false)
		if err != nil {
			return append(problems, "subscribe: "+err.Error())
		}
		subs[e.status]++
	}
	refusedPastSessionBound(t, "subscriptions, 300 URIs on one session", subs, &problems)
	t.mark("subscriptions held")
	for i := range 20 {
		body, h := legacy(500+i, "resources/subscribe", `"uri":"demo://`+huge+`"`, sids[i%len(sids)])
		e, err := send(ctx, t, attackerIP, body, h, false)
		if err != nil {
			return append(problems, "subscribe: "+err.Error())
		}
		if strings.Contains(e.body, "bridge_subscription_uri_too_long") {
			e.status = -2
		}
		long[e.status]++
	}
	fmt.Fprintf(t.out, "  %-52s %s\n", "subscriptions of 1 MiB URIs (-2: refused, too long)", long)
	if long[-2] != 20 {
		problems = append(problems, fmt.Sprintf("1 MiB subscriptions: %s, want all 20 refused as too long", long))
	}
	streams := tally{}
	for i := range 80 {
		_, h := legacy(0, "", "", sids[i%len(sids)])
		h["X-Forwarded-For"] = forged[i%len(forged)]
		e, err := send(ctx, t, attackerIP, "", h, true)
		if err != nil {
			return append(problems, "GET stream: "+err.Error())
		}
		streams[e.status]++
	}
	fmt.Fprintf(t.out, "  %-52s %s\n", "GET streams, 80 over 10 sessions", streams)
	if streams[200] == 0 || streams[200] > 64 {
		problems = append(problems, fmt.Sprintf("GET streams: %s, want at most the share (64) served", streams))
	}
	t.mark("GET streams open")
	sid, err := initialize(ctx, t, otherIP, 9000)
	if err != nil {
		return append(problems, "another address's initialize: "+err.Error())
	}
	body, h := legacy(9001, "resources/subscribe", `"uri":"demo://other"`, sid)
	e, err := send(ctx, t, otherIP, body, h, false)
	served(t, "another address's subscribe", e, err, &problems)
	_, h = legacy(0, "", "", sid)
	e, err = send(ctx, t, otherIP, "", h, true)
	served(t, "another address's GET stream", e, err, &problems)
	return problems
}

// gauge reads the value of a gauge without labels from the sidecar's
// metrics; -1 when it is not there.
func gauge(ctx context.Context, t *target, name string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.metrics+"/metrics", nil)
	if err != nil {
		return -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return int(f)
			}
		}
	}
	return -1
}
