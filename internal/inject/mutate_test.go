package inject

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	yamlv3 "gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

func testPod(ann map[string]string, ports ...int32) corev1.Pod {
	c := corev1.Container{Name: "server", Image: "example/server:1"}
	for _, p := range ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "http", ContainerPort: p})
	}
	return corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}
}

func optIn(extra ...string) map[string]string {
	m := map[string]string{AnnotationInject: "true", AnnotationPluginImage: "example/plugin:1"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// applyToPod applies a patch to the pod's JSON and decodes the result
// strictly, as the API server would have to.
func applyToPod(t *testing.T, pod corev1.Pod, ops []PatchOp) corev1.Pod {
	t.Helper()
	j, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if err := ApplyPatch(&doc, "", ops); err != nil {
		t.Fatalf("ApplyPatch: %v", err)
	}
	y, err := yamlv3.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	if err := yaml.UnmarshalStrict(y, &out); err != nil {
		t.Fatalf("patched pod does not decode strictly: %v\n%s", err, y)
	}
	return out
}

func TestMutate(t *testing.T) {
	t.Parallel()
	opts := Options{Image: "img:1", NativeSidecar: true, Resources: DefaultResources(), Version: "0.1.0"}
	appOn8080and9090 := testPod(optIn(AnnotationUpstreamPort, "http"), 8080)
	appOn8080and9090.Spec.Containers[0].Ports = append(appOn8080and9090.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: 9090})
	for name, tc := range map[string]struct {
		pod        corev1.Pod
		opts       Options
		wantInit   bool
		wantUp     string
		wantListen string
		wantProbe  int32 // metrics port the probes name via the port list; 0: no probes
		wantVolume func(corev1.Volume) bool
		// wantConfigMaps are the ConfigMaps mounted whole, one volume
		// each; none means one plugin volume in the tree layout.
		wantConfigMaps []string
	}{
		"native sidecar": {
			pod: testPod(optIn(), 3000), opts: opts, wantInit: true,
			wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080", wantProbe: 17090,
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil && v.Image.Reference == "example/plugin:1" },
		},
		"regular container": {
			pod: testPod(optIn(), 3000), opts: Options{Image: "img:1"},
			wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080", wantProbe: 17090,
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil },
		},
		"named upstream port, custom path and ports": {
			pod:  testPod(optIn(AnnotationUpstreamPort, "http", AnnotationUpstreamPath, "/x/mcp", AnnotationPort, "7000", config.AnnotationPrefix+"metrics-listen", ":7001"), 3000),
			opts: opts, wantInit: true,
			wantUp: "--upstream=http://127.0.0.1:3000/x/mcp", wantListen: "--listen=:7000", wantProbe: 7001,
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil },
		},
		"metrics on every address": {
			pod:  testPod(optIn(config.AnnotationPrefix+"metrics-listen", "0.0.0.0:7001"), 3000),
			opts: opts, wantInit: true, wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080", wantProbe: 7001,
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil },
		},
		"one configmap": {
			pod:  testPod(map[string]string{AnnotationInject: "true", AnnotationPluginConfigMaps: "a"}, 3000),
			opts: opts, wantInit: true, wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080", wantProbe: 17090,
			wantConfigMaps: []string{"a"},
		},
		"two configmaps": {
			pod:  testPod(map[string]string{AnnotationInject: "true", AnnotationPluginConfigMaps: "a,b"}, 3000),
			opts: opts, wantInit: true, wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080", wantProbe: 17090,
			wantConfigMaps: []string{"a", "b"},
		},
		"image by annotation": {
			pod:  testPod(optIn(AnnotationImage, "example/other:2"), 3000),
			opts: opts, wantInit: true, wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080", wantProbe: 17090,
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil },
		},
		"app on 8080 and 9090, the old defaults": {
			pod:  appOn8080and9090,
			opts: opts, wantInit: true, wantUp: "--upstream=http://127.0.0.1:8080/mcp", wantListen: "--listen=:17080", wantProbe: 17090,
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil },
		},
		"metrics disabled": {
			pod:  testPod(optIn(config.AnnotationPrefix+"metrics-listen", ""), 3000),
			opts: opts, wantInit: true, wantUp: "--upstream=http://127.0.0.1:3000/mcp", wantListen: "--listen=:17080",
			wantVolume: func(v corev1.Volume) bool { return v.Image != nil },
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ops, _, skip, err := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, tc.opts)
			if err != nil || skip != "" {
				t.Fatalf("Mutate = skip %q, err %v; want a patch", skip, err)
			}
			got := applyToPod(t, tc.pod, ops)
			list := got.Spec.Containers
			if tc.wantInit {
				list = got.Spec.InitContainers
				if len(got.Spec.Containers) != 1 {
					t.Errorf("containers = %d, want the workload's 1", len(got.Spec.Containers))
				}
			}
			c := list[len(list)-1]
			wantImage := "img:1"
			if img := tc.pod.Annotations[AnnotationImage]; img != "" {
				wantImage = img
			}
			if c.Name != ContainerName || c.Image != wantImage {
				t.Fatalf("last container = %s (%s), want %s (%s)", c.Name, c.Image, ContainerName, wantImage)
			}
			if native := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways; native != tc.wantInit {
				t.Errorf("restartPolicy Always = %v, want %v", native, tc.wantInit)
			}
			layout := "--plugin-layout=tree"
			if tc.wantConfigMaps != nil {
				layout = "--plugin-layout=configmaps"
			}
			if want := []string{"serve", tc.wantListen, tc.wantUp, "--plugin-dir=" + PluginMountPath, layout}; !cmp.Equal(c.Args, want) {
				t.Errorf("args = %q, want %q", c.Args, want)
			}
			if tc.wantProbe == 0 {
				if c.ReadinessProbe != nil || c.LivenessProbe != nil || len(c.Ports) != 1 {
					t.Errorf("metrics disabled but probes or a metrics port were added: %+v", c.Ports)
				}
			} else {
				if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.StartupProbe == nil {
					t.Errorf("probes = %+v / %+v, want /readyz and /healthz", c.ReadinessProbe, c.LivenessProbe)
				}
				if len(c.Ports) != 2 || c.Ports[1].Name != MetricsPortName || c.Ports[1].ContainerPort != tc.wantProbe {
					t.Errorf("ports = %+v, want %s on %d", c.Ports, MetricsPortName, tc.wantProbe)
				}
			}
			sc := c.SecurityContext
			if sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation {
				t.Errorf("securityContext = %+v, want non-root, read-only root, no privilege escalation", sc)
			}
			vols := map[string]corev1.Volume{}
			for _, v := range got.Spec.Volumes {
				vols[v.Name] = v
			}
			var wantMounts []corev1.VolumeMount
			for i, name := range tc.wantConfigMaps {
				v := vols[PluginVolume+"-"+string(rune('0'+i))]
				if v.ConfigMap == nil || v.ConfigMap.Name != name || v.ConfigMap.Items != nil {
					t.Errorf("volume %d = %+v, want ConfigMap %s whole, without items", i, v, name)
				}
				wantMounts = append(wantMounts, corev1.VolumeMount{Name: v.Name, MountPath: PluginMountPath + "/" + name, ReadOnly: true})
			}
			if tc.wantConfigMaps == nil {
				if !tc.wantVolume(vols[PluginVolume]) {
					t.Errorf("plugin volume = %+v, not what the case wants", vols[PluginVolume])
				}
				wantMounts = []corev1.VolumeMount{{Name: PluginVolume, MountPath: PluginMountPath, ReadOnly: true}}
			}
			wantMounts = append(wantMounts, corev1.VolumeMount{Name: PodInfoVolume, MountPath: PodInfoMountPath, ReadOnly: true},
				corev1.VolumeMount{Name: SessionKeysVolume, MountPath: SessionKeysMountPath, ReadOnly: true})
			if sec := vols[SessionKeysVolume].Secret; sec == nil || sec.SecretName != SessionKeysSecret || sec.Optional == nil || !*sec.Optional {
				t.Errorf("session keys volume = %+v, want the Secret %s, optional", vols[SessionKeysVolume], SessionKeysSecret)
			}
			if diff := cmp.Diff(wantMounts, c.VolumeMounts); diff != "" {
				t.Errorf("volume mounts (-want +got):\n%s", diff)
			}
			if d := vols[PodInfoVolume].DownwardAPI; d == nil || d.Items[0].FieldRef.FieldPath != "metadata.annotations" {
				t.Errorf("podinfo volume = %+v, want the downward API annotations", vols[PodInfoVolume])
			}
			// The status records the image in the container (the annotation
			// override included) and the injector's version, as JSON.
			var st map[string]string
			if err := json.Unmarshal([]byte(got.Annotations[AnnotationStatus]), &st); err != nil ||
				st["image"] != c.Image || st["injector"] != tc.opts.Version || len(st) != 1+min(1, len(tc.opts.Version)) {
				t.Errorf("status annotation = %q (%v), want image %q and injector %q", got.Annotations[AnnotationStatus], err, c.Image, tc.opts.Version)
			}
			ops2, _, skip2, err := Mutate(got.ObjectMeta, got.Spec, tc.opts)
			if ops2 != nil || skip2 != SkipInjected || err != nil {
				t.Errorf("second Mutate = %d ops, %q, %v; want none, %q", len(ops2), skip2, err, SkipInjected)
			}
		})
	}
}

