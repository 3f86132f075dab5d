package verify

import (
	"context"
	"encoding/json"
	"errors"
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
	// The draft: -32602 with the stable discriminator data.reason
	// "agent_not_found".
	var re *RPCError
	if errors.As(err, &re) && re.Code == codeInvalidParams {
		var reason any
		_ = readFields(re.Data, map[string]any{"reason": &reason})
		if reason != "agent_not_found" {
			v.server.fail("agents.get.unknown", "agents/get of an unknown name: data.reason is %s, want \"agent_not_found\"", truncate(mustCompact(reason), 80))
		}
	}
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
	tools, ok := checkAgentDetails(res, name, &cs)
	if ok {
		v.checkAgentTools(ctx, tools, &cs)
	}
	return &Item{ID: name, Checks: cs.list}
}

// modelRoles are the draft's modelRoutingHint.role values.
var modelRoles = map[string]bool{"small": true, "medium": true, "large": true}

// checkAgentDetails checks an agents/get result against the draft's
// GetAgentResult: agent is the requested agent's name (a string, not the
// card), tools an array, instructions a string when present,
// modelRoutingHint {role?: small|medium|large, vision: boolean} when present,
// and the CacheableResult fields (resultType "complete", ttlMs, cacheScope).
// The draft defines the extension's results with the cache fields required
// whatever the era, so they are checked on both wires. It returns the tools
// when they are an array of objects to resolve against tools/list.
func checkAgentDetails(res json.RawMessage, name string, cs *checks) ([]json.RawMessage, bool) {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(res, &r); err != nil || r == nil {
		cs.fail("agents.get", "agents/get result is not an object")
		return nil, false
	}
	agent, _ := decodeJSON(r["agent"])
	switch a := agent.(type) {
	case string:
		if a != name {
			cs.fail("agents.get", "agents/get agent is %q, want the requested name %q", a, name)
		}
	default:
		cs.fail("agents.get", "agents/get agent is %s, want a string: the name of the agent the details belong to (draft GetAgentResult)", kind(agent))
	}
	if p := cacheProblem(res); p != "" {
		cs.fail("agents.get", "agents/get: %s", p)
	}
	cs.ok("agents.get", "agent name and cache fields as the draft defines them")

	if raw, ok := r["instructions"]; ok {
		x, _ := decodeJSON(raw)
		if _, isStr := x.(string); !isStr {
			cs.fail("agent.details", "instructions is %s, want a string", kind(x))
		}
	}
	if raw, ok := r["modelRoutingHint"]; ok {
		if p := hintProblem(raw); p != "" {
			cs.fail("agent.details", "modelRoutingHint %s", p)
		}
	}
	cs.ok("agent.details", "instructions and modelRoutingHint well formed or absent")

	var tools []json.RawMessage
	if err := json.Unmarshal(r["tools"], &tools); err != nil || r["tools"] == nil || string(r["tools"]) == "null" {
		x, _ := decodeJSON(r["tools"])
		cs.fail("agent.tools", "tools is %s, want an array of Tool objects", kind(x))
		return nil, false
	}
	return tools, true
}

// hintProblem checks a modelRoutingHint: an object whose role, when present,
// is small, medium or large and whose vision is a boolean.
func hintProblem(raw json.RawMessage) string {
	x, _ := decodeJSON(raw)
	m, ok := x.(map[string]any)
	if !ok {
		return fmt.Sprintf("is %s, want an object", kind(x))
	}
	if role, has := m["role"]; has {
		if s, isStr := role.(string); !isStr || !modelRoles[s] {
			return fmt.Sprintf("role is %s, want \"small\", \"medium\" or \"large\"", truncate(mustCompact(role), 80))
		}
	}
	if _, isBool := m["vision"].(bool); !isBool {
		return fmt.Sprintf("vision is %s, want a boolean", kind(m["vision"]))
	}
	return ""
}

// mustCompact is v as compact JSON, for a reason.
func mustCompact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
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
