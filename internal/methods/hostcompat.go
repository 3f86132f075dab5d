package methods

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/skills-sidecar/skills-sidecar/internal/wire"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/onbehalf"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// HostCompat configures the prompts and tools the sidecar adds for hosts
// that do not speak the Skills extension. The zero value adds nothing, and
// then no request or reply is treated differently.
type HostCompat struct {
	// Prompts adds one prompt per skill to prompts/list; prompts/get of
	// one returns its SKILL.md as an embedded resource and its other files
	// as resource links.
	Prompts bool
	// Tools adds two tools to tools/list: Prefix+"load" (a skill by path:
	// its SKILL.md and file list) and Prefix+"read" (one skill file).
	Tools bool
	// Prefix starts every name; "" means DefaultHostCompatPrefix.
	Prefix string
	// UpstreamPrompts names the upstream's prompts as the caller sees them
	// (UpstreamTools with List "prompts"); Options.Tools does the same for
	// tools. A name the upstream uses is its own: the sidecar's entry is
	// left out and a call of it forwarded. Nil checks only the page the
	// upstream returns (a prompts/get of the name is then the sidecar's).
	UpstreamPrompts ToolSource
	// OnCollision, when set, is told of each entry left out of a listing
	// because the upstream uses its name (kind "prompt" or "tool"). It
	// must not block.
	OnCollision func(kind, name string)
}

func (hc HostCompat) prefix() string {
	if hc.Prefix == "" {
		return DefaultHostCompatPrefix
	}
	return hc.Prefix
}

func (hc HostCompat) on() bool { return hc.Prompts || hc.Tools }

// cursorPrompts marks the pages of prompts/list past the upstream's last
// one, which the sidecar answers itself (as cursorResources does).
const cursorPrompts = "skills-sidecar/p1:"

// versionLinks is the first protocol version with resource_link content
// (2025-06-18); older clients get the links as text.
const versionLinks = "2025-06-18"

// takesLinks reports whether the caller understands resource_link content:
// a modern request, or a legacy one whose MCP-Protocol-Version header names
// 2025-06-18 or later. A legacy request without the header is 2025-03-26,
// as the transport spec tells servers to assume.
func takesLinks(h http.Header, e era) bool {
	return e.modern || h.Get(wire.HeaderProtocolVersion) >= versionLinks
}

// ownsCompat reports whether a prompts/get or tools/call names one of the
// sidecar's prompts or tools that the upstream does not use itself for this
// caller. The upstream's names are asked for only when the name is one of
// the sidecar's.
func (h *Handler) ownsCompat(r *http.Request, msg rewrite.Message, v *view) bool {
	if v.compat == nil {
		return false
	}
	raw, _ := rewrite.GetKey(msg.Params, []string{"name"})
	name, ours := v.compat.ownName(msg.Method, raw)
	var src ToolSource
	switch {
	case !ours:
		return false
	case msg.Method == "tools/call" && h.opts.HostCompat.Tools:
		src = h.opts.Tools
	case msg.Method == "prompts/get" && h.opts.HostCompat.Prompts:
		src = h.opts.HostCompat.UpstreamPrompts
	default:
		return false
	}
	if src == nil {
		return true
	}
	// An upstream that cannot list them (it refuses the caller, lacks the
	// method, cannot be reached) has no such name: the request is the
	// sidecar's, and the auth gate judges the caller as for skills/*.
	names, err := src.Tools(r, msg)
	_, theirs := names[name]
	return err != nil || !theirs
}

// editCompatList returns the edit that appends the sidecar's prompts or
// tools to the upstream's last page of prompts/list or tools/list; nil for
// any other request, or when host compatibility does not add that kind.
func (h *Handler) editCompatList(r *http.Request, msg rewrite.Message) func([]byte) []byte {
	hc := h.opts.HostCompat
	if !(msg.Method == "prompts/list" && hc.Prompts || msg.Method == "tools/list" && hc.Tools) {
		return nil
	}
	return h.compatEdit(r, msg)
}

// compatEdit is editCompatList's edit. The closure lives in a function of
// its own because a parameter a closure captures moves to the heap on
// entry, whether or not the closure is built: in editCompatList that would
// cost every forwarded request an allocation.
func (h *Handler) compatEdit(r *http.Request, msg rewrite.Message) func([]byte) []byte {
	v := h.current()
	e, _ := checkEra(r.Header, msg)
	return func(reply []byte) []byte { return h.appendCompat(r, msg, v, e, reply) }
}

