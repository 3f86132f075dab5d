package catalog_test

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

func TestKeyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"skills/refunds/SKILL.md", ".claude-plugin/plugin.json", "scripts/__init__.py", "a/b c/ü.txt", "x..y", "a/.b"} {
		k := catalog.EncodeKey(p)
		for _, r := range k {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_') {
				t.Errorf("EncodeKey(%q) = %q has %q, not allowed in a ConfigMap key", p, k, r)
			}
		}
		if strings.HasPrefix(k, ".") {
			t.Errorf("EncodeKey(%q) = %q starts with a dot", p, k)
		}
		if got, err := catalog.DecodeKey(k); err != nil || got != p {
			t.Errorf("DecodeKey(EncodeKey(%q)) = %q, %v", p, got, err)
		}
	}
	// Written by hand from the rules in docs/kubernetes.md.
	for k, want := range map[string]string{
		"skills__refunds__SKILL.md":     "skills/refunds/SKILL.md",
		"scripts__run_5Fme.py":          "scripts/run_me.py",
		"_2Eclaude-plugin__plugin.json": ".claude-plugin/plugin.json",
		"a_20b_C3_BC":                   "a bü",
	} {
		if got, err := catalog.DecodeKey(k); err != nil || got != want {
			t.Errorf("DecodeKey(%q) = %q, %v; want %q", k, got, err, want)
		}
	}
	for _, bad := range []string{"", "a_", "a_x", "__a", "a____b", "_2E_2E__x", "a___2E", "a_2f", "a_2F"} {
		if got, err := catalog.DecodeKey(bad); !errors.Is(err, catalog.ErrBadKey) {
			t.Errorf("DecodeKey(%q) = %q, %v; want ErrBadKey", bad, got, err)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	for _, s := range []string{"skills__x__SKILL.md", "_2Eclaude-plugin__plugin.json", "a_5Fb", "a_", "__a", "a_2Fb", "_00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		p, err := catalog.DecodeKey(k)
		if err != nil {
			if !errors.Is(err, catalog.ErrBadKey) {
				t.Fatalf("DecodeKey(%q) = %v, not ErrBadKey", k, err)
			}
			return
		}
		if !fs.ValidPath(p) || p == "." {
			t.Fatalf("DecodeKey(%q) = %q, not a clean relative path", k, p)
		}
		if p2, err := catalog.DecodeKey(catalog.EncodeKey(p)); err != nil || p2 != p {
			t.Fatalf("round trip of %q: %q, %v", p, p2, err)
		}
	})
}

// FuzzConfigMapsLayout mounts arbitrary keys in two ConfigMap folders, with
// the same bytes in both or each its own: the load never panics, and
// whatever it serves came from exactly one key of each ConfigMap, and from
// one ConfigMap unless both hold the same bytes.
func FuzzConfigMapsLayout(f *testing.F) {
	f.Add("skills__x__SKILL.md\nagents__a.md", "skills__x__more.txt", false)
	f.Add("skills__x__SKILL.md", "skills__x__SKILL.md", false)
	f.Add("skills__x__SKILL.md", "skills__x__SKILL.md", true)
	f.Add("skills__x", "skills__x__SKILL.md\nbad_key", true)
	f.Fuzz(func(t *testing.T, a, b string, same bool) {
		fsys := fstest.MapFS{}
		owners := map[string][2]int{} // path -> keys in p, in p-1
		for i, keys := range []string{a, b} {
			mount := []string{"p", "p-1"}[i]
			m := map[string]string{}
			for _, k := range strings.Split(keys, "\n") {
				if k == "" || strings.ContainsAny(k, "/\x00") || strings.HasPrefix(k, ".") || !fs.ValidPath(mount+"/"+k) {
					continue
				}
				m[k] = skillFile("x")
				if !same {
					m[k] += "<!-- " + mount + " -->\n"
				}
				if p, err := catalog.DecodeKey(k); err == nil {
					o := owners[p]
					o[i]++
					owners[p] = o
				}
			}
			kubeletMount(fsys, mount, m)
		}
		s, err := catalog.LoadFS(fsys, catalog.Options{Layout: catalog.LayoutConfigMaps})
		if err != nil {
			return
		}
		for _, sk := range s.Skills() {
			for _, file := range sk.Files {
				p := "skills/" + strings.TrimPrefix(file.URI, "skill://")
				o := owners[p]
				if o[0] > 1 || o[1] > 1 || (!same && o[0]+o[1] != 1) {
					t.Fatalf("served %s, which %d keys of p and %d of p-1 decode to (same bytes: %v)", file.URI, o[0], o[1], same)
				}
			}
		}
	})
}
