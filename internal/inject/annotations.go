package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// Pod annotations read by the injector (and skipped by the sidecar, see
// config.IsInjectorKey). Every other skills-sidecar.io/ annotation is a
// runtime key of internal/config that the sidecar reads itself from the
// downward API file the injector mounts; the injector only checks it.
const (
	// AnnotationInject opts a pod in: "true" injects, "false" or absence
	// does not. Any other value is an error.
	AnnotationInject = config.AnnotationPrefix + "inject"
	// AnnotationStatus is written by the injector on every pod it injects,
	// recording what it injected (Status, as JSON); a pod carrying it, with
	// any value, the empty one too (earlier releases wrote "injected"), is
	// never injected again: the webhook's match condition tests the key's
	// presence, and Mutate skips what it skips.
	AnnotationStatus = config.AnnotationPrefix + "status"
	// AnnotationImage overrides the sidecar image (a full image reference).
	// Default: the injector's --image.
	AnnotationImage = config.AnnotationPrefix + "image"
	// AnnotationResources overrides the sidecar's resources, as JSON (or a
	// YAML flow mapping) of a core/v1 ResourceRequirements, e.g.
	// {"requests":{"cpu":"50m","memory":"64Mi"},"limits":{"memory":"256Mi"}}.
	// Unknown fields are errors. Default: the injector's --resources.
	AnnotationResources = config.AnnotationPrefix + "resources"
	// AnnotationUpstreamPort is the port of the MCP server on loopback: a
	// number (1-65535) or the name of a container port in the pod. Default:
	// the only container port the pod's containers declare (an error when
	// there is not exactly one).
	AnnotationUpstreamPort = config.AnnotationPrefix + "upstream-port"
	// AnnotationUpstreamPath is the path of the MCP endpoint on the upstream,
	// starting with "/". Default: /mcp.
	AnnotationUpstreamPath = config.AnnotationPrefix + "upstream-path"
	// AnnotationPort is the sidecar's MCP port (container port named
	// "skills-mcp"; point the Service's targetPort at it). It must differ
	// from every port the pod's containers declare. Default: the injector's
	// --port (17080).
	AnnotationPort = config.AnnotationPrefix + "port"
	// AnnotationPortTakeover, opt-in, names the app's container port that
	// the pod's Service targets by name (e.g. "http"): the sidecar's MCP
	// port takes that name, the app's port is renamed AppPortName (keeping
	// its number), and the app container's probes and lifecycle hooks that
	// used the name are rewritten to the number. The Service then reaches
	// the sidecar with no change. Unless AnnotationUpstreamPort says
	// otherwise, that port is the upstream. Default: no takeover (the
	// sidecar's port is named MCPPortName).
	AnnotationPortTakeover = config.AnnotationPrefix + "port-takeover"
	// AnnotationPluginConfigMaps names the ConfigMaps holding the plugin
	// folder, comma-separated, in the pod's namespace. Each is mounted whole
	// as its own volume under PluginMountPath, and the sidecar decodes the
	// keys, file paths encoded by catalog.EncodeKey (what `skills-sidecar
	// inject configmap` writes), into one plugin tree
	// (catalog.LayoutConfigMaps). The injector never reads them, so files
	// added, removed or moved between them are served after the kubelet's
	// next sync, with no rollout. Exclusive with AnnotationPluginImage.
	AnnotationPluginConfigMaps = config.AnnotationPrefix + "plugin-configmaps"
	// AnnotationPluginImage is an OCI image reference whose file system is
	// the plugin folder, mounted as an image volume (Kubernetes 1.33+ with
	// the ImageVolume feature), for plugins larger than a ConfigMap's 1 MiB.
	// Exclusive with AnnotationPluginConfigMaps.
	AnnotationPluginImage = config.AnnotationPrefix + "plugin-image"
	// AnnotationUpstreamStdio names a container of the pod whose command
	// is a stdio MCP server: the injector adds no sidecar container but
	// runs the sidecar in that container, with the container's command and
	// args after "--" (docs/stdio.md). An init container copies the
	// sidecar's binary into a shared emptyDir (StdioBinVolume); the
	// container gets the sidecar's ports, probes and mounts. The container
	// must set command. Exclusive with AnnotationUpstreamPort,
	// AnnotationUpstreamPath, AnnotationPortTakeover and
	// AnnotationResources. Default: none (the sidecar is a container of
	// its own and dials the upstream's port).
	AnnotationUpstreamStdio = config.AnnotationPrefix + "upstream-stdio"
)