func (h *Handler) appendCompat(r *http.Request, msg rewrite.Message, v *view, e era, reply []byte) []byte {
	kind := strings.TrimSuffix(msg.Method, "/list")
	m, err := rewrite.ParseMessage(reply)
	if err != nil {
		return reply
	}
	switch m.Kind {
	case rewrite.KindError:
		// An upstream without prompts or tools: the sidecar's are the
		// whole listing.
		if code, _ := rewrite.GetKey(m.Error, []string{"code"}); string(code) != "-32601" {
			return reply
		}
		res := h.compatPage(v, e, kind, false, "", nil)
		b := []byte(`{"jsonrpc":"2.0","id":`)
		b = append(b, m.ID...)
		b = append(b, `,"result":`...)
		return append(append(b, res...), '}')
	case rewrite.KindResponse:
	default:
		return reply
	}
	if nc, ok := rewrite.GetKey(m.Result, []string{"nextCursor"}); ok && string(nc) != "null" && string(nc) != `""` {
		return reply // not the upstream's last page yet
	}
	taken := pageNames(m.Result, kind)
	if c, _ := paramString(msg.Params, "cursor"); c != "" {
		// Earlier pages were the upstream's too: their names count.
		if names, err := h.upstreamNames(r, msg, kind); err == nil {
			for n := range names {
				taken[n] = true
			}
		}
	}
	keys, entries := v.compatList(kind)
	from, to, more := h.compatRange(kind, keys, false, "")
	kept := h.keep(kind, keys[from:to], entries[from:to], taken)
	out, err := rewrite.AppendToArray(reply, []string{"result", kind}, kept...)
	if err != nil {
		return reply
	}
	if more {
		c, _ := json.Marshal(makeCursor(cursorPrompts, keys[to-1]))
		if out, err = rewrite.SetKey(out, []string{"result", "nextCursor"}, c); err != nil {
			return reply
		}
	}
	if e.modern {
		out = h.mergeCache(out)
	}
	return out
}

// pageNames are the names of the entries of result[kind], read as the
// caller's client reads them: by the exact member name (not folded, as
// encoding/json matches a struct's fields), the last of duplicates
// counting. An entry without a string name takes none.
func pageNames(result json.RawMessage, kind string) map[string]bool {
	taken := map[string]bool{}
	raw, _ := rewrite.GetKey(result, []string{kind})
	var items []json.RawMessage
	_ = json.Unmarshal(raw, &items) // not an array: no names
	for _, it := range items {
		if name, ok := rewrite.GetString(it, "name"); ok {
			taken[name] = true
		}
	}
	return taken
}

// upstreamNames are the names of the upstream's prompts or tools for this
// caller (nil source: none known).
func (h *Handler) upstreamNames(r *http.Request, msg rewrite.Message, kind string) (map[string]json.RawMessage, error) {
	src := h.opts.Tools
	if kind == "prompts" {
		src = h.opts.HostCompat.UpstreamPrompts
	}
	if src == nil {
		return nil, nil
	}
	return src.Tools(r, msg)
}

// keep returns the entries whose names the upstream does not use, telling
// OnCollision of the others.
func (h *Handler) keep(kind string, names []string, entries []json.RawMessage, taken map[string]bool) []json.RawMessage {
	kept := make([]json.RawMessage, 0, len(entries))
	for i, n := range names {
		if taken[n] {
			if f := h.opts.HostCompat.OnCollision; f != nil {
				f(strings.TrimSuffix(kind, "s"), n)
			}
			continue
		}
		kept = append(kept, entries[i])
	}
	return kept
}

// compatList returns the sidecar's names and entries of kind.
func (v *view) compatList(kind string) ([]string, []json.RawMessage) {
	if kind == "prompts" {
		return v.compat.promptNames, v.compat.promptEntries
	}
	return []string{v.compat.loadName, v.compat.readName}, v.compat.toolEntries
}

// compatRange is the index range of the sidecar's entries of kind after
// last: a page of prompts, or both tools (never split: one page, and no
// cursor of the sidecar's for tools/list).
func (h *Handler) compatRange(kind string, keys []string, has bool, last string) (from, to int, more bool) {
	if kind == "tools" {
		return 0, len(keys), false
	}
	return page(keys, last, has, h.opts.PageSize)
}

