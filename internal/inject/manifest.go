package inject

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	yamlv3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
)

// templatePaths maps the kinds `inject -f` reads to the JSON pointer of
// their pod template ("" is the object itself). Every other kind passes
// through untouched.
var templatePaths = map[string]string{
	"Pod":         "",
	"Deployment":  "/spec/template",
	"StatefulSet": "/spec/template",
	"DaemonSet":   "/spec/template",
	"ReplicaSet":  "/spec/template",
	"Job":         "/spec/template",
	"CronJob":     "/spec/jobTemplate/spec/template",
}

// document is one YAML document of a stream: the separator line that
// opened it ("" for the first) and its bytes.
type document struct {
	sep  string
	body []byte
}

// splitDocuments splits a YAML stream at "---" lines, keeping every byte,
// so joining sep+body of each document gives the input back.
func splitDocuments(in []byte) []document {
	docs := []document{{}}
	for len(in) > 0 {
		line := in
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line = in[:i+1]
		}
		in = in[len(line):]
		t := strings.TrimRight(string(line), " \t\r\n")
		if t == "---" || strings.HasPrefix(t, "--- ") || strings.HasPrefix(t, "---\t") {
			docs = append(docs, document{sep: string(line)})
			continue
		}
		d := &docs[len(docs)-1]
		d.body = append(d.body, line...)
	}
	return docs
}

// header is what `inject -f` reads of every document first.
type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
}

// InjectResult says what InjectManifests did to one document.
type InjectResult struct {
	// Index is the document's position in the stream, from 0.
	Index int
	// Kind and Name identify the object ("" for an empty document).
	Kind, Name string
	// Injected reports whether the sidecar was added; otherwise Skip says
	// why not (empty for kinds without a pod template).
	Injected bool
	Skip     string
	// Warnings are problems that do not stop the injection: a Service
	// that reaches an injected app's own port, bypassing the sidecar, or
	// Mutate's warnings (a grace period the sidecar's default shutdown
	// outlasts), each after the workload's kind and name.
	Warnings []string
}

// InjectManifests adds the sidecar to every workload of a multi-document
// YAML stream that opts in, and returns the stream with every other
// document byte for byte as it was. ConfigMaps named by
// AnnotationPluginConfigMaps need not be in the stream (they are mounted
// whole); those that are, in the workload's namespace, are checked as the
// sidecar will read them (checkConfigMaps). On any error it returns no
// output and every document's problem, joined, each naming the document.
func InjectManifests(in []byte, opts Options) ([]byte, []InjectResult, error) {
	docs := splitDocuments(in)
	heads := make([]header, len(docs))
	cms := map[string]*corev1.ConfigMap{}
	var errs []error
	for i, d := range docs {
		if err := yaml.Unmarshal(d.body, &heads[i]); err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", i, err))
			continue
		}
		if heads[i].Kind == "ConfigMap" && heads[i].APIVersion == "v1" {
			var cm corev1.ConfigMap
			if err := yaml.Unmarshal(d.body, &cm); err != nil {
				errs = append(errs, fmt.Errorf("document %d (ConfigMap %s): %w", i, cm.Name, err))
				continue
			}
			cms[cm.Namespace+"/"+cm.Name] = &cm
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	var out bytes.Buffer
	results := make([]InjectResult, 0, len(docs))
	var pods []injectedPod
	for i, d := range docs {
		h := heads[i]
		r := InjectResult{Index: i, Kind: h.Kind, Name: h.Metadata.Name}
		body, err := injectDocument(d.body, h, opts, &pods, func(names []string) error {
			var in []*corev1.ConfigMap
			for _, n := range names {
				if cm, ok := cms[h.Metadata.Namespace+"/"+n]; ok {
					in = append(in, cm)
				}
			}
			return checkConfigMaps(in)
		}, &r)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d (%s %s): %w", i, h.Kind, h.Metadata.Name, err))
		}
		results = append(results, r)
		out.WriteString(d.sep)
		out.Write(body)
	}
	if len(errs) > 0 {
		return nil, results, errors.Join(errs...)
	}
	for i, d := range docs {
		switch {
		case heads[i].Kind == "Service" && heads[i].APIVersion == "v1":
			results[i].Warnings = serviceWarnings(d.body, pods)
		case heads[i].Kind == "List":
			// What `kubectl get -o yaml` prints for several objects.
			results[i].Warnings = append(results[i].Warnings, fmt.Sprintf("document %d is a List: nothing in its items was read; give each workload as a document of its own", i))
		}
	}
	return out.Bytes(), results, nil
}

// injectDocument returns one document's new body: the input itself unless
// it is a workload that gets the sidecar.
func injectDocument(body []byte, h header, opts Options, pods *[]injectedPod, check func(configMaps []string) error, r *InjectResult) ([]byte, error) {
	tpath, ok := templatePaths[h.Kind]
	if !ok {
		return body, nil
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(body, &doc); err != nil {
		return body, err
	}
	tmpl, err := podTemplate(body, tpath)
	if err != nil {
		return body, err
	}
	ops, warns, skip, err := Mutate(tmpl.ObjectMeta, tmpl.Spec, opts)
	if err != nil || ops == nil {
		r.Skip = skip
		if skip == SkipNotOptedIn && tpath != "" && h.Metadata.Annotations[AnnotationInject] != "" {
			// The injector, like the webhook, reads the pod's annotations.
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s %s has %s on its own metadata, not its pod template's (%s/metadata/annotations): not injected", h.Kind, h.Metadata.Name, AnnotationInject, tpath))
		}
		return body, err
	}
	if err := check(pluginConfigMaps(tmpl.Annotations)); err != nil {
		return body, fmt.Errorf("annotation %s: %w", AnnotationPluginConfigMaps, err)
	}
	if p, err := describeInjected(h, tmpl, opts); err == nil {
		*pods = append(*pods, p)
	}
	if err := ApplyPatch(&doc, tpath, ops); err != nil {
		return body, err
	}
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return body, err
	}
	if err := enc.Close(); err != nil {
		return body, err
	}
	r.Injected = true
	for _, w := range warns {
		r.Warnings = append(r.Warnings, h.Kind+" "+h.Metadata.Name+": "+w)
	}
	return b.Bytes(), nil
}

