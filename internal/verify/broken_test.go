package verify

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func verifyFake(t *testing.T, f *fakeServer, opts Options) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts.URL = f.start(t)
	return Verify(ctx, opts)
}

func TestFakeConformant(t *testing.T) {
	t.Parallel()
	for _, era := range []string{EraAuto, EraLegacy, EraModern} {
		t.Run(era, func(t *testing.T) {
			t.Parallel()
			rep := verifyFake(t, newFake(), Options{Era: era})
			if rep.ExitCode != ExitOK || rep.Summary.Warn != 0 || len(rep.Skills) != 2 || len(rep.Agents) != 1 {
				t.Errorf("Verify(good fake, %s) exit %d, want 0 with no warnings, 2 skills, 1 agent:\n%s", era, rep.ExitCode, textOf(t, rep))
			}
		})
	}
}

const (
	refunds = "skill://acme/billing/refunds/SKILL.md"
	notes   = "skill://notes/SKILL.md"
)

// TestBrokenServers corrupts one thing at a time and wants the check that
// exists for it to catch it.
func TestBrokenServers(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		break_   func(f *fakeServer)
		opts     Options
		item     string // "" for a server-level check
		check    string
		status   Status
		wantExit int
	}{
		"wrong digest": {
			break_: func(f *fakeServer) {
				setRes(f, 0, "skill://acme/billing/refunds/examples/dup.md", "digest", "sha256:"+hex64('a'))
			},
			item: refunds, check: "files.digest", status: StatusFail, wantExit: ExitNonconformant,
		},
		"wrong size, right digest": {
			break_: func(f *fakeServer) { setRes(f, 0, "skill://acme/billing/refunds/assets/flow.png", "size", 7) },
			item:   refunds, check: "files.size", status: StatusFail, wantExit: ExitNonconformant,
		},
		"frontmatter mismatch": {
			break_: func(f *fakeServer) {
				f.skills[1]["frontmatter"].(map[string]any)["description"] = "Keep long notes."
			},
			item: notes, check: "frontmatter.match", status: StatusFail, wantExit: ExitNonconformant,
		},
		"frontmatter number read as octal": {
			break_: func(f *fakeServer) { f.skills[1]["frontmatter"].(map[string]any)["count"] = 8 },
			item:   notes, check: "frontmatter.match", status: StatusFail, wantExit: ExitNonconformant,
		},
		"missing SKILL.md self-entry": {
			break_: func(f *fakeServer) { f.skills[1]["resources"] = []any{} },
			item:   notes, check: "resources.complete", status: StatusFail, wantExit: ExitNonconformant,
		},
		"duplicate resource": {
			break_: func(f *fakeServer) { f.skills[1]["resources"] = append(resources(f, 1), resources(f, 1)[0]) },
			item:   notes, check: "resources.complete", status: StatusFail, wantExit: ExitNonconformant,
		},
		"resource outside the skill root": {
			break_: func(f *fakeServer) {
				f.skills[1]["resources"] = append(resources(f, 1), resEntry("skill://acme/billing/refunds/SKILL.md", []byte(refundsMD)))
			},
			item: notes, check: "resources.root", status: StatusFail, wantExit: ExitNonconformant,
		},
		"resource escaping with ..": {
			break_: func(f *fakeServer) {
				f.skills[1]["resources"] = append(resources(f, 1), resEntry("skill://notes/../acme/x.md", []byte("x")))
			},
			item: notes, check: "resources.root", status: StatusFail, wantExit: ExitNonconformant,
		},
		"name differs from the final segment": {
			break_: func(f *fakeServer) {
				const md = "---\nname: memo\ndescription: Keep short notes.\n---\n"
				f.files[notes] = fakeFile{text: md, mime: "text/markdown"}
				f.skills[1] = f.entry(notes, map[string]any{"name": "memo", "description": "Keep short notes."})
			},
			item: notes, check: "name.segment", status: StatusFail, wantExit: ExitNonconformant,
		},
		"name breaks the rule": {
			break_: func(f *fakeServer) {
				const md = "---\nname: Notes\ndescription: Keep short notes.\n---\n"
				f.files["skill://Notes/SKILL.md"] = fakeFile{text: md, mime: "text/markdown"}
				f.skills[1] = f.entry("skill://Notes/SKILL.md", map[string]any{"name": "Notes", "description": "Keep short notes."})
			},
			item: "skill://Notes/SKILL.md", check: "name.rule", status: StatusFail, wantExit: ExitNonconformant,
		},
		"entry split across two pages": {
			break_: func(f *fakeServer) { f.splitEntry = true },
			check:  "skills.list.pagination", status: StatusFail, wantExit: ExitNonconformant,
		},
		"cursor never ends": {
			break_: func(f *fakeServer) { f.endlessCursor = true },
			opts:   Options{MaxPages: 20},
			check:  "skills.list.pagination", status: StatusFail, wantExit: ExitNonconformant,
		},
		"dynamic skill is reported": {
			break_: func(f *fakeServer) { f.skills[1]["resources"] = "dynamic" },
			item:   notes, check: "resources.dynamic", status: StatusWarn, wantExit: ExitOK,
		},
		"dynamic skill under --require-digests": {
			break_: func(f *fakeServer) { f.skills[1]["resources"] = "dynamic" },
			opts:   Options{RequireDigests: true},
			item:   notes, check: "resources.dynamic", status: StatusFail, wantExit: ExitNonconformant,
		},
		"dynamic skill still has its frontmatter compared": {
			break_: func(f *fakeServer) {
				f.skills[1]["resources"] = "dynamic"
				f.skills[1]["frontmatter"].(map[string]any)["name"] = "notes2"
			},
			item: notes, check: "frontmatter.match", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agent tool absent from tools/list": {
			break_: func(f *fakeServer) {
				f.agentGet["helper"]["tools"] = []any{map[string]any{"name": "ghost", "inputSchema": map[string]any{"type": "object"}}}
			},
			item: "helper", check: "agent.tools", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agent tool differs from tools/list": {
			break_: func(f *fakeServer) {
				f.agentGet["helper"]["tools"] = []any{map[string]any{"name": "echo", "description": "Echo!", "inputSchema": map[string]any{"type": "object"}}}
			},
			item: "helper", check: "agent.tools", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get of an unknown agent succeeds": {
			break_: func(f *fakeServer) { f.agentGet[unknownAgent] = f.agentGet["helper"] },
			check:  "agents.get.unknown", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get agent is the card, not the name": {
			break_: func(f *fakeServer) { f.agentGet["helper"]["agent"] = f.agents[0] },
			item:   "helper", check: "agents.get", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get agent names another agent": {
			break_: func(f *fakeServer) { f.agentGet["helper"]["agent"] = "other" },
			item:   "helper", check: "agents.get", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get without cacheScope": {
			break_: func(f *fakeServer) { delete(f.agentGet["helper"], "cacheScope") },
			item:   "helper", check: "agents.get", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get without ttlMs": {
			break_: func(f *fakeServer) { delete(f.agentGet["helper"], "ttlMs") },
			item:   "helper", check: "agents.get", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get without resultType": {
			break_: func(f *fakeServer) { delete(f.agentGet["helper"], "resultType") },
			item:   "helper", check: "agents.get", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get instructions not a string": {
			break_: func(f *fakeServer) { f.agentGet["helper"]["instructions"] = []any{"Be", "helpful."} },
			item:   "helper", check: "agent.details", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get modelRoutingHint role not small, medium or large": {
			break_: func(f *fakeServer) {
				f.agentGet["helper"]["modelRoutingHint"] = map[string]any{"role": "sonnet", "vision": false}
			},
			item: "helper", check: "agent.details", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get modelRoutingHint vision not a boolean": {
			break_: func(f *fakeServer) {
				f.agentGet["helper"]["modelRoutingHint"] = map[string]any{"role": "small", "vision": "no"}
			},
			item: "helper", check: "agent.details", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get without tools": {
			break_: func(f *fakeServer) { delete(f.agentGet["helper"], "tools") },
			item:   "helper", check: "agent.tools", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agents/get of an unknown agent without data.reason": {
			break_: func(f *fakeServer) { f.noAgentReason = true },
			check:  "agents.get.unknown", status: StatusFail, wantExit: ExitNonconformant,
		},
		"agent without capabilities": {
			break_: func(f *fakeServer) { delete(f.agents[0], "capabilities") },
			item:   "helper", check: "agent.shape", status: StatusFail, wantExit: ExitNonconformant,
		},
		"skills declared, resources not": {
			break_: func(f *fakeServer) { delete(f.caps, "resources") },
			check:  "declaration.resources", status: StatusFail, wantExit: ExitNonconformant,
		},
		"skills not declared": {
			break_: func(f *fakeServer) { delete(f.caps["extensions"].(map[string]any), skillsExtension) },
			check:  "declaration.skills", status: StatusFail, wantExit: ExitNonconformant,
		},
		"skills settings wrapped, not an object": {
			break_: func(f *fakeServer) { f.caps["extensions"].(map[string]any)[skillsExtension] = true },
			check:  "declaration.skills", status: StatusFail, wantExit: ExitNonconformant,
		},
		"skills/get differs from the listing": {
			break_: func(f *fakeServer) {
				g := copyMap(f.skills[0])
				g["resources"] = resources(f, 0)[:1]
				f.getOverride = g
			},
			item: refunds, check: "skills.get", status: StatusFail, wantExit: ExitNonconformant,
		},
		"unknown skills/get succeeds": {
			break_: func(f *fakeServer) { f.unknownGetOK = true },
			check:  "skills.get.unknown", status: StatusFail, wantExit: ExitNonconformant,
		},
		"SKILL.md served as blob": {
			break_: func(f *fakeServer) { f.files[notes] = fakeFile{blob: []byte(notesMD), mime: "text/markdown"} },
			item:   notes, check: "skillmd.text", status: StatusFail, wantExit: ExitNonconformant,
		},
		"SKILL.md with the wrong mimeType": {
			break_: func(f *fakeServer) { f.files[notes] = fakeFile{text: notesMD, mime: "text/plain"} },
			item:   notes, check: "skillmd.text", status: StatusFail, wantExit: ExitNonconformant,
		},
		"directory listing misses a subdirectory": {
			break_: func(f *fakeServer) { f.hideDirEntry = "skill://acme/billing/refunds/assets/deep" },
			item:   refunds, check: "directory.read", status: StatusFail, wantExit: ExitNonconformant,
		},
		"malformed digest": {
			break_: func(f *fakeServer) { setRes(f, 1, notes, "digest", "sha256:ABC") },
			item:   notes, check: "resources.digest", status: StatusFail, wantExit: ExitNonconformant,
		},
		"reserved metadata key": {
			break_: func(f *fakeServer) {
				const md = "---\nname: notes\ndescription: Keep short notes.\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n"
				f.files[notes] = fakeFile{text: md, mime: "text/markdown"}
				f.skills[1] = f.entry(notes, map[string]any{"name": "notes", "description": "Keep short notes.",
					"metadata": map[string]any{"io.modelcontextprotocol/x": "y"}})
			},
			item: notes, check: "metadata.reserved", status: StatusWarn, wantExit: ExitOK,
		},
		"over the file limit": {
			break_: func(f *fakeServer) {
				for i := range 520 {
					u := "skill://notes/f/" + hex64(byte('a' + i%6))[:8] + "-" + itoa(i)
					f.files[u] = fakeFile{text: "x", mime: "text/plain"}
				}
				f.skills[1] = f.entry(notes, f.skills[1]["frontmatter"].(map[string]any))
			},
			item: notes, check: "resources.limits", status: StatusWarn, wantExit: ExitOK,
		},
		"modern results without cache fields": {
			break_: func(f *fakeServer) { f.noCache = true },
			opts:   Options{Era: EraModern},
			check:  "skills.list.cache", status: StatusFail, wantExit: ExitNonconformant,
		},
		"legacy-only server in auto": {
			break_: func(f *fakeServer) { f.modern = false },
			check:  "handshake", status: StatusOK, wantExit: ExitOK,
		},
		"file over --max-bytes is not read": {
			break_: func(*fakeServer) {},
			opts:   Options{MaxBytes: 10},
			item:   refunds, check: "files.read", status: StatusWarn, wantExit: ExitOK,
		},
		"SKILL.md over --max-bytes is not compared": {
			break_: func(*fakeServer) {},
			opts:   Options{MaxBytes: 10},
			item:   notes, check: "frontmatter.match", status: StatusWarn, wantExit: ExitOK,
		},
		"served bytes over the response bound": {
			break_: func(f *fakeServer) {
				f.files["skill://acme/billing/refunds/examples/dup.md"] = fakeFile{text: strings.Repeat("x", 3<<20), mime: "text/plain"}
			},
			opts: Options{MaxBytes: 200},
			item: refunds, check: "files.read", status: StatusFail, wantExit: ExitNonconformant,
		},
		"--max-skills stops the listing": {
			break_: func(*fakeServer) {},
			opts:   Options{MaxSkills: 1},
			check:  "skills.list.bound", status: StatusWarn, wantExit: ExitOK,
		},
		"agents-only server is judged on its agents": {
			break_: func(f *fakeServer) {
				delete(f.caps["extensions"].(map[string]any), skillsExtension)
				f.noSkills = true
			},
			check: "declaration.skills", status: StatusSkip, wantExit: ExitOK,
		},
		"legacy-only server under --era modern": {
			break_: func(f *fakeServer) { f.modern = false },
			opts:   Options{Era: EraModern},
			check:  "handshake", status: StatusFail, wantExit: ExitNonconformant,
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			tt.break_(f)
			rep := verifyFake(t, f, tt.opts)
			got, ok := findCheck(rep, tt.item, tt.check)
			if !ok || got.Status != tt.status || rep.ExitCode != tt.wantExit {
				t.Errorf("check %q of %q = %+v (found %t), exit %d; want status %s, exit %d\n%s",
					tt.check, tt.item, got, ok, rep.ExitCode, tt.status, tt.wantExit, textOf(t, rep))
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	_ = ln.Close()
	unauthorized := newFake()
	unauthorized.status = http.StatusUnauthorized
	forbidden := newFake()
	forbidden.status = http.StatusForbidden
	tests := map[string]struct {
		url  func(t *testing.T) string
		want int
	}{
		"401":         {url: unauthorized.start, want: ExitAuth},
		"403":         {url: forbidden.start, want: ExitAuth},
		"closed port": {url: func(*testing.T) string { return closed }, want: ExitUnreachable},
		"good":        {url: newFake().start, want: ExitOK},
		"hangs past the timeout": {url: func(t *testing.T) string {
			return newHTTPServer(t, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // the server notices a closed connection only after the body
				select {
				case <-r.Context().Done():
				case <-time.After(10 * time.Second):
				}
			}))
		}, want: ExitUnreachable},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			rep := Verify(ctx, Options{URL: tt.url(t)})
			if rep.ExitCode != tt.want {
				t.Errorf("Verify(%s).ExitCode = %d, want %d\n%s", name, rep.ExitCode, tt.want, textOf(t, rep))
			}
		})
	}
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func itoa(i int) string {
	return string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}
