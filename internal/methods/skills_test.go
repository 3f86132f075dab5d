package methods_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// listedSkill is a SEP-2640 skill entry as a client decodes it.
type listedSkill struct {
	URI         string          `json:"uri"`
	Frontmatter json.RawMessage `json:"frontmatter"`
	Resources   []fileRef       `json:"resources"`
}

type fileRef struct {
	URI    string `json:"uri"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

type skillsPage struct {
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor"`
}

// genSkill returns the files of generated skill name with n files (1..3):
// SKILL.md, then notes.md, then scripts/run.sh.
func genSkill(name string, n int) map[string]string {
	files := map[string]string{"skills/" + name + "/SKILL.md": skillMD(name, "Generated skill "+name+".")}
	if n >= 2 {
		files["skills/"+name+"/notes.md"] = "notes of " + name + "\n"
	}
	if n >= 3 {
		files["skills/"+name+"/scripts/run.sh"] = "#!/bin/sh\necho " + name + "\n"
	}
	return files
}

// genFileURIs returns the resource URIs genSkill(name, n) serves, sorted.
func genFileURIs(name string, n int) []string {
	out := []string{"skill://" + name + "/SKILL.md"}
	if n >= 2 {
		out = append(out, "skill://"+name+"/notes.md")
	}
	if n >= 3 {
		out = append(out, "skill://"+name+"/scripts/run.sh")
	}
	slices.Sort(out)
	return out
}

func genName(i int) string { return fmt.Sprintf("sk-%04d", i) }

// genFiles is how many files generated skill i has: mostly one, some two
// or three (a subdirectory), so that a split entry would show.
func genFiles(i int) int {
	switch i % 5 {
	case 1:
		return 2
	case 2:
		return 3
	}
	return 1
}

// walkWant is what a walk through skills/list must show.
type walkWant struct {
	// once are the skill URIs that must appear exactly once.
	once map[string]bool
	// never are the skill URIs that must not appear.
	never map[string]bool
	// files are the resource URIs each skill URI must list (sorted).
	files map[string][]string
}

// checkWalk returns every problem of a walk through the pages of skills/list:
// an entry repeated, one that must appear and does not, one that must not
// and does, and an entry whose resources are not its complete manifest
// (split or truncated).
func checkWalk(pages [][]listedSkill, want walkWant) []string {
	var problems []string
	count := map[string]int{}
	for pi, pg := range pages {
		for _, e := range pg {
			count[e.URI]++
			if count[e.URI] == 2 {
				problems = append(problems, fmt.Sprintf("page %d repeats %s", pi, e.URI))
			}
			var got []string
			for _, r := range e.Resources {
				got = append(got, r.URI)
			}
			slices.Sort(got)
			if wf, ok := want.files[e.URI]; ok && !slices.Equal(got, wf) {
				problems = append(problems, fmt.Sprintf("page %d: %s lists resources %v, want its whole manifest %v", pi, e.URI, got, wf))
			}
			if !slices.Contains(got, e.URI) {
				problems = append(problems, fmt.Sprintf("page %d: %s does not list its own SKILL.md", pi, e.URI))
			}
		}
	}
	for _, u := range slices.Sorted(maps.Keys(want.once)) {
		if count[u] == 0 {
			problems = append(problems, "missing "+u)
		}
	}
	for _, u := range slices.Sorted(maps.Keys(want.never)) {
		if count[u] > 0 {
			problems = append(problems, "listed after its removal: "+u)
		}
	}
	return problems
}

