package verify

import (
	"context"
	"encoding/json"
	"fmt"
)

// maxTools bounds the tools/list read to resolve agent tools against.
const maxTools = 100_000

// unknownAgent is an agent name no server should know.
const unknownAgent = "skills-sidecar-verify-no-such-agent"

func (v *verifier) verifyAgents(ctx context.Context) {
	items, _ := v.listAll(ctx, listSpec{
		method: "agents/list", itemsKey: "agents", maxItems: v.opts.MaxSkills, cache: true,
		checks: &v.server, prefix: "agents.list",
		key: func(x any) string {
			m, _ := x.(map[string]any)
			s, _ := m["name"].(string)
			return s
		},
	})
	for _, it := range items {
		if v.fatal != nil {
			return
		}
		v.rep.Agents = append(v.rep.Agents, v.verifyAgent(ctx, it.raw))
	}
	if v.fatal != nil {
		return
	}
	_, err := v.call(ctx, "agents/get", map[string]any{"name": unknownAgent})
	v.expectInvalidParams(&v.server, "agents.get.unknown", "agents/get of an unknown name", err)
}

func (v *verifier) verifyAgent(ctx context.Context, raw json.RawMessage) *Item {
	var cs checks
	val, _ := decodeJSON(raw)
	name, reason := checkAgentShape(val)
	if reason != "" {
		cs.fail("agent.shape", "%s", reason)
		if name == "" {
			return &Item{ID: truncate(string(raw), 200), Checks: cs.list}
		}
	} else {
		cs.ok("agent.shape", "name and capabilities well formed")
	}
	res, err := v.call(ctx, "agents/get", map[string]any{"name": name})
	if err != nil {
		cs.fail("agents.get", "agents/get: %v", err)
		return &Item{ID: name, Checks: cs.list}
	}
	var r struct {
		Agent map[string]any    `json:"agent"`
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Agent == nil {
		cs.fail("agents.get", "agents/get result lacks an agent object or a tools array")
		return &Item{ID: name, Checks: cs.list}
	}
	if got, _ := r.Agent["name"].(string); got != name {
		cs.fail("agents.get", "agents/get returned agent %q", got)
	} else if v.c.modern && cacheProblem(res) != "" {
		cs.fail("agents.get", "%s", cacheProblem(res))
	} else {
		cs.ok("agents.get", "")
	}
	v.checkAgentTools(ctx, r.Tools, &cs)
	return &Item{ID: name, Checks: cs.list}
}

// checkAgentShape checks an agents/list entry: {name, description?,
// capabilities: string[]}. It returns the name (if any) and a problem.
func checkAgentShape(v any) (name, problem string) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", fmt.Sprintf("entry is %s, want an object", kind(v))
	}
	name, _ = m["name"].(string)
	if name == "" {
		return "", "name is missing or not a non-empty string"
	}
	if d, ok := m["description"]; ok {
		if _, isStr := d.(string); !isStr {
			return name, fmt.Sprintf("description is %s, want a string", kind(d))
		}
	}
	caps, ok := m["capabilities"].([]any)
	if !ok {
		return name, fmt.Sprintf("capabilities is %s, want an array of strings", kind(m["capabilities"]))
	}
	for i, c := range caps {
		if _, isStr := c.(string); !isStr {
			return name, fmt.Sprintf("capabilities[%d] is %s, want a string", i, kind(c))
		}
	}
	return name, ""
}

// checkAgentTools checks that every tool agents/get returns is in tools/list
// and identical to it in every field.
func (v *verifier) checkAgentTools(ctx context.Context, tools []json.RawMessage, cs *checks) {
	if len(tools) == 0 {
		cs.ok("agent.tools", "no tools")
		return
	}
	listed, err := v.toolsList(ctx)
	if err != nil {
		cs.fail("agent.tools", "tools/list: %v", err)
		return
	}
	for _, raw := range tools {
		got, err := decodeJSON(raw)
		m, _ := got.(map[string]any)
		name, _ := m["name"].(string)
		if err != nil || name == "" {
			cs.fail("agent.tools", "a tool has no name")
			continue
		}
		want, ok := listed[name]
		if !ok {
			cs.fail("agent.tools", "tool %q is not in tools/list", name)
			continue
		}
		if d := diffJSON("tool", want, got); d != "" {
			cs.fail("agent.tools", "tool %q differs from tools/list: %s", name, d)
		}
	}
	cs.ok("agent.tools", fmt.Sprintf("%d tools identical to tools/list", len(tools)))
}

// toolsList fetches tools/list once (every page) and indexes it by name.
func (v *verifier) toolsList(ctx context.Context) (map[string]any, error) {
	if v.tools != nil || v.toolsErr != nil {
		return v.tools, v.toolsErr
	}
	var cs checks
	items, complete := v.listAll(ctx, listSpec{
		method: "tools/list", itemsKey: "tools", maxItems: maxTools, checks: &cs, prefix: "tools.list",
		key: func(x any) string {
			m, _ := x.(map[string]any)
			s, _ := m["name"].(string)
			return s
		},
	})
	if !complete {
		reason := "incomplete"
		if len(cs.list) > 0 {
			reason = cs.list[len(cs.list)-1].Reason
		}
		v.toolsErr = fmt.Errorf("%s", reason)
		return nil, v.toolsErr
	}
	v.tools = map[string]any{}
	for _, it := range items {
		val, _ := decodeJSON(it.raw)
		m, _ := val.(map[string]any)
		if name, ok := m["name"].(string); ok {
			v.tools[name] = val
		}
	}
	return v.tools, nil
}
