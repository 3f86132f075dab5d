package inject

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skills-sidecar/skills-sidecar/internal/inject/manifestcheck"
)

func TestRunInjectConfigMap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "skills", "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skills", "hello", "SKILL.md"), []byte("---\nname: hello\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := RunInject(context.Background(), []string{"configmap", "--name", "demo", dir}, testHost, nil, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := manifestcheck.Decode(stdout.Bytes()); err != nil || !strings.Contains(stdout.String(), "skills__hello__SKILL.md") {
		t.Errorf("output = %s, %v", stdout.String(), err)
	}
	if !strings.Contains(stderr.String(), `skills-sidecar.io/plugin-configmaps: "demo,demo-1,demo-2,demo-3"`) {
		t.Errorf("stderr lacks the annotation: %s", stderr.String())
	}
}

// TestUsageErrors pins exit 2 and a message naming the flag for each
// misuse of both commands.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		webhook bool
		args    []string
		want    string
	}{
		"inject no file":       {false, nil, "-f: required"},
		"inject bad policy":    {false, []string{"-f", "-", "--image-pull-policy", "Sometimes"}, "--image-pull-policy"},
		"inject bad resources": {false, []string{"-f", "-", "--resources", "{\"cpu\":1}"}, "--resources"},
		"inject bad port":      {false, []string{"-f", "-", "--port", "0"}, "--port"},
		// Found in a day-2 review: each was taken as the default of every
		// injected sidecar, the first making pods the API server refuses
		// (a request above its limit), the others a sidecar with no
		// resources at all.
		"inject request over limit":  {false, []string{"-f", "-", "--resources", `{"requests":{"memory":"512Mi"},"limits":{"memory":"256Mi"}}`}, "--resources: the memory request 512Mi is more than its limit 256Mi"},
		"webhook request over limit": {true, []string{"--tls-cert-file", "a", "--tls-key-file", "b", "--resources", `{"requests":{"memory":"512Mi"},"limits":{"memory":"256Mi"}}`}, "--resources: the memory request"},
		"webhook port is metrics":    {true, []string{"--tls-cert-file", "a", "--tls-key-file", "b", "--port", "17090"}, "--port: 17090 is the sidecar's default metrics port"},
		"inject empty resources":     {false, []string{"-f", "-", "--resources", ""}, "--resources: \"\" is not a ResourceRequirements"},
		"inject null resources":      {false, []string{"-f", "-", "--resources", "null"}, "--resources: \"null\" is not a ResourceRequirements"},
		"configmap no name":          {false, []string{"configmap", "dir"}, "--name"},
		"webhook no tls":             {true, nil, "--tls-cert-file"},
		"webhook bad on-error":       {true, []string{"--tls-cert-file", "a", "--tls-key-file", "b", "--on-error", "maybe"}, "--on-error"},
		"webhook bad level":          {true, []string{"--tls-cert-file", "a", "--tls-key-file", "b", "--log-level", "loud"}, "--log-level"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			var code int
			if tc.webhook {
				code = RunWebhook(context.Background(), tc.args, testHost, &stdout, &stderr)
			} else {
				code = RunInject(context.Background(), tc.args, testHost, strings.NewReader(""), &stdout, &stderr)
			}
			if code != ExitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d naming %s", code, stderr.String(), ExitUsage, tc.want)
			}
		})
	}
}

// TestRunWebhookServes starts the webhook on loopback with a generated
// certificate and stops it through the context.
func TestRunWebhookServes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeCert(t, certFile, keyFile, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- RunWebhook(ctx, []string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--tls-cert-file", certFile, "--tls-key-file", keyFile}, testHost, &bytes.Buffer{}, &stderr)
	}()
	cancel()
	if code := <-done; code != ExitOK {
		t.Errorf("RunWebhook = %d after cancel, want 0; log:\n%s", code, stderr.String())
	}
}