func TestCheckWalkRejectsBrokenWalks(t *testing.T) {
	t.Parallel()
	a := listedSkill{URI: "skill://a/SKILL.md", Resources: []fileRef{{URI: "skill://a/SKILL.md"}, {URI: "skill://a/x.md"}}}
	b := listedSkill{URI: "skill://b/SKILL.md", Resources: []fileRef{{URI: "skill://b/SKILL.md"}}}
	aHalf := listedSkill{URI: a.URI, Resources: a.Resources[:1]}
	aRest := listedSkill{URI: a.URI, Resources: a.Resources[1:]}
	want := walkWant{
		once:  map[string]bool{a.URI: true, b.URI: true},
		never: map[string]bool{"skill://gone/SKILL.md": true},
		files: map[string][]string{a.URI: {"skill://a/SKILL.md", "skill://a/x.md"}, b.URI: {"skill://b/SKILL.md"}},
	}
	gone := listedSkill{URI: "skill://gone/SKILL.md", Resources: []fileRef{{URI: "skill://gone/SKILL.md"}}}
	tests := []struct {
		name  string
		pages [][]listedSkill
		want  int // problems expected; 0 for the good walk
	}{
		{name: "good", pages: [][]listedSkill{{a}, {b}}, want: 0},
		{name: "repeat across pages", pages: [][]listedSkill{{a}, {a, b}}, want: 1},
		{name: "entry split across pages", pages: [][]listedSkill{{aHalf}, {aRest, b}}, want: 4},
		{name: "entry missing", pages: [][]listedSkill{{a}}, want: 1},
		{name: "removed entry listed", pages: [][]listedSkill{{a, gone}, {b}}, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := checkWalk(tt.pages, want)
			if len(got) != tt.want {
				t.Errorf("checkWalk(%s) = %q, want %d problems", tt.name, got, tt.want)
			}
		})
	}
}

// TestCheckWalkCatchesOffsetCursors replays the reload scenario of
// TestSkillsListPagingAcrossReloads against a model pager whose cursor is an
// offset (the classic mistake) and shows that the walk check fails it.
func TestCheckWalkCatchesOffsetCursors(t *testing.T) {
	t.Parallel()
	var keys []string
	want := walkWant{once: map[string]bool{}, never: map[string]bool{}, files: map[string][]string{}}
	for i := range 100 {
		u := "skill://" + genName(i) + "/SKILL.md"
		keys = append(keys, u)
		want.once[u] = true
	}
	entry := func(u string) listedSkill { return listedSkill{URI: u, Resources: []fileRef{{URI: u}}} }
	var pages [][]listedSkill
	for off := 0; off < len(keys); off += 10 {
		var pg []listedSkill
		for _, k := range keys[off:min(off+10, len(keys))] {
			pg = append(pg, entry(k))
		}
		pages = append(pages, pg)
		// Between pages, one skill is added before the cursor: an offset
		// cursor now points one entry earlier and repeats the last one.
		keys = append(keys, fmt.Sprintf("skill://sk-%04d-x/SKILL.md", off))
		slices.Sort(keys)
	}
	if problems := checkWalk(pages, want); len(problems) == 0 {
		t.Fatalf("checkWalk accepted an offset-cursor walk across reloads")
	}
}