func TestMutateSkips(t *testing.T) {
	t.Parallel()
	withSidecar := testPod(optIn(), 3000)
	withSidecar.Spec.Containers = append(withSidecar.Spec.Containers, corev1.Container{Name: ContainerName})
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want string
	}{
		"no annotations": {testPod(nil, 3000), SkipNotOptedIn},
		"opted out":      {testPod(optIn(AnnotationInject, "false"), 3000), SkipNotOptedIn},
		"injected":       {testPod(optIn(AnnotationStatus, `{"image":"i"}`), 3000), SkipInjected},
		"injected (old)": {testPod(optIn(AnnotationStatus, "injected"), 3000), SkipInjected},
		// Any value, the empty one too: the webhook's match condition
		// tests the key's presence, so inject -f must skip what it skips.
		"injected (empty)": {testPod(optIn(AnnotationStatus, ""), 3000), SkipInjected},
		"has sidecar":      {withSidecar, SkipHasSidecar},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ops, _, skip, err := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, Options{Image: "i"})
			if ops != nil || err != nil || skip != tc.want {
				t.Errorf("Mutate = %d ops, %q, %v; want none, %q, nil", len(ops), skip, err, tc.want)
			}
		})
	}
}

// TestMutateErrors feeds every malformed annotation the resolver exists to
// catch: no patch, and an error naming each bad annotation.
func TestMutateErrors(t *testing.T) {
	t.Parallel()
	twoPorts := testPod(optIn(), 3000)
	twoPorts.Spec.Containers[0].Ports = append(twoPorts.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 3001})
	ownVolume := testPod(optIn(), 3000)
	ownVolume.Spec.Volumes = []corev1.Volume{{Name: PluginVolume}}
	cmVolume := testPod(map[string]string{AnnotationInject: "true", AnnotationPluginConfigMaps: "a"}, 3000)
	cmVolume.Spec.Volumes = []corev1.Volume{{Name: PluginVolume + "-0"}}
	// Found in review: each of these was admitted with a patch the API
	// server then refused (naming a field the pod's owner never wrote).
	podInfo := testPod(optIn(), 3000)
	podInfo.Spec.Volumes = []corev1.Volume{{Name: PodInfoVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	windows := testPod(optIn(), 3000)
	windows.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
	metricsName := testPod(optIn(AnnotationPortTakeover, MetricsPortName))
	metricsName.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: MetricsPortName, ContainerPort: 3000}}
	res := func(v string) corev1.Pod { return testPod(optIn(AnnotationResources, v), 3000) }
	// Found by a platform engineer's trial: each was injected silently.
	hostNet := testPod(optIn(), 3000)
	hostNet.Spec.HostNetwork = true
	named := func(name string, extra ...string) corev1.Pod {
		p := testPod(optIn(extra...), 3000)
		p.Spec.Containers[0].Ports[0].Name = name
		return p
	}
	initNamed := testPod(optIn(), 3000)
	initNamed.Spec.InitContainers = []corev1.Container{{Name: "proxy", Image: "i", Ports: []corev1.ContainerPort{{Name: MCPPortName, ContainerPort: 9000}}}}
	takeoverAndMCP := testPod(optIn(AnnotationPortTakeover, "http"), 3000)
	takeoverAndMCP.Spec.Containers = append(takeoverAndMCP.Spec.Containers, corev1.Container{Name: "other", Image: "i", Ports: []corev1.ContainerPort{{Name: "http2", ContainerPort: 9000}}})
	takeoverAndMCP.Spec.Containers[1].Ports[0].Name = MetricsPortName
	for name, tc := range map[string]struct {
		pod  corev1.Pod
		want []string
	}{
		"inject not a bool":      {testPod(optIn(AnnotationInject, "yes"), 3000), []string{AnnotationInject, `"yes"`}},
		"no upstream port":       {testPod(optIn()), []string{AnnotationUpstreamPort, "0 ports"}},
		"two ports":              {twoPorts, []string{AnnotationUpstreamPort, "2 ports"}},
		"unknown port name":      {testPod(optIn(AnnotationUpstreamPort, "grpc"), 3000), []string{AnnotationUpstreamPort, `"grpc"`}},
		"bad port":               {testPod(optIn(AnnotationPort, "70000"), 3000), []string{AnnotationPort, "70000"}},
		"port collides":          {testPod(optIn(AnnotationPort, "3000"), 3000), []string{AnnotationPort, "upstream"}},
		"metrics collides":       {testPod(optIn(), 17090), []string{"metrics-listen", "17090", "container server"}},
		"mcp port collides":      {testPod(optIn(AnnotationUpstreamPort, "3000"), 3000, 17080), []string{AnnotationPort, "17080", "container server"}},
		"bad path":               {testPod(optIn(AnnotationUpstreamPath, "mcp"), 3000), []string{AnnotationUpstreamPath}},
		"control char in path":   {testPod(optIn(AnnotationUpstreamPath, "/mc\x7f"), 3000), []string{AnnotationUpstreamPath}},
		"CR in path":             {testPod(optIn(AnnotationUpstreamPath, "/mcp\r"), 3000), []string{AnnotationUpstreamPath}},
		"bad resources":          {testPod(optIn(AnnotationResources, `{"request":{}}`), 3000), []string{AnnotationResources, "request"}},
		"bad image":              {testPod(optIn(AnnotationImage, "a b"), 3000), []string{AnnotationImage}},
		"no plugin":              {testPod(map[string]string{AnnotationInject: "true"}, 3000), []string{AnnotationPluginConfigMaps, AnnotationPluginImage}},
		"both plugins":           {testPod(optIn(AnnotationPluginConfigMaps, "a"), 3000), []string{"set only one"}},
		"image and own volume":   {ownVolume, []string{AnnotationPluginImage, PluginVolume}},
		"bad configmap name":     {testPod(map[string]string{AnnotationInject: "true", AnnotationPluginConfigMaps: "A_b"}, 3000), []string{`"A_b"`}},
		"configmap twice":        {testPod(map[string]string{AnnotationInject: "true", AnnotationPluginConfigMaps: "a, a"}, 3000), []string{`"a" is listed twice`}},
		"configmaps and volume":  {cmVolume, []string{AnnotationPluginConfigMaps, PluginVolume + "-0"}},
		"runtime typo":           {testPod(optIn(config.AnnotationPrefix+"log-levle", "debug"), 3000), []string{"log-levle: unknown key"}},
		"runtime bad value":      {testPod(optIn(config.AnnotationPrefix+"page-size", "many"), 3000), []string{"page-size", `"many"`}},
		"injector-owned runtime": {testPod(optIn(config.AnnotationPrefix+"upstream", "http://x"), 3000), []string{"set by the injector"}},
		"several at once":        {testPod(optIn(AnnotationPort, "x", AnnotationUpstreamPath, "y"), 3000), []string{AnnotationPort, AnnotationUpstreamPath}},
		// Found in review: each was admitted, and the pod then never started.
		"metrics on loopback":      {testPod(optIn(config.AnnotationPrefix+"metrics-listen", "127.0.0.1:17090"), 3000), []string{"metrics-listen", "127.0.0.1", "probes"}},
		"metrics on localhost":     {testPod(optIn(config.AnnotationPrefix+"metrics-listen", "localhost:17090"), 3000), []string{"metrics-listen", "localhost"}},
		"metrics on ::1":           {testPod(optIn(config.AnnotationPrefix+"metrics-listen", "[::1]:17090"), 3000), []string{"metrics-listen", "::1"}},
		"metrics on one address":   {testPod(optIn(config.AnnotationPrefix+"metrics-listen", "10.1.2.3:17090"), 3000), []string{"metrics-listen", "10.1.2.3"}},
		"bad escape in path":       {testPod(optIn(AnnotationUpstreamPath, "/%zz"), 3000), []string{AnnotationUpstreamPath, "/%zz"}},
		"trailing % in path":       {testPod(optIn(AnnotationUpstreamPath, "/mcp%"), 3000), []string{AnnotationUpstreamPath}},
		"short escape in path":     {testPod(optIn(AnnotationUpstreamPath, "/a%2"), 3000), []string{AnnotationUpstreamPath}},
		"metrics on upstream port": {testPod(optIn(AnnotationUpstreamPort, "17090")), []string{"metrics-listen", "17090", "upstream"}},
		"podinfo volume":           {podInfo, []string{PodInfoVolume, "rename"}},
		"windows pod":              {windows, []string{"spec.os.name", "windows"}},
		"takeover of metrics name": {metricsName, []string{AnnotationPortTakeover, MetricsPortName}},
		"request over limit":       {res(`{"requests":{"memory":"1Gi"},"limits":{"memory":"256Mi"}}`), []string{AnnotationResources, "more than its limit"}},
		"negative request":         {res(`{"requests":{"cpu":"-1"}}`), []string{AnnotationResources, "negative"}},
		"extended without limit":   {res(`{"requests":{"example.com/foo":"1"}}`), []string{AnnotationResources, "example.com/foo", "needs a limit"}},
		"extended overcommitted":   {res(`{"requests":{"example.com/foo":"1"},"limits":{"example.com/foo":"2"}}`), []string{AnnotationResources, "must equal"}},
		"hugepages without limit":  {res(`{"requests":{"hugepages-2Mi":"2Mi"}}`), []string{AnnotationResources, "hugepages-2Mi"}},
		"unqualified resource":     {res(`{"limits":{"gpu":"1"}}`), []string{AnnotationResources, `"gpu"`}},
		// Found in the review of the first resource checks.
		"hugepages alone":     {res(`{"requests":{"hugepages-2Mi":"2Mi"},"limits":{"hugepages-2Mi":"2Mi"}}`), []string{AnnotationResources, "cpu or memory"}},
		"fractional extended": {res(`{"requests":{"example.com/foo":"500m"},"limits":{"example.com/foo":"500m"}}`), []string{AnnotationResources, "whole number"}},
		"bad qualified name":  {res(`{"limits":{"a/b/c":"1"}}`), []string{AnnotationResources, "a/b/c"}},
		// Found in the review of the second resource checks, with the API
		// server's own validation (k8s.io/kubernetes v1.36.3) as the judge.
		"quota-only requests. name": {res(`{"requests":{"requests.nvidia.com/gpu":"1"},"limits":{"requests.nvidia.com/gpu":"1"}}`), []string{AnnotationResources, "requests.nvidia.com/gpu"}},
		"hugepages not whole pages": {res(`{"requests":{"memory":"64Mi","hugepages-2Mi":"3Mi"},"limits":{"memory":"64Mi","hugepages-2Mi":"3Mi"}}`), []string{AnnotationResources, "pages"}},
		"hugepages without a size":  {res(`{"limits":{"memory":"64Mi","hugepages-huge":"2Mi"}}`), []string{AnnotationResources, "hugepages-huge"}},
		"claim twice":               {claimedPod(`{"claims":[{"name":"gpu"},{"name":"gpu"}]}`), []string{AnnotationResources, "twice"}},
		"claim and its request":     {claimedPod(`{"claims":[{"name":"gpu","request":"a"},{"name":"gpu"}]}`), []string{AnnotationResources, "twice"}},
		"claim request twice":       {claimedPod(`{"claims":[{"name":"gpu","request":"a"},{"name":"gpu","request":"a"}]}`), []string{AnnotationResources, "twice"}},
		"claim request not a label": {claimedPod(`{"claims":[{"name":"gpu","request":"Bad_Request"}]}`), []string{AnnotationResources, "DNS label"}},
		"claim the pod lacks":       {res(`{"claims":[{"name":"gpu"}]}`), []string{AnnotationResources, `"gpu"`, "resourceClaims"}},
		// Found in a day-2 review: each gave the sidecar no resources at
		// all (no requests, no memory limit) where every other injector
		// annotation refuses an empty value.
		"empty resources":                {res(""), []string{AnnotationResources, "not a ResourceRequirements"}},
		"blank resources":                {res(" \n"), []string{AnnotationResources, "not a ResourceRequirements"}},
		"null resources":                 {res("null"), []string{AnnotationResources, "not a ResourceRequirements"}},
		"host network":                   {hostNet, []string{"spec.hostNetwork", "does not inject host-network pods", AnnotationInject}},
		"app port named skills-mcp":      {named(MCPPortName), []string{"container server", `"skills-mcp"`, "sidecar's MCP port", "rename"}},
		"app port named metrics":         {named(MetricsPortName), []string{"container server", `"skills-metrics"`, "sidecar's metrics port"}},
		"init port named skills-mcp":     {initNamed, []string{"container proxy", `"skills-mcp"`}},
		"metrics name beside a takeover": {takeoverAndMCP, []string{"container other", `"skills-metrics"`}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wantMutateError(t, tc.pod, tc.want)
		})
	}
}