// compatPage encodes a prompts/list or tools/list result of the sidecar's
// entries after last, leaving out the names in taken.
func (h *Handler) compatPage(v *view, e era, kind string, has bool, last string, taken map[string]bool) []byte {
	keys, entries := v.compatList(kind)
	from, to, more := h.compatRange(kind, keys, has, last)
	kept := h.keep(kind, keys[from:to], entries[from:to], taken)
	b := make([]byte, 0, 4096)
	b = append(b, `{"`...)
	b = append(b, kind...)
	b = append(b, `":[`...)
	for i, en := range kept {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, en...)
	}
	b = append(b, ']')
	if more {
		b = append(b, `,"nextCursor":`...)
		b = appendCursor(b, cursorPrompts, keys[to-1])
	}
	return h.close(b, e, true)
}

// close ends a result of a standard MCP method: legacy results as the
// method defines them, modern ones with finish's fields.
func (h *Handler) close(b []byte, e era, cacheable bool) []byte {
	if !e.modern {
		return append(b, '}')
	}
	return h.finish(b, e, cacheable)
}

// promptsListLocal answers a page of prompts/list past the upstream's
// last one (a cursor of the sidecar's).
func (h *Handler) promptsListLocal(v *view, e era, msg rewrite.Message, r *http.Request) ([]byte, error) {
	last, has, err := cursorParam(msg, cursorPrompts)
	if err != nil {
		return nil, err
	}
	names, uerr := h.upstreamNames(r, msg, "prompts")
	var refused *onbehalf.Refusal
	if errors.As(uerr, &refused) {
		return nil, uerr
	}
	taken := map[string]bool{}
	for n := range names {
		taken[n] = true
	}
	return h.compatPage(v, e, "prompts", has, last, taken), nil
}

// served returns f's entry of contents as a resources/read of f.URI
// serves it to this caller, byte for byte: read through the upstream when
// the upstream serves that URI itself, else the sidecar's own encoding of
// the snapshot's bytes (readResult's).
func (h *Handler) served(r *http.Request, msg rewrite.Message, v *view, f *catalog.File) (json.RawMessage, error) {
	var result []byte
	if h.upstreamServes(r, msg, v, f.URI) {
		m, err := h.opts.Overlay.Upstream().Call(r, msg, "resources/read", map[string]json.RawMessage{"uri": mustJSON(f.URI)})
		if err != nil {
			return nil, err
		}
		if m.Kind != rewrite.KindResponse {
			return nil, errors.New("the upstream could not read " + f.URI)
		}
		// The caller takes these bytes: the digests it is told next are
		// theirs, as after a forwarded read.
		if err := h.opts.Overlay.LearnRead(r, v.snap, f.URI, m.Result); err != nil {
			return nil, err
		}
		result = m.Result
	} else {
		var buf bytes.Buffer
		if err := h.readResult(v, era{}, f.URI, f).Encode(&buf); err != nil {
			return nil, err
		}
		result = buf.Bytes()
	}
	c, ok := upstreamfiles.ServedEntry(f.URI, result)
	if !ok {
		return nil, errors.New("no contents for " + f.URI)
	}
	return c, nil
}

// servedContents is served, also decoded.
func (h *Handler) servedContents(r *http.Request, msg rewrite.Message, v *view, f *catalog.File) (json.RawMessage, contents, error) {
	var c contents
	raw, err := h.served(r, msg, v, f)
	if err == nil {
		c, err = readContents(raw)
	}
	return raw, c, err
}

// readContents decodes a contents entry with its member names matched
// exactly, the last of duplicates counting, as a client reading the same
// resources/read result does (and the overlay hashing it, servedOf): not
// folded, as encoding/json matches a struct's fields, so a "Text" beside
// "text" is not the text. An entry that is not an object, or a mistyped
// member, is an error.
func readContents(raw json.RawMessage) (contents, error) {
	var c contents
	if !rewrite.IsObjectOrNull(raw) {
		return c, errors.New("a contents entry is not an object")
	}
	for _, m := range []struct {
		key string
		dst any
	}{{"uri", &c.URI}, {"mimeType", &c.MIMEType}, {"text", &c.Text}, {"blob", &c.Blob}} {
		if v, ok := rewrite.GetKey(raw, []string{m.key}); ok {
			if err := json.Unmarshal(v, m.dst); err != nil {
				return contents{}, fmt.Errorf("contents %s: %w", m.key, err)
			}
		}
	}
	return c, nil
}