// Status is what AnnotationStatus records on an injected pod, as JSON:
// {"image":"skills-sidecar/skills-sidecar:0.1.0","injector":"0.1.0"}. It
// answers "which sidecar does this pod run" without reading its
// containers, and survives an image override by annotation.
type Status struct {
	// Image is the sidecar image injected (AnnotationImage or --image).
	Image string `json:"image"`
	// Injector is the version of the injector that injected it; empty for
	// a build without one.
	Injector string `json:"injector,omitempty"`
}

// String is the annotation value: compact JSON, fields in a fixed order.
func (s Status) String() string {
	b, _ := json.Marshal(s) // two strings: cannot fail
	return string(b)
}

// InjectorAnnotations lists every injector annotation with a one-line
// meaning, in the order of the documentation table.
func InjectorAnnotations() []AnnotationDoc {
	return []AnnotationDoc{
		{AnnotationInject, "`true` to inject the sidecar; `false` or absent: not injected.", "(absent)"},
		{AnnotationStatus, "Written by the injector: what it injected, as JSON (`{\"image\":\"…\",\"injector\":\"VERSION\"}`); a pod carrying it (any value) is never injected again.", "(set by the injector)"},
		{AnnotationImage, "Sidecar image reference.", "injector `--image`"},
		{AnnotationResources, "Sidecar resources as JSON of a ResourceRequirements, e.g. `{\"requests\":{\"cpu\":\"50m\",\"memory\":\"64Mi\"}}`.", "injector `--resources`"},
		{AnnotationUpstreamPort, "Port of the MCP server on loopback: a number or a container port name.", "the pod's only container port"},
		{AnnotationUpstreamPath, "Path of the MCP endpoint on the upstream.", "`/mcp`"},
		{AnnotationPort, "Sidecar MCP port (container port `skills-mcp`); point your Service's targetPort at it.", "injector `--port` (`17080`)"},
		{AnnotationPortTakeover, "Opt-in: the name of the app's container port your Service targets (e.g. `http`); the sidecar's MCP port takes the name, the app's port is renamed `" + AppPortName + "` and its probes that used the name get the number, so the Service needs no change. The upstream defaults to that port.", "(no takeover)"},
		{AnnotationPluginConfigMaps, "Comma-separated ConfigMaps (keys written by `skills-sidecar inject configmap`) that make up the plugin folder; all but the first are mounted optional (one not created yet, or pruned after a lower `--mounted`, is an empty folder).", "(none)"},
		{AnnotationPluginImage, "OCI image whose file system is the plugin folder (image volume, Kubernetes 1.33+).", "(none)"},
		{AnnotationUpstreamStdio, "Name of the container whose `command` and `args` are a stdio MCP server: the sidecar runs in that container, as `serve … -- COMMAND ARGS`, and no sidecar container is added (docs/stdio.md). The container must set `command`.", "(none: a sidecar container dials the upstream port)"},
	}
}

// AnnotationDoc is one row of the injector's annotation table.
type AnnotationDoc struct {
	Name, Meaning, Default string
}

// settings are an opted-in pod's injector settings, resolved from its
// annotations and the injector's Options.
type settings struct {
	image        string
	resources    corev1.ResourceRequirements
	upstreamPort int32
	upstreamPath string
	port         int32
	metricsPort  int32        // 0: the metrics listener is disabled, no probes
	takeover     *takeover    // nil: the sidecar's port is MCPPortName
	stdio        *stdioTarget // nil: a sidecar container dials upstreamPort
	pluginCMs    []string
	pluginImage  string // "" with no pluginCMs: the pod brings PluginVolume
	runtime      []byte // the runtime annotations as the sidecar reads them (runtimeFile)
}

