package catalog

import (
	"encoding/json"
	"slices"
	"strings"
)

// Snapshot is one immutable load of a plugin folder. Every method is safe
// for concurrent use, and nothing a method returns may be mutated: slices,
// maps and byte slices are shared with every other reader.
type Snapshot struct {
	skills      []*Skill
	skillByURI  map[string]*Skill
	files       map[string]*File
	dirs        map[string]*Dir
	agents      []*Agent
	agentByName map[string]*Agent
	problems    []Problem
	plugin      PluginInfo
	watchDirs   []string // canonical directories read, relative to the root
	unsettled   bool     // something still being written was withheld: load again
}

// Skill is one served skill (SEP-2640 §skill entry).
type Skill struct {
	// Path is the skill path under skills/, e.g. "acme/billing/refunds".
	Path string
	// URI is the SKILL.md URI, e.g. "skill://acme/billing/refunds/SKILL.md".
	URI string
	// Root is the skill root URI: URI minus "/SKILL.md".
	Root string
	// Name and Description are the frontmatter fields of those names.
	Name, Description string
	// Frontmatter is every field the author wrote, as a JSON object in the
	// author's key order.
	Frontmatter json.RawMessage
	// Files is the complete manifest, SKILL.md and nested skills' files
	// included, sorted by URI.
	Files []*File
	// Size is the sum of the sizes of Files.
	Size int64
}

// File is one served skill file.
type File struct {
	// URI is the file's skill:// URI.
	URI string
	// Size is len(Data).
	Size int64
	// Digest is "sha256:" and the lowercase hex SHA-256 of Data.
	Digest string
	// MIMEType is the served MIME type; SKILL.md is always text/markdown.
	MIMEType string
	// Text is true when the file is served as text (a text-like type and
	// valid UTF-8) and false when it is served as a blob.
	Text bool
	// Data is the exact served bytes. Do not mutate.
	Data []byte
}

// Dir is a directory at or under a served skill root.
type Dir struct {
	// URI is the directory URI, without a trailing slash.
	URI string
	// Entries are the direct children, sorted by name.
	Entries []DirEntry
}

// DirEntry is one child of a Dir.
type DirEntry struct {
	// Name is the child's base name.
	Name string
	// URI is the child's URI.
	URI string
	// IsDir is true for a subdirectory.
	IsDir bool
	// MIMEType is the file's type, or MIMEDirectory for a subdirectory.
	MIMEType string
	// Size is the file's size; 0 for a subdirectory.
	Size int64
}

// PluginInfo is what .claude-plugin/plugin.json says about the plugin.
// All fields are empty when the file is absent or invalid.
type PluginInfo struct {
	// Present is true when plugin.json was read and parsed.
	Present bool
	// Name, Description and Version are the fields of those names when
	// they are strings.
	Name, Description, Version string
}

// Skills returns the served skills sorted by URI.
func (s *Snapshot) Skills() []*Skill { return s.skills }

// Skill returns the skill whose SKILL.md has exactly this URI.
func (s *Snapshot) Skill(uri string) (*Skill, bool) {
	sk, ok := s.skillByURI[uri]
	return sk, ok
}

// File returns any served skill file by its exact URI.
func (s *Snapshot) File(uri string) (*File, bool) {
	f, ok := s.files[uri]
	return f, ok
}

// Dir returns a directory at or under a served skill root by its exact URI,
// which has no trailing slash, e.g. "skill://acme/billing/refunds/examples".
func (s *Snapshot) Dir(uri string) (*Dir, bool) {
	d, ok := s.dirs[uri]
	return d, ok
}

// Agents returns the served agents sorted by name.
func (s *Snapshot) Agents() []*Agent { return s.agents }

// Agent returns the agent with this exact name.
func (s *Snapshot) Agent(name string) (*Agent, bool) {
	a, ok := s.agentByName[name]
	return a, ok
}

// Problems returns the skipped and warned items sorted by path.
func (s *Snapshot) Problems() []Problem { return s.problems }

// Skipped returns how many problems left an item out of the snapshot.
func (s *Snapshot) Skipped() int {
	n := 0
	for _, p := range s.problems {
		if p.Severity == SeveritySkip {
			n++
		}
	}
	return n
}

// Plugin returns what .claude-plugin/plugin.json says.
func (s *Snapshot) Plugin() PluginInfo { return s.plugin }

// FileCount returns the number of distinct served files.
func (s *Snapshot) FileCount() int { return len(s.files) }

// buildDirs indexes every directory at or under a served skill root.
func buildDirs(skills []*Skill) map[string]*Dir {
	children := map[string]map[string]DirEntry{}
	add := func(dir string, e DirEntry) {
		m := children[dir]
		if m == nil {
			m = map[string]DirEntry{}
			children[dir] = m
		}
		m[e.Name] = e
	}
	for _, sk := range skills {
		if children[sk.Root] == nil {
			children[sk.Root] = map[string]DirEntry{}
		}
		for _, f := range sk.Files {
			dir, name := splitURI(f.URI)
			add(dir, DirEntry{Name: name, URI: f.URI, MIMEType: f.MIMEType, Size: f.Size})
			for dir != sk.Root && strings.HasPrefix(dir, sk.Root+"/") {
				parent, base := splitURI(dir)
				add(parent, DirEntry{Name: base, URI: dir, IsDir: true, MIMEType: MIMEDirectory})
				dir = parent
			}
		}
	}
	dirs := make(map[string]*Dir, len(children))
	for uri, m := range children {
		d := &Dir{URI: uri, Entries: make([]DirEntry, 0, len(m))}
		for _, e := range m {
			d.Entries = append(d.Entries, e)
		}
		slices.SortFunc(d.Entries, func(a, b DirEntry) int { return strings.Compare(a.Name, b.Name) })
		dirs[uri] = d
	}
	return dirs
}

// splitURI splits a skill:// URI at its last slash.
func splitURI(uri string) (dir, name string) {
	i := strings.LastIndexByte(uri, '/')
	return uri[:i], uri[i+1:]
}

// Dropped lists what prev serves and next does not: skill URIs and agent
// names, in prev's order. A nil prev drops nothing. A reload that drops an
// item the author did not remove (a broken SKILL.md in an update) is still a
// successful load, so this is what tells the operator something went away.
func Dropped(prev, next *Snapshot) (skills, agents []string) {
	if prev == nil {
		return nil, nil
	}
	for _, sk := range prev.skills {
		if _, ok := next.skillByURI[sk.URI]; !ok {
			skills = append(skills, sk.URI)
		}
	}
	for _, a := range prev.agents {
		if _, ok := next.agentByName[a.Name]; !ok {
			agents = append(agents, a.Name)
		}
	}
	return skills, agents
}
