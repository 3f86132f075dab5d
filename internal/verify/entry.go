package verify

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Limits of SEP-2640 and the Agent Skills specification.
const (
	maxSkillFiles     = 512
	maxSkillBytes     = 16 << 20
	maxNameLen        = 64
	maxDescriptionLen = 1024
	maxCompatLen      = 500
	reservedMetaKey   = "io.modelcontextprotocol/"
)

var (
	nameRule   = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	digestRule = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// entry is a skill entry as listed, after its shape was checked.
type entry struct {
	uri         string
	root        string // the SKILL.md URI minus "/SKILL.md"
	frontmatter map[string]any
	dynamic     bool
	files       []fileRef // the listed files inside the root, each once
	value       any       // the whole entry, for comparing skills/get
}

// fileRef is one listed file.
type fileRef struct {
	uri    string
	digest string
	size   int64
}

// checkEntry checks the shape, name, frontmatter fields and manifest of one
// listed skill entry. It is pure. A nil entry means the shape is too broken
// to go on.
func checkEntry(v any, requireDigests bool, cs *checks) *entry {
	obj, ok := v.(map[string]any)
	if !ok {
		cs.fail("entry.shape", "entry is %s, want an object", kind(v))
		return nil
	}
	uri, _ := obj["uri"].(string)
	root, path, err := skillRoot(uri)
	if err != nil {
		cs.fail("entry.shape", "uri: %v", err)
		return nil
	}
	fm, ok := obj["frontmatter"].(map[string]any)
	if !ok {
		cs.fail("entry.shape", "frontmatter is %s, want an object", kind(obj["frontmatter"]))
		return nil
	}
	e := &entry{uri: uri, root: root, frontmatter: fm, value: v}
	if !checkManifestShape(obj["resources"], e, cs) {
		return nil
	}
	cs.ok("entry.shape", "uri, frontmatter and resources well formed")
	checkName(fm, path, cs)
	checkFields(fm, cs)
	if e.dynamic {
		if requireDigests {
			cs.fail("resources.dynamic", "resources is \"dynamic\": no digests to verify (--require-digests)")
		} else {
			cs.warn("resources.dynamic", "resources is \"dynamic\": files cannot be verified")
		}
		return e
	}
	checkManifest(e, obj["resources"].([]any), cs)
	return e
}

// skillRoot splits a skill://<skill-path>/SKILL.md URI.
func skillRoot(uri string) (root, path string, err error) {
	const scheme, leaf = "skill://", "/SKILL.md"
	if !strings.HasPrefix(uri, scheme) || !strings.HasSuffix(uri, leaf) {
		return "", "", fmt.Errorf("%q is not skill://<skill-path>/SKILL.md", uri)
	}
	path = strings.TrimSuffix(strings.TrimPrefix(uri, scheme), leaf)
	if bad := badPath(path); bad != "" {
		return "", "", fmt.Errorf("skill path of %q: %s", uri, bad)
	}
	return strings.TrimSuffix(uri, leaf), path, nil
}

// badPath says what is wrong with a "/"-separated relative path, or "".
func badPath(p string) string {
	if p == "" {
		return "empty"
	}
	if strings.ContainsAny(p, "?#\\") {
		return "contains ?, # or \\"
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return "has an empty segment"
		case ".", "..":
			return "has a . or .. segment"
		}
	}
	return ""
}

// checkManifestShape checks that resources is "dynamic" or an array of
// {uri, digest, size} objects.
func checkManifestShape(r any, e *entry, cs *checks) bool {
	if s, ok := r.(string); ok {
		if s != "dynamic" {
			cs.fail("entry.shape", "resources is the string %q; the only string allowed is \"dynamic\"", s)
			return false
		}
		e.dynamic = true
		return true
	}
	list, ok := r.([]any)
	if !ok {
		cs.fail("entry.shape", "resources is %s, want an array or \"dynamic\"", kind(r))
		return false
	}
	for i, item := range list {
		obj, ok := item.(map[string]any)
		if !ok {
			cs.fail("entry.shape", "resources[%d] is %s, want an object", i, kind(item))
			return false
		}
		if _, ok := obj["uri"].(string); !ok {
			cs.fail("entry.shape", "resources[%d].uri is %s, want a string", i, kind(obj["uri"]))
			return false
		}
	}
	return true
}