// TestSkillsListPagingAcrossReloads pages through 1,000 skills with a small
// page size, reloading the catalog between pages after adding and removing
// skills before and after the cursor. No entry may repeat or be split, every
// skill present throughout must appear, and every entry must equal what
// skills/get returns for its URI.
func TestSkillsListPagingAcrossReloads(t *testing.T) {
	t.Parallel()
	for _, ec := range eras() {
		t.Run(ec.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			dir := t.TempDir()
			want := walkWant{once: map[string]bool{}, never: map[string]bool{}, files: map[string][]string{}}
			files := map[string]string{}
			for i := range 1000 {
				n := genFiles(i)
				for k, v := range genSkill(genName(i), n) {
					files[k] = v
				}
				u := "skill://" + genName(i) + "/SKILL.md"
				want.once[u] = true
				want.files[u] = genFileURIs(genName(i), n)
			}
			sidecartest.WriteTree(t, dir, files)
			w := newWatcher(t, dir)
			if got := len(w.Snapshot().Skills()); got != 1000 {
				t.Fatalf("loaded %d skills, want 1000 (problems: %v)", got, w.Snapshot().Problems())
			}
			up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless})
			c := dialEra(t, ctx, ec, newSidecar(t, up.URL, w.Snapshot, func(c *config.Config) { c.PageSize = 100 }), "")

			var pages [][]listedSkill
			params := map[string]any{}
			for step := 0; ; step++ {
				if step > 100 {
					t.Fatalf("more than 100 pages")
				}
				var pg skillsPage
				c.Call("skills/list", params).OK(t, "skills/list", &pg)
				var decoded []listedSkill
				for _, raw := range pg.Skills {
					var e listedSkill
					if err := json.Unmarshal(raw, &e); err != nil {
						t.Fatal(err)
					}
					decoded = append(decoded, e)
					// skills/get of the listed URI is the listed entry.
					var got struct {
						Skill json.RawMessage `json:"skill"`
					}
					c.Call("skills/get", map[string]any{"uri": e.URI}).OK(t, "skills/get "+e.URI, &got)
					if string(got.Skill) != string(raw) {
						t.Errorf("skills/get(%s) = %s, want the listed entry %s", e.URI, got.Skill, raw)
					}
				}
				pages = append(pages, decoded)
				if pg.NextCursor == "" {
					break
				}
				if len(decoded) == 0 {
					t.Fatalf("page %d is empty but has nextCursor", step)
				}
				// Reload between pages: add and remove skills on both sides of
				// the cursor.
				last := decoded[len(decoded)-1].URI
				i, err := strconv.Atoi(strings.TrimPrefix(last, "skill://sk-")[:4])
				if err != nil {
					t.Fatalf("last URI %s: %v", last, err)
				}
				add := map[string]string{}
				if i >= 5 {
					before := fmt.Sprintf("sk-%04d-x%d", i-5, step)
					maps.Copy(add, genSkill(before, 2)) // behind the cursor: may or may not be seen, never twice
				}
				if i+20 < 1000 {
					after := fmt.Sprintf("sk-%04d-y%d", i+20, step)
					maps.Copy(add, genSkill(after, 3))
					u := "skill://" + after + "/SKILL.md"
					want.once[u] = true
					want.files[u] = genFileURIs(after, 3)
				}
				sidecartest.WriteTree(t, dir, add)
				if i >= 2 {
					removeSkill(t, dir, genName(i-2)) // already served: stays counted once
				}
				if i+10 < 1000 {
					removeSkill(t, dir, genName(i+10)) // not served yet: must never appear
					u := "skill://" + genName(i+10) + "/SKILL.md"
					delete(want.once, u)
					want.never[u] = true
				}
				if ev := w.Reload(); !ev.OK {
					t.Fatalf("Reload = %v", ev.Err)
				}
				params = map[string]any{"cursor": pg.NextCursor}
			}
			for _, p := range checkWalk(pages, want) {
				t.Error(p)
			}
			if len(pages) < 10 {
				t.Errorf("walk took %d pages, want at least 10 (page size 100)", len(pages))
			}
		})
	}
}

func removeSkill(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, "skills", name)); err != nil {
		t.Fatal(err)
	}
}

func TestSkillsListInvalidCursor(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		dir := t.TempDir()
		files := map[string]string{}
		for i := range 5 {
			maps.Copy(files, genSkill(genName(i), 1))
		}
		sidecartest.WriteTree(t, dir, files)
		w := newWatcher(t, dir)
		up := testupstream.Start(t, testupstream.Config{Stateless: ec.stateless})
		c := dialEra(t, ctx, ec, newSidecar(t, up.URL, w.Snapshot, func(c *config.Config) { c.PageSize = 2 }), "")
		var first skillsPage
		c.Call("skills/list", nil).OK(t, "skills/list", &first)
		if first.NextCursor == "" {
			t.Fatalf("first page of 5 with page size 2 has no nextCursor")
		}
		for _, cursor := range []any{"garbage", "s1:!!!not-base64", 42, "", first.NextCursor + "x!", otherListingCursor(t, first.NextCursor)} {
			r := c.Call("skills/list", map[string]any{"cursor": cursor})
			r.Failed(t, fmt.Sprintf("skills/list cursor %v", cursor), http.StatusOK, -32602)
		}
	})
}

