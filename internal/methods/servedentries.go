package methods

import (
	"encoding/json"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
	"github.com/skills-sidecar/skills-sidecar/internal/upstreamfiles"
)

// skills/list and skills/get entries with the upstream's bytes winning
// for the files it serves (the verdicts are internal/upstreamfiles').

// entries returns the encoded entries of skills in v from index from to to,
// with the upstream's verdicts applied for this caller; changed tells
// whether any differs from the catalog's own. The entry of a skill whose
// served SKILL.md is withheld (internal/upstreamfiles) is nil, and withheld
// holds the reason at the same index.
func (h *Handler) overlayEntries(r *http.Request, caller rewrite.Message, v *view, from, to int, unknownOK bool) (_ []json.RawMessage, changed bool, withheld []string, _ error) {
	out := v.skillEntries[from:to:to]
	// The files of the whole page are resolved together, so the reads of
	// the ones the upstream serves run side by side, not skill by skill.
	skills := make([]*catalog.Skill, 0, to-from)
	var files []*catalog.File
	for i := from; i < to; i++ {
		sk, _ := v.snap.Skill(v.skillURIs[i])
		skills = append(skills, sk)
		files = append(files, sk.Files...)
	}
	over, err := h.opts.Overlay.Resolve(r, caller, v.snap, files, unknownOK) // a refused caller leaves no entry behind
	if err != nil || over == nil {
		return out, false, nil, err
	}
	copied := false
	for i, sk := range skills {
		if !servesAny(over, sk.Files) {
			continue
		}
		if !copied {
			out, copied = append([]json.RawMessage(nil), out...), true
		}
		if why := over[sk.URI].Withheld; why != "" {
			if withheld == nil {
				withheld = make([]string, len(out))
			}
			out[i], withheld[i] = nil, why
			continue
		}
		out[i] = encodeSkillServed(sk, over)
	}
	return out, copied, withheld, nil
}

// servesAny reports whether over has a verdict for any of files.
func servesAny(over map[string]upstreamfiles.Served, files []*catalog.File) bool {
	for _, f := range files {
		if _, ok := over[f.URI]; ok {
			return true
		}
	}
	return false
}

// encodeSkillServed is encodeSkill with the upstream's bytes winning for the
// files it serves.
func encodeSkillServed(sk *catalog.Skill, over map[string]upstreamfiles.Served) []byte {
	e := skillEntry{URI: sk.URI, Frontmatter: sk.Frontmatter, Resources: make([]fileRef, 0, len(sk.Files))}
	for _, f := range sk.Files {
		ref := fileRef{URI: f.URI, Digest: f.Digest, Size: f.Size}
		if s, ok := over[f.URI]; ok {
			ref.Digest, ref.Size = s.Digest, s.Size
			if f.URI == sk.URI && s.Frontmatter != nil {
				e.Frontmatter = s.Frontmatter
			}
		}
		e.Resources = append(e.Resources, ref)
	}
	return mustJSON(e)
}