// injectorOwnedRuntimeKeys are runtime keys the injected container sets by
// flag; an annotation for one would be silently overridden, so it is an
// error naming the injector annotation to use instead.
var injectorOwnedRuntimeKeys = map[string]string{
	"listen":           AnnotationPort,
	"upstream":         AnnotationUpstreamPort + " and " + AnnotationUpstreamPath,
	"plugin-dir":       AnnotationPluginConfigMaps + " or " + AnnotationPluginImage,
	"plugin-layout":    AnnotationPluginConfigMaps + " or " + AnnotationPluginImage,
	"annotations-file": "(nothing: the injector mounts the downward API file)",
	// AnnotationUpstreamStdio writes the server's command after "--".
	"upstream-command": AnnotationUpstreamStdio + " with the server's container name (docs/stdio.md)",
}

// wantsInjection reports whether the pod opted in; a malformed value is an
// error naming the annotation.
func wantsInjection(ann map[string]string) (bool, error) {
	v, ok := ann[AnnotationInject]
	if !ok {
		return false, nil
	}
	switch strings.TrimSpace(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("annotation %s: %q is neither true nor false", AnnotationInject, v)
}

// resolve reads every injector and runtime annotation of an opted-in pod and
// reports every problem at once, joined, each naming its annotation.
func resolve(ann map[string]string, spec *corev1.PodSpec, opts Options) (settings, error) {
	s := settings{image: opts.Image, resources: opts.Resources, upstreamPath: "/mcp", port: opts.Port}
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("annotation %s: %s", key, fmt.Sprintf(format, args...)))
	}
	if v, ok := ann[AnnotationImage]; ok {
		if v = strings.TrimSpace(v); v == "" || strings.ContainsAny(v, " \t\n") {
			bad(AnnotationImage, "%q is not an image reference", v)
		}
		s.image = strings.TrimSpace(v)
	}
	if v, ok := ann[AnnotationResources]; ok {
		r, err := parseResources(v, spec)
		if err != nil {
			bad(AnnotationResources, "%v", err)
		}
		s.resources = r
	}
	if spec.OS != nil && spec.OS.Name != corev1.Linux {
		errs = append(errs, fmt.Errorf("spec.os.name is %q: the sidecar runs on Linux only", spec.OS.Name))
	}
	if spec.HostNetwork {
		// The sidecar's ports would be bound on the node itself, shared by
		// every host-network pod there, and reachable from outside the pod.
		errs = append(errs, fmt.Errorf("spec.hostNetwork is true: the sidecar's MCP and metrics ports would be bound on the node's own network, reachable from outside the pod and clashing with every other host-network pod on the node; the injector does not inject host-network pods (drop %s or hostNetwork)", AnnotationInject))
	}
	for _, v := range spec.Volumes {
		if v.Name == PodInfoVolume {
			errs = append(errs, fmt.Errorf("the pod already has a volume named %q, a name the injector uses for the sidecar's annotations file; rename it", PodInfoVolume))
		}
	}
	if v, ok := ann[AnnotationPort]; ok {
		p, err := parsePort(v)
		if err != nil {
			bad(AnnotationPort, "%v", err)
		}
		s.port = p
	}
	if v, ok := ann[AnnotationUpstreamPath]; ok {
		// A URL refuses ASCII control characters and a bad %-escape (the
		// sidecar would not start on either), as it ends its path at ? or #.
		if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, " ?#") || strings.ContainsFunc(v, isASCIIControl) {
			bad(AnnotationUpstreamPath, "%q is not a path starting with /", v)
		} else if _, err := url.Parse("http://127.0.0.1" + v); err != nil {
			bad(AnnotationUpstreamPath, "%q is not a URL path (%v)", v, errors.Unwrap(err))
		}
		s.upstreamPath = v
	}
	if v, ok := ann[AnnotationPortTakeover]; ok {
		t, err := resolveTakeover(v, spec)
		if err != nil {
			errs = append(errs, err)
		}
		s.takeover = t
	}
	if v, ok := ann[AnnotationUpstreamStdio]; ok {
		t, err := resolveStdio(v, ann, spec)
		errs = append(errs, err...)
		s.stdio = t
	} else {
		up, err := upstreamPort(ann, spec)
		if _, set := ann[AnnotationUpstreamPort]; !set && s.takeover != nil {
			up, err = s.takeover.number, nil // the port the Service meant
		}
		if err != nil {
			errs = append(errs, err)
		}
		s.upstreamPort = up
	}
	if err := s.resolvePlugin(ann, spec); err != nil {
		errs = append(errs, err)
	}
	var err error
	s.runtime, s.metricsPort, err = runtimeKeys(ann)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		errs = append(errs, checkPorts(s, spec)...)
		errs = append(errs, checkPodResources(s, spec, opts.NativeSidecar)...)
	}
	return s, errors.Join(errs...)
}