// otherListingCursor turns a skills cursor into a cursor of the same key for
// another listing: a cursor must not be accepted by a listing it was not
// issued by.
func otherListingCursor(t *testing.T, skillsCursor string) string {
	t.Helper()
	_, rest, ok := strings.Cut(skillsCursor, ":")
	if !ok {
		return "a1:" + skillsCursor
	}
	return "a1:" + rest
}

// pluginPDF is a small plugin with a skill of several kinds of file.
func pluginPDF() map[string]string {
	return map[string]string{
		".claude-plugin/plugin.json":                  `{"name":"acme","description":"test plugin"}`,
		"skills/pdf-processing/SKILL.md":              "---\r\nname: pdf-processing\r\ndescription: Fill PDF forms.\r\nlicense: Apache-2.0\r\n---\r\n# PDF\r\n\r\nSee reference/forms.md.\r\n",
		"skills/pdf-processing/reference/forms.md":    "# Forms\n",
		"skills/pdf-processing/reference/deep/x.md":   "deep\n",
		"skills/pdf-processing/assets/logo.png":       string(pngBytes),
		"skills/pdf-processing/scripts/fill.py":       "print('fill')\n",
		"skills/pdf-processing/a.txt":                 "a\n",
		"skills/pdf-processing/b.txt":                 "b\n",
		"skills/pdf-processing/c.txt":                 "ünïcödé\n",
		"skills/acme/billing/refunds/SKILL.md":        skillMD("refunds", "Handle refunds."),
		"skills/acme/billing/refunds/examples/e.json": `{"x":1}`,
	}
}

func TestSkillsGetErrors(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := pdfSidecar(t, ctx, ec, testupstream.Config{}, nil)
		c.Call("skills/get", map[string]any{"uri": "skill://pdf-processing/SKILL.md"}).OK(t, "skills/get of a served skill", nil)
		tests := []struct {
			name, uri string
		}{
			{"file", "skill://pdf-processing/reference/forms.md"},
			{"directory", "skill://pdf-processing/reference"},
			{"skill root", "skill://pdf-processing"},
			{"unknown", "skill://nope/SKILL.md"},
			{"upper case path", "skill://PDF-processing/SKILL.md"},
			{"lower case file name", "skill://pdf-processing/skill.md"},
			{"upper case scheme", "SKILL://pdf-processing/SKILL.md"},
			{"trailing slash", "skill://pdf-processing/SKILL.md/"},
			{"percent-encoded dash", "skill://pdf%2Dprocessing/SKILL.md"},
			{"percent-encoded slash", "skill://acme%2Fbilling/refunds/SKILL.md"},
			{"double slash", "skill://acme/billing//refunds/SKILL.md"},
			{"dot segment", "skill://acme/billing/./refunds/SKILL.md"},
			{"final segment only", "skill://refunds/SKILL.md"},
		}
		for _, tt := range tests {
			r := c.Call("skills/get", map[string]any{"uri": tt.uri})
			e := r.Failed(t, "skills/get "+tt.name, http.StatusOK, -32602)
			if e != nil && !strings.Contains(e.Message, tt.uri) {
				t.Errorf("skills/get %s: message %q does not name the URI %q", tt.name, e.Message, tt.uri)
			}
		}
		for _, params := range []map[string]any{nil, {"uri": 42}, {"uri": nil}} {
			c.Call("skills/get", params).Failed(t, fmt.Sprintf("skills/get %v", params), http.StatusOK, -32602)
		}
	})
}