// wantMutateError checks that Mutate refuses pod with an error holding
// every string of want, and no patch.
func wantMutateError(t *testing.T, pod corev1.Pod, want []string) {
	t.Helper()
	ops, _, skip, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "i"})
	if ops != nil || err == nil {
		t.Fatalf("Mutate = %d ops, %q, %v; want an error", len(ops), skip, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// FuzzMutate feeds arbitrary annotation values: Mutate never panics, and a
// patch it returns applies and decodes strictly.
func FuzzMutate(f *testing.F) {
	f.Add("true", "3000", "/mcp", "8080", `{"limits":{"memory":"1Gi"}}`, "debug", "")
	f.Add("yes", "http", "mcp", "0", `{`, "loud", "http")
	f.Fuzz(func(t *testing.T, inject, upPort, upPath, port, res, level, takeover string) {
		ann := map[string]string{
			AnnotationInject: inject, AnnotationUpstreamPort: upPort, AnnotationUpstreamPath: upPath,
			AnnotationPort: port, AnnotationResources: res, config.AnnotationPrefix + "log-level": level,
			AnnotationPluginImage: "p",
		}
		if takeover != "" {
			ann[AnnotationPortTakeover] = takeover
		}
		pod := takeoverPod(ann)
		ops, _, _, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "i", NativeSidecar: true})
		if err != nil || ops == nil {
			return
		}
		got := applyToPod(t, pod, ops)
		// Names the API server requires unique: volumes, and ports within
		// a container.
		vols := map[string]bool{}
		for _, v := range got.Spec.Volumes {
			if vols[v.Name] {
				t.Errorf("two volumes named %q", v.Name)
			}
			vols[v.Name] = true
		}
		for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
			ports := map[string]bool{}
			for _, p := range c.Ports {
				if p.Name != "" && ports[p.Name] {
					t.Errorf("container %s has two ports named %q", c.Name, p.Name)
				}
				ports[p.Name] = true
			}
		}
	})
}

