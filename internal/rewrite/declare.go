package rewrite

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Extension identifiers the sidecar declares (SEP-2133 reverse-domain ids).
const (
	SkillsExtensionID = "io.modelcontextprotocol/skills" // SEP-2640
	AgentsExtensionID = "io.modelcontextprotocol/agents" // agents WG draft
)

// ErrBadDeclaration reports a Declaration that cannot be spliced: an empty
// extension id or settings that are not a JSON object.
var ErrBadDeclaration = errors.New("rewrite: bad declaration")

// Extension is one entry of capabilities.extensions (SEP-2133): an
// identifier and its settings object, inline. Nil Settings means {}
// ("supported, no settings").
type Extension struct {
	ID       string
	Settings json.RawMessage
}

// Declaration is what SpliceDeclaration adds to a handshake result. The
// zero Declaration adds nothing.
type Declaration struct {
	// Extensions go into result.capabilities.extensions, in this order.
	Extensions []Extension
	// AddResources adds "resources": {} to capabilities when it has no
	// "resources" key: a skills server MUST declare resources (SEP-2640).
	AddResources bool
	// ResourcesListChanged sets "listChanged": true in the resources
	// capability (the one AddResources adds, or the upstream's own object):
	// the sidecar sends notifications/resources/list_changed itself when
	// its skills change (package notify).
	ResourcesListChanged bool
	// Prompts and Tools declare those capabilities with listChanged: true
	// (added when the upstream lacks them, the flag set in its own object
	// otherwise): the sidecar appends prompts or tools of its own and
	// sends their list_changed itself (host compatibility).
	Prompts, Tools bool
}

// SkillsSidecar returns the sidecar's declaration (docs/protocol.md §2): skills
// with directoryRead, agents with listChanged (the sidecar sends
// notifications/agents/list_changed when the roster changes), and resources
// with listChanged.
//
// The upstream's own resources capability gets listChanged: true too when
// it lacks it. SEP-2640 tells hosts to watch
// notifications/resources/list_changed for skill changes, and the skill
// entries in resources/list are the sidecar's, which it does announce;
// without the flag a go-sdk client never asks for the notification on the
// modern wire. What the upstream's own resources do is unchanged: the
// sidecar relays the upstream's notifications, and sends none for them.
func SkillsSidecar() Declaration {
	return Declaration{
		Extensions: []Extension{
			{ID: SkillsExtensionID, Settings: json.RawMessage(`{"directoryRead":true}`)},
			{ID: AgentsExtensionID, Settings: json.RawMessage(`{"listChanged":true}`)},
		},
		AddResources:         true,
		ResourcesListChanged: true,
	}
}

// Validate returns an error wrapping ErrBadDeclaration when an extension has
// an empty id or settings that are not one JSON object.
func (d Declaration) Validate() error {
	for _, ext := range d.Extensions {
		if ext.ID == "" {
			return fmt.Errorf("declaration: empty extension id: %w", ErrBadDeclaration)
		}
		if s := ext.Settings; s != nil && (!valid(s) || trimWS(s)[0] != '{') {
			return fmt.Errorf("declaration: extension %q: settings are not a JSON object: %w", ext.ID, ErrBadDeclaration)
		}
	}
	return nil
}

func (d Declaration) empty() bool {
	return len(d.Extensions) == 0 && !d.AddResources && !d.ResourcesListChanged && !d.Prompts && !d.Tools
}

// apply edits the capabilities object caps. Settings of an extension the
// upstream already declares REPLACE the upstream's value in place: the
// sidecar answers that extension's methods itself, so its settings are the
// ones that describe what the client will get.
func (d Declaration) apply(caps []byte) ([]byte, error) {
	out := caps
	if v, ok := GetKey(out, []string{"extensions"}); ok && len(d.Extensions) > 0 && IsNull(v) {
		var err error
		if out, err = setKey(out, []string{"extensions"}, []byte("{}")); err != nil {
			return nil, err
		}
	}
	for _, ext := range d.Extensions {
		settings := []byte("{}")
		if ext.Settings != nil {
			settings = trimWS(ext.Settings)
		}
		var err error
		if out, err = setKey(out, []string{"extensions", ext.ID}, settings); err != nil {
			return nil, err
		}
	}
	out, err := capability(out, "resources", d.AddResources, d.ResourcesListChanged)
	if err != nil {
		return nil, err
	}
	if out, err = capability(out, "prompts", d.Prompts, d.Prompts); err != nil {
		return nil, err
	}
	return capability(out, "tools", d.Tools, d.Tools)
}