// checkServedDigests returns every problem of a skill entry whose digests and
// sizes do not describe the bytes read returns for each resource.
func checkServedDigests(e listedSkill, read func(uri string) ([]byte, error)) []string {
	var problems []string
	for _, r := range e.Resources {
		b, err := read(r.URI)
		if err != nil {
			problems = append(problems, fmt.Sprintf("read %s: %v", r.URI, err))
			continue
		}
		sum := sha256.Sum256(b)
		if want := "sha256:" + hex.EncodeToString(sum[:]); r.Digest != want {
			problems = append(problems, fmt.Sprintf("%s: digest %s, served bytes hash to %s", r.URI, r.Digest, want))
		}
		if r.Size != int64(len(b)) {
			problems = append(problems, fmt.Sprintf("%s: size %d, served %d bytes", r.URI, r.Size, len(b)))
		}
	}
	return problems
}

func TestCheckServedDigestsRejectsMismatches(t *testing.T) {
	t.Parallel()
	data := map[string][]byte{"skill://s/SKILL.md": []byte("---\nname: s\n---\n"), "skill://s/a.png": pngBytes}
	entry := func() listedSkill {
		e := listedSkill{URI: "skill://s/SKILL.md"}
		for _, u := range []string{"skill://s/SKILL.md", "skill://s/a.png"} {
			sum := sha256.Sum256(data[u])
			e.Resources = append(e.Resources, fileRef{URI: u, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data[u]))})
		}
		return e
	}
	read := func(u string) ([]byte, error) { return data[u], nil }
	if p := checkServedDigests(entry(), read); len(p) != 0 {
		t.Fatalf("checkServedDigests(good) = %q, want none", p)
	}
	corrupt := func(u string) ([]byte, error) {
		b := append([]byte(nil), data[u]...)
		if u == "skill://s/a.png" {
			b[3] ^= 0x20 // one served byte differs
		}
		return b, nil
	}
	if p := checkServedDigests(entry(), corrupt); len(p) != 1 {
		t.Errorf("checkServedDigests(one corrupted byte) = %q, want 1 problem", p)
	}
	short := func(u string) ([]byte, error) { return data[u][:len(data[u])-1], nil }
	if p := checkServedDigests(entry(), short); len(p) != 4 {
		t.Errorf("checkServedDigests(every file one byte short) = %q, want 4 problems", p)
	}
	wrongSize := entry()
	wrongSize.Resources[0].Size++
	if p := checkServedDigests(wrongSize, read); len(p) != 1 {
		t.Errorf("checkServedDigests(wrong size) = %q, want 1 problem", p)
	}
}