// TestMutateAdmitsValidForms guards the refusals above against false
// positives (written in review): valid but less common forms of each
// checked annotation are admitted.
func TestMutateAdmitsValidForms(t *testing.T) {
	t.Parallel()
	linux := testPod(optIn(), 3000)
	linux.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
	claimed := testPod(optIn(AnnotationResources, `{"claims":[{"name":"gpu"}]}`), 3000)
	claimed.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
	res := func(v string) corev1.Pod { return testPod(optIn(AnnotationResources, v), 3000) }
	m := config.AnnotationPrefix + "metrics-listen"
	metricsNamedOff := testPod(optIn(m, ""), 3000)
	metricsNamedOff.Spec.Containers[0].Ports[0].Name = MetricsPortName
	takeoverMCP := testPod(optIn(AnnotationPortTakeover, MCPPortName), 3000)
	takeoverMCP.Spec.Containers[0].Ports[0].Name = MCPPortName
	for name, pod := range map[string]corev1.Pod{
		"app port skills-metrics, metrics off": metricsNamedOff,
		"takeover of a port named skills-mcp":  takeoverMCP,
		"os linux":                             linux,
		"metrics [::]":                         testPod(optIn(m, "[::]:7001"), 3000),
		"metrics 0.0.0.0":                      testPod(optIn(m, "0.0.0.0:7001"), 3000),
		"metrics port only":                    testPod(optIn(m, ":7001"), 3000),
		"metrics off":                          testPod(optIn(m, ""), 3000),
		"path %2F":                             testPod(optIn(AnnotationUpstreamPath, "/a%2Fb/mcp"), 3000),
		"path %41 and unicode":                 testPod(optIn(AnnotationUpstreamPath, "/%41é/mcp"), 3000),
		"path with ;,=@:":                      testPod(optIn(AnnotationUpstreamPath, "/v1;x=1,y@z:mcp"), 3000),
		"res zero":                             res(`{"requests":{"cpu":"0","memory":"0"}}`),
		"res ephemeral":                        res(`{"requests":{"ephemeral-storage":"1Gi"},"limits":{"ephemeral-storage":"2Gi"}}`),
		"res hugepages":                        res(`{"requests":{"memory":"64Mi","hugepages-2Mi":"100Mi"},"limits":{"memory":"64Mi","hugepages-2Mi":"100Mi"}}`),
		"res hugepages limit only":             res(`{"limits":{"memory":"64Mi","hugepages-1Gi":"1Gi"}}`),
		"res extended limit only":              res(`{"limits":{"example.com/foo":"1"}}`),
		"res extended equal":                   res(`{"requests":{"example.com/foo":"2"},"limits":{"example.com/foo":"2"}}`),
		"res cpu only limit":                   res(`{"limits":{"cpu":"500m"}}`),
		"res req 1 lim 1000m":                  res(`{"requests":{"cpu":"1"},"limits":{"cpu":"1000m"}}`),
		"res yaml":                             res("requests:\n  cpu: 10m\nlimits:\n  memory: 1Gi\n"),
		"res empty":                            res(`{}`),
		"res claim the pod has":                claimed,
		"res claim two requests":               claimedPod(`{"claims":[{"name":"gpu","request":"one"},{"name":"gpu","request":"two"}]}`),
		"res vendor .kubernetes.io":            res(`{"limits":{"gpu.kubernetes.ionos.com/gpu":"1"}}`),
		"res kubernetes.io native":             res(`{"limits":{"kubernetes.io/foo":"1500m"}}`),
		"res nvidia":                           res(`{"limits":{"nvidia.com/gpu":"1","nvidia.com/mig-1g.5gb":"1"}}`),
		"res hugepages zero":                   res(`{"limits":{"memory":"64Mi","hugepages-2Mi":"0"}}`),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ops, _, skip, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "example/sidecar:1"})
			if err != nil || ops == nil {
				t.Errorf("refused a valid pod: skip %q err %v", skip, err)
			}
		})
	}
}

