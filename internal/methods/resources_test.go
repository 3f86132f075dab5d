package methods_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/sidecar/sidecartest"
	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// listAll follows resources/list through a go-sdk client page by page.
func listAll(t *testing.T, ctx context.Context, cs *mcp.ClientSession) (all []*mcp.Resource, pages int) {
	t.Helper()
	params := &mcp.ListResourcesParams{}
	for range 50 {
		res, err := cs.ListResources(ctx, params)
		if err != nil {
			t.Fatalf("ListResources(cursor %q) = %v", params.Cursor, err)
		}
		pages++
		all = append(all, res.Resources...)
		if res.NextCursor == "" {
			return all, pages
		}
		params = &mcp.ListResourcesParams{Cursor: res.NextCursor}
	}
	t.Fatalf("resources/list did not end in 50 pages")
	return nil, 0
}

// sidecarFiles returns the URIs of every file the snapshot serves, sorted.
func sidecarFiles(snap *catalog.Snapshot) []string {
	var out []string
	for _, sk := range snap.Skills() {
		for _, f := range sk.Files {
			if !slices.Contains(out, f.URI) {
				out = append(out, f.URI)
			}
		}
	}
	slices.Sort(out)
	return out
}

func uris(rs []*mcp.Resource) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.URI)
	}
	return out
}

// TestResourcesListComposed pages through resources/list with a go-sdk
// client: the upstream's own pages (go-sdk paginates with PageSize 2) come
// first and unchanged, then the sidecar's files in pages of 3, each once.
func TestResourcesListComposed(t *testing.T) {
	t.Parallel()
	eachEra(t, func(t *testing.T, ctx context.Context, ec eraCase) {
		c, up, w := pdfSidecar(t, ctx, ec, testupstream.Config{PageSize: 2, Resources: 5}, func(c *config.Config) { c.PageSize = 3 })
		direct := dialEra(t, ctx, ec, up.URL, "")

		want, upstreamPages := listAll(t, ctx, direct.CS)
		if upstreamPages != 3 || len(want) != 5 {
			t.Fatalf("direct upstream listing: %d resources in %d pages, want 5 in 3", len(want), upstreamPages)
		}
		got, pages := listAll(t, ctx, c.CS)
		files := sidecarFiles(w.Snapshot())
		wantURIs := append(uris(want), files...)
		if diff := cmp.Diff(wantURIs, uris(got)); diff != "" {
			t.Errorf("composed resources/list URIs (-want +got):\n%s", diff)
		}
		// The upstream's pages pass unchanged; the sidecar's pages of 3
		// start on the upstream's last page.
		if diff := cmp.Diff(jsonOf(t, want), jsonOf(t, got[:len(want)])); diff != "" {
			t.Errorf("upstream's resources through the sidecar differ (-direct +sidecar):\n%s", diff)
		}
		if wantPages := 3 + (len(files)-3+2)/3; pages != wantPages {
			t.Errorf("composed listing took %d pages, want %d", pages, wantPages)
		}
		for _, r := range got[len(want):] {
			if !strings.HasSuffix(r.URI, "/SKILL.md") {
				continue
			}
			sk, _ := w.Snapshot().Skill(r.URI)
			f, _ := w.Snapshot().File(r.URI)
			if r.Name != sk.Name || r.Description != sk.Description || r.MIMEType != "text/markdown" || r.Size != f.Size {
				t.Errorf("resources/list entry %+v, want name %q, description %q, text/markdown, size %d", r, sk.Name, sk.Description, f.Size)
			}
		}
	})
}