// TestResourcesReadServedBytes reads every file of every skill through a
// go-sdk client and through raw requests, and checks the types, the echoed
// URI and that digest and size in skills/list describe exactly those bytes.
func TestResourcesReadServedBytes(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, up, _ := pdfSidecar(t, ctx, ec, testupstream.Config{Resources: 2}, nil)

		var pg struct {
			Skills []listedSkill `json:"skills"`
		}
		c.Call("skills/list", nil).OK(t, "skills/list", &pg)
		if len(pg.Skills) != 2 {
			t.Fatalf("skills/list = %d skills, want 2", len(pg.Skills))
		}
		viaSDK := func(uri string) ([]byte, error) {
			res, err := c.CS.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil {
				return nil, err
			}
			if len(res.Contents) != 1 {
				return nil, fmt.Errorf("%d contents, want 1", len(res.Contents))
			}
			ct := res.Contents[0]
			if ct.URI != uri {
				t.Errorf("resources/read(%s) contents[0].uri = %q, want the request's", uri, ct.URI)
			}
			if strings.HasSuffix(uri, "/SKILL.md") && ct.MIMEType != "text/markdown" {
				t.Errorf("resources/read(%s) mimeType = %q, want text/markdown", uri, ct.MIMEType)
			}
			if ct.Blob != nil {
				return ct.Blob, nil
			}
			return []byte(ct.Text), nil
		}
		viaRaw := func(uri string) ([]byte, error) {
			var res struct {
				Contents []struct {
					URI      string  `json:"uri"`
					MIMEType string  `json:"mimeType"`
					Text     *string `json:"text"`
					Blob     *string `json:"blob"`
				} `json:"contents"`
			}
			c.Call("resources/read", map[string]any{"uri": uri}).OK(t, "resources/read "+uri, &res)
			if len(res.Contents) != 1 {
				return nil, fmt.Errorf("%d contents, want 1", len(res.Contents))
			}
			ct := res.Contents[0]
			wantBlob := strings.HasSuffix(uri, ".png")
			switch {
			case wantBlob && (ct.Blob == nil || ct.Text != nil):
				t.Errorf("resources/read(%s) is not served as blob", uri)
			case !wantBlob && (ct.Text == nil || ct.Blob != nil):
				t.Errorf("resources/read(%s) is not served as text", uri)
			}
			if wantBlob && ct.MIMEType != "image/png" {
				t.Errorf("resources/read(%s) mimeType = %q, want image/png", uri, ct.MIMEType)
			}
			if ct.Blob != nil {
				return base64.StdEncoding.DecodeString(*ct.Blob)
			}
			return []byte(*ct.Text), nil
		}
		for _, e := range pg.Skills {
			if len(e.Resources) < 2 {
				t.Errorf("%s lists %d resources, want its whole manifest", e.URI, len(e.Resources))
			}
			for _, p := range checkServedDigests(e, viaSDK) {
				t.Errorf("go-sdk ReadResource: %s", p)
			}
			for _, p := range checkServedDigests(e, viaRaw) {
				t.Errorf("raw resources/read: %s", p)
			}
		}
		// SKILL.md with CRLF on disk is served as those very bytes.
		b, err := viaRaw("skill://pdf-processing/SKILL.md")
		if err != nil || !strings.Contains(string(b), "\r\n") {
			t.Errorf("SKILL.md served as %q, %v; want the file's bytes, CRLF kept", b, err)
		}
		// The sidecar's files never reach the upstream; the upstream's
		// own resources still read through.
		res, err := c.CS.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://res/01"})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != "upstream test://res/01" {
			t.Errorf("ReadResource(test://res/01) through the sidecar = %v, %v", res, err)
		}
		for _, s := range up.Seen() {
			if strings.Contains(s, "skill://") {
				t.Errorf("upstream received %q; the sidecar serves skill files itself", s)
			}
		}
	})
}

func TestResourcesReadUnknownSkillURI(t *testing.T) {
	t.Parallel()
	wantCode := map[string]int{"legacy": -32002, "modern": -32602}
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := pdfSidecar(t, ctx, ec, testupstream.Config{}, nil)
		for _, uri := range []string{"skill://nope/SKILL.md", "skill://pdf-processing/reference", "skill://pdf-processing/missing.md", "skill://PDF-processing/SKILL.md"} {
			e := c.Call("resources/read", map[string]any{"uri": uri}).Failed(t, "resources/read "+uri, http.StatusOK, wantCode[ec.name])
			if e != nil && !strings.Contains(e.Message, uri) {
				t.Errorf("resources/read(%s) message %q does not name the URI", uri, e.Message)
			}
			_, err := c.CS.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if code, ok := wireCode(err); !ok || code != wantCode[ec.name] {
				t.Errorf("go-sdk ReadResource(%s) = %v, want wire error %d", uri, err, wantCode[ec.name])
			}
		}
	})
}

type dirEntry struct {
	URI      string `json:"uri"`
	Name     string `json:"name"`
	MIMEType string `json:"mimeType"`
	Size     *int64 `json:"size"`
}

