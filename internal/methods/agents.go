package methods

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/reply"
	"github.com/skills-sidecar/skills-sidecar/internal/rewrite"
)

// MetaAgent is the _meta key under which agents/get carries what the agent
// file says beyond the draft's fields: the frontmatter as written and the
// agent's skills mapped to their skill:// URIs.
const MetaAgent = "io.skills-sidecar/agent"

func (h *Handler) agentsList(v *view, e era, msg rewrite.Message) ([]byte, error) {
	last, has, err := cursorParam(msg, cursorAgents)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 1024)
	b = append(b, '{')
	b = listPage(b, "agents", v.agentNames, v.agentCards, last, has, h.opts.PageSize, cursorAgents)
	return h.finish(b, e, true), nil
}

func agentError(code int, msg, reason string, extra map[string]any) *reply.Error {
	data := map[string]any{"reason": reason}
	for k, x := range extra {
		data[k] = x
	}
	return &reply.Error{Status: http.StatusOK, Code: code, Message: msg, Data: data}
}

// agentsGet answers agents/get. Its tools are the upstream's own tools/list
// entries for this caller (fetched with the caller's credentials through
// Options.Tools), passed on byte for byte in the agent file's order.
func (h *Handler) agentsGet(v *view, e era, msg rewrite.Message, r *http.Request) ([]byte, error) {
	name, ok := paramString(msg.Params, "name")
	if !ok || name == "" {
		return nil, agentError(reply.CodeInvalidParams, "agents/get needs params.name, a non-empty string", "invalid_params", nil)
	}
	var a *catalog.Agent
	if v.snap != nil {
		a, _ = v.snap.Agent(name)
	}
	if a == nil {
		// The draft's reference server's wording; data.reason is the draft's
		// stable discriminator, data.name says which name was asked for.
		return nil, agentError(reply.CodeInvalidParams, "Agent not found", "agent_not_found", map[string]any{"name": name})
	}
	tools, rerr := h.resolveTools(r, msg, a)
	if rerr != nil {
		return nil, rerr
	}
	// GetAgentResult.agent is the name of the agent the details belong to,
	// a string (agents draft, "Retrieving Agent Details"); the card's
	// description and capabilities belong to agents/list only.
	// Members in the order of the draft's example reply, so a reply can be
	// compared with it byte for byte (testdata/agents-get-draft.json).
	b := make([]byte, 0, 2048)
	b = append(b, `{"resultType":"complete","agent":`...)
	b = rewrite.AppendString(b, a.Name)
	if a.HasInstructions {
		b = append(b, `,"instructions":`...)
		b = append(b, mustJSON(a.Instructions)...)
	}
	if a.ModelRole != "" {
		b = append(b, `,"modelRoutingHint":{"role":`...)
		b = append(b, quote(a.ModelRole)...)
		b = append(b, `,"vision":false}`...)
	}
	b = append(b, `,"tools":[`...)
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, t...)
	}
	b = append(b, ']')
	b = append(b, h.cache...)
	b = append(b, `,"_meta":{`...)
	b = append(b, quote(MetaAgent)...)
	b = append(b, ':')
	b = append(b, encodeAgentMeta(a)...)
	if e.modern {
		// The serverInfo member of h.metaInfo, after the agent's own member.
		b = append(b, ',')
		b = append(b, h.metaInfo[len(`,"_meta":{`):len(h.metaInfo)-1]...)
	}
	return append(b, "}}"...), nil
}

func encodeAgentMeta(a *catalog.Agent) []byte {
	skills := make(map[string]string, len(a.Skills))
	for _, s := range a.Skills {
		skills[s.Name] = s.URI
	}
	fm := a.Frontmatter
	if len(fm) == 0 {
		fm = json.RawMessage("{}")
	}
	return mustJSON(struct {
		Frontmatter json.RawMessage   `json:"frontmatter"`
		Skills      map[string]string `json:"skills"`
	}{fm, skills})
}

// resolveTools maps the agent's tool names to the upstream's tool objects.
func (h *Handler) resolveTools(r *http.Request, msg rewrite.Message, a *catalog.Agent) ([]json.RawMessage, error) {
	if len(a.Tools) == 0 {
		return nil, nil
	}
	if h.opts.Tools == nil {
		return nil, agentError(reply.CodeInternalError, "agent "+quote(a.Name)+" names tools but no upstream tool source is configured", "invalid_agent_definition", map[string]any{"missing": a.Tools})
	}
	byName, err := h.opts.Tools.Tools(r, msg)
	if err != nil {
		return nil, fmt.Errorf("resolve agent tools: %w", err) // the proxy maps it
	}
	var out []json.RawMessage
	var missing []string
	for _, n := range a.Tools {
		t, ok := byName[n]
		switch {
		case ok:
			out = append(out, t)
		case !h.opts.DropUnknownTools:
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, agentError(reply.CodeInternalError, "agent "+quote(a.Name)+" names tools the server does not offer", "invalid_agent_definition",
			map[string]any{"agent": a.Name, "missing": missing})
	}
	return out, nil
}
