package wire

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestImportsArePure: the package reads values and returns values; net/http
// only for its Header type (no client, no server), mime for its parser, no
// clock, logger or metrics (docs/design.md, decision 11: a small pure
// core).
func TestImportsArePure(t *testing.T) {
	t.Parallel()
	allowed := []string{"encoding/base64", "mime", "net/http", "strconv", "strings", "unicode/utf8",
		"github.com/skills-sidecar/skills-sidecar/internal/reply", "github.com/skills-sidecar/skills-sidecar/internal/rewrite"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); !slices.Contains(allowed, p) {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}