// TestRunInjectConfigMapCount: by default four ConfigMaps are written and
// named, the same names on every render; --mounted (or its older name
// --configmaps) sets the count; a plugin that needs more is refused with
// the count that fits and the order of the steps.
func TestRunInjectConfigMapCount(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 30 {
		p := filepath.Join(dir, "skills", "s", fmt.Sprintf("f%02d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 20_000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := RunInject(context.Background(), append([]string{"configmap", "--name", "p"}, append(args, dir)...), testHost, nil, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, msg := run()
	if code != ExitOK || !strings.Contains(msg, `plugin-configmaps: "p,p-1,p-2,p-3"`) || strings.Count(out, "kind: ConfigMap") != 4 ||
		!strings.Contains(msg, "every render with --mounted 4 writes these 4 names") ||
		!strings.Contains(msg, "kubectl apply --prune -l skills-sidecar.io/plugin=p --prune-allowlist=core/v1/ConfigMap") {
		t.Errorf("default: exit %d, %d ConfigMaps, stderr = %s", code, strings.Count(out, "kind: ConfigMap"), msg)
	}
	for _, flag := range []string{"--mounted", "--configmaps"} {
		if code, out, msg := run(flag, "5"); code != ExitOK || !strings.Contains(msg, `plugin-configmaps: "p,p-1,p-2,p-3,p-4"`) || strings.Count(out, "kind: ConfigMap") != 5 {
			t.Errorf("%s 5: exit %d, %d ConfigMaps, stderr = %s", flag, code, strings.Count(out, "kind: ConfigMap"), msg)
		}
	}
	if code, _, msg := run("--mounted", "5", "--configmaps", "4"); code != ExitUsage || !strings.Contains(msg, "one setting") {
		t.Errorf("--mounted 5 --configmaps 4: exit %d, stderr = %s", code, msg)
	}
	// Growing past what the workloads mount is an error that says what to do.
	if code, out, msg := run("--mounted", "2"); code != ExitFail || out != "" || !strings.Contains(msg, "more than the 2 it is rendered into") ||
		!strings.Contains(msg, `first set skills-sidecar.io/plugin-configmaps to "p,p-1,p-2`) || !regexp.MustCompile(`render it with --mounted [3-9]\b`).MatchString(msg) {
		t.Errorf("--mounted 2 for 600 KB: exit %d, stderr = %s", code, msg)
	}
	if code, _, _ := run("--configmaps", "1"); code != ExitFail {
		t.Errorf("600 KB in one ConfigMap: exit %d, want %d", code, ExitFail)
	}
}

// testHost is a release build with no environment.
var testHost = Host{Version: "0.1.0"}

// TestDefaultImage: --image defaults to $SKILLS_SIDECAR_IMAGE (the
// injector's own image, set by the chart and the kustomize base), else to
// the release's own tag; a build without a release version has no default,
// and inject -f then asks for --image rather than injecting "latest".
func TestDefaultImage(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == ImageEnv {
				return v
			}
			return ""
		}
	}
	for _, tc := range []struct {
		host Host
		want string
	}{
		{Host{Version: "0.1.0"}, "skills-sidecar/skills-sidecar:0.1.0"},
		{Host{Version: "v1.2.3"}, "skills-sidecar/skills-sidecar:1.2.3"},
		{Host{Version: "v1.2.3", Getenv: env("reg.example/mirror/ss@sha256:abc")}, "reg.example/mirror/ss@sha256:abc"},
		{Host{Version: "dev", Getenv: env("reg.example/ss:9")}, "reg.example/ss:9"},
		{Host{Version: "dev"}, ""},
		{Host{Version: "v1.2.3-4-gdeadbee-dirty"}, ""},
		{Host{}, ""},
	} {
		if got := DefaultImage(tc.host); got != tc.want {
			t.Errorf("DefaultImage(%+v) = %q, want %q", tc.host, got, tc.want)
		}
	}
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    skills-sidecar.io/inject: \"true\"\n    skills-sidecar.io/plugin-image: example/plugin:1\nspec:\n  containers:\n    - name: app\n      image: app\n      ports: [{containerPort: 3000}]\n"
	var stdout, stderr bytes.Buffer
	if code := RunInject(context.Background(), []string{"-f", "-"}, Host{Version: "dev"}, strings.NewReader(pod), &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "--image: required") {
		t.Errorf("inject -f by a dev build without --image = %d, %q; want 2 asking for --image", code, stderr.String())
	}
	stdout.Reset()
	if code := RunInject(context.Background(), []string{"-f", "-"}, Host{Version: "dev", Getenv: env("reg.example/ss:9")}, strings.NewReader(pod), &stdout, &stderr); code != ExitOK ||
		!strings.Contains(stdout.String(), "image: reg.example/ss:9") || !strings.Contains(stdout.String(), `skills-sidecar.io/status: '{"image":"reg.example/ss:9","injector":"dev"}'`) {
		t.Errorf("inject -f with %s = %d:\n%s", ImageEnv, code, stdout.String())
	}
}
