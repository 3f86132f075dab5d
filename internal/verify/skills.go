package verify

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// unknownSkill is a SKILL.md URI no server should know.
const unknownSkill = "skill://skills-sidecar-verify/no-such-skill/SKILL.md"

func (v *verifier) verifySkills(ctx context.Context) {
	items, _ := v.listAll(ctx, listSpec{
		method: "skills/list", itemsKey: "skills", maxItems: v.opts.MaxSkills, cache: true,
		checks: &v.server, prefix: "skills.list",
		key: func(x any) string {
			m, _ := x.(map[string]any)
			s, _ := m["uri"].(string)
			return s
		},
	})
	for _, it := range items {
		if v.fatal != nil {
			return
		}
		v.rep.Skills = append(v.rep.Skills, v.verifySkill(ctx, it.raw))
	}
	if v.fatal != nil {
		return
	}
	_, err := v.call(ctx, "skills/get", map[string]any{"uri": unknownSkill})
	v.expectInvalidParams(&v.server, "skills.get.unknown", "skills/get of an unknown URI", err)
}

// expectInvalidParams records whether err is the -32602 the spec names.
func (v *verifier) expectInvalidParams(cs *checks, name, what string, err error) {
	var re *RPCError
	switch {
	case v.fatal != nil:
	case err == nil:
		cs.fail(name, "%s succeeded, want error -32602", what)
	case !errors.As(err, &re):
		cs.fail(name, "%s: %v, want error -32602", what, err)
	case re.Code != codeInvalidParams:
		cs.fail(name, "%s gave error %d, want -32602", what, re.Code)
	default:
		cs.ok(name, what+" gives -32602")
	}
}

func (v *verifier) verifySkill(ctx context.Context, raw json.RawMessage) *Item {
	var cs checks
	val, _ := decodeJSON(raw)
	e := checkEntry(val, v.opts.RequireDigests, &cs)
	if e == nil {
		id := string(raw)
		if m, ok := val.(map[string]any); ok {
			if s, ok := m["uri"].(string); ok {
				id = s
			}
		}
		return &Item{ID: truncate(id, 200), Checks: cs.list}
	}
	files := e.files
	if e.dynamic {
		files = []fileRef{{uri: e.uri, size: -1}}
	}
	for _, f := range files {
		v.readFile(ctx, e, f, &cs)
	}
	if _, ok := cs.status("frontmatter.match"); !ok {
		cs.fail("frontmatter.match", "SKILL.md was never read")
	}
	v.getSkill(ctx, e, &cs)
	if v.dirRead && !e.dynamic {
		v.checkDirectories(ctx, e, &cs)
	}
	return &Item{ID: e.uri, Checks: cs.list}
}

// readFile reads one listed file and checks size, then digest; SKILL.md is
// also checked for text/markdown and its frontmatter compared with the entry.
func (v *verifier) readFile(ctx context.Context, e *entry, f fileRef, cs *checks) {
	if f.size > v.opts.MaxBytes {
		cs.warn("files.read", "%s not read: listed size %d is over --max-bytes %d", f.uri, f.size, v.opts.MaxBytes)
		if f.uri == e.uri {
			cs.warn("frontmatter.match", "not checked: SKILL.md is over --max-bytes")
		}
		return
	}
	res, err := v.call(ctx, "resources/read", map[string]any{"uri": f.uri})
	if err != nil {
		cs.fail("files.read", "resources/read %s: %v", f.uri, err)
		return
	}
	content, data, err := decodeContent(res, f.uri)
	if err != nil {
		cs.fail("files.read", "resources/read %s: %v", f.uri, err)
		return
	}
	cs.ok("files.read", "every listed file read")
	if f.size >= 0 {
		if int64(len(data)) != f.size {
			cs.fail("files.size", "%s: served %d bytes, listed size %d", f.uri, len(data), f.size)
		} else {
			cs.ok("files.size", "every size matches the served bytes")
		}
	}
	if f.digest != "" && !e.dynamic {
		sum := sha256.Sum256(data)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != f.digest {
			cs.fail("files.digest", "%s: served bytes hash to %s, listed %s", f.uri, got, f.digest)
		} else {
			cs.ok("files.digest", "every digest matches the served bytes")
		}
	}
	if f.uri == e.uri {
		checkSkillMD(content, data, e, cs)
	}
}

// checkSkillMD checks the served SKILL.md: text, text/markdown, and a
// frontmatter equal field by field to the listed one.
func checkSkillMD(content *content, data []byte, e *entry, cs *checks) {
	if content.Text == nil {
		cs.fail("skillmd.text", "SKILL.md is served as blob, want text")
	} else if mt := content.MIMEType; mt != "text/markdown" {
		cs.fail("skillmd.text", "SKILL.md mimeType is %q, want text/markdown", mt)
	} else {
		cs.ok("skillmd.text", "text, text/markdown")
	}
	fm, err := parseFrontmatter(data)
	if err != nil {
		cs.fail("frontmatter.match", "served SKILL.md: %v", err)
		return
	}
	if d := diffJSON("frontmatter", fm, any(e.frontmatter)); d != "" {
		cs.fail("frontmatter.match", "listed frontmatter differs from the served SKILL.md: %s", d)
		return
	}
	cs.ok("frontmatter.match", "listed frontmatter equals the served SKILL.md field by field")
}

// content is one entry of a resources/read result.
type content struct {
	URI      string
	MIMEType string
	Text     *string
	Blob     *string
}