func parsePort(v string) (int32, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port number (1-65535)", v)
	}
	return int32(n), nil
}

// upstreamPort resolves AnnotationUpstreamPort: a number, a container port
// name, or (absent) the pod's only declared container port.
func upstreamPort(ann map[string]string, spec *corev1.PodSpec) (int32, error) {
	var ports []corev1.ContainerPort
	for _, c := range spec.Containers {
		ports = append(ports, c.Ports...)
	}
	v, ok := ann[AnnotationUpstreamPort]
	if !ok {
		if len(ports) != 1 {
			return 0, fmt.Errorf("annotation %s: not set, and the pod's containers declare %d ports instead of exactly one", AnnotationUpstreamPort, len(ports))
		}
		return ports[0].ContainerPort, nil
	}
	if p, err := parsePort(v); err == nil {
		return p, nil
	}
	for _, p := range ports {
		if p.Name != "" && p.Name == strings.TrimSpace(v) {
			return p.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("annotation %s: %q is neither a port number nor the name of a container port", AnnotationUpstreamPort, v)
}

// resolvePlugin reads the plugin source: ConfigMaps, an image, or a volume
// named PluginVolume that the pod brings itself.
func (s *settings) resolvePlugin(ann map[string]string, spec *corev1.PodSpec) error {
	cms, hasCMs := ann[AnnotationPluginConfigMaps]
	img, hasImg := ann[AnnotationPluginImage]
	own := false
	for _, v := range spec.Volumes {
		own = own || v.Name == PluginVolume
	}
	switch {
	case hasCMs && hasImg:
		return fmt.Errorf("annotation %s and %s: set only one", AnnotationPluginConfigMaps, AnnotationPluginImage)
	case hasCMs && own:
		return fmt.Errorf("annotation %s: the pod already has a volume named %q; drop one of them", AnnotationPluginConfigMaps, PluginVolume)
	case hasImg && own:
		return fmt.Errorf("annotation %s: the pod already has a volume named %q; drop one of them", AnnotationPluginImage, PluginVolume)
	case hasCMs:
		for _, v := range spec.Volumes {
			if strings.HasPrefix(v.Name, PluginVolume+"-") {
				return fmt.Errorf("annotation %s: the pod already has a volume named %q, a name the injector uses for plugin ConfigMaps; rename it", AnnotationPluginConfigMaps, v.Name)
			}
		}
		seen := map[string]bool{}
		for _, n := range strings.Split(cms, ",") {
			n = strings.TrimSpace(n)
			if !isDNSSubdomain(n) {
				return fmt.Errorf("annotation %s: %q is not a ConfigMap name", AnnotationPluginConfigMaps, n)
			}
			if seen[n] {
				return fmt.Errorf("annotation %s: %q is listed twice", AnnotationPluginConfigMaps, n)
			}
			seen[n] = true
			s.pluginCMs = append(s.pluginCMs, n)
		}
	case hasImg:
		if img = strings.TrimSpace(img); img == "" || strings.ContainsAny(img, " \t\n") {
			return fmt.Errorf("annotation %s: %q is not an image reference", AnnotationPluginImage, img)
		}
		s.pluginImage = img
	case own:
		// The pod brings its own plugin volume; it is mounted as it is.
	default:
		return fmt.Errorf("annotation %s or %s: one is required (or a pod volume named %q)", AnnotationPluginConfigMaps, AnnotationPluginImage, PluginVolume)
	}
	return nil
}

// isDNSSubdomain reports whether n is a valid object name (RFC 1123
// subdomain), as ConfigMap names must be.
func isDNSSubdomain(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// runtimeKeys checks the pod's runtime annotations the way the sidecar will
// load them, so a typo fails at admission instead of in a crash-looping
// sidecar, and returns them as the sidecar reads them (runtimeFile) and
// the metrics port the probes must use.
func runtimeKeys(ann map[string]string) ([]byte, int32, error) {
	file, errs := runtimeFile(ann)
	cfg, _, err := config.Load(config.Sources{Annotations: file})
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return file, 0, errors.Join(errs...)
	}
	if cfg.MetricsListen == "" {
		return file, 0, nil
	}
	host, p, _ := net.SplitHostPort(cfg.MetricsListen) // validated by Load
	port, err := parsePort(p)
	if err != nil {
		return file, 0, fmt.Errorf("annotation %smetrics-listen: %w", config.AnnotationPrefix, err)
	}
	// The kubelet probes the pod's IP on this port: a listener bound to
	// loopback or to any one address never answers it, and a native
	// sidecar whose startup probe never passes keeps the app from
	// starting at all.
	if host != "" && host != "0.0.0.0" && host != "::" {
		return file, 0, fmt.Errorf("annotation %smetrics-listen: %q binds %s only, where the kubelet's probes cannot reach it; give the port alone, e.g. \":%d\"", config.AnnotationPrefix, cfg.MetricsListen, host, port)
	}
	return file, port, nil
}

// runtimeFile is the pod's runtime annotations as the sidecar reads them
// (the downward API file), less the injector's own keys; an annotation of
// a runtime key the injector sets is an error.
func runtimeFile(ann map[string]string) ([]byte, []error) {
	var file strings.Builder
	var errs []error
	for _, k := range slices.Sorted(maps.Keys(ann)) {
		name, ok := strings.CutPrefix(k, config.AnnotationPrefix)
		if !ok || config.IsInjectorKey(name) {
			continue
		}
		if use, owned := injectorOwnedRuntimeKeys[name]; owned {
			errs = append(errs, fmt.Errorf("annotation %s: set by the injector; use %s", k, use))
			continue
		}
		fmt.Fprintf(&file, "%s=%s\n", k, strconv.Quote(ann[k]))
	}
	return []byte(file.String()), errs
}

// parseResources reads the sidecar's resources as AnnotationResources and
// the injector's --resources give them: a mapping (JSON, or YAML) of a
// ResourceRequirements, {} for none, that the API server would accept in
// spec's pod (checkResources). An empty value or null is no mapping: it
// would silently leave the sidecar without requests or limits.
func parseResources(v string, spec *corev1.PodSpec) (corev1.ResourceRequirements, error) {
	var r corev1.ResourceRequirements
	var m any
	if err := yaml.Unmarshal([]byte(v), &m); err == nil {
		if _, ok := m.(map[string]any); !ok {
			return r, fmt.Errorf("%q is not a ResourceRequirements: give a JSON object ({} for none)", v)
		}
	}
	if err := yaml.UnmarshalStrict([]byte(v), &r); err != nil {
		return r, fmt.Errorf("not a ResourceRequirements (%v)", err)
	}
	return r, checkResources(r, spec)
}

// checkResources applies the API server's rules for a container's
// resources (ValidateResourceRequirements and the helpers it uses), so a
// pod it would refuse is refused here, naming the annotation, instead of
// there, naming a field the pod's owner never wrote (and, with
// failurePolicy Ignore, refused where it should have been admitted
// without the sidecar). A name without a domain must be a standard one
// (cpu, memory, ephemeral-storage, hugepages-SIZE); one holding
// "kubernetes.io/" is native; any other is extended, and must be a
// qualified name without the quota-only "requests." prefix. Quantities
// are not negative; extended ones are whole; hugepages are whole pages and
// come with cpu or memory; a request is at most its limit, and a resource
// that cannot be overcommitted (hugepages, extended) has a limit its
// request equals. Claims name the pod's resource claims, once each.
func checkResources(r corev1.ResourceRequirements, spec *corev1.PodSpec) error {
	hugePages := func(n corev1.ResourceName) bool { return strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix) }
	native := func(n corev1.ResourceName) bool {
		return !strings.Contains(string(n), "/") || strings.Contains(string(n), "kubernetes.io/")
	}
	standard := func(n corev1.ResourceName) bool {
		return n == corev1.ResourceCPU || n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage || hugePages(n)
	}
	overcommits := func(n corev1.ResourceName) bool { return native(n) && !hugePages(n) }
	hasCPUOrMemory, hasHugePages := false, false
	for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
		for _, n := range slices.Sorted(maps.Keys(list)) {
			q := list[n]
			switch {
			case !strings.Contains(string(n), "/") && !standard(n):
				return fmt.Errorf("%q is neither a standard resource nor a fully qualified name", n)
			case !native(n) && (strings.HasPrefix(string(n), "requests.") || !isQualifiedName(string(n))):
				return fmt.Errorf("%q is not an extended resource name", n)
			case q.Sign() < 0:
				return fmt.Errorf("%s %s is negative", n, q.String())
			case !native(n) && q.MilliValue()%1000 != 0:
				return fmt.Errorf("%s %s is not a whole number", n, q.String())
			case hugePages(n):
				size, err := resource.ParseQuantity(strings.TrimPrefix(string(n), corev1.ResourceHugePagesPrefix))
				if err != nil || size.Sign() <= 0 {
					return fmt.Errorf("%q names no page size", n)
				}
				if q.Value()%size.Value() != 0 {
					return fmt.Errorf("%s %s is not a whole number of pages", n, q.String())
				}
			}
			hasCPUOrMemory = hasCPUOrMemory || n == corev1.ResourceCPU || n == corev1.ResourceMemory
			hasHugePages = hasHugePages || hugePages(n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[n]
		lim, limited := r.Limits[n]
		switch {
		case limited && req.Cmp(lim) > 0:
			return fmt.Errorf("the %s request %s is more than its limit %s", n, req.String(), lim.String())
		case !overcommits(n) && !limited:
			return fmt.Errorf("%s cannot be overcommitted: its request needs a limit", n)
		case !overcommits(n) && req.Cmp(lim) != 0:
			return fmt.Errorf("%s cannot be overcommitted: its request %s must equal its limit %s", n, req.String(), lim.String())
		}
	}
	if hasHugePages && !hasCPUOrMemory {
		return errors.New("hugepages need a cpu or memory request or limit too")
	}
	whole, parts := map[string]bool{}, map[string]bool{} // claims by name, and by name/request
	for _, c := range r.Claims {
		if !slices.ContainsFunc(spec.ResourceClaims, func(pc corev1.PodResourceClaim) bool { return pc.Name == c.Name }) {
			return fmt.Errorf("claim %q is none of the pod's resourceClaims", c.Name)
		}
		if c.Request != "" && !isDNSLabel(c.Request) {
			return fmt.Errorf("claim %q: request %q is not a DNS label", c.Name, c.Request)
		}
		switch {
		case c.Request == "" && (whole[c.Name] || partsOf(parts, c.Name)):
			return fmt.Errorf("claim %q is listed twice", c.Name)
		case c.Request != "" && (whole[c.Name] || parts[c.Name+"/"+c.Request]):
			return fmt.Errorf("claim %q request %q is listed twice", c.Name, c.Request)
		}
		if c.Request == "" {
			whole[c.Name] = true
		} else {
			parts[c.Name+"/"+c.Request] = true
		}
	}
	return nil
}

// partsOf reports whether parts holds a request of claim name.
func partsOf(parts map[string]bool, name string) bool {
	for k := range parts {
		if strings.HasPrefix(k, name+"/") {
			return true
		}
	}
	return false
}

// isDNSLabel reports whether n is an RFC 1123 label.
func isDNSLabel(n string) bool {
	return len(n) <= 63 && !strings.Contains(n, ".") && isDNSSubdomain(n)
}

// isQualifiedName reports whether n is a qualified name with a prefix
// (DNS subdomain "/" name), as an extended resource's must be.
func isQualifiedName(n string) bool {
	prefix, name, ok := strings.Cut(n, "/")
	if !ok || !isDNSSubdomain(prefix) || name == "" || len(name) > 63 {
		return false
	}
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }
	if !alnum(name[0]) || !alnum(name[len(name)-1]) {
		return false
	}
	for i := 0; i < len(name); i++ {
		if b := name[i]; !alnum(b) && b != '-' && b != '_' && b != '.' {
			return false
		}
	}
	return true
}

// checkPorts reports a sidecar port that collides with the upstream, the
// metrics port or any port the pod's containers declare.
func checkPorts(s settings, spec *corev1.PodSpec) []error {
	var errs []error
	taken := map[int32]string{}
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			for _, p := range c.Ports {
				taken[p.ContainerPort] = "container " + c.Name
			}
		}
	}
	if s.stdio == nil && s.port == s.upstreamPort {
		errs = append(errs, fmt.Errorf("annotation %s: %d is the upstream's port; pick another", AnnotationPort, s.port))
	} else if who, ok := taken[s.port]; ok {
		errs = append(errs, fmt.Errorf("annotation %s: %d is already declared by %s; pick another", AnnotationPort, s.port, who))
	}
	// A Service or PodMonitor that targets the sidecar's ports by name
	// would reach whichever container declares the name first: an app port
	// of the same name takes the sidecar's traffic or its scrapes.
	names := map[string]string{mcpPortName(s): "MCP"}
	if s.metricsPort != 0 {
		names[MetricsPortName] = "metrics"
	}
	for ci, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i, c := range cs {
			for pi, p := range c.Ports {
				if s.takeover != nil && ci == 1 && i == s.takeover.container && pi == s.takeover.port {
					continue // renamed by the takeover
				}
				if kind, ok := names[p.Name]; ok {
					errs = append(errs, fmt.Errorf("container %s already has a port named %q, the name of the sidecar's %s port: a Service targeting %q would reach the app, not the sidecar; rename the app's port", c.Name, p.Name, kind, p.Name))
				}
			}
		}
	}
	if s.takeover != nil && s.metricsPort != 0 && s.takeover.name == MetricsPortName {
		errs = append(errs, fmt.Errorf("annotation %s: the port taken over is named %q, the sidecar's metrics port's name; rename the app's port", AnnotationPortTakeover, MetricsPortName))
	}
	if s.metricsPort != 0 {
		if s.metricsPort == s.port {
			errs = append(errs, fmt.Errorf("annotation %smetrics-listen: port %d is the sidecar's MCP port", config.AnnotationPrefix, s.metricsPort))
		} else if who, ok := taken[s.metricsPort]; ok {
			errs = append(errs, fmt.Errorf("annotation %smetrics-listen: port %d is already declared by %s; set another, e.g. \":17091\"", config.AnnotationPrefix, s.metricsPort, who))
		} else if s.stdio == nil && s.metricsPort == s.upstreamPort {
			// An upstream given by number need not be declared.
			errs = append(errs, fmt.Errorf("annotation %smetrics-listen: port %d is the upstream's port; set another, e.g. \":17091\"", config.AnnotationPrefix, s.metricsPort))
		}
	}
	return errs
}