// claimedPod is an opted-in pod with resource claim gpu and the resources
// annotation v.
func claimedPod(v string) corev1.Pod {
	p := testPod(optIn(AnnotationResources, v), 3000)
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu"}}
	return p
}

// TestSessionKeysVolume: the injector mounts the namespace's session keys
// Secret, optional, where the sidecar's default session-keys-file reads
// it; a pod that brings its own volume of that name keeps it.
func TestSessionKeysVolume(t *testing.T) {
	t.Parallel()
	if got, want := config.Defaults().SessionKeysFile, SessionKeysMountPath+"/"+SessionKeysKey; got != want {
		t.Errorf("the sidecar's default session-keys-file is %q, the injector mounts the keys at %q", got, want)
	}
	own := testPod(optIn(), 3000)
	own.Spec.Volumes = []corev1.Volume{{Name: SessionKeysVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "team-keys"}}}}
	ops, _, _, err := Mutate(own.ObjectMeta, own.Spec, Options{Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	got := applyToPod(t, own, ops)
	var secrets []string
	for _, v := range got.Spec.Volumes {
		if v.Name == SessionKeysVolume {
			secrets = append(secrets, v.Secret.SecretName)
		}
	}
	if !cmp.Equal(secrets, []string{"team-keys"}) {
		t.Errorf("session keys volumes of a pod that brings its own: %q, want [team-keys]", secrets)
	}
}

// TestMutatePodLevelResources: a pod with pod-level resources
// (spec.resources, PodLevelResources, on by default from Kubernetes 1.34)
// must request at least what its containers request together, sidecar
// included, and a regular container may not be limited above the pod
// (ValidatePodSpec's validatePodResourceConsistency). The pod the webhook
// sees has been defaulted already: its pod-level requests are its
// containers' before the sidecar, or its pod-level limits, and are not
// defaulted again after the patch. A pod the sidecar would push over is
// refused here, naming what to change, not by the API server naming a
// field its owner may never have written; a pod with room is admitted.
func TestMutatePodLevelResources(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	pod := func(podReq, podLim, appReq corev1.ResourceList, ann ...string) corev1.Pod {
		p := testPod(optIn(ann...), 3000)
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: podReq, Limits: podLim}
		p.Spec.Containers[0].Resources.Requests = appReq
		return p
	}
	app := corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("256Mi")}
	lim := corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")}
	for name, tc := range map[string]struct {
		pod    corev1.Pod
		native bool
		want   []string
	}{
		// As the API server defaults it: the containers' requests.
		"defaulted to the app's requests, native": {pod(app, lim, app), true, []string{"spec.resources.requests", "cpu", "550m", AnnotationResources}},
		"defaulted to the app's requests":         {pod(app, lim, app), false, []string{"spec.resources.requests", "memory", AnnotationResources}},
		"limit below the sidecar's":               {pod(corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}, corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}, nil), false, []string{"spec.resources.limits", "memory", "256Mi", AnnotationResources}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ops, _, skip, err := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, Options{Image: "i", NativeSidecar: tc.native, Resources: DefaultResources()})
			if ops != nil || err == nil {
				t.Fatalf("Mutate = %d ops, %q, %v; want an error", len(ops), skip, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	for name, tc := range map[string]struct {
		pod    corev1.Pod
		native bool
	}{
		"room for the sidecar":         {pod(corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("512Mi")}, lim, app), true},
		"no container requests":        {pod(lim, lim, nil), false},
		"sidecar given less":           {pod(app, lim, corev1.ResourceList{corev1.ResourceCPU: q("450m"), corev1.ResourceMemory: q("192Mi")}), true},
		"native limit above pod limit": {pod(corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}, corev1.ResourceList{corev1.ResourceMemory: q("128Mi")}, nil), true},
	} {
		ops, _, _, err := Mutate(tc.pod.ObjectMeta, tc.pod.Spec, Options{Image: "i", NativeSidecar: tc.native, Resources: DefaultResources()})
		if err != nil || ops == nil {
			t.Errorf("%s: Mutate = %d ops, %v; want the sidecar", name, len(ops), err)
		}
	}
}

