package inject

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// stdioPod is a pod with a sidecar-less stdio server container "server"
// (command and args set, no port) beside a "web" container, opted in to
// run the server under the sidecar.
func stdioPod(extra ...string) corev1.Pod {
	pod := testPod(optIn(append([]string{AnnotationUpstreamStdio, "server"}, extra...)...))
	pod.Spec.Containers[0].Command = []string{"npx", "-y", "@modelcontextprotocol/server-everything"}
	pod.Spec.Containers[0].Args = []string{"stdio"}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "web", Image: "example/web:1",
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}})
	return pod
}

// TestMutateStdio: the named container runs the installed sidecar binary
// with the sidecar's flags, "--" and its own command and args, and gets the
// sidecar's ports, probes and mounts; no sidecar container is added, the
// other container is untouched, and the sidecar would start with those
// arguments (upstream-command is its argv).
func TestMutateStdio(t *testing.T) {
	t.Parallel()
	pod := stdioPod()
	for _, native := range []bool{false, true} {
		ops, _, skip, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "skills-sidecar:1", NativeSidecar: native})
		if err != nil || skip != "" {
			t.Fatalf("Mutate = %q, %v", skip, err)
		}
		got := applyToPod(t, pod, ops)
		if n := len(got.Spec.Containers); n != 2 || hasContainer(got.Spec, ContainerName) {
			t.Fatalf("native=%v: %d containers, sidecar container added: %v; want the pod's own 2 only", native, n, hasContainer(got.Spec, ContainerName))
		}
		if len(got.Spec.InitContainers) != 1 {
			t.Fatalf("native=%v: %d init containers, want the installer only", native, len(got.Spec.InitContainers))
		}
		install := got.Spec.InitContainers[0]
		if install.Name != InstallContainerName || install.Image != "skills-sidecar:1" || !slices.Equal(install.Args, []string{"install-self", StdioBinMountPath}) ||
			install.RestartPolicy != nil || install.SecurityContext == nil || !*install.SecurityContext.RunAsNonRoot {
			t.Errorf("native=%v: init container %+v, want the installer in the sidecar's image and security context", native, install)
		}
		c := got.Spec.Containers[0]
		if !slices.Equal(c.Command, []string{StdioBinPath}) {
			t.Errorf("command = %q, want [%s]", c.Command, StdioBinPath)
		}
		dash := slices.Index(c.Args, "--")
		if dash < 0 || c.Args[0] != "serve" || !slices.Equal(c.Args[dash+1:], []string{"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"}) {
			t.Fatalf("args = %q, want serve FLAGS -- npx -y ... stdio", c.Args)
		}
		for _, a := range c.Args[:dash] {
			if strings.HasPrefix(a, "--upstream") {
				t.Errorf("args carry %s: a stdio upstream is not dialled", a)
			}
		}
		cfg, rest, err := config.Load(config.Sources{Annotations: []byte("skills-sidecar.io/upstream-stdio=\"server\"\n"), Args: c.Args[1:]})
		if err != nil || cfg.Upstream != "" || len(rest) != 4 {
			t.Errorf("the sidecar reads its args as upstream %q, rest %q, err %v; want no URL and the 4 words after --", cfg.Upstream, rest, err)
		}
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if ports[MCPPortName] != DefaultPort || ports[MetricsPortName] != 17090 {
			t.Errorf("ports = %v, want %s and %s", ports, MCPPortName, MetricsPortName)
		}
		if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.StartupProbe == nil {
			t.Errorf("probes = %+v %+v %+v, want the sidecar's, the server's exec probe replaced", c.StartupProbe, c.LivenessProbe, c.ReadinessProbe)
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			mounts[m.MountPath] = m.ReadOnly
		}
		for _, path := range []string{PluginMountPath, PodInfoMountPath, SessionKeysMountPath, StdioBinMountPath} {
			if ro, ok := mounts[path]; !ok || !ro {
				t.Errorf("mounts = %v, want %s read-only", mounts, path)
			}
		}
		if web := got.Spec.Containers[1]; web.Command != nil || len(web.Ports) != 1 || web.VolumeMounts != nil {
			t.Errorf("the other container changed: %+v", web)
		}
		if !slices.ContainsFunc(got.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == StdioBinVolume && v.EmptyDir != nil }) {
			t.Errorf("volumes = %+v, want the emptyDir %s", got.Spec.Volumes, StdioBinVolume)
		}
	}
}