// isASCIIControl reports whether r is a control character a URL may not
// hold (net/url refuses them).
func isASCIIControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkPodResources applies the API server's rules for a pod with
// pod-level resources (spec.resources; validatePodResourceConsistency) to
// the pod as injected: its requests at least what its containers request
// together (regular containers and native sidecars summed, an init
// container with the sidecars started before it), and a regular
// container's limit at most the pod's. The pod the webhook sees has been
// defaulted already, its pod-level requests set to what its containers
// requested before the sidecar (or to its pod-level limits), and they are
// not defaulted again after the patch; so a sidecar that does not fit is
// refused here, naming what to change, instead of by the API server,
// naming a field the pod's owner may never have written (and, with
// failurePolicy Ignore, refusing a pod that should have been admitted
// without the sidecar).
func checkPodResources(s settings, spec *corev1.PodSpec, native bool) []error {
	if spec.Resources == nil {
		return nil
	}
	side := corev1.Container{Name: ContainerName, Resources: s.resources}
	containers, inits := spec.Containers, spec.InitContainers
	switch {
	case s.stdio != nil:
		inits = append(slices.Clone(inits), corev1.Container{Name: InstallContainerName, Resources: s.resources})
	case native:
		side.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
		inits = append(slices.Clone(inits), side)
	default:
		containers = append(slices.Clone(containers), side)
	}
	var errs []error
	total := aggregateRequests(containers, inits)
	for _, n := range slices.Sorted(maps.Keys(spec.Resources.Requests)) {
		pod := spec.Resources.Requests[n]
		if got, ok := total[n]; ok && got.Cmp(pod) > 0 {
			errs = append(errs, fmt.Errorf("annotation %s: with the sidecar the pod's containers request %s %s, more than its spec.resources.requests %s (set there, or defaulted by the API server to what they requested before the sidecar), so the API server would refuse the pod; raise spec.resources.requests by the sidecar's share, or give the sidecar less", AnnotationResources, n, got.String(), pod.String()))
		}
	}
	if s.stdio == nil && !native {
		for _, n := range slices.Sorted(maps.Keys(s.resources.Limits)) {
			lim := s.resources.Limits[n]
			if pod, ok := spec.Resources.Limits[n]; ok && lim.Cmp(pod) > 0 {
				errs = append(errs, fmt.Errorf("annotation %s: the sidecar's %s limit %s is more than the pod's spec.resources.limits %s, so the API server would refuse the pod; give the sidecar a lower limit", AnnotationResources, n, lim.String(), pod.String()))
			}
		}
	}
	return errs
}

