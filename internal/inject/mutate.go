package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/skills-sidecar/skills-sidecar/internal/catalog"
	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// Names and paths the mutation adds to a pod.
const (
	// ContainerName is the injected container's name.
	ContainerName = "skills-sidecar"
	// PluginVolume is the plugin folder's volume. A pod may bring its own
	// volume of this name instead of naming ConfigMaps or an image.
	PluginVolume = "skills-sidecar-plugin"
	// PodInfoVolume is the downward API volume with the pod's annotations.
	PodInfoVolume = "skills-sidecar-podinfo"
	// PluginMountPath is where the plugin folder is mounted (--plugin-dir).
	PluginMountPath = "/etc/skills-sidecar/plugin"
	// PodInfoMountPath holds the downward API file "annotations", the
	// sidecar's default --annotations-file.
	PodInfoMountPath = "/etc/skills-sidecar/podinfo"
	// SessionKeysSecret is the Secret, in the pod's own namespace, whose
	// key SessionKeysKey holds the keys that seal the sessions the era
	// bridge mints (docs/replicas.md); every replica mounting it serves
	// every such session. It is mounted optional: without it a replica
	// seals with a key of its own, and the injector needs no right to
	// read or write Secrets.
	SessionKeysSecret = "skills-sidecar-session-keys"
	// SessionKeysKey is the Secret's key holding the keys file.
	SessionKeysKey = "keys"
	// SessionKeysVolume is the Secret's volume. A pod may bring its own
	// volume of this name (another Secret, a CSI secret store) instead.
	SessionKeysVolume = "skills-sidecar-session-keys"
	// SessionKeysMountPath holds the file SessionKeysKey, the sidecar's
	// default --session-keys-file.
	SessionKeysMountPath = "/etc/skills-sidecar/session-keys"
	// MCPPortName and MetricsPortName name the injected container's ports.
	MCPPortName     = "skills-mcp"
	MetricsPortName = "skills-metrics"
	// DefaultPort is the sidecar's MCP port when neither Options.Port nor
	// AnnotationPort says otherwise: config's default listen port (see
	// config.Config.Listen for why 17080).
	DefaultPort = 17080
	// nonRootUID is distroless's "nonroot" user.
	nonRootUID = 65532
)

// Options are the injector's own settings (its flags, set by the chart);
// a pod's annotations override some of them.
type Options struct {
	// Image is the sidecar image. Required.
	Image string
	// ImagePullPolicy of the sidecar; empty leaves the cluster's default.
	ImagePullPolicy corev1.PullPolicy
	// NativeSidecar adds the container as an init container with
	// restartPolicy Always (Kubernetes 1.29+), so it starts before and
	// stops after the workload's containers; false adds a regular container.
	NativeSidecar bool
	// Resources are the sidecar's default resources; the zero value sets
	// none.
	Resources corev1.ResourceRequirements
	// Port is the default MCP port; 0 means DefaultPort.
	Port int32
	// Version is the injector's version, recorded in AnnotationStatus.
	Version string
}

// DefaultResources are the resources the injector's flags default to.
func DefaultResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
}

// PatchOp is one JSON patch (RFC 6902) operation. The mutation emits only
// "add".
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Skip reasons reported by Mutate when it returns no patch and no error.
const (
	SkipNotOptedIn = "not opted in (" + AnnotationInject + " is not \"true\")"
	SkipInjected   = "already injected (" + AnnotationStatus + " is set)"
	SkipHasSidecar = "already has a container named " + ContainerName
)

