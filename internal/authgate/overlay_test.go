package authgate_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skills-sidecar/skills-sidecar/internal/testupstream"
)

// The gate under --upstream-files auto (the default): the upstream serves one
// of the catalog's skill files itself and requires a bearer token.

const (
	servedURI = "skill://incident-summary/SKILL.md"
	// upstreamSkill is what the upstream serves at servedURI to alice; to
	// bob it serves nothing there, so bob gets the plugin folder's file.
	upstreamSkill = "---\nname: incident-summary\ndescription: The upstream's own incident summary.\n---\n# Served by the upstream\n"
)

// skillsUpstream is a go-sdk server behind the bearer-token middleware,
// admitting alice and bob, that serves servedURI itself to alice only.
func skillsUpstream(stateless bool) http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "skills-upstream", Version: "1"}, nil)
	s.AddResource(&mcp.Resource{URI: servedURI, Name: "incident-summary", MIMEType: "text/markdown"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			if r.Extra == nil || r.Extra.TokenInfo == nil || r.Extra.TokenInfo.UserID != "alice" {
				return nil, mcp.ResourceNotFoundError(r.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/markdown", Text: upstreamSkill}}}, nil
		})
	h := testupstream.Handler(s, &mcp.StreamableHTTPOptions{Stateless: stateless})
	return bearer(h, map[string]string{"alice-token": "alice", "bob-token": "bob"})
}

// servedSkill is one skill entry of a skills/list or skills/get result.
type servedSkill struct {
	URI         string `json:"uri"`
	Frontmatter struct {
		Description string `json:"description"`
	} `json:"frontmatter"`
	Resources []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
	} `json:"resources"`
}

// published returns the digest and description the result of skills/list or
// skills/get (body) publishes for servedURI.
func published(t *testing.T, body string) (digest, description string) {
	t.Helper()
	var m struct {
		Result struct {
			Skills []servedSkill `json:"skills"`
			Skill  *servedSkill  `json:"skill"`
		} `json:"result"`
	}
	if err := json.Unmarshal(message(body), &m); err != nil {
		t.Fatalf("reply %s: %v", body, err)
	}
	skills := m.Result.Skills
	if m.Result.Skill != nil {
		skills = append(skills, *m.Result.Skill)
	}
	for _, sk := range skills {
		for _, f := range sk.Resources {
			if sk.URI == servedURI && f.URI == servedURI {
				return f.Digest, sk.Frontmatter.Description
			}
		}
	}
	t.Fatalf("reply %s does not list %s", body, servedURI)
	return "", ""
}

// readText returns the text of a resources/read reply.
func readText(t *testing.T, body string) string {
	t.Helper()
	var m struct {
		Result struct {
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		} `json:"result"`
	}
	if err := json.Unmarshal(message(body), &m); err != nil || len(m.Result.Contents) != 1 {
		t.Fatalf("resources/read reply %s (%v), want one content", body, err)
	}
	return m.Result.Contents[0].Text
}

// TestGateWithUpstreamFiles: with the overlay on, a caller without a token
// gets nothing (not the upstream's file, not its digest, not the sidecar's
// files), alice gets the upstream's bytes and their digest, and bob, whom
// the upstream does not serve that file, gets the plugin folder's: what the
// overlay learns for one token is never another's answer.
func TestGateWithUpstreamFiles(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte(upstreamSkill))
	upstreamDigest := "sha256:" + hex.EncodeToString(sum[:])
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			u, snap := sidecar(t, skillsUpstream(era.stateless), sidecarOptions{overlay: true})
			own, ok := snap.File(servedURI)
			if !ok {
				t.Fatalf("the example plugin has no %s", servedURI)
			}
			if own.Digest == upstreamDigest {
				t.Fatal("the upstream's file must differ from the plugin's")
			}
			alice := http.Header{"Authorization": {"Bearer alice-token"}}
			bob := http.Header{"Authorization": {"Bearer bob-token"}}
			wrong := http.Header{"Authorization": {"Bearer wrong"}}
			if !era.stateless {
				alice, bob = legacySession(t, u, alice), legacySession(t, u, bob)
				wrong.Set("Mcp-Session-Id", alice.Get("Mcp-Session-Id"))
			}

			refused := func(when string) {
				t.Helper()
				for _, c := range calls() {
					for _, caller := range []struct {
						name string
						hdr  http.Header
					}{{"no token", http.Header{}}, {"wrong token", wrong}} {
						resp, body := do(t, u, c, era.stateless, caller.hdr)
						if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata") {
							t.Errorf("%s: %s with %s = %d (WWW-Authenticate %q), want 401 with the upstream's WWW-Authenticate",
								when, c.method, caller.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
						}
						if strings.Contains(body, "skill://") || strings.Contains(body, "upstream's own") || strings.Contains(body, "sha256:") {
							t.Errorf("%s: %s with %s leaked content: %s", when, c.method, caller.name, body)
						}
					}
				}
			}
			sees := func(who string, hdr http.Header, text, digest string) {
				t.Helper()
				for _, c := range []call{{"skills/list", `{}`}, {"skills/get", fmt.Sprintf(`{"uri":%q}`, servedURI)}} {
					resp, body := do(t, u, c, era.stateless, hdr)
					if resp.StatusCode != http.StatusOK {
						t.Errorf("%s: %s = %d %s, want a result", who, c.method, resp.StatusCode, body)
						continue
					}
					if got, _ := published(t, body); got != digest {
						t.Errorf("%s: %s publishes %s for %s, want %s", who, c.method, got, servedURI, digest)
					}
				}
				resp, body := do(t, u, call{"resources/read", fmt.Sprintf(`{"uri":%q}`, servedURI)}, era.stateless, hdr)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: resources/read = %d %s, want a result", who, resp.StatusCode, body)
				} else if got := readText(t, body); got != text {
					t.Errorf("%s: resources/read text = %.80q, want %.80q", who, got, text)
				}
			}

			refused("before anyone")
			sees("alice", alice, upstreamSkill, upstreamDigest)
			sees("bob after alice", bob, string(own.Data), own.Digest)
			sees("alice after bob", alice, upstreamSkill, upstreamDigest)
			refused("after alice and bob")

			_, body := do(t, u, call{"skills/list", `{}`}, era.stateless, alice)
			if _, desc := published(t, body); !strings.Contains(desc, "upstream's own") {
				t.Errorf("alice's listing describes %s as %q, want the upstream's SKILL.md frontmatter", servedURI, desc)
			}
		})
	}
}
