// Package manifestcheck decodes rendered Kubernetes manifests strictly into
// their k8s.io/api types, so a misspelt or misplaced field in a Helm
// template, a kustomize overlay or the injector's output is an error rather
// than something the API server silently drops. It owns the table of kinds
// the project renders; it must not talk to a cluster or change a manifest.
package manifestcheck

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ErrUnknownKind is wrapped when a document's apiVersion and kind are not in
// the table.
var ErrUnknownKind = errors.New("manifestcheck: unknown apiVersion/kind")

// Object is one decoded document.
type Object struct {
	// APIVersion, Kind and Name identify it.
	APIVersion, Kind, Name string
	// Value is a pointer to the typed object (e.g. *appsv1.Deployment).
	Value any
}

// newObject returns a fresh typed value for apiVersion/kind, or nil.
func newObject(apiVersion, kind string) any {
	switch apiVersion + "/" + kind {
	case "v1/Namespace":
		return &corev1.Namespace{}
	case "v1/Pod":
		return &corev1.Pod{}
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}
	case "v1/Secret":
		return &corev1.Secret{}
	case "v1/Service":
		return &corev1.Service{}
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}
	case "apps/v1/DaemonSet":
		return &appsv1.DaemonSet{}
	case "apps/v1/ReplicaSet":
		return &appsv1.ReplicaSet{}
	case "batch/v1/Job":
		return &batchv1.Job{}
	case "batch/v1/CronJob":
		return &batchv1.CronJob{}
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}
	case "admissionregistration.k8s.io/v1/MutatingWebhookConfiguration":
		return &admissionregistrationv1.MutatingWebhookConfiguration{}
	case "networking.k8s.io/v1/NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1/PodMonitor":
		return &PodMonitor{}
	case "monitoring.coreos.com/v1/PrometheusRule":
		return &PrometheusRule{}
	case "cert-manager.io/v1/Certificate":
		return &Certificate{}
	case "cert-manager.io/v1/Issuer":
		return &Issuer{}
	}
	return nil
}

// Decode splits a YAML stream at "---" lines and decodes every non-empty
// document strictly (unknown or duplicate fields are errors) into its
// type. It reports every bad document, joined, naming it.
func Decode(stream []byte) ([]Object, error) {
	var out []Object
	var errs []error
	for i, doc := range split(stream) {
		var h struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Metadata   metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &h); err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		if h.APIVersion == "" && h.Kind == "" {
			continue // empty or comments only
		}
		v := newObject(h.APIVersion, h.Kind)
		if v == nil {
			errs = append(errs, fmt.Errorf("document %d (%s %s): %w", i, h.Kind, h.Metadata.Name, ErrUnknownKind))
			continue
		}
		if err := yaml.UnmarshalStrict(doc, v); err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s %s): %w", i, h.Kind, h.Metadata.Name, err))
			continue
		}
		out = append(out, Object{APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, Value: v})
	}
	return out, errors.Join(errs...)
}

func split(stream []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	for _, line := range bytes.SplitAfter(stream, []byte("\n")) {
		t := strings.TrimRight(string(line), " \t\r\n")
		if t == "---" || strings.HasPrefix(t, "--- ") {
			docs = append(docs, cur)
			cur = nil
			continue
		}
		cur = append(cur, line...)
	}
	return append(docs, cur)
}

// ProbeHosts reports every probe and lifecycle handler of a pod or pod
// template that names a host. The kubelet dials that host from the node's
// own network, not the pod's (127.0.0.1 is the node's loopback), and Pod
// Security "baseline" refuses the field from Kubernetes 1.34; left empty,
// it is the pod's IP.
func ProbeHosts(objs []Object) []error {
	var errs []error
	for _, o := range objs {
		spec := podSpec(o.Value)
		if spec == nil {
			continue
		}
		for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
			check := func(where string, http *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction) {
				host := ""
				if http != nil {
					host = http.Host
				}
				if tcp != nil && tcp.Host != "" {
					host = tcp.Host
				}
				if host != "" {
					errs = append(errs, fmt.Errorf("%s %s: container %s: %s names host %q, which the kubelet dials from the node, not the pod (and Pod Security baseline refuses); leave it out to reach the pod's IP", o.Kind, o.Name, c.Name, where, host))
				}
			}
			for _, p := range []struct {
				where string
				probe *corev1.Probe
			}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
				if p.probe != nil {
					check(p.where, p.probe.HTTPGet, p.probe.TCPSocket)
				}
			}
			if l := c.Lifecycle; l != nil {
				for _, h := range []struct {
					where   string
					handler *corev1.LifecycleHandler
				}{{"lifecycle.postStart", l.PostStart}, {"lifecycle.preStop", l.PreStop}} {
					if h.handler != nil {
						check(h.where, h.handler.HTTPGet, h.handler.TCPSocket)
					}
				}
			}
		}
	}
	return errs
}

// podSpec is the pod spec of a decoded Pod or workload, or nil.
func podSpec(v any) *corev1.PodSpec {
	switch o := v.(type) {
	case *corev1.Pod:
		return &o.Spec
	case *appsv1.Deployment:
		return &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return &o.Spec.Template.Spec
	case *appsv1.DaemonSet:
		return &o.Spec.Template.Spec
	case *appsv1.ReplicaSet:
		return &o.Spec.Template.Spec
	case *batchv1.Job:
		return &o.Spec.Template.Spec
	case *batchv1.CronJob:
		return &o.Spec.JobTemplate.Spec.Template.Spec
	}
	return nil
}