// decodeContent finds uri's content in a resources/read result and returns
// the bytes a client hashes: the UTF-8 of text, or the decoded blob. Member
// names are read exactly, as clients read them (members).
func decodeContent(res json.RawMessage, uri string) (*content, []byte, error) {
	var list []json.RawMessage
	if err := readFields(res, map[string]any{"contents": &list}); err != nil {
		return nil, nil, fmt.Errorf("result: %w: %w", ErrBadResponse, err)
	}
	if len(list) == 0 {
		return nil, nil, fmt.Errorf("contents is empty: %w", ErrBadResponse)
	}
	c := &content{}
	if err := readFields(list[0], map[string]any{"uri": &c.URI, "mimeType": &c.MIMEType, "text": &c.Text, "blob": &c.Blob}); err != nil {
		return nil, nil, fmt.Errorf("result: %w: %w", ErrBadResponse, err)
	}
	if c.URI != uri {
		return nil, nil, fmt.Errorf("contents[0].uri is %q: %w", c.URI, ErrBadResponse)
	}
	switch {
	case c.Text != nil && c.Blob != nil:
		return nil, nil, fmt.Errorf("content has both text and blob: %w", ErrBadResponse)
	case c.Text != nil:
		return c, []byte(*c.Text), nil
	case c.Blob != nil:
		b, err := base64.StdEncoding.DecodeString(*c.Blob)
		if err != nil {
			return nil, nil, fmt.Errorf("blob is not base64: %w", err)
		}
		return c, b, nil
	}
	return nil, nil, fmt.Errorf("content has neither text nor blob: %w", ErrBadResponse)
}

// getSkill checks that skills/get returns the listed entry.
func (v *verifier) getSkill(ctx context.Context, e *entry, cs *checks) {
	res, err := v.call(ctx, "skills/get", map[string]any{"uri": e.uri})
	if err != nil {
		cs.fail("skills.get", "skills/get: %v", err)
		return
	}
	var r map[string]json.RawMessage
	if err := json.Unmarshal(res, &r); err != nil || r["skill"] == nil {
		cs.fail("skills.get", "skills/get result has no skill object")
		return
	}
	got, err := decodeJSON(r["skill"])
	if err != nil {
		cs.fail("skills.get", "skills/get skill: %v", err)
		return
	}
	if d := diffJSON("skill", e.value, got); d != "" {
		cs.fail("skills.get", "skills/get differs from the listed entry: %s", d)
		return
	}
	if _, ok := r["nextCursor"]; ok {
		cs.fail("skills.get", "skills/get result carries nextCursor")
		return
	}
	if v.c.modern {
		if reason := cacheProblem(res); reason != "" {
			cs.fail("skills.get", "%s", reason)
			return
		}
	}
	cs.ok("skills.get", "equals the listed entry")
}

// checkDirectories checks resources/directory/read: the skill root and each
// subdirectory list exactly what the manifest implies, and a directory read
// of SKILL.md gives -32602.
func (v *verifier) checkDirectories(ctx context.Context, e *entry, cs *checks) {
	want := impliedTree(e)
	for _, dir := range slices.Sorted(maps.Keys(want)) {
		if v.fatal != nil {
			return
		}
		var dc checks
		items, complete := v.listAll(ctx, listSpec{
			method: "resources/directory/read", params: map[string]any{"uri": dir}, itemsKey: "resources",
			maxItems: maxSkillFiles * 4, checks: &dc, prefix: "directory",
			key: func(x any) string {
				m, _ := x.(map[string]any)
				s, _ := m["uri"].(string)
				return s
			},
		})
		for _, c := range dc.list {
			if c.Status == StatusFail || c.Status == StatusWarn {
				cs.add("directory.read", c.Status, "%s: %s", dir, c.Reason)
			}
		}
		if !complete {
			continue
		}
		if reason := compareDir(dir, want[dir], items); reason != "" {
			cs.fail("directory.read", "%s: %s", dir, reason)
		}
	}
	cs.ok("directory.read", fmt.Sprintf("%d directories list exactly the manifest's files", len(want)))
	_, err := v.call(ctx, "resources/directory/read", map[string]any{"uri": e.uri})
	v.expectInvalidParams(cs, "directory.file", "a directory read of SKILL.md", err)
}

// impliedTree maps each directory URI under the skill root to its children
// (URI -> is a directory), as the manifest implies them.
func impliedTree(e *entry) map[string]map[string]bool {
	tree := map[string]map[string]bool{e.root: {}}
	for _, f := range e.files {
		rel := strings.TrimPrefix(f.uri, e.root+"/")
		dir := e.root
		segs := strings.Split(rel, "/")
		for i, seg := range segs {
			child := dir + "/" + seg
			isDir := i < len(segs)-1
			if tree[dir] == nil {
				tree[dir] = map[string]bool{}
			}
			tree[dir][child] = isDir
			dir = child
		}
	}
	return tree
}

// compareDir compares one directory listing with the implied children.
func compareDir(dir string, want map[string]bool, items []listed) string {
	got := map[string]bool{}
	var problems []string
	for _, it := range items {
		var r struct{ URI, Name, MIMEType string }
		if err := readFields(it.raw, map[string]any{"uri": &r.URI, "name": &r.Name, "mimeType": &r.MIMEType}); err != nil {
			problems = append(problems, "an entry is not a resource object")
			continue
		}
		isDir := r.MIMEType == "inode/directory"
		got[r.URI] = isDir
		if r.Name != path.Base(r.URI) {
			problems = append(problems, fmt.Sprintf("%s has name %q, want its basename", r.URI, r.Name))
		}
		w, ok := want[r.URI]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("unexpected %s", r.URI))
		case w != isDir:
			problems = append(problems, fmt.Sprintf("%s: directory=%t, want %t", r.URI, isDir, w))
		}
	}
	for _, u := range slices.Sorted(maps.Keys(want)) {
		if _, ok := got[u]; !ok {
			problems = append(problems, "missing "+u)
		}
	}
	return truncate(strings.Join(problems, "; "), 1000)
}