type dirPage struct {
	Resources  []dirEntry `json:"resources"`
	NextCursor string     `json:"nextCursor"`
	ResultType string     `json:"resultType"`
}

func TestDirectoryRead(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, up, _ := pdfSidecar(t, ctx, ec, testupstream.Config{}, func(c *config.Config) { c.PageSize = 3 })

		readAll := func(uri string) []dirEntry {
			t.Helper()
			var out []dirEntry
			params := map[string]any{"uri": uri}
			for range 20 {
				var pg dirPage
				c.Call("resources/directory/read", params).OK(t, "resources/directory/read "+uri, &pg)
				if len(pg.Resources) > 3 {
					t.Errorf("directory page of %d entries, page size 3", len(pg.Resources))
				}
				if pg.ResultType != "complete" {
					t.Errorf("directory read resultType = %q, want complete", pg.ResultType)
				}
				out = append(out, pg.Resources...)
				if pg.NextCursor == "" {
					return out
				}
				params = map[string]any{"uri": uri, "cursor": pg.NextCursor}
			}
			t.Fatalf("directory read of %s did not end", uri)
			return nil
		}
		size := func(n int64) *int64 { return &n }
		root := "skill://pdf-processing"
		wantRoot := []dirEntry{
			{URI: root + "/SKILL.md", Name: "SKILL.md", MIMEType: "text/markdown", Size: size(int64(len(pluginPDF()["skills/pdf-processing/SKILL.md"])))},
			{URI: root + "/a.txt", Name: "a.txt", MIMEType: "text/plain", Size: size(2)},
			{URI: root + "/assets", Name: "assets", MIMEType: "inode/directory"},
			{URI: root + "/b.txt", Name: "b.txt", MIMEType: "text/plain", Size: size(2)},
			{URI: root + "/c.txt", Name: "c.txt", MIMEType: "text/plain", Size: size(int64(len("ünïcödé\n")))},
			{URI: root + "/reference", Name: "reference", MIMEType: "inode/directory"},
			{URI: root + "/scripts", Name: "scripts", MIMEType: "inode/directory"},
		}
		if diff := cmp.Diff(wantRoot, readAll(root)); diff != "" {
			t.Errorf("directory read of the skill root (-want +got):\n%s", diff)
		}
		wantRef := []dirEntry{
			{URI: root + "/reference/deep", Name: "deep", MIMEType: "inode/directory"},
			{URI: root + "/reference/forms.md", Name: "forms.md", MIMEType: "text/markdown", Size: size(8)},
		}
		if diff := cmp.Diff(wantRef, readAll(root+"/reference")); diff != "" {
			t.Errorf("directory read of a subdirectory (-want +got):\n%s", diff)
		}
		nested := readAll("skill://acme/billing/refunds")
		if len(nested) != 2 || nested[1].Name != "examples" || nested[1].MIMEType != "inode/directory" {
			t.Errorf("directory read of a nested skill path = %+v", nested)
		}

		for _, uri := range []string{root + "/a.txt", root + "/SKILL.md", root + "/", "skill://nope", root + "/missing", "skill://acme/billing"} {
			e := c.Call("resources/directory/read", map[string]any{"uri": uri}).Failed(t, "resources/directory/read "+uri, http.StatusOK, -32602)
			if e != nil && !strings.Contains(e.Message, uri) {
				t.Errorf("directory read(%s) message %q does not name the URI", uri, e.Message)
			}
		}
		c.Call("resources/directory/read", map[string]any{"uri": root, "cursor": "bogus"}).Failed(t, "directory read bad cursor", http.StatusOK, -32602)

		// A directory outside the skill roots is the upstream's
		// business: forwarded, and answered by the upstream (a go-sdk
		// server does not know the method: -32601 on the modern wire, a
		// plain-text 400 on the legacy one), never by the sidecar's
		// -32602.
		r := c.Call("resources/directory/read", map[string]any{"uri": "file:///srv/data"})
		if r.Status == http.StatusOK || (r.Error != nil && r.Error.Code == -32602) {
			t.Errorf("directory read of a non-skill URI = HTTP %d %s, want the upstream's refusal of the method", r.Status, r.Body)
		}
		var forwarded, local int
		for _, s := range up.Seen() {
			switch {
			case s == "resources/directory/read file:///srv/data":
				forwarded++
			case strings.HasPrefix(s, "resources/directory/read"):
				local++
			}
		}
		if forwarded != 1 || local != 0 {
			t.Errorf("upstream saw %d forwarded and %d skill directory reads (%q), want 1 and 0", forwarded, local, up.Seen())
		}
	})
}

