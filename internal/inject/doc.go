// Package inject owns how the sidecar is added to Kubernetes workloads: the
// injector's pod annotations (one block of constants under the
// skills-sidecar.io/ prefix), the pure mutation that turns an opted-in pod
// spec into a list of JSON patch operations, and the two edges that apply
// it: `skills-sidecar inject -f` (offline, over multi-document YAML) and
// `skills-sidecar webhook` (a mutating admission webhook over TLS whose
// certificate files are reloaded when they change). It also turns a plugin
// folder into ConfigMaps (`skills-sidecar inject configmap`).
//
// Invariants: a pod that did not opt in is never touched; a pod already
// injected gets no patch, so a second pass changes nothing; a bad annotation
// value leaves the pod as it was and is reported naming the annotation. The
// mutation only adds (containers, volumes, one status annotation), so fields
// it does not know survive both edges; the exceptions are opt-in: the port
// takeover renames the app's port and rewrites the probes that named it
// (JSON patch "replace"), and a stdio server's container
// (AnnotationUpstreamStdio) gets the sidecar as its command, its old
// command and args after "--", and the sidecar's probes in place of its
// own. inject -f also warns about Services in its input that reach an
// injected app's own port.
//
// It must not read the sidecar's runtime settings for itself beyond
// validating them with internal/config (the sidecar reads them from the
// downward API file the mutation mounts), and it must not talk to the
// Kubernetes API beyond the injector's own certificate Secret and webhook
// configuration (read, watched, patched, each by name): plugin ConfigMaps
// are mounted whole and decoded by the sidecar (catalog.LayoutConfigMaps,
// whose key encoding it writes).
package inject