// TestResourcesListWithoutUpstreamResources: an upstream that declares no
// resources (go-sdk then lists none) and one that does not know the method
// (-32601) both leave the sidecar's files as the whole listing, and the
// handshake through the sidecar declares resources.
func TestResourcesListWithoutUpstreamResources(t *testing.T) {
	t.Parallel()
	for _, ec := range eras() {
		for _, noMethod := range []bool{false, true} {
			name := ec.name + "/empty"
			if noMethod {
				name = ec.name + "/method-not-found"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				c, up, w := pdfSidecar(t, ctx, ec, testupstream.Config{NoResourcesMethod: noMethod,
					Tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}}, func(c *config.Config) { c.PageSize = 4 })
				direct := dialEra(t, ctx, ec, up.URL, "")
				if direct.CS.InitializeResult().Capabilities.Resources != nil {
					t.Fatalf("the upstream declares resources; the test needs one that does not")
				}
				if c.CS.InitializeResult().Capabilities.Resources == nil {
					t.Errorf("capabilities.resources missing through the sidecar")
				}
				got, _ := listAll(t, ctx, c.CS)
				if diff := cmp.Diff(sidecarFiles(w.Snapshot()), uris(got)); diff != "" {
					t.Errorf("resources/list (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestResourcesListModernCache: on 2026-07-28 the upstream's last page of
// resources/list carries the sidecar's skill files too, so its cache
// fields must allow no more than either side's would (SEP-2549): the
// lower ttlMs, and private when either side is. A page the sidecar
// answers alone carries its own.
func TestResourcesListModernCache(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	sidecartest.WriteTree(t, dir, pluginPDF())
	w := newWatcher(t, dir)
	up := testupstream.Start(t, testupstream.Config{Stateless: true, TTLMs: 60000, Resources: 1})
	direct := dialEra(t, ctx, eras()[1], up.URL, "")
	type cacheFields struct {
		TTL        *int64 `json:"ttlMs"`
		Scope      string `json:"cacheScope"`
		NextCursor string `json:"nextCursor"`
	}
	var theirs cacheFields
	direct.Call("resources/list", nil).OK(t, "resources/list from the upstream", &theirs)
	if theirs.TTL == nil || *theirs.TTL != 60000 || theirs.Scope != "public" || theirs.NextCursor != "" {
		t.Fatalf("the upstream's resources/list = ttlMs %v, cacheScope %q, nextCursor %q; the test assumes 60000, public and one page", theirs.TTL, theirs.Scope, theirs.NextCursor)
	}
	for _, tt := range []struct {
		ttl   int64
		scope string
		want  string
	}{
		{0, "private", `"ttlMs":0,"cacheScope":"private"`},
		{5000, "public", `"ttlMs":5000,"cacheScope":"public"`},
		{90000, "public", `"ttlMs":60000,"cacheScope":"public"`},
	} {
		side := newSidecar(t, up.URL, w.Snapshot, func(c *config.Config) { c.CacheTTLMs, c.CacheScope, c.PageSize = tt.ttl, tt.scope, 2 })
		via := dialEra(t, ctx, eras()[1], side, "")
		var got cacheFields
		via.Call("resources/list", nil).OK(t, "resources/list", &got)
		if got.TTL == nil || got.NextCursor == "" {
			t.Fatalf("sidecar ttl %d %s: merged page ttlMs %v, nextCursor %q; want both", tt.ttl, tt.scope, got.TTL, got.NextCursor)
		}
		if g := fmt.Sprintf(`"ttlMs":%d,"cacheScope":%q`, *got.TTL, got.Scope); g != tt.want {
			t.Errorf("sidecar ttl %d %s: merged resources/list page = %s, want %s", tt.ttl, tt.scope, g, tt.want)
		}
		var own cacheFields
		via.Call("resources/list", map[string]any{"cursor": got.NextCursor}).OK(t, "resources/list, the sidecar's page", &own)
		if g, want := fmt.Sprintf(`"ttlMs":%d,"cacheScope":%q`, *own.TTL, own.Scope), fmt.Sprintf(`"ttlMs":%d,"cacheScope":%q`, tt.ttl, tt.scope); g != want {
			t.Errorf("sidecar ttl %d %s: its own resources/list page = %s, want %s", tt.ttl, tt.scope, g, want)
		}
	}
}