// capability declares the capability key in caps: added ({} or, with
// listChanged, {"listChanged":true}) when absent or null and add is set
// (a null is replaced in place), and listChanged set in an object already
// there when listChanged is.
func capability(caps []byte, key string, add, listChanged bool) ([]byte, error) {
	start, end, has := lookup(caps, []string{key})
	has = has && !IsNull(caps[start:end])
	switch {
	case !has && add && listChanged:
		return setKey(caps, []string{key}, []byte(`{"listChanged":true}`))
	case !has && add:
		return setKey(caps, []string{key}, []byte("{}"))
	case has && listChanged && caps[start] == '{':
		if v, ok := GetKey(caps, []string{key, "listChanged"}); ok && string(v) == "true" {
			return caps, nil // already so: not a byte changes
		}
		return setKey(caps, []string{key, "listChanged"}, []byte("true"))
	}
	return caps, nil
}

// handshake is what inspect learns about a message.
type handshake struct {
	result, caps          member
	hasCaps               bool
	hasProto, hasVersions bool
}

// capsObject reports whether capabilities is present and an object.
func (h handshake) capsObject(msg []byte) bool {
	return h.hasCaps && msg[h.caps.valStart] == '{'
}

// inspect reports whether msg is a response (result, no error, no method)
// with an object result, and what that result holds. It does not validate.
func inspect(msg []byte) (h handshake, ok bool) {
	it := newObjIter(msg, skipWS(msg, 0))
	hasResult := false
	for m, more := it.next(); more; m, more = it.next() {
		switch {
		case keyIs(msg, m, "result"):
			h.result, hasResult = m, true
		case keyIs(msg, m, "error"), keyIs(msg, m, "method"):
			return h, false
		}
	}
	if it.err != nil || !hasResult || msg[h.result.valStart] != '{' {
		return h, false
	}
	it = newObjIter(msg, h.result.valStart)
	for m, more := it.next(); more; m, more = it.next() {
		switch {
		case keyIs(msg, m, "capabilities"):
			h.caps, h.hasCaps = m, true
		case keyIs(msg, m, "protocolVersion"):
			h.hasProto = true
		case keyIs(msg, m, "supportedVersions"):
			h.hasVersions = true
		}
	}
	return h, it.err == nil
}

// LooksLikeHandshakeResult reports whether msg is a response whose result
// has "capabilities" (an object) and "protocolVersion" (an initialize
// result) or "supportedVersions" (a server/discover result). It serves
// streams where the request is unknown, such as an initialize reply
// replayed on a GET stream after Last-Event-ID. It does not validate msg.
func LooksLikeHandshakeResult(msg []byte) bool {
	h, ok := inspect(msg)
	return ok && h.capsObject(msg) && (h.hasProto || h.hasVersions)
}

// SpliceDeclaration adds the declaration d to msg, one JSON-RPC response
// whose result is an initialize or server/discover result. The extensions
// go into result.capabilities.extensions, creating "extensions" and
// "capabilities" when absent, and "resources": {} is added when d asks for
// it and capabilities has no "resources". New keys go at the end of their
// object; an extension the upstream already declares has its settings
// replaced in place by d's (the sidecar serves that extension, so d's
// settings are the truth). Every other byte of msg is kept.
//
// A capabilities, extensions or capability given as null is taken as
// absent, as clients read it, and replaced in place. A message that is not
// such a response (an error response, a request, a result without
// capabilities, protocolVersion or supportedVersions, or with capabilities
// or extensions that are neither objects nor null) comes back unchanged
// with changed false and no error. Splicing is idempotent.
// Errors: ErrParse when msg is not JSON, ErrBadDeclaration for a bad d; msg
// is returned unchanged with them.
func SpliceDeclaration(msg []byte, d Declaration) (out []byte, changed bool, err error) {
	if err := d.Validate(); err != nil {
		return msg, false, fmt.Errorf("splice declaration: %w", err)
	}
	if !valid(msg) {
		return msg, false, fmt.Errorf("splice declaration: %w", ErrParse)
	}
	return spliceValid(msg, d)
}

