package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"
)

// ErrPatch is wrapped by ApplyPatch's errors.
var ErrPatch = errors.New("inject: cannot apply patch")

// ApplyPatch applies "add" and "replace" operations to a YAML (or JSON) document in
// place, with every path prefixed by prefix (for example "/spec/template"
// to patch a Deployment's pod template with a pod's patch). Key order,
// comments and styles of what it does not touch are kept.
func ApplyPatch(doc *yamlv3.Node, prefix string, ops []PatchOp) error {
	root := doc
	if root.Kind == yamlv3.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	for _, op := range ops {
		if op.Op != "add" && op.Op != "replace" {
			return fmt.Errorf("%w: op %q is not supported", ErrPatch, op.Op)
		}
		if err := apply(root, prefix+op.Path, op.Value, op.Op == "replace"); err != nil {
			return err
		}
	}
	return nil
}

// apply adds value at pointer or, with replace, replaces the value there,
// which must exist (RFC 6902 sections 4.1 and 4.3).
func apply(root *yamlv3.Node, pointer string, value any, replace bool) error {
	if !strings.HasPrefix(pointer, "/") {
		return fmt.Errorf("%w: path %q does not start with /", ErrPatch, pointer)
	}
	tokens := strings.Split(pointer[1:], "/")
	for i, t := range tokens {
		tokens[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	parent := root
	for _, t := range tokens[:len(tokens)-1] {
		next, err := child(parent, t)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPatch, pointer, err)
		}
		parent = next
	}
	v, err := toNode(value)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrPatch, pointer, err)
	}
	last := tokens[len(tokens)-1]
	switch parent.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(parent.Content); i += 2 {
			if parent.Content[i].Value == last {
				parent.Content[i+1] = v
				return nil
			}
		}
		if replace {
			return fmt.Errorf("%w: %s: no key %q to replace", ErrPatch, pointer, last)
		}
		parent.Content = append(parent.Content, &yamlv3.Node{Kind: yamlv3.ScalarNode, Tag: "!!str", Value: last}, v)
		return nil
	case yamlv3.SequenceNode:
		if replace {
			i, err := strconv.Atoi(last)
			if err != nil || i < 0 || i >= len(parent.Content) {
				return fmt.Errorf("%w: %s: no index %q to replace", ErrPatch, pointer, last)
			}
			parent.Content[i] = v
			return nil
		}
		if last == "-" {
			parent.Content = append(parent.Content, v)
			return nil
		}
		i, err := strconv.Atoi(last)
		if err != nil || i < 0 || i > len(parent.Content) {
			return fmt.Errorf("%w: %s: index %q out of range", ErrPatch, pointer, last)
		}
		parent.Content = append(parent.Content[:i], append([]*yamlv3.Node{v}, parent.Content[i:]...)...)
		return nil
	}
	return fmt.Errorf("%w: %s: parent is neither a mapping nor a sequence", ErrPatch, pointer)
}

// child returns the member t of a mapping or sequence node.
func child(n *yamlv3.Node, t string) (*yamlv3.Node, error) {
	switch n.Kind {
	case yamlv3.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == t {
				return n.Content[i+1], nil
			}
		}
		return nil, fmt.Errorf("no key %q", t)
	case yamlv3.SequenceNode:
		i, err := strconv.Atoi(t)
		if err != nil || i < 0 || i >= len(n.Content) {
			return nil, fmt.Errorf("no index %q", t)
		}
		return n.Content[i], nil
	case yamlv3.AliasNode:
		return child(n.Alias, t)
	}
	return nil, fmt.Errorf("%q is inside a scalar", t)
}

// toNode turns a value into YAML nodes through its JSON form (Kubernetes
// types carry json tags only), in block style.
func toNode(value any) (*yamlv3.Node, error) {
	j, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(j, &doc); err != nil {
		return nil, err
	}
	n := doc.Content[0]
	blockStyle(n)
	return n, nil
}

// blockStyle clears the flow and quoting styles JSON input leaves; the
// encoder quotes a string again where a plain scalar would change its type
// in YAML 1.2. A string that a YAML 1.1 reader (sigs.k8s.io/yaml, as
// kubectl and the API machinery read manifests) would take for another
// type, such as y, no, on or 0755, is quoted: a container's args
// copied into a patch must read back as the same strings.
func blockStyle(n *yamlv3.Node) {
	n.Style = 0
	if n.Kind == yamlv3.ScalarNode && n.Tag == "!!str" && !strings.Contains(n.Value, "\n") && !readsBackAsString(n.Value) {
		n.Style = yamlv3.SingleQuotedStyle // the emitter turns to double quotes where it must
	}
	if n.Kind == yamlv3.MappingNode && len(n.Content) == 0 {
		n.Style = yamlv3.FlowStyle // {} reads better than an empty block
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// readsBackAsString reports whether s, written as a plain scalar, is read
// back as the string s by a YAML 1.1 reader.
func readsBackAsString(s string) bool {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return false
	}
	str, ok := v.(string)
	return ok && str == s
}