// aggregateRequests is what a pod's containers request together, as the
// API server counts it (AggregateContainerRequests): regular containers
// and native sidecars summed, and at least each init container's requests
// plus those of the sidecars started before it. A request left out
// defaults to its limit.
func aggregateRequests(containers, inits []corev1.Container) corev1.ResourceList {
	requests := func(c corev1.Container) corev1.ResourceList {
		r := corev1.ResourceList{}
		for n, q := range c.Resources.Limits {
			r[n] = q.DeepCopy()
		}
		for n, q := range c.Resources.Requests {
			r[n] = q.DeepCopy()
		}
		return r
	}
	add := func(to, l corev1.ResourceList) {
		for n, q := range l {
			v := to[n].DeepCopy()
			v.Add(q)
			to[n] = v
		}
	}
	atLeast := func(to, l corev1.ResourceList) {
		for n, q := range l {
			if cur, ok := to[n]; !ok || q.Cmp(cur) > 0 {
				to[n] = q.DeepCopy()
			}
		}
	}
	sum, sidecars, inited := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range containers {
		add(sum, requests(c))
	}
	for _, c := range inits {
		r := requests(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(sum, r)
			add(sidecars, r)
			atLeast(inited, sidecars)
			continue
		}
		add(r, sidecars)
		atLeast(inited, r)
	}
	atLeast(sum, inited)
	return sum
}
