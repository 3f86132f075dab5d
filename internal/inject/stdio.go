package inject

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// Names and paths of AnnotationUpstreamStdio.
const (
	// InstallContainerName is the init container that copies the sidecar's
	// binary into StdioBinVolume.
	InstallContainerName = "skills-sidecar-install"
	// StdioBinVolume is the emptyDir holding the sidecar's binary.
	StdioBinVolume = "skills-sidecar-bin"
	// StdioBinMountPath is where StdioBinVolume is mounted, in the init
	// container (writable) and in the server's container (read-only).
	StdioBinMountPath = "/etc/skills-sidecar/bin"
	// StdioBinPath is the sidecar's binary in the server's container: the
	// container's new command.
	StdioBinPath = StdioBinMountPath + "/skills-sidecar"
)

// stdioTarget is a resolved AnnotationUpstreamStdio: the container that
// runs the stdio server, and the sidecar in front of it.
type stdioTarget struct {
	name      string
	container int      // index in spec.Containers
	argv      []string // the container's command and args: the server
	environ   []string // its SKILLS_SIDECAR_* variables, as the sidecar will read them (stdioEnviron)
}

// resolveStdio finds the container AnnotationUpstreamStdio names and
// reports every setting that cannot go with it, each with its reason.
func resolveStdio(v string, ann map[string]string, spec *corev1.PodSpec) (*stdioTarget, []error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("annotation %s: %s", AnnotationUpstreamStdio, fmt.Sprintf(format, args...)))
	}
	for _, k := range []struct{ key, why string }{
		{AnnotationUpstreamPort, "the server speaks on stdin and stdout, not on a port"},
		{AnnotationUpstreamPath, "the server speaks on stdin and stdout, not on an HTTP path"},
		{AnnotationPortTakeover, "the server has no port of its own for the sidecar to take over; point the Service at the port " + MCPPortName},
		{AnnotationResources, "no sidecar container is added: the sidecar and the server share the named container's resources; set them there"},
	} {
		if _, set := ann[k.key]; set {
			bad("cannot go with %s: %s", k.key, k.why)
		}
	}
	name := strings.TrimSpace(v)
	i := slices.IndexFunc(spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	switch {
	case name == "":
		bad("empty; name the container whose command is the stdio MCP server")
		return nil, errs
	case i < 0 && slices.ContainsFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == name }):
		bad("%q is an init container; name one of the pod's containers", name)
		return nil, errs
	case i < 0:
		bad("the pod has no container named %q", name)
		return nil, errs
	}
	c := spec.Containers[i]
	if len(c.Command) == 0 {
		bad("container %s has no command, and the injector cannot read its image's entrypoint; "+
			"set the container's command (and args) to what the image runs, e.g. command: [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"] and args: [\"stdio\"]", name)
	}
	for _, m := range c.VolumeMounts {
		if strings.HasPrefix(m.MountPath+"/", "/etc/skills-sidecar/") || m.MountPath == "/etc/skills-sidecar" {
			bad("container %s already mounts %s, where the injector mounts the sidecar's files; move it", name, m.MountPath)
		}
	}
	for _, vol := range spec.Volumes {
		if vol.Name == StdioBinVolume {
			bad("the pod already has a volume named %q, a name the injector uses for the sidecar's binary; rename it", StdioBinVolume)
		}
	}
	if hasContainer(*spec, InstallContainerName) {
		bad("the pod already has a container named %q, the name of the injector's init container; rename it", InstallContainerName)
	}
	environ, envErrs := stdioEnviron(c)
	errs = append(errs, envErrs...)
	return &stdioTarget{name: name, container: i, argv: slices.Concat(c.Command, c.Args), environ: environ}, errs
}

// stdioEnviron is the container's SKILLS_SIDECAR_* environment as
// "KEY=value": the sidecar runs in that container and reads those
// variables as its configuration, above the annotations, so Mutate judges
// them with the rest. A variable whose value only the kubelet knows
// (valueFrom, a $(VAR) reference) is judged by its name alone. A key the
// injector sets itself (injectorOwnedRuntimeKeys) is refused, as its
// annotation is: the flag would silently override it, or (annotations-file)
// it would hide the annotations from the sidecar.
func stdioEnviron(c corev1.Container) ([]string, []error) {
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[config.EnvName(k.Name)] = true
	}
	var environ []string
	var errs []error
	for _, e := range c.Env {
		if !strings.HasPrefix(e.Name, config.EnvPrefix) {
			continue
		}
		for key := range injectorOwnedRuntimeKeys {
			if e.Name == config.EnvName(key) {
				errs = append(errs, fmt.Errorf("annotation %s: container %s sets %s, a setting the injector makes itself for the sidecar that runs in that container; drop it", AnnotationUpstreamStdio, c.Name, e.Name))
			}
		}
		if (e.ValueFrom != nil || strings.Contains(e.Value, "$(")) && known[e.Name] {
			continue
		}
		environ = append(environ, e.Name+"="+e.Value)
	}
	return environ, errs
}

// installContainer copies the sidecar's binary into StdioBinVolume: the
// image has no shell and no cp, so the binary copies itself
// (skills-sidecar install-self). Its security context is the sidecar's, so
// the pod stays within Pod Security "restricted".
func installContainer(side corev1.Container) corev1.Container {
	return corev1.Container{
		Name:            InstallContainerName,
		Image:           side.Image,
		ImagePullPolicy: side.ImagePullPolicy,
		Args:            []string{"install-self", StdioBinMountPath},
		Resources:       side.Resources,
		VolumeMounts:    []corev1.VolumeMount{{Name: StdioBinVolume, MountPath: StdioBinMountPath}},
		SecurityContext: side.SecurityContext,
	}
}

// stdioOps turns the sidecar container the injector would have added
// (side) into the named container's new command, args, ports, mounts and
// probes, plus the init container that installs the binary. The server's
// command and args follow "--", so the sidecar runs them as its upstream
// (config key upstream-command). With the metrics listener on, the
// sidecar's probes replace the container's: the process the kubelet
// probes is now the sidecar, whose /readyz waits for the server's
// handshake.
func stdioOps(t *stdioTarget, spec corev1.PodSpec, side corev1.Container) []PatchOp {
	base := "/spec/containers/" + strconv.Itoa(t.container)
	c := spec.Containers[t.container]
	ops := appendOps(nil, "/spec/initContainers", len(spec.InitContainers), installContainer(side))
	ops = append(ops,
		PatchOp{Op: "replace", Path: base + "/command", Value: []string{StdioBinPath}},
		PatchOp{Op: "add", Path: base + "/args", Value: slices.Concat(side.Args, []string{"--"}, t.argv)})
	ops = appendOps(ops, base+"/ports", len(c.Ports), side.Ports...)
	mounts := append(slices.Clone(side.VolumeMounts), corev1.VolumeMount{Name: StdioBinVolume, MountPath: StdioBinMountPath, ReadOnly: true})
	ops = appendOps(ops, base+"/volumeMounts", len(c.VolumeMounts), mounts...)
	for _, p := range []struct {
		key   string
		probe *corev1.Probe
	}{{"startupProbe", side.StartupProbe}, {"livenessProbe", side.LivenessProbe}, {"readinessProbe", side.ReadinessProbe}} {
		if p.probe != nil {
			ops = append(ops, PatchOp{Op: "add", Path: base + "/" + p.key, Value: p.probe})
		}
	}
	return ops
}

func stdioBinVolume() corev1.Volume {
	return corev1.Volume{Name: StdioBinVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
