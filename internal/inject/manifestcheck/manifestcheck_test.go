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

// TestProbeHosts: a probe or lifecycle handler that names a host is
// dialled by the kubelet from the node's network, not the pod's (so
// 127.0.0.1 is the node), and Pod Security baseline refuses it from
// Kubernetes 1.34; every pod template the chart renders is checked.
func TestProbeHosts(t *testing.T) {
	t.Parallel()
	const pod = `apiVersion: v1
kind: Pod
metadata: {name: verify}
spec:
  initContainers:
    - name: server
      image: i
      restartPolicy: Always
      startupProbe: {tcpSocket: {port: 3000, host: 127.0.0.1}}
  containers:
    - name: main
      image: i
      readinessProbe: {httpGet: {path: /readyz, port: 80}}
`
	const job = `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: c
              image: i
              lifecycle: {preStop: {httpGet: {path: /, port: 80, host: node.example}}}
`
	objs, err := Decode([]byte(pod + "---\n" + job + "---\n" + good))
	if err != nil {
		t.Fatal(err)
	}
	got := ProbeHosts(objs)
	want := []string{
		`Pod verify: container server: startupProbe names host "127.0.0.1"`,
		`CronJob nightly: container c: lifecycle.preStop names host "node.example"`,
	}
	if len(got) != len(want) {
		t.Fatalf("ProbeHosts = %v, want %d problems", got, len(want))
	}
	for i, err := range got {
		if !strings.Contains(err.Error(), want[i]) {
			t.Errorf("ProbeHosts[%d] = %v, want it to contain %q", i, err, want[i])
		}
	}
	// A probe of the pod's own IP (no host) is no problem.
	clean, err := Decode([]byte(strings.Replace(pod, ", host: 127.0.0.1", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := ProbeHosts(clean); len(got) != 0 {
		t.Errorf("ProbeHosts(no host) = %v, want none", got)
	}
}