// TestMutateStdioRefusals: each setting that cannot work with a stdio
// server is refused, naming the annotation and the reason, with no patch.
func TestMutateStdioRefusals(t *testing.T) {
	t.Parallel()
	noCommand := stdioPod()
	noCommand.Spec.Containers[0].Command = nil
	initServer := stdioPod()
	initServer.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "i"}}
	initServer.Annotations[AnnotationUpstreamStdio] = "setup"
	binVolume := stdioPod()
	binVolume.Spec.Volumes = []corev1.Volume{{Name: StdioBinVolume}}
	mounted := stdioPod()
	mounted.Spec.Volumes = []corev1.Volume{{Name: "cfg"}}
	mounted.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/etc/skills-sidecar"}}
	installer := stdioPod()
	installer.Spec.InitContainers = []corev1.Container{{Name: InstallContainerName, Image: "i"}}
	badJSON := stdioPod()
	badJSON.Spec.Containers[0].Command = []string{""}
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want []string
	}{
		"no command":          {noCommand, []string{AnnotationUpstreamStdio, "server has no command", "entrypoint", "set the container's command"}},
		"no such container":   {stdioPod(AnnotationUpstreamStdio, "srv"), []string{AnnotationUpstreamStdio, `no container named "srv"`}},
		"empty name":          {stdioPod(AnnotationUpstreamStdio, " "), []string{AnnotationUpstreamStdio, "empty"}},
		"init container":      {initServer, []string{AnnotationUpstreamStdio, `"setup" is an init container`}},
		"with upstream-port":  {stdioPod(AnnotationUpstreamPort, "3000"), []string{AnnotationUpstreamStdio, "cannot go with " + AnnotationUpstreamPort, "not on a port"}},
		"with upstream-path":  {stdioPod(AnnotationUpstreamPath, "/mcp"), []string{"cannot go with " + AnnotationUpstreamPath}},
		"with port-takeover":  {stdioPod(AnnotationPortTakeover, "http"), []string{"cannot go with " + AnnotationPortTakeover, "no port of its own"}},
		"with resources":      {stdioPod(AnnotationResources, `{"limits":{"memory":"1Gi"}}`), []string{"cannot go with " + AnnotationResources, "set them there"}},
		"bin volume taken":    {binVolume, []string{StdioBinVolume, "rename"}},
		"mount path taken":    {mounted, []string{"already mounts /etc/skills-sidecar"}},
		"installer name":      {installer, []string{InstallContainerName, "rename"}},
		"empty program":       {badJSON, []string{"upstream-command", "no program"}},
		"upstream-command":    {stdioPod(config.AnnotationPrefix+"upstream-command", `["x"]`), []string{"upstream-command: set by the injector", AnnotationUpstreamStdio}},
		"sidecar port in use": {stdioPod(AnnotationPort, "8080"), []string{AnnotationPort, "8080", "container web"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wantMutateError(t, tc.pod, tc.want)
		})
	}
}