// contents is a decoded entry of contents (readContents reads it).
type contents struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

// text returns the entry's bytes as text: its text, or its blob decoded
// when that is UTF-8.
func (c contents) text() (string, bool) {
	if c.Text != nil {
		return *c.Text, true
	}
	if c.Blob == nil {
		return "", false
	}
	b, err := base64.StdEncoding.DecodeString(*c.Blob)
	if err != nil || !utf8.Valid(b) {
		return "", false
	}
	return string(b), true
}

type contentItem struct {
	Type     string          `json:"type"`
	Text     string          `json:"text,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
	URI      string          `json:"uri,omitempty"`
	Name     string          `json:"name,omitempty"`
	MIMEType string          `json:"mimeType,omitempty"`
}

// MarshalJSON writes a text block's text even when it is "" (an empty
// file): the MCP schema requires TextContent's text, and the TypeScript
// SDK refuses a result whose text block lacks it.
func (c contentItem) MarshalJSON() ([]byte, error) {
	if c.Type != "text" {
		type plain contentItem
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{c.Type, c.Text})
}

type promptMessage struct {
	Role    string      `json:"role"`
	Content contentItem `json:"content"`
}

// promptGet answers prompts/get of one of the sidecar's prompts: the
// skill's SKILL.md as an embedded resource, then its other files as
// resource links (as one text for clients before 2025-06-18).
func (h *Handler) promptGet(v *view, e era, msg rewrite.Message, r *http.Request) ([]byte, error) {
	name, _ := paramString(msg.Params, "name")
	i := indexOf(v.compat.promptNames, name)
	if i < 0 {
		return nil, invalidParams("prompt not found: " + quote(name))
	}
	if a := v.compat.prompts[i].agent; a != nil {
		return h.agentPrompt(a, e), nil
	}
	sk := v.compat.prompts[i].skill
	f, _ := v.snap.File(sk.URI)
	c, err := h.served(r, msg, v, f)
	if err != nil {
		return nil, err
	}
	// Encoded by hand: the embedded resource keeps every byte of the
	// served entry (encoding/json would re-escape it).
	b := make([]byte, 0, len(c)+1024)
	b = append(b, '{')
	if sk.Description != "" {
		b = append(b, `"description":`...)
		b = rewrite.AppendString(b, sk.Description)
		b = append(b, ',')
	}
	b = append(b, `"messages":[{"role":"user","content":{"type":"resource","resource":`...)
	b = append(b, c...)
	b = append(b, `}}`...)
	for _, m := range fileRefs(sk, takesLinks(r.Header, e), v.compat.readName) {
		b = append(b, ',')
		b = append(b, mustJSON(m)...)
	}
	b = append(b, ']')
	return h.close(b, e, true), nil
}

// agentPrompt is prompts/get of an agent's prompt: one message, the
// agent's instructions as agents/get gives them. What tools it names stays
// agents/get's to resolve, against the upstream's own tools only.
func (h *Handler) agentPrompt(a *catalog.Agent, e era) []byte {
	out := struct {
		Description string          `json:"description,omitempty"`
		Messages    []promptMessage `json:"messages"`
	}{a.Description, []promptMessage{{Role: "user", Content: contentItem{Type: "text", Text: a.Instructions}}}}
	b := mustJSON(out)
	return h.close(b[:len(b)-1], e, true)
}

// fileRefs are a skill's files other than its SKILL.md as prompt messages:
// one resource link each, or, for a client that predates them, one text
// naming them all (with the tool that reads them, for hosts that read no
// resources).
func fileRefs(sk *catalog.Skill, links bool, readTool string) []promptMessage {
	var out []promptMessage
	var text strings.Builder
	for _, f := range sk.Files {
		if f.URI == sk.URI {
			continue
		}
		if links {
			out = append(out, promptMessage{Role: "user", Content: contentItem{Type: "resource_link", URI: f.URI, Name: path.Base(f.URI), MIMEType: f.MIMEType}})
			continue
		}
		text.WriteString("\n- " + f.URI)
	}
	if text.Len() > 0 {
		out = append(out, promptMessage{Role: "user", Content: contentItem{Type: "text",
			Text: "The skill's other files (read them as resources, or with the " + readTool + " tool):" + text.String()}})
	}
	return out
}

// toolCall answers tools/call of one of the sidecar's tools. A failure of
// the tool (an unknown skill or file, a read that failed) is a result with
// isError, as the spec has tools report them; a refusal of the caller by
// the upstream is the reply's error.
func (h *Handler) toolCall(v *view, e era, msg rewrite.Message, r *http.Request) ([]byte, error) {
	name, _ := paramString(msg.Params, "name")
	args, _ := rewrite.GetKey(msg.Params, []string{"arguments"})
	var res toolResult
	var err error
	if name == v.compat.loadName {
		res, err = h.loadSkill(v, e, msg, r, args)
	} else {
		res, err = h.readFile(v, msg, r, args)
	}
	var refused *onbehalf.Refusal
	if errors.As(err, &refused) {
		return nil, err
	}
	if err != nil {
		// A fixed text: the error may come from the upstream's
		// connection, whose addresses no reply may carry.
		res = toolFailed("the skill file could not be read: the upstream's reply failed or held no usable contents")
	}
	b := mustJSON(res)
	return h.close(b[:len(b)-1], e, false), nil
}

type toolResult struct {
	Content           []contentItem `json:"content"`
	StructuredContent any           `json:"structuredContent,omitempty"`
	IsError           bool          `json:"isError,omitempty"`
}

func toolFailed(text string) toolResult {
	return toolResult{Content: []contentItem{{Type: "text", Text: text}}, IsError: true}
}

type loaded struct {
	URI         string      `json:"uri"`
	Path        string      `json:"path"`
	Name        string      `json:"name,omitempty"`
	Description string      `json:"description,omitempty"`
	Text        string      `json:"text"`
	Files       []fileEntry `json:"files"`
}

type fileEntry struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
}

// loadSkill is the loading tool: the skill's SKILL.md as served, and its
// other files.
func (h *Handler) loadSkill(v *view, e era, msg rewrite.Message, r *http.Request, args json.RawMessage) (toolResult, error) {
	arg, ok := rewrite.GetString(args, "skill")
	if !ok {
		return toolFailed("arguments.skill (a string) is required"), nil
	}
	sk := v.compat.byArg[arg]
	if sk == nil {
		return toolFailed("no skill " + quote(arg) + ": load one of the paths this tool's description lists"), nil
	}
	f, _ := v.snap.File(sk.URI)
	_, c, err := h.servedContents(r, msg, v, f)
	if err != nil {
		return toolResult{}, err
	}
	text, ok := c.text()
	if !ok {
		return toolFailed(sk.URI + " is not text"), nil
	}
	out := loaded{URI: sk.URI, Path: sk.Path, Name: sk.Name, Description: sk.Description, Text: text, Files: []fileEntry{}}
	for _, f := range sk.Files {
		if f.URI != sk.URI {
			out.Files = append(out.Files, fileEntry{URI: f.URI, MIMEType: f.MIMEType})
		}
	}
	// The first block is the instructions themselves, for the model to
	// read; the file references follow as links or text. The same data is
	// the structured content.
	content := []contentItem{{Type: "text", Text: text}}
	for _, m := range fileRefs(sk, takesLinks(r.Header, e), v.compat.readName) {
		content = append(content, m.Content)
	}
	return toolResult{Content: content, StructuredContent: out}, nil
}

// readFile is the reading tool: one skill file as served.
func (h *Handler) readFile(v *view, msg rewrite.Message, r *http.Request, args json.RawMessage) (toolResult, error) {
	uri, ok := rewrite.GetString(args, "uri")
	if !ok {
		return toolFailed("arguments.uri (a string) is required"), nil
	}
	var f *catalog.File
	if v.snap != nil {
		f, ok = v.snap.File(uri)
	}
	if f == nil {
		return toolFailed("no skill file " + quote(uri) + ": read a URI the " + v.compat.loadName + " tool lists"), nil
	}
	raw, c, err := h.servedContents(r, msg, v, f)
	if err != nil {
		return toolResult{}, err
	}
	c.URI = uri
	item := contentItem{Type: "resource", Resource: raw}
	if c.Text != nil {
		item = contentItem{Type: "text", Text: *c.Text}
	}
	return toolResult{Content: []contentItem{item}, StructuredContent: c}, nil
}
