package methods

import (
	"encoding/base64"
	"encoding/json"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// view is one snapshot with its listings encoded once. It is immutable and
// shared by every request that sees that snapshot.
type view struct {
	snap *catalog.Snapshot
	// skillURIs and skillEntries are in URI order: entries[i] is the
	// encoded SEP-2640 entry of the skill whose SKILL.md URI is skillURIs[i].
	skillURIs    []string
	skillEntries []json.RawMessage
	// resURIs and resEntries are the sidecar's resources/list entries (each
	// skill file once) in URI order.
	resURIs    []string
	resEntries []json.RawMessage
	// agentNames and agentCards are in name order.
	agentNames []string
	agentCards []json.RawMessage
	// compat is host compatibility's share; nil when it is off.
	compat *compatView
	// textLen caches the escaped length of text files read (see
	// encodedLen), by *catalog.File.
	textLen sync.Map
}

func newView(snap *catalog.Snapshot) *view {
	v := &view{snap: snap}
	if snap == nil {
		return v
	}
	seen := map[string]bool{}
	type res struct {
		uri string
		b   []byte
	}
	var all []res
	for _, sk := range snap.Skills() {
		v.skillURIs = append(v.skillURIs, sk.URI)
		v.skillEntries = append(v.skillEntries, encodeSkill(sk))
		for _, f := range sk.Files {
			if seen[f.URI] {
				continue
			}
			seen[f.URI] = true
			all = append(all, res{f.URI, encodeResource(snap, f)})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].uri < all[j].uri })
	for _, r := range all {
		v.resURIs = append(v.resURIs, r.uri)
		v.resEntries = append(v.resEntries, r.b)
	}
	for _, a := range snap.Agents() {
		v.agentNames = append(v.agentNames, a.Name)
		v.agentCards = append(v.agentCards, encodeCard(a))
	}
	return v
}

// skillEntry is the SEP-2640 entry shared by skills/list and skills/get.
type skillEntry struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   []fileRef       `json:"resources"`
}

type fileRef struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

func encodeSkill(sk *catalog.Skill) []byte {
	e := skillEntry{URI: sk.URI, Frontmatter: sk.Frontmatter, Resources: make([]fileRef, 0, len(sk.Files))}
	for _, f := range sk.Files {
		e.Resources = append(e.Resources, fileRef{URI: f.URI, Digest: f.Digest, Size: f.Size})
	}
	return mustJSON(e)
}

type resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Size        *int64 `json:"size,omitempty"`
}

// encodeResource describes a skill file for resources/list: a SKILL.md
// carries its skill's name and description (the conformance scenarios look
// for them); any other file is named by its path after the scheme.
func encodeResource(snap *catalog.Snapshot, f *catalog.File) []byte {
	return encodeResourceSized(snap, f, &f.Size)
}

func encodeDirEntry(e catalog.DirEntry) []byte {
	r := resource{URI: e.URI, Name: path.Base(e.Name), MIMEType: e.MIMEType}
	if !e.IsDir {
		r.Size = &e.Size
	}
	return mustJSON(r)
}

// encodeDirEntryUnsized is a file's directory entry with no size: one the
// upstream serves whose served size is not known (stated.go).
func encodeDirEntryUnsized(e catalog.DirEntry) []byte {
	return mustJSON(resource{URI: e.URI, Name: path.Base(e.Name), MIMEType: e.MIMEType})
}

type agentCard struct {
	Name         string   `json:"name"`
	Description  string   `json:"description,omitempty"`
	Capabilities []string `json:"capabilities"`
}

func encodeCard(a *catalog.Agent) []byte {
	caps := a.Capabilities
	if caps == nil {
		caps = []string{}
	}
	return mustJSON(agentCard{Name: a.Name, Description: a.Description, Capabilities: caps})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("methods: encode " + err.Error()) // only plain structs and valid RawMessages reach here
	}
	return b
}

// Cursors are opaque to clients: the base64url of the last key served with
// a prefix naming what they page. Keyed on the last key (not an offset), a
// cursor stays valid across catalog reloads: the next page starts after
// that key whatever was added or removed, so no entry repeats or splits.
const (
	cursorSkills    = "s1:"
	cursorAgents    = "a1:"
	cursorResources = "skills-sidecar/r1:"
	cursorDir       = "d2:" // keyed on a child's URI (d1: was its name)
)

func makeCursor(kind, lastKey string) string {
	return kind + base64.RawURLEncoding.EncodeToString([]byte(lastKey))
}

// appendCursor appends makeCursor(kind, lastKey) as a JSON string, with no
// string of its own: kinds and base64url need no escaping.
func appendCursor(b []byte, kind, lastKey string) []byte {
	b = append(b, '"')
	b = append(b, kind...)
	b = base64.RawURLEncoding.AppendEncode(b, []byte(lastKey))
	return append(b, '"')
}

// parseCursor returns the last key a cursor of this kind carries; ok is false
// for anything else.
func parseCursor(kind, c string) (string, bool) {
	rest, ok := strings.CutPrefix(c, kind)
	if !ok {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// page returns the index range of keys after lastKey, at most size long, and
// whether more follow.
func page(keys []string, lastKey string, hasCursor bool, size int) (from, to int, more bool) {
	if hasCursor {
		from = sort.SearchStrings(keys, lastKey)
		if from < len(keys) && keys[from] == lastKey {
			from++
		}
	}
	to = min(from+size, len(keys))
	return from, to, to < len(keys)
}