// Mutate decides whether the pod (its metadata and spec, as in a Pod or a
// pod template) gets the sidecar and returns the JSON patch that adds it,
// with paths relative to the pod (/metadata/..., /spec/...). With no patch
// it returns the reason as skip. A malformed annotation is an error naming
// it, listing every problem, and no patch. Warnings are problems that do
// not stop the injection (the pod's owner set nothing wrong, but the
// sidecar's defaults do not suit the pod); each is one short line. Mutate
// does not modify its arguments and reads nothing but them: plugin
// ConfigMaps are mounted whole, so their keys need not be known.
func Mutate(meta metav1.ObjectMeta, spec corev1.PodSpec, opts Options) (patch []PatchOp, warnings []string, skip string, err error) {
	want, err := wantsInjection(meta.Annotations)
	switch {
	case err != nil:
		return nil, nil, "", err
	case !want:
		return nil, nil, SkipNotOptedIn, nil
	case hasKey(meta.Annotations, AnnotationStatus): // any value, as the webhook's match condition
		return nil, nil, SkipInjected, nil
	case hasContainer(spec, ContainerName):
		return nil, nil, SkipHasSidecar, nil
	}
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}
	if opts.Image == "" {
		return nil, nil, "", errors.New("inject: no sidecar image configured")
	}
	s, err := resolve(meta.Annotations, &spec, opts)
	if err != nil {
		return nil, nil, "", err
	}
	vols, mounts := pluginVolumes(s)
	vols = append(vols, podInfoVolume())
	if !hasVolume(spec, SessionKeysVolume) {
		vols = append(vols, sessionKeysVolume())
	}
	c := container(s, opts, mounts)
	// The sidecar's own loader judges what it will start with: the
	// container's arguments and the pod's runtime annotations together,
	// so nothing admitted here crash-loops there. A stdio server's argv
	// after "--" becomes the key upstream-command, and as the sidecar
	// runs in that container, its environment configures the sidecar too,
	// above the annotations.
	args := c.Args[1:]
	var environ []string
	made := "these annotations"
	if s.stdio != nil {
		argv, _ := json.Marshal(s.stdio.argv) // strings: cannot fail
		args = append(slices.Clone(args), "--upstream-command="+string(argv))
		if environ = s.stdio.environ; len(environ) > 0 {
			made += " and container " + s.stdio.name + "'s environment"
		}
	}
	cfg, _, err := config.Load(config.Sources{Annotations: s.runtime, Environ: environ, Args: args})
	if err != nil {
		return nil, nil, "", fmt.Errorf("the sidecar would not start with what %s make: %w", made, err)
	}
	if warn := checkGrace(cfg, meta.Annotations, s.stdio, spec); warn != "" {
		warnings = append(warnings, warn)
	}
	if len(environ) > 0 {
		// The ports and probes follow the annotation (runtimeKeys): a
		// listener the environment moves is one the kubelet never reaches.
		if ann, _, _ := config.Load(config.Sources{Annotations: s.runtime}); cfg.MetricsListen != ann.MetricsListen {
			return nil, nil, "", fmt.Errorf("annotation %s: container %s sets %s=%q, where the injector gives the sidecar its ports and probes from the annotation %smetrics-listen (%q); set that annotation instead",
				AnnotationUpstreamStdio, s.stdio.name, config.EnvName("metrics-listen"), cfg.MetricsListen, config.AnnotationPrefix, ann.MetricsListen)
		}
	}

	if s.takeover != nil {
		patch = append(patch, takeoverOps(s.takeover, spec)...)
	}
	switch {
	case s.stdio != nil:
		patch = append(patch, stdioOps(s.stdio, spec, c)...)
		vols = append(vols, stdioBinVolume())
	case opts.NativeSidecar:
		patch = appendOps(patch, "/spec/initContainers", len(spec.InitContainers), c)
	default:
		patch = appendOps(patch, "/spec/containers", len(spec.Containers), c)
	}
	patch = appendOps(patch, "/spec/volumes", len(spec.Volumes), vols...)
	status := Status{Image: s.image, Injector: opts.Version}.String()
	if meta.Annotations == nil {
		patch = append(patch, PatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{AnnotationStatus: status}})
	} else {
		patch = append(patch, PatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(AnnotationStatus), Value: status})
	}
	return patch, warnings, "", nil
}

// appendOps adds values to the array at path, creating it when it is empty
// (an absent array cannot be appended to with "/-").
func appendOps[T any](patch []PatchOp, path string, have int, values ...T) []PatchOp {
	for i, v := range values {
		if have == 0 && i == 0 {
			patch = append(patch, PatchOp{Op: "add", Path: path, Value: []T{v}})
			continue
		}
		patch = append(patch, PatchOp{Op: "add", Path: path + "/-", Value: v})
	}
	return patch
}

// escapePointer escapes a JSON pointer token (RFC 6901 section 3).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func hasContainer(spec corev1.PodSpec, name string) bool {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range cs {
			if c.Name == name {
				return true
			}
		}
	}
	return false
}

func container(s settings, opts Options, plugin []corev1.VolumeMount) corev1.Container {
	layout := catalog.LayoutTree
	if len(s.pluginCMs) > 0 {
		layout = catalog.LayoutConfigMaps
	}
	c := corev1.Container{
		Name:            ContainerName,
		Image:           s.image,
		ImagePullPolicy: opts.ImagePullPolicy,
		Args:            sidecarArgs(s, layout),
		Ports:           []corev1.ContainerPort{{Name: mcpPortName(s), ContainerPort: s.port, Protocol: corev1.ProtocolTCP}},
		Resources:       s.resources,
		VolumeMounts: append(plugin, corev1.VolumeMount{Name: PodInfoVolume, MountPath: PodInfoMountPath, ReadOnly: true},
			corev1.VolumeMount{Name: SessionKeysVolume, MountPath: SessionKeysMountPath, ReadOnly: true}),
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr(true),
			RunAsUser:                ptr(int64(nonRootUID)),
			RunAsGroup:               ptr(int64(nonRootUID)),
			ReadOnlyRootFilesystem:   ptr(true),
			AllowPrivilegeEscalation: ptr(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if opts.NativeSidecar && s.stdio == nil {
		c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
	}
	if s.metricsPort != 0 {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: MetricsPortName, ContainerPort: s.metricsPort, Protocol: corev1.ProtocolTCP})
		probe := func(path string, period, failures int32) *corev1.Probe {
			return &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(MetricsPortName)}},
				PeriodSeconds:    period,
				FailureThreshold: failures,
			}
		}
		// The startup probe lets a large catalog load without liveness
		// restarts; for a native sidecar it also holds the workload's
		// containers until the sidecar is up.
		c.StartupProbe = probe("/healthz", 1, 60)
		c.LivenessProbe = probe("/healthz", 10, 3)
		c.ReadinessProbe = probe("/readyz", 5, 2)
	}
	return c
}

