package inject

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInjectServiceWarnings: inject -f warns about each Service in the
// stream that reaches an injected app's own port, and about no other.
func TestInjectServiceWarnings(t *testing.T) {
	t.Parallel()
	const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: server, namespace: shop}
spec:
  selector: {matchLabels: {app: server}}
  template:
    metadata:
      labels: {app: server, tier: mcp}
      annotations:
        skills-sidecar.io/inject: "true"
        skills-sidecar.io/plugin-image: example/plugin:1
%s
    spec:
      containers:
        - name: server
          image: example/server:1
          ports: [{name: http, containerPort: 3000}]
`
	service := func(name, ns, selector, ports string) string {
		return "---\napiVersion: v1\nkind: Service\nmetadata: {name: " + name + ", namespace: " + ns + "}\nspec:\n  selector: " + selector + "\n  ports: " + ports + "\n"
	}
	services := service("by-name", "shop", "{app: server}", "[{name: mcp, port: 80, targetPort: http}]") +
		service("by-number", "shop", "{app: server}", "[{port: 80, targetPort: 3000}]") +
		service("defaulted", "shop", "{app: server}", "[{port: 3000}]") +
		service("sidecar", "shop", "{app: server}", "[{port: 80, targetPort: skills-mcp}, {port: 81, targetPort: 17080}]") +
		service("app-renamed", "shop", "{app: server}", "[{port: 80, targetPort: skills-app}]") +
		service("other-app", "shop", "{app: other}", "[{port: 80, targetPort: 3000}]") +
		service("other-ns", "web", "{app: server}", "[{port: 80, targetPort: 3000}]") +
		service("no-selector", "shop", "{}", "[{port: 80, targetPort: 3000}]")
	for name, tc := range map[string]struct {
		annotation string
		want       []string
	}{
		"no takeover": {"", []string{
			`Service by-name port mcp targets the app's own port http of Deployment server, so its clients bypass the sidecar: set targetPort: skills-mcp, or annotate the pod template with skills-sidecar.io/port-takeover: "http" so the sidecar takes that name`,
			`Service by-number port 80 targets the app's own port 3000 of Deployment server, so its clients bypass the sidecar: set targetPort: skills-mcp`,
			`Service defaulted port 3000 targets the app's own port 3000 of Deployment server, so its clients bypass the sidecar: set targetPort: skills-mcp`,
		}},
		"takeover": {"        skills-sidecar.io/port-takeover: http", []string{
			`Service by-number port 80 targets the app's own port 3000 of Deployment server, so its clients bypass the sidecar: set targetPort: http`,
			`Service defaulted port 3000 targets the app's own port 3000 of Deployment server, so its clients bypass the sidecar: set targetPort: http`,
			`Service app-renamed port 80 targets the app's own port skills-app of Deployment server, so its clients bypass the sidecar: set targetPort: http`,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := strings.Replace(deployment, "%s\n", tc.annotation+"\n", 1) + services
			in = strings.Replace(in, "\n\n", "\n", 1)
			var stdout, stderr bytes.Buffer
			if code := RunInject(context.Background(), []string{"-f", "-"}, testHost, strings.NewReader(in), &stdout, &stderr); code != ExitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var got []string
			for _, l := range strings.Split(stderr.String(), "\n") {
				if w, ok := strings.CutPrefix(l, "inject: warning: "); ok {
					got = append(got, w)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s\nstderr:\n%s", diff, stderr.String())
			}
			if !strings.Contains(stdout.String(), "name: by-name") {
				t.Error("the Services were not written out")
			}
		})
	}
}