// TestPluginImagePullPolicy: the plugin image volume leaves its pull
// policy to the API server, whose default is the one a container's image
// gets: Always for :latest or no tag, IfNotPresent otherwise. A plugin
// shipped as :latest is then pulled again when its pods are re-created,
// as its owner expects of a :latest image, not served stale from a node
// that pulled it once.
func TestPluginImagePullPolicy(t *testing.T) {
	t.Parallel()
	for _, ref := range []string{"example/plugin:1", "example/plugin:latest", "example/plugin", "example/plugin@sha256:" + strings.Repeat("a", 64)} {
		pod := testPod(optIn(AnnotationPluginImage, ref), 3000)
		ops, _, _, err := Mutate(pod.ObjectMeta, pod.Spec, Options{Image: "i", ImagePullPolicy: corev1.PullNever})
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		got := applyToPod(t, pod, ops)
		var found bool
		for _, v := range got.Spec.Volumes {
			if v.Name == PluginVolume {
				found = true
				if v.Image == nil || v.Image.Reference != ref || v.Image.PullPolicy != "" {
					t.Errorf("%s: plugin volume %+v, want the reference with no pullPolicy (the API server's default)", ref, v.Image)
				}
			}
		}
		if !found {
			t.Errorf("%s: no volume %s", ref, PluginVolume)
		}
	}
}