// sidecarArgs are the sidecar's command line: serve and its flags. A
// stdio upstream's command follows them after "--" (stdioOps).
func sidecarArgs(s settings, layout string) []string {
	args := []string{"serve", "--listen=:" + strconv.Itoa(int(s.port))}
	if s.stdio == nil {
		args = append(args, "--upstream=http://127.0.0.1:"+strconv.Itoa(int(s.upstreamPort))+s.upstreamPath)
	}
	return append(args, "--plugin-dir="+PluginMountPath, "--plugin-layout="+layout)
}

// mcpPortName is the sidecar's MCP port name: the app's old one under
// AnnotationPortTakeover.
func mcpPortName(s settings) string {
	if s.takeover != nil {
		return s.takeover.name
	}
	return MCPPortName
}

func podInfoVolume() corev1.Volume {
	return corev1.Volume{Name: PodInfoVolume, VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
		Items: []corev1.DownwardAPIVolumeFile{{Path: "annotations", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations"}}},
	}}}
}

// sessionKeysVolume is the namespace's session keys Secret, optional: a
// namespace without it starts its pods all the same (each replica then
// seals with a key of its own, and says so).
func sessionKeysVolume() corev1.Volume {
	return corev1.Volume{Name: SessionKeysVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: SessionKeysSecret, Optional: ptr(true),
		Items: []corev1.KeyToPath{{Key: SessionKeysKey, Path: SessionKeysKey}},
	}}}
}

func hasVolume(spec corev1.PodSpec, name string) bool {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}

// pluginVolumes builds the plugin's volumes and the sidecar's mounts of
// them. Each ConfigMap is its own volume, mounted whole (no items[]) at
// PluginMountPath/NAME, all but the first optional, and the sidecar decodes the keys
// (catalog.LayoutConfigMaps): a key added, removed or moved is then served
// after the kubelet's next sync of that volume, where an items[] list
// would need a rollout for a new key and stop the volume's updates for a
// missing one. Separate volumes, not one projected volume, because a
// projected volume silently keeps one of two equal keys; the sidecar
// refuses them instead. An image, or the pod's own PluginVolume, is
// mounted at PluginMountPath as the plugin tree.
func pluginVolumes(s settings) ([]corev1.Volume, []corev1.VolumeMount) {
	if len(s.pluginCMs) == 0 {
		mount := []corev1.VolumeMount{{Name: PluginVolume, MountPath: PluginMountPath, ReadOnly: true}}
		if s.pluginImage == "" {
			return nil, mount // the pod brings the volume
		}
		// No pullPolicy: the API server's default, as for a container's
		// image (Always for :latest or no tag, IfNotPresent otherwise), so
		// a :latest plugin is pulled again when its pods are re-created.
		return []corev1.Volume{{Name: PluginVolume, VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: s.pluginImage},
		}}}, mount
	}
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	for i, name := range s.pluginCMs {
		v := configMapVolume(i)
		src := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}
		if i > 0 {
			// inject configmap writes every one it names, but the others
			// may not exist yet (named before their first apply, to grow
			// --mounted), or be pruned after --mounted was lowered: a
			// missing one is an empty folder, not a pod held in
			// ContainerCreating or a stale copy of moved files.
			src.Optional = ptr(true)
		}
		vols = append(vols, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{ConfigMap: src}})
		mounts = append(mounts, corev1.VolumeMount{Name: v, MountPath: PluginMountPath + "/" + name, ReadOnly: true})
	}
	return vols, mounts
}

// configMapVolume names the volume of the i-th plugin ConfigMap.
func configMapVolume(i int) string { return PluginVolume + "-" + strconv.Itoa(i) }

func ptr[T any](v T) *T { return &v }

// hasKey reports whether m holds key, whatever its value.
func hasKey(m map[string]string, key string) bool {
	_, ok := m[key]
	return ok
}
