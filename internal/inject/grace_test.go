package inject

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// gracePod is an opted-in pod with the given terminationGracePeriodSeconds
// (nil: unset, the API server's 30) and extra annotations.
func gracePod(grace *int64, extra ...string) corev1.Pod {
	pod := testPod(optIn(extra...), 3000)
	pod.Spec.TerminationGracePeriodSeconds = grace
	return pod
}

// stdioGrace is an opted-in stdio pod with the given grace period.
func stdioGrace(grace int64) corev1.Pod {
	pod := stdioPod()
	pod.Spec.TerminationGracePeriodSeconds = &grace
	return pod
}

// TestMutateGracePeriod pins that the sidecar's shutdown (shutdown-delay,
// then drain-timeout, then its own exit) is measured against the pod's
// grace period, after which the kubelet kills it mid-drain: a shutdown
// that does not fit is injected with one warning, naming the pod owner's
// settings when they are what does not fit, else the defaults, with the
// grace period and the fix; a pod whose grace period holds them is
// injected with none. Nothing is refused (a pod admitted before an
// upgrade is admitted after it) and the grace period is never changed.
func TestMutateGracePeriod(t *testing.T) {
	t.Parallel()
	stdio := stdioPod()
	stdio.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SKILLS_SIDECAR_DRAIN_TIMEOUT", Value: "40s"}}
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		warn []string // nil: no warning
	}{
		"drain over the default 30s": {gracePod(nil, "skills-sidecar.io/drain-timeout", "30s"),
			[]string{"skills-sidecar.io/drain-timeout", "32s", "terminationGracePeriodSeconds 30 (the default)", "raise it to 32"}},
		"delay and drain over 25s": {gracePod(ptr(int64(25)), "skills-sidecar.io/shutdown-delay", "5s"),
			[]string{"skills-sidecar.io/shutdown-delay:", "27s", "terminationGracePeriodSeconds 25", "raise it to 27"}},
		"both set, over 10s": {gracePod(ptr(int64(10)), "skills-sidecar.io/shutdown-delay", "5s", "skills-sidecar.io/drain-timeout", "90s"),
			[]string{"skills-sidecar.io/shutdown-delay, skills-sidecar.io/drain-timeout:", "1m37s", "raise it to 97"}},
		"zero grace": {gracePod(ptr(int64(0)), "skills-sidecar.io/drain-timeout", "1s"),
			[]string{"skills-sidecar.io/drain-timeout", "terminationGracePeriodSeconds 0"}},
		"stdio server's environment": {stdio,
			[]string{"server's SKILLS_SIDECAR_DRAIN_TIMEOUT", "46s", "terminationGracePeriodSeconds 30"}},
		"defaults, short grace": {gracePod(ptr(int64(10))),
			[]string{"terminationGracePeriodSeconds 10", "drain-timeout", "20s", "22s", "skills-sidecar.io/drain-timeout"}},
		"defaults, default grace": {pod: gracePod(nil)},
		// A stdio server is stopped after the drain: stdin closed, then
		// SIGTERM, then SIGKILL, each after the transport's grace.
		"stdio defaults, 25s": {stdioGrace(25),
			[]string{"terminationGracePeriodSeconds 25", "26s", "raise it to 26"}},
		"stdio defaults, 26s":          {pod: stdioGrace(26)},
		"explicit, exactly fits":       {pod: gracePod(ptr(int64(27)), "skills-sidecar.io/shutdown-delay", "5s")},
		"explicit, longer grace":       {pod: gracePod(ptr(int64(120)), "skills-sidecar.io/shutdown-delay", "5s", "skills-sidecar.io/drain-timeout", "90s")},
		"short drain fits short grace": {pod: gracePod(ptr(int64(5)), "skills-sidecar.io/drain-timeout", "3s")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ops, warns, skip, err := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, Options{Image: "i"})
			if err != nil || ops == nil {
				t.Fatalf("Mutate = %d ops, %q, %v; want a patch", len(ops), skip, err)
			}
			got := applyToPod(t, tc.pod, ops)
			if g, w := got.Spec.TerminationGracePeriodSeconds, tc.pod.Spec.TerminationGracePeriodSeconds; (g == nil) != (w == nil) || g != nil && *g != *w {
				t.Errorf("terminationGracePeriodSeconds = %v, want it unchanged (%v)", g, w)
			}
			if tc.warn == nil {
				if len(warns) != 0 {
					t.Errorf("warnings %q, want none", warns)
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("warnings %q, want one", warns)
			}
			if w := "skills-sidecar injection: " + warns[0]; len(w) > maxWarning {
				t.Errorf("warning %q is %d bytes as an admission warning; the API server truncates it at %d", w, len(w), maxWarning)
			}
			for _, w := range tc.warn {
				if !strings.Contains(warns[0], w) {
					t.Errorf("warning %q lacks %q", warns[0], w)
				}
			}
		})
	}
}