// TestMutateStdioChecksEnvironment: the sidecar runs in the named
// container, so that container's SKILLS_SIDECAR_* environment is the
// sidecar's configuration too (above annotations, below flags). What it
// could not start with is refused at admission, as annotations are, with
// the sidecar's own loader judging it; a variable whose value the kubelet
// fills in (valueFrom, $(VAR)) is judged by its name alone, and the
// variables the sidecar would start with are admitted.
func TestMutateStdioChecksEnvironment(t *testing.T) {
	t.Parallel()
	withEnv := func(env ...corev1.EnvVar) corev1.Pod {
		pod := stdioPod()
		pod.Spec.Containers[0].Env = env
		return pod
	}
	lit := func(k, v string) corev1.EnvVar { return corev1.EnvVar{Name: k, Value: v} }
	fromSecret := func(k string) corev1.EnvVar {
		return corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}
	}
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want []string
	}{
		"unknown key":         {withEnv(lit("SKILLS_SIDECAR_BOGUS", "1")), []string{"container server", "SKILLS_SIDECAR_BOGUS", "unknown key"}},
		"unknown key by ref":  {withEnv(fromSecret("SKILLS_SIDECAR_BOGUS")), []string{"container server", "SKILLS_SIDECAR_BOGUS", "unknown key"}},
		"bad value":           {withEnv(lit("SKILLS_SIDECAR_LOG_LEVEL", "verbose")), []string{"container server", "log-level"}},
		"upstream as well":    {withEnv(lit("SKILLS_SIDECAR_UPSTREAM", "http://127.0.0.1:3000/mcp")), []string{"container server", "SKILLS_SIDECAR_UPSTREAM"}},
		"annotations hidden":  {withEnv(lit("SKILLS_SIDECAR_ANNOTATIONS_FILE", "/nowhere")), []string{"container server", "SKILLS_SIDECAR_ANNOTATIONS_FILE"}},
		"metrics unprobeable": {withEnv(lit("SKILLS_SIDECAR_METRICS_LISTEN", "127.0.0.1:17090")), []string{"container server", "SKILLS_SIDECAR_METRICS_LISTEN", config.AnnotationPrefix + "metrics-listen"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wantMutateError(t, tc.pod, tc.want)
		})
	}
	for name, pod := range map[string]corev1.Pod{
		"known key":           withEnv(lit("SKILLS_SIDECAR_LOG_LEVEL", "debug"), lit("OTHER", "x")),
		"known key by ref":    withEnv(fromSecret("SKILLS_SIDECAR_LOG_LEVEL")),
		"expanded by kubelet": withEnv(lit("LEVEL", "debug"), lit("SKILLS_SIDECAR_LOG_LEVEL", "$(LEVEL)")),
		"metrics as probed":   withEnv(lit("SKILLS_SIDECAR_METRICS_LISTEN", ":17090")),
	} {
		ops, _, _, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "i"})
		if err != nil || ops == nil {
			t.Errorf("%s: Mutate = %d ops, %v; want the sidecar", name, len(ops), err)
		}
	}
}

// FuzzMutateStdio feeds arbitrary container names and command words:
// Mutate never panics, and a patch it returns applies, decodes strictly
// and hands the sidecar the container's command and args unchanged after
// "--" (the corpus keeps "Y", which a YAML 1.1 reader took for true until
// the patch quoted it).
func FuzzMutateStdio(f *testing.F) {
	f.Add("server", "npx", "stdio")
	f.Add(" server ", "", "-y")
	f.Add("web", "--", "--")
	f.Fuzz(func(t *testing.T, name, command, arg string) {
		for _, in := range []string{name, command, arg} {
			if !utf8.ValidString(in) || strings.ContainsFunc(in, notYAMLText) {
				return // a manifest is YAML text: no invalid UTF-8, no control characters but tab and newline
			}
		}
		pod := stdioPod(AnnotationUpstreamStdio, name)
		pod.Spec.Containers[0].Command = []string{command}
		pod.Spec.Containers[0].Args = []string{arg}
		ops, _, _, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "i"})
		if err != nil || ops == nil {
			return
		}
		got := applyToPod(t, pod, ops)
		i := slices.IndexFunc(got.Spec.Containers, func(c corev1.Container) bool { return c.Name == strings.TrimSpace(name) })
		if i < 0 {
			t.Fatalf("admitted %q, which names no container", name)
		}
		want := slices.Concat(pod.Spec.Containers[i].Command, pod.Spec.Containers[i].Args)
		args := got.Spec.Containers[i].Args
		if dash := slices.Index(args, "--"); dash < 0 || !slices.Equal(args[dash+1:], want) {
			t.Errorf("args %q do not end with -- %q", args, want)
		}
	})
}

// notYAMLText reports a character a YAML stream may not hold (YAML 1.2
// section 5.1, which the test's own YAML round trip enforces).
func notYAMLText(r rune) bool {
	return unicode.IsControl(r) && r != '\t' && r != '\n' && r != 0x85 || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF
}