// spliceValid is SpliceDeclaration on valid JSON and a valid declaration.
func spliceValid(msg []byte, d Declaration) ([]byte, bool, error) {
	h, ok := inspect(msg)
	if !ok || d.empty() || !(h.hasCaps || h.hasProto || h.hasVersions) {
		return msg, false, nil
	}
	if !h.hasCaps || IsNull(msg[h.caps.valStart:h.caps.valEnd]) {
		caps, err := d.apply([]byte("{}"))
		if err != nil {
			return msg, false, fmt.Errorf("splice declaration: %w", err)
		}
		res := msg[h.result.valStart:h.result.valEnd]
		res, err = setKey(res, []string{"capabilities"}, caps)
		if err != nil {
			return msg, false, fmt.Errorf("splice declaration: %w", err)
		}
		return replaceSpan(msg, h.result.valStart, h.result.valEnd, res), true, nil
	}
	if !h.capsObject(msg) {
		return msg, false, nil
	}
	old := msg[h.caps.valStart:h.caps.valEnd]
	caps, err := d.apply(old)
	if errors.Is(err, ErrNotObject) { // "extensions" is not an object
		return msg, false, nil
	}
	if err != nil {
		return msg, false, fmt.Errorf("splice declaration: %w", err)
	}
	if bytes.Equal(caps, old) {
		return msg, false, nil
	}
	return replaceSpan(msg, h.caps.valStart, h.caps.valEnd, caps), true, nil
}

// SpliceBatch splices d into the handshake responses of body, a JSON array
// of responses (a 2025-03-26 batch reply); a single object body is handled
// as a one-element batch. isHandshake gets each element's raw id and says
// whether that id belongs to an initialize or server/discover request; nil
// means "judge by LooksLikeHandshakeResult". Elements that are not spliced
// keep every byte, as do the array's own separators and whitespace. Errors
// are SpliceDeclaration's; body comes back unchanged with them.
func SpliceBatch(body []byte, isHandshake func(id json.RawMessage) bool, d Declaration) ([]byte, bool, error) {
	if err := d.Validate(); err != nil {
		return body, false, fmt.Errorf("splice batch: %w", err)
	}
	if !valid(body) {
		return body, false, fmt.Errorf("splice batch: %w", ErrParse)
	}
	var out []byte
	prev := 0
	for _, span := range elements(body) {
		elem := body[span[0]:span[1]]
		if !wantSplice(elem, isHandshake) {
			continue
		}
		spliced, changed, err := spliceValid(elem, d)
		if err != nil {
			return body, false, fmt.Errorf("splice batch: %w", err)
		}
		if changed {
			out = append(out, body[prev:span[0]]...)
			out = append(out, spliced...)
			prev = span[1]
		}
	}
	if out == nil {
		return body, false, nil
	}
	return append(out, body[prev:]...), true, nil
}

// wantSplice decides whether a batch element is a handshake response.
func wantSplice(elem []byte, isHandshake func(id json.RawMessage) bool) bool {
	if isHandshake == nil {
		return LooksLikeHandshakeResult(elem)
	}
	if elem[0] != '{' {
		return false
	}
	id, ok := GetKey(elem, []string{"id"})
	return ok && isHandshake(id)
}

// elements returns the spans of the elements of the valid JSON array b, or
// of b's one value when it is not an array.
func elements(b []byte) [][2]int {
	i := skipWS(b, 0)
	if b[i] != '[' {
		end, _ := skipValue(b, i) // b is valid
		return [][2]int{{i, end}}
	}
	var spans [][2]int
	for i = skipWS(b, i+1); b[i] != ']'; {
		end, err := skipValue(b, i)
		if err != nil {
			return spans
		}
		spans = append(spans, [2]int{i, end})
		if i = skipWS(b, end); b[i] == ',' {
			i = skipWS(b, i+1)
		}
	}
	return spans
}