// TestWebhookGracePeriod pins the webhook's answers: a shutdown that
// outlasts the grace period, by the pod owner's settings or the defaults,
// is injected with an admission warning, under either failure policy.
func TestWebhookGracePeriod(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		pod                    corev1.Pod
		deny, allowed, patched bool
		want                   string
	}{
		"explicit, deny":   {pod: gracePod(ptr(int64(10)), "skills-sidecar.io/drain-timeout", "15s"), deny: true, allowed: true, patched: true, want: "skills-sidecar.io/drain-timeout"},
		"explicit, ignore": {pod: gracePod(ptr(int64(10)), "skills-sidecar.io/drain-timeout", "15s"), allowed: true, patched: true, want: "skills-sidecar.io/drain-timeout"},
		"defaults":         {pod: gracePod(ptr(int64(10))), deny: true, allowed: true, patched: true, want: "terminationGracePeriodSeconds 10"},
		"fits":             {pod: gracePod(ptr(int64(30))), deny: true, allowed: true, patched: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, err := json.Marshal(tc.pod)
			if err != nil {
				t.Fatal(err)
			}
			body, err := json.Marshal(admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
				UID: types.UID("u1"), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Operation: admissionv1.Create, Namespace: "ns",
				Object: runtime.RawExtension{Raw: raw},
			}})
			if err != nil {
				t.Fatal(err)
			}
			out, err := testWebhook(tc.deny).Review(body)
			if err != nil {
				t.Fatal(err)
			}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(out, &review); err != nil {
				t.Fatal(err)
			}
			r := review.Response
			if r.Allowed != tc.allowed || (r.Patch != nil) != tc.patched {
				t.Fatalf("allowed %v, patch %v; want %v, %v (warnings %q, result %+v)", r.Allowed, r.Patch != nil, tc.allowed, tc.patched, r.Warnings, r.Result)
			}
			msg := strings.Join(r.Warnings, "\n")
			if r.Result != nil {
				msg += r.Result.Message
			}
			if tc.want == "" && msg != "" {
				t.Errorf("message %q, want none", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("message %q lacks %q", msg, tc.want)
			}
			if _, warns, _, _ := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, testWebhook(tc.deny).Options); tc.patched && len(warns) > 0 {
				if len(r.Warnings) != 1 || r.Warnings[0] != "skills-sidecar injection: "+warns[0] {
					t.Errorf("admission warnings %q, want the whole of %q", r.Warnings, warns[0])
				}
			}
		})
	}
}

// TestInjectGracePeriod is the same through inject -f: a workload whose
// shutdown outlasts its grace period, by its own settings or the
// defaults, is injected with a warning on stderr naming what to change.
func TestInjectGracePeriod(t *testing.T) {
	t.Parallel()
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    metadata:\n      annotations:\n        skills-sidecar.io/inject: \"true\"\n        skills-sidecar.io/plugin-image: i\n%s    spec:\n      terminationGracePeriodSeconds: 10\n      containers: [{name: c, image: i, ports: [{containerPort: 3000}]}]\n"
	t.Run("explicit", func(t *testing.T) {
		t.Parallel()
		in := strings.Replace(deploy, "%s", "        skills-sidecar.io/shutdown-delay: 5s\n", 1)
		var stdout, stderr bytes.Buffer
		if code := RunInject(context.Background(), []string{"-f", "-"}, testHost, strings.NewReader(in), &stdout, &stderr); code != ExitOK {
			t.Fatalf("RunInject = %d, want %d; stderr:\n%s", code, ExitOK, stderr.String())
		}
		if !strings.Contains(stdout.String(), "name: "+ContainerName) {
			t.Errorf("output lacks the sidecar:\n%s", stdout.String())
		}
		for _, w := range []string{"inject: warning: Deployment d: ", "skills-sidecar.io/shutdown-delay", "terminationGracePeriodSeconds 10"} {
			if !strings.Contains(stderr.String(), w) {
				t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
			}
		}
	})
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		in := strings.Replace(deploy, "%s", "", 1)
		var stdout, stderr bytes.Buffer
		if code := RunInject(context.Background(), []string{"-f", "-"}, testHost, strings.NewReader(in), &stdout, &stderr); code != ExitOK {
			t.Fatalf("RunInject = %d, want %d; stderr:\n%s", code, ExitOK, stderr.String())
		}
		if !strings.Contains(stdout.String(), "name: "+ContainerName) || !strings.Contains(stdout.String(), "terminationGracePeriodSeconds: 10") {
			t.Errorf("output lacks the sidecar or the unchanged grace period:\n%s", stdout.String())
		}
		if !strings.Contains(stderr.String(), "inject: warning: Deployment d: ") || !strings.Contains(stderr.String(), "terminationGracePeriodSeconds 10") {
			t.Errorf("stderr lacks the warning:\n%s", stderr.String())
		}
	})
}