func checkName(fm map[string]any, path string, cs *checks) {
	name, ok := fm["name"].(string)
	switch {
	case !ok:
		cs.fail("name.rule", "frontmatter.name is %s, want a string", kind(fm["name"]))
		return
	case utf8.RuneCountInString(name) > maxNameLen || !nameRule.MatchString(name):
		cs.fail("name.rule", "name %q breaks the name rule (1-64 of a-z, 0-9 and single inner hyphens)", truncate(name, 80))
	default:
		cs.ok("name.rule", "")
	}
	last := path[strings.LastIndexByte(path, '/')+1:]
	if last != name {
		cs.fail("name.segment", "final skill-path segment %q differs from frontmatter.name %q", last, truncate(name, 80))
	} else {
		cs.ok("name.segment", "")
	}
}

// checkFields applies the Agent Skills frontmatter rules other than name.
func checkFields(fm map[string]any, cs *checks) {
	cs.ok("frontmatter.fields", "")
	if d, ok := fm["description"].(string); !ok || strings.TrimSpace(d) == "" || utf8.RuneCountInString(d) > maxDescriptionLen {
		cs.fail("frontmatter.fields", "description must be a string of 1-%d characters", maxDescriptionLen)
	}
	if c, ok := fm["compatibility"]; ok {
		if s, isStr := c.(string); !isStr || utf8.RuneCountInString(s) > maxCompatLen {
			cs.fail("frontmatter.fields", "compatibility must be a string of at most %d characters", maxCompatLen)
		}
	}
	if l, ok := fm["license"]; ok {
		if _, isStr := l.(string); !isStr {
			cs.fail("frontmatter.fields", "license is %s, want a string", kind(l))
		}
	}
	m, ok := fm["metadata"]
	if !ok {
		return
	}
	meta, isObj := m.(map[string]any)
	if !isObj {
		cs.fail("frontmatter.fields", "metadata is %s, want a map of strings", kind(m))
		return
	}
	for _, k := range slices.Sorted(maps.Keys(meta)) {
		if _, isStr := meta[k].(string); !isStr {
			cs.fail("frontmatter.fields", "metadata.%s is %s, want a string", k, kind(meta[k]))
		}
		if strings.HasPrefix(k, reservedMetaKey) {
			cs.warn("metadata.reserved", "metadata key %q uses the reserved prefix %s", k, reservedMetaKey)
		}
	}
}

// checkManifest checks the listed files: complete (the SKILL.md self-entry,
// no duplicates), inside the root, digest and size well formed, limits.
func checkManifest(e *entry, list []any, cs *checks) {
	seen := map[string]bool{}
	var total int64
	cs.ok("resources.root", "")
	cs.ok("resources.digest", "")
	cs.ok("resources.size", "")
	for _, item := range list {
		obj := item.(map[string]any)
		ref := fileRef{uri: obj["uri"].(string)}
		if seen[ref.uri] {
			cs.fail("resources.complete", "%s is listed twice", ref.uri)
			continue
		}
		seen[ref.uri] = true
		rel, inRoot := strings.CutPrefix(ref.uri, e.root+"/")
		if !inRoot || badPath(rel) != "" {
			cs.fail("resources.root", "%s is outside the skill root %s", ref.uri, e.root)
			continue
		}
		ref.digest, _ = obj["digest"].(string)
		if !digestRule.MatchString(ref.digest) {
			cs.fail("resources.digest", "%s: digest %q is not sha256:<64 lowercase hex>", ref.uri, truncate(ref.digest, 80))
		}
		n, ok := obj["size"].(json.Number)
		size, err := n.Int64()
		if !ok || err != nil || size < 0 {
			cs.fail("resources.size", "%s: size %s is not an integer >= 0", ref.uri, show(obj["size"]))
			size = -1
		} else {
			total += size
		}
		ref.size = size
		e.files = append(e.files, ref)
	}
	if !seen[e.uri] {
		cs.fail("resources.complete", "the SKILL.md self-entry %s is missing", e.uri)
	} else {
		cs.ok("resources.complete", fmt.Sprintf("%d files", len(seen)))
	}
	if len(seen) > maxSkillFiles || total > maxSkillBytes {
		cs.warn("resources.limits", "%d files, %d bytes: over the SEP-2640 limits (%d files, %d bytes)", len(seen), total, maxSkillFiles, maxSkillBytes)
	} else {
		cs.ok("resources.limits", fmt.Sprintf("%d files, %d bytes", len(seen), total))
	}
}
