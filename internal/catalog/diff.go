package catalog

import (
	"bytes"
	"reflect"
	"slices"
)

// Changes is what differs between two snapshots, as a client of the served
// methods can see it. The zero value means "nothing a client could notice".
type Changes struct {
	// Skills is true when skills/list or skills/get would answer
	// differently: a skill added or removed, or a skill whose frontmatter
	// or manifest (file URIs, digests, sizes, MIME types) changed. The
	// sidecar's share of resources/list (the SKILL.md entries and their
	// names and descriptions) only ever changes with it.
	Skills bool
	// Agents is true when agents/list or agents/get would answer
	// differently: an agent added, removed or changed in any field.
	Agents bool
	// Files are the skill file URIs whose served bytes differ: added,
	// removed, or changed in digest, MIME type or text/blob form; sorted.
	// They are what notifications/resources/updated is sent for.
	Files []string
}

// Any reports whether anything changed.
func (c Changes) Any() bool { return c.Skills || c.Agents || len(c.Files) > 0 }

// Diff compares two snapshots. A nil prev is the empty catalog, and so is a
// nil next. It is pure and reads only published (immutable) values, so it
// may run while readers serve either snapshot. Problems, plugin.json and the
// folders watched are not compared: no served method shows them.
func Diff(prev, next *Snapshot) Changes {
	var c Changes
	pf, nf := filesOf(prev), filesOf(next)
	for uri, f := range pf {
		if g, ok := nf[uri]; !ok || !sameFile(f, g) {
			c.Files = append(c.Files, uri)
		}
	}
	for uri := range nf {
		if _, ok := pf[uri]; !ok {
			c.Files = append(c.Files, uri)
		}
	}
	slices.Sort(c.Files)
	c.Skills = !slices.EqualFunc(skillsOf(prev), skillsOf(next), sameSkill)
	c.Agents = !slices.EqualFunc(agentsOf(prev), agentsOf(next), func(a, b *Agent) bool {
		return reflect.DeepEqual(a, b) // every field is a plain value
	})
	return c
}

func filesOf(s *Snapshot) map[string]*File {
	if s == nil {
		return nil
	}
	return s.files
}

func skillsOf(s *Snapshot) []*Skill {
	if s == nil {
		return nil
	}
	return s.skills
}

func agentsOf(s *Snapshot) []*Agent {
	if s == nil {
		return nil
	}
	return s.agents
}

// sameFile compares what resources/read and a manifest entry show of a file.
func sameFile(a, b *File) bool {
	return a.Digest == b.Digest && a.Size == b.Size && a.MIMEType == b.MIMEType && a.Text == b.Text
}

// sameSkill compares what skills/list and skills/get show of a skill; both
// lists are sorted by URI.
func sameSkill(a, b *Skill) bool {
	return a.URI == b.URI && bytes.Equal(a.Frontmatter, b.Frontmatter) &&
		slices.EqualFunc(a.Files, b.Files, func(f, g *File) bool { return f.URI == g.URI && sameFile(f, g) })
}