// podTemplate reads the pod template at pointer (made of plain keys).
func podTemplate(body []byte, pointer string) (corev1.PodTemplateSpec, error) {
	var tmpl corev1.PodTemplateSpec
	var v any
	if err := yaml.Unmarshal(body, &v); err != nil {
		return tmpl, err
	}
	for _, k := range strings.Split(pointer, "/")[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return tmpl, fmt.Errorf("no pod template at %s", pointer)
		}
		v = m[k]
	}
	j, err := json.Marshal(v)
	if err != nil {
		return tmpl, err
	}
	if err := json.Unmarshal(j, &tmpl); err != nil {
		return tmpl, fmt.Errorf("pod template: %w", err)
	}
	return tmpl, nil
}

// pluginConfigMaps lists the ConfigMaps a pod names (Mutate has checked the
// annotation).
func pluginConfigMaps(ann map[string]string) []string {
	v, ok := ann[AnnotationPluginConfigMaps]
	if !ok {
		return nil
	}
	var names []string
	for _, n := range strings.Split(v, ",") {
		names = append(names, strings.TrimSpace(n))
	}
	return names
}

// checkConfigMaps applies the rules the sidecar applies to the ConfigMaps mounted
// (catalog.LayoutConfigMaps, by their keys alone), so that a key that
// does not decode or a path in two ConfigMaps is reported before the pod
// runs.
func checkConfigMaps(cms []*corev1.ConfigMap) error {
	var errs []error
	keys := map[string][]string{}
	for _, cm := range cms {
		names := slices.Concat(slices.Collect(maps.Keys(cm.Data)), slices.Collect(maps.Keys(cm.BinaryData)))
		slices.Sort(names)
		for _, k := range names {
			if _, err := catalog.DecodeKey(k); err != nil {
				errs = append(errs, fmt.Errorf("ConfigMap %s key %s: not written by skills-sidecar inject configmap: %w", cm.Name, k, err))
			}
		}
		keys[cm.Name] = names
	}
	if err := catalog.CheckConfigMapKeys(keys); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// injectedPod is what a Service may reach in a workload inject -f
// injected: the app's own port, bypassing the sidecar, or the sidecar.
type injectedPod struct {
	what      string // "Deployment server"
	namespace string
	labels    map[string]string
	appPort   int32           // the upstream: the app's port the sidecar forwards to
	appNames  map[string]bool // names that still lead to appPort after injection
	sidecar   string          // the sidecar's MCP port name
	takeover  bool
}

// describeInjected resolves an injected pod template's settings again, as
// Mutate did.
func describeInjected(h header, tmpl corev1.PodTemplateSpec, opts Options) (injectedPod, error) {
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}
	s, err := resolve(tmpl.Annotations, &tmpl.Spec, opts)
	if err != nil {
		return injectedPod{}, err
	}
	p := injectedPod{
		what: h.Kind + " " + h.Metadata.Name, namespace: h.Metadata.Namespace, labels: tmpl.Labels,
		appPort: s.upstreamPort, appNames: map[string]bool{}, sidecar: mcpPortName(s), takeover: s.takeover != nil,
	}
	for _, c := range tmpl.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.ContainerPort == s.upstreamPort && cp.Name != "" && cp.Name != p.sidecar {
				p.appNames[cp.Name] = true
			}
		}
	}
	if s.takeover != nil {
		p.appNames[AppPortName] = true
	}
	return p, nil
}

// serviceWarnings names every port of the Service that selects an injected
// pod and targets the app's own port (by number, or by a name that still
// leads there) rather than the sidecar's.
func serviceWarnings(body []byte, pods []injectedPod) []string {
	var svc corev1.Service
	if yaml.Unmarshal(body, &svc) != nil || len(svc.Spec.Selector) == 0 {
		return nil
	}
	var warnings []string
	for _, p := range pods {
		if p.namespace != svc.Namespace || !selects(svc.Spec.Selector, p.labels) {
			continue
		}
		for _, sp := range svc.Spec.Ports {
			target := sp.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(sp.Port) // the API's default
			}
			direct := target.Type == intstr.Int && target.IntVal == p.appPort || target.Type == intstr.String && p.appNames[target.StrVal]
			if !direct {
				continue
			}
			fix := fmt.Sprintf("set targetPort: %s", p.sidecar)
			if target.Type == intstr.String && !p.takeover {
				fix += fmt.Sprintf(", or annotate the pod template with %s: %q so the sidecar takes that name", AnnotationPortTakeover, target.StrVal)
			}
			warnings = append(warnings, fmt.Sprintf("Service %s port %s targets the app's own port %s of %s, so its clients bypass the sidecar: %s",
				svc.Name, servicePortName(sp), target.String(), p.what, fix))
		}
	}
	return warnings
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if l, ok := labels[k]; !ok || l != v {
			return false
		}
	}
	return true
}

func servicePortName(sp corev1.ServicePort) string {
	if sp.Name != "" {
		return sp.Name
	}
	return fmt.Sprint(sp.Port)
}
