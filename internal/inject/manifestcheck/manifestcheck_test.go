package manifestcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const good = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: i}]
---
# a comment-only document is skipped
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: m}
spec:
  selector: {}
  podMetricsEndpoints: [{port: skills-metrics}]
`

func TestDecode(t *testing.T) {
	t.Parallel()
	objs, err := Decode([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Kind+"/"+o.Name)
	}
	if want := []string{"Deployment/web", "PodMonitor/m"}; !cmp.Equal(got, want) {
		t.Errorf("Decode = %q, want %q", got, want)
	}
}

// TestDecodeCatches feeds each mistake the check exists for.
func TestDecodeCatches(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		doc  string
		want string
	}{
		"misspelt field":   {strings.Replace(good, "containers:", "containerz:", 1), `unknown field "containerz"`},
		"misplaced field":  {strings.Replace(good, "  selector: {matchLabels", "  image: x\n  selector: {matchLabels", 1), `unknown field "image"`},
		"duplicate key":    {"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n", "already set"},
		"wrong type":       {"apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {ports: [{port: http}]}\n", "port"},
		"unknown kind":     {"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n", "unknown apiVersion/kind"},
		"crd field typo":   {strings.Replace(good, "podMetricsEndpoints: [{port:", "podMetricsEndpoints: [{prot:", 1), `unknown field`},
		"not yaml":         {"apiVersion: v1\nkind: [\n", "document 0"},
		"names the object": {strings.Replace(good, "containers:", "containerz:", 1), "document 0 (Deployment web)"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Decode([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Decode([]byte("apiVersion: x/v1\nkind: Y\n")); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v, want ErrUnknownKind", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		objs, err := Decode(in)
		if err == nil {
			for _, o := range objs {
				if o.Value == nil {
					t.Fatalf("object %s/%s without a value", o.Kind, o.Name)
				}
			}
		}
	})
}
