package demo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SkillFiles makes s serve part of a plugin folder's skill files itself,
// the way an upstream that publishes its own skill resources does, so the
// end-to-end scripts can check that the sidecar publishes digests of the
// upstream's bytes, not the plugin's:
//
//   - every SKILL.md is a static resource (resources/list), and
//   - every file in a skill's examples/ folder is served through one URI
//     template per skill, skill://<skill>/examples/{file} (resources/
//     templates/list; RFC 6570 level 1, so {file} matches no "/"),
//
// each with its line endings rewritten to CRLF, so the upstream's bytes
// differ from the plugin's. Every other file is left to the plugin. With
// drift, every read of a file after its first appends a line: an upstream
// whose bytes change under a published digest, which a verifying host must
// catch. It returns how many files it serves.
func SkillFiles(s *mcp.Server, dir string, drift bool) (int, error) {
	skills := os.DirFS(dir)
	var reads sync.Map // uri -> *atomic.Int64 (reads so far, for drift)
	serve := func(uri, name string) (*mcp.ReadResourceResult, error) {
		b, err := fs.ReadFile(skills, name)
		if err != nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("%s is not text", name)
		}
		text := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n", "\r\n")
		if drift {
			n, _ := reads.LoadOrStore(uri, new(atomic.Int64))
			if c := n.(*atomic.Int64).Add(1) - 1; c > 0 {
				text += fmt.Sprintf("changed after read %d\r\n", c)
			}
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
	}
	count := 0
	err := fs.WalkDir(skills, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Base(p) != "SKILL.md" {
			return err
		}
		skill := path.Dir(p)
		uri := "skill://" + skill + "/SKILL.md"
		s.AddResource(&mcp.Resource{URI: uri, Name: skill, MIMEType: "text/markdown"},
			func(_ context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return serve(uri, p)
			})
		count++
		examples, _ := fs.ReadDir(skills, path.Join(skill, "examples"))
		if len(examples) == 0 {
			return nil
		}
		prefix := "skill://" + skill + "/examples/"
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: prefix + "{file}", Name: skill + " examples", MIMEType: "text/markdown"},
			func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				file, ok := strings.CutPrefix(r.Params.URI, prefix)
				if !ok || file == "" || strings.Contains(file, "/") {
					return nil, mcp.ResourceNotFoundError(r.Params.URI)
				}
				return serve(r.Params.URI, path.Join(skill, "examples", file))
			})
		for _, e := range examples {
			if !e.IsDir() {
				count++
			}
		}
		return nil
	})
	return count, err
}
