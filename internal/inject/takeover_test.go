package inject

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serviceTarget resolves a Service port's targetPort against a pod the way
// the Kubernetes documentation describes Service port resolution: a number
// is used as it is; a name is looked up among the containers' ports (same
// name and protocol, TCP when unset), then, since Kubernetes 1.32, among
// the ports of restartable (native sidecar) init containers. It returns the
// port number and the container serving it, or "" when nothing matches.
func serviceTarget(pod corev1.Pod, target intstr.IntOrString) (int32, string) {
	if target.Type == intstr.Int {
		for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range cs {
				for _, p := range c.Ports {
					if p.ContainerPort == target.IntVal {
						return target.IntVal, c.Name
					}
				}
			}
		}
		return target.IntVal, ""
	}
	tcp := func(p corev1.Protocol) bool { return p == "" || p == corev1.ProtocolTCP }
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == target.StrVal && tcp(p.Protocol) {
				return p.ContainerPort, c.Name
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		for _, p := range c.Ports {
			if p.Name == target.StrVal && tcp(p.Protocol) {
				return p.ContainerPort, c.Name
			}
		}
	}
	return 0, ""
}

// probePort resolves a probe's port the way the kubelet does: a name is
// looked up among the ports of the probed container only.
func probePort(c corev1.Container, port intstr.IntOrString) int32 {
	if port.Type == intstr.Int {
		return port.IntVal
	}
	for _, p := range c.Ports {
		if p.Name == port.StrVal {
			return p.ContainerPort
		}
	}
	return 0
}

func takeoverPod(ann map[string]string) corev1.Pod {
	pod := testPod(ann)
	named := func(n string) intstr.IntOrString { return intstr.FromString(n) }
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 3000}, {Name: "admin", ContainerPort: 8443}}
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/live", Port: named("http")}}}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: named("http")}}}
	pod.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/up", Port: named("admin")}}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: named("http")}}}
	return pod
}

// TestMutateTakeover: with port takeover, a Service that targets the app's
// named port reaches the sidecar, and the app's probes still reach the app.
func TestMutateTakeover(t *testing.T) {
	t.Parallel()
	for name, native := range map[string]bool{"native sidecar": true, "regular container": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pod := takeoverPod(optIn(AnnotationPortTakeover, "http"))
			if _, who := serviceTarget(pod, intstr.FromString("http")); who != "server" {
				t.Fatalf("before injection the Service reaches %q, want the app", who)
			}
			ops, _, _, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "img:1", NativeSidecar: native})
			if err != nil {
				t.Fatal(err)
			}
			got := applyToPod(t, pod, ops)
			if n, who := serviceTarget(got, intstr.FromString("http")); who != ContainerName || n != DefaultPort {
				t.Errorf("targetPort http reaches %s:%d, want %s:%d", who, n, ContainerName, DefaultPort)
			}
			app := got.Spec.Containers[0]
			if diff := cmp.Diff([]corev1.ContainerPort{{Name: AppPortName, ContainerPort: 3000}, {Name: "admin", ContainerPort: 8443}}, app.Ports); diff != "" {
				t.Errorf("app ports (-want +got):\n%s", diff)
			}
			for what, p := range map[string]intstr.IntOrString{
				"liveness": app.LivenessProbe.HTTPGet.Port, "readiness": app.ReadinessProbe.TCPSocket.Port, "preStop": app.Lifecycle.PreStop.HTTPGet.Port,
			} {
				if p != intstr.FromInt32(3000) || probePort(app, p) != 3000 {
					t.Errorf("%s probe port = %v, want the number 3000", what, p)
				}
			}
			if p := app.StartupProbe.HTTPGet.Port; p != intstr.FromString("admin") {
				t.Errorf("startup probe port = %v, want admin untouched", p)
			}
			sidecar := got.Spec.InitContainers
			if !native {
				sidecar = got.Spec.Containers[1:]
			}
			if !slicesContains(sidecar[0].Args, "--upstream=http://127.0.0.1:3000/mcp") {
				t.Errorf("sidecar args %q, want the upstream on the taken-over port 3000", sidecar[0].Args)
			}
		})
	}
}

func slicesContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestMutateTakeoverErrors(t *testing.T) {
	t.Parallel()
	taken := takeoverPod(optIn(AnnotationPortTakeover, "http"))
	taken.Spec.Containers[0].Ports[1].Name = AppPortName
	twice := takeoverPod(optIn(AnnotationPortTakeover, "http"))
	twice.Spec.Containers = append(twice.Spec.Containers, corev1.Container{Name: "b", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3001}}})
	udp := takeoverPod(optIn(AnnotationPortTakeover, "http"))
	udp.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP
	initPort := takeoverPod(optIn(AnnotationPortTakeover, "init"))
	initPort.Spec.InitContainers = []corev1.Container{{Name: "setup", Ports: []corev1.ContainerPort{{Name: "init", ContainerPort: 1}}}}
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"unknown name":        {takeoverPod(optIn(AnnotationPortTakeover, "grpc")), `no container of the pod declares a port named "grpc"`},
		"a number":            {takeoverPod(optIn(AnnotationPortTakeover, "3000")), "needs a named port"},
		"empty":               {takeoverPod(optIn(AnnotationPortTakeover, " ")), "empty"},
		"skills-app taken":    {taken, `already has a port named "skills-app"`},
		"two containers":      {twice, "declared by two containers"},
		"udp":                 {udp, "UDP"},
		"init container port": {initPort, "init container setup"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ops, _, _, err := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, Options{Image: "i"})
			if ops != nil || err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), AnnotationPortTakeover) {
				t.Errorf("Mutate = %d ops, %v; want an error naming %s with %q", len(ops), err, AnnotationPortTakeover, tc.want)
			}
		})
	}
}

func TestApplyPatchReplaceNeedsTarget(t *testing.T) {
	t.Parallel()
	pod := takeoverPod(nil)
	for _, path := range []string{"/spec/containers/0/livenessProbe/grpc", "/spec/containers/5/name", "/spec/containers/0/ports/2"} {
		ops := []PatchOp{{Op: "replace", Path: path, Value: 1}}
		doc := podNode(t, pod)
		if err := ApplyPatch(doc, "", ops); err == nil {
			t.Errorf("replace %s applied, want an error: nothing is there", path)
		}
	}
}

func podNode(t *testing.T, pod corev1.Pod) *yamlv3.Node {
	t.Helper()
	j, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}