// TestDirectoryReadParamTypes: the sidecar declares directoryRead, so a
// resources/directory/read whose uri is missing or not a string is a
// request of that method with invalid params (-32602, naming params.uri),
// answered by the sidecar; forwarded, an upstream that does not know the
// method would deny that the method exists at all.
func TestDirectoryReadParamTypes(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, up, _ := pdfSidecar(t, ctx, ec, testupstream.Config{}, nil)
		for _, params := range []map[string]any{nil, {}, {"uri": 42}, {"uri": nil}, {"uri": []string{"skill://pdf-processing"}}, {"uri": map[string]any{}}} {
			what := fmt.Sprintf("resources/directory/read %v", params)
			e := c.Call("resources/directory/read", params).Failed(t, what, http.StatusOK, -32602)
			if e != nil && !strings.Contains(e.Message, "uri") {
				t.Errorf("%s: message %q does not say what is wrong with params.uri", what, e.Message)
			}
		}
		for _, s := range up.Seen() {
			if strings.HasPrefix(s, "resources/directory/read") {
				t.Errorf("upstream received %q; a directory read with invalid params is the sidecar's to refuse", s)
			}
		}
	})
}

// TestDirectoryReadForeignCursor: a directory read's cursor pages the
// directory that issued it; another directory's (or another listing's)
// is an invalid cursor, -32602, as skills/list refuses one of
// agents/list, never a page of this directory starting at a name that
// belongs to another.
func TestDirectoryReadForeignCursor(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, _, _ := pdfSidecar(t, ctx, ec, testupstream.Config{}, func(c *config.Config) { c.PageSize = 1 })
		cursorOf := func(uri string) string {
			t.Helper()
			var pg dirPage
			c.Call("resources/directory/read", map[string]any{"uri": uri}).OK(t, "resources/directory/read "+uri, &pg)
			if pg.NextCursor == "" {
				t.Fatalf("directory read of %s with page size 1 has no nextCursor", uri)
			}
			return pg.NextCursor
		}
		root, ref := "skill://pdf-processing", "skill://pdf-processing/reference"
		rootCursor, refCursor := cursorOf(root), cursorOf(ref)
		var skills skillsPage
		c.Call("skills/list", nil).OK(t, "skills/list", &skills)
		for _, tt := range []struct{ uri, cursor, from string }{
			{ref, rootCursor, "the skill root's page"},
			{root, refCursor, "a subdirectory's page"},
			{"skill://acme/billing/refunds", rootCursor, "another skill's page"},
			{root, skills.NextCursor, "skills/list"},
		} {
			what := fmt.Sprintf("directory read of %s with a cursor from %s", tt.uri, tt.from)
			c.Call("resources/directory/read", map[string]any{"uri": tt.uri, "cursor": tt.cursor}).Failed(t, what, http.StatusOK, -32602)
		}
		// Its own cursor still pages it.
		var pg dirPage
		c.Call("resources/directory/read", map[string]any{"uri": ref, "cursor": refCursor}).OK(t, "directory read with its own cursor", &pg)
		if len(pg.Resources) != 1 || pg.Resources[0].URI != ref+"/forms.md" {
			t.Errorf("second page of %s = %+v, want forms.md", ref, pg.Resources)
		}
	})
}
