package inject

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// AppPortName is the name an app's container port gets when the sidecar
// takes its old name over (AnnotationPortTakeover).
const AppPortName = "skills-app"

// takeover is a resolved AnnotationPortTakeover: the app's container port
// whose name the sidecar takes.
type takeover struct {
	name      string // the port name, now the sidecar's
	container int    // index in spec.Containers of the app container declaring it
	port      int    // index in that container's ports
	number    int32  // the app's port number, which the app keeps
}

// resolveTakeover finds the named port of AnnotationPortTakeover among the
// pod's (non-init) containers.
func resolveTakeover(v string, spec *corev1.PodSpec) (*takeover, error) {
	name := strings.TrimSpace(v)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("annotation %s: %s", AnnotationPortTakeover, fmt.Sprintf(format, args...))
	}
	if name == "" {
		return nil, bad("empty; name the app's container port that the Service targets")
	}
	if _, err := strconv.Atoi(name); err == nil {
		return nil, bad("%q is a number; port takeover needs a named port (a Service that targets a number cannot be redirected by a name)", name)
	}
	var found *takeover
	for ci, c := range spec.Containers {
		for pi, p := range c.Ports {
			switch p.Name {
			case AppPortName:
				return nil, bad("container %s already has a port named %q, the name the app's port would get", c.Name, AppPortName)
			case name:
				if found != nil {
					return nil, bad("port %q is declared by two containers", name)
				}
				if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
					return nil, bad("port %q is %s; the sidecar serves TCP", name, p.Protocol)
				}
				found = &takeover{name: name, container: ci, port: pi, number: p.ContainerPort}
			}
		}
	}
	for _, c := range spec.InitContainers {
		for _, p := range c.Ports {
			if p.Name == name {
				return nil, bad("port %q belongs to init container %s, not to the app", name, c.Name)
			}
		}
	}
	if found == nil {
		return nil, bad("no container of the pod declares a port named %q", name)
	}
	return found, nil
}

// takeoverOps renames the app's port to AppPortName and rewrites every
// probe and lifecycle hook of its container that names the port, which the
// kubelet resolves within that container only, to the port's number, so
// they still reach the app itself.
func takeoverOps(t *takeover, spec corev1.PodSpec) []PatchOp {
	base := "/spec/containers/" + strconv.Itoa(t.container)
	ops := []PatchOp{{Op: "replace", Path: base + "/ports/" + strconv.Itoa(t.port) + "/name", Value: AppPortName}}
	c := spec.Containers[t.container]
	uses := func(p intstr.IntOrString) bool { return p.Type == intstr.String && p.StrVal == t.name }
	handler := func(path string, http *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction) {
		if http != nil && uses(http.Port) {
			ops = append(ops, PatchOp{Op: "replace", Path: path + "/httpGet/port", Value: t.number})
		}
		if tcp != nil && uses(tcp.Port) {
			ops = append(ops, PatchOp{Op: "replace", Path: path + "/tcpSocket/port", Value: t.number})
		}
	}
	for _, p := range []struct {
		key   string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		if p.probe != nil {
			handler(base+"/"+p.key, p.probe.HTTPGet, p.probe.TCPSocket)
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []struct {
			key     string
			handler *corev1.LifecycleHandler
		}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
			if h.handler != nil {
				handler(base+"/lifecycle/"+h.key, h.handler.HTTPGet, h.handler.TCPSocket)
			}
		}
	}
	return ops
}
