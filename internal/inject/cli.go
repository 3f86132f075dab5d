package inject

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
)

// ImageRepository is the repository of the project's image, which holds
// both the injector and the sidecar.
const ImageRepository = "skills-sidecar/skills-sidecar"

// ImageEnv names the environment variable that sets the default of
// --image: the chart and the kustomize base set it to the injector's own
// image (kustomize's images: rewrites it with the container's, see
// deploy/kustomize/base/images.yaml), so the sidecar injected is the
// version of the injector that injects it, and a pin reaches both.
const ImageEnv = "SKILLS_SIDECAR_IMAGE"

// Host is what the commands take from the process: its environment and the
// version stamped into the binary.
type Host struct {
	// Getenv reads an environment variable; nil reads none.
	Getenv func(string) string
	// Version is the binary's version ("0.1.0", or "dev" unstamped).
	Version string
}

func (h Host) getenv(k string) string {
	if h.Getenv == nil {
		return ""
	}
	return h.Getenv(k)
}

var releaseVersion = regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)$`)

// DefaultImage is the sidecar image --image defaults to: $SKILLS_SIDECAR_IMAGE,
// else the project's image tagged with this binary's release version (a
// "v" prefix dropped, as the chart's appVersion has none). A build without a
// release version (dev, a git describe with commits on top) has no default,
// so --image is required: never an implicit latest.
func DefaultImage(h Host) string {
	if img := strings.TrimSpace(h.getenv(ImageEnv)); img != "" {
		return img
	}
	if m := releaseVersion.FindStringSubmatch(h.Version); m != nil {
		return ImageRepository + ":" + m[1]
	}
	return ""
}

// Exit codes of RunInject and RunWebhook.
const (
	ExitOK    = 0
	ExitFail  = 1 // a document or pod could not be injected; the server failed
	ExitUsage = 2
)

const injectUsage = `usage: skills-sidecar inject [flags] -f FILE|-
       skills-sidecar inject configmap --name NAME [--namespace NS] DIR

inject -f reads Kubernetes manifests (multi-document YAML) and writes them to
stdout with the sidecar added to every Pod, Deployment, StatefulSet,
DaemonSet, ReplicaSet, Job and CronJob whose pod template has the annotation
skills-sidecar.io/inject: "true"; every other document is written back byte
for byte. ConfigMaps a workload names in skills-sidecar.io/plugin-configmaps
that are in the same input are checked (every key decodes, no path in two).
On any error nothing is written and each problem is reported (exit 1). A
Service in the input that reaches an injected app's own port, bypassing the
sidecar, gets a warning.

inject configmap writes the ConfigMaps holding the plugin folder DIR and
prints the annotation value to stderr. It writes --mounted N ConfigMaps
(default 4), every one on every render (an empty one too), each file in
the one its path hashes to: as long as N stays the same the annotation is
the same and no file moves, so a plugin that grows or shrinks reaches
running pods with no rollout. A plugin that no longer fits N is refused
with the N that fits and what to do. Each ConfigMap is labelled
skills-sidecar.io/plugin=NAME for kubectl apply --prune (after N was
lowered).

Flags:
`

// sidecarFlags registers the flags both commands share and returns a
// function that builds the Options once the flags are parsed.
func sidecarFlags(fs *flag.FlagSet, host Host) func() (Options, error) {
	image := fs.String("image", DefaultImage(host), "sidecar `image` (default: $"+ImageEnv+", else "+ImageRepository+":VERSION of a release build)")
	pull := fs.String("image-pull-policy", "", "sidecar image pull `policy`: Always, IfNotPresent, Never, or empty for the cluster's default")
	native := fs.Bool("native-sidecar", true, "add the sidecar as a native sidecar (init container with restartPolicy Always, Kubernetes 1.29+); false: a regular container")
	port := fs.Int("port", DefaultPort, "default sidecar MCP `port` (annotation "+AnnotationPort+" overrides)")
	def, _ := yaml.Marshal(DefaultResources())
	resources := fs.String("resources", string(jsonOf(def)), "default sidecar resources as `JSON` of a ResourceRequirements (annotation "+AnnotationResources+" overrides)")
	return func() (Options, error) {
		o := Options{Image: *image, ImagePullPolicy: corev1.PullPolicy(*pull), NativeSidecar: *native, Port: int32(*port), Version: host.Version}
		var errs []error
		switch o.ImagePullPolicy {
		case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		default:
			errs = append(errs, fmt.Errorf("--image-pull-policy: %q is not Always, IfNotPresent or Never", *pull))
		}
		if *port < 1 || *port > 65535 {
			errs = append(errs, fmt.Errorf("--port: %d is not a port", *port))
		} else if _, m, _ := net.SplitHostPort(config.Defaults().MetricsListen); m == strconv.Itoa(*port) {
			// Every pod that does not move its metrics listener would be
			// refused, naming an annotation its owner never set.
			errs = append(errs, fmt.Errorf("--port: %d is the sidecar's default metrics port (%smetrics-listen); pick another", *port, config.AnnotationPrefix))
		}
		if strings.TrimSpace(*image) == "" {
			errs = append(errs, errors.New("--image: required: this build has no release version to default to and $"+ImageEnv+" is not set"))
		}
		// Held to the API server's rules at start: a default it refuses
		// (say a request raised above its limit) would refuse every pod
		// the injector sees, naming a field no pod's owner wrote.
		var err error
		if o.Resources, err = parseResources(*resources, &corev1.PodSpec{}); err != nil {
			errs = append(errs, fmt.Errorf("--resources: %w", err))
		}
		return o, errors.Join(errs...)
	}
}

func jsonOf(y []byte) []byte {
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		return nil
	}
	return j
}

// RunInject runs `skills-sidecar inject` with args (the words after
// "inject") and returns the exit code: 0 on success, 1 when a document
// could not be injected or a folder not converted, 2 on usage errors.
func RunInject(ctx context.Context, args []string, host Host, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "configmap" {
		return runConfigMap(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, injectUsage); fs.PrintDefaults() }
	file := fs.String("f", "", "manifest `file` to read, - for stdin")
	options := sidecarFlags(fs, host)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	opts, err := options()
	if err == nil && *file == "" {
		err = errors.New("-f: required")
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "inject: %v\n", err)
		return ExitUsage
	}
	var in []byte
	if *file == "-" {
		in, err = io.ReadAll(stdin)
	} else {
		in, err = os.ReadFile(*file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "inject: %v\n", err)
		return ExitFail
	}
	out, results, err := InjectManifests(in, opts)
	if err != nil {
		fmt.Fprintf(stderr, "inject: nothing written:\n%v\n", err)
		return ExitFail
	}
	for _, r := range results {
		if r.Injected {
			fmt.Fprintf(stderr, "inject: %s %s: sidecar added\n", r.Kind, r.Name)
		}
		for _, w := range r.Warnings {
			fmt.Fprintf(stderr, "inject: warning: %s\n", w)
		}
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "inject: %v\n", err)
		return ExitFail
	}
	return ExitOK
}

func runConfigMap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inject configmap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, injectUsage); fs.PrintDefaults() }
	var o ConfigMapOptions
	fs.StringVar(&o.Name, "name", "", "`name` of the (first) ConfigMap")
	fs.StringVar(&o.Namespace, "namespace", "", "`namespace` of the ConfigMaps (default: none written)")
	fs.IntVar(&o.MaxBytes, "max-bytes", 0, "bound on one ConfigMap object's JSON in `bytes` (default 240 KiB, for kubectl apply's 256 KiB annotation limit; up to 1000 KiB with kubectl apply --server-side)")
	fs.IntVar(&o.Count, "mounted", 0, fmt.Sprintf("the `N` ConfigMaps written and named in the annotation, which workloads mount; keep it the same on every render (default %d)", DefaultConfigMaps))
	count := fs.Int("configmaps", 0, "the same as --mounted (its older name)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() != 1 || o.Name == "" {
		fmt.Fprintln(stderr, "inject configmap: want --name NAME and one plugin folder")
		return ExitUsage
	}
	if *count != 0 && o.Count != 0 && *count != o.Count {
		fmt.Fprintf(stderr, "inject configmap: --configmaps %d and --mounted %d: they are one setting, pass one\n", *count, o.Count)
		return ExitUsage
	}
	if o.Count == 0 {
		o.Count = *count
	}
	out, names, err := BuildConfigMaps(os.DirFS(fs.Arg(0)), o)
	if err != nil {
		fmt.Fprintf(stderr, "inject configmap: %v\n", err)
		return ExitFail
	}
	if _, err := stdout.Write(out); err != nil {
		fmt.Fprintf(stderr, "inject configmap: %v\n", err)
		return ExitFail
	}
	fmt.Fprintf(stderr, "annotate the pod template with:\n  %s: %q\n", AnnotationPluginConfigMaps, strings.Join(names, ","))
	fmt.Fprintf(stderr, "every render with --mounted %d writes these %d names, each file in the same one: a plugin that grows or shrinks needs no rollout\n", len(names), len(names))
	ns := ""
	if o.Namespace != "" {
		ns = " -n " + o.Namespace
	}
	fmt.Fprintf(stderr, "apply with: kubectl apply%s --prune -l %s=%s --prune-allowlist=core/v1/ConfigMap -f FILE (deletes the plugin's ConfigMaps a render no longer writes, after a lower --mounted)\n", ns, PluginLabel, o.Name)
	return ExitOK
}

const webhookUsage = `usage: skills-sidecar webhook --tls-cert-file FILE --tls-key-file FILE [flags]
       skills-sidecar webhook --tls-secret NS/NAME --webhook-config NAME --cert-hosts H,... [flags]

Serves the sidecar injection as a mutating admission webhook over HTTPS:
POST /mutate (AdmissionReview admission.k8s.io/v1), GET /healthz; and its
own metrics on --metrics-listen (GET /metrics, plain HTTP).

The certificate comes from files (reloaded when they change: cert-manager or
your own), or, with --tls-secret, the injector manages it: it keeps a CA and
a leaf for --cert-hosts in that Secret (which must exist) and the CA bundle
in the caBundle of --webhook-config, renewing each once a third of its
lifetime is left, the new CA trusted before any leaf it signs is served and
the old one until it expires.

The Kubernetes API is reached with the pod's service account, or with the
--kube-* flags from outside a cluster, and only for the certificate: plugin
ConfigMaps are mounted whole, so the injector never reads them.

Flags:
`

// RunWebhook runs `skills-sidecar webhook` until ctx is done and returns the
// exit code: 0 after a clean shutdown, 1 when it could not serve, 2 on
// usage errors. host.Getenv finds the in-cluster API server
// (KUBERNETES_SERVICE_HOST/_PORT) when the injector manages its own
// certificate, the only thing it needs the API for, and the default image.
func RunWebhook(ctx context.Context, args []string, host Host, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, webhookUsage); fs.PrintDefaults() }
	listen := fs.String("listen", ":8443", "HTTPS `address` to serve on")
	certFile := fs.String("tls-cert-file", "", "PEM certificate `file` (reloaded on change)")
	keyFile := fs.String("tls-key-file", "", "PEM private key `file` (reloaded on change)")
	onError := fs.String("on-error", "deny", "a pod with malformed annotations: deny (reject it, naming each problem) or allow (admit it unchanged with a warning)")
	logLevel := fs.String("log-level", "info", "minimum log `level`: debug, info, warn, error")
	metricsListen := fs.String("metrics-listen", ":9090", "plain HTTP `address` of GET /metrics; empty disables it")
	tlsSecret := fs.String("tls-secret", "", "manage the certificate in this Secret (`NAMESPACE/NAME`) instead of reading files")
	webhookConfig := fs.String("webhook-config", "", "with --tls-secret: the MutatingWebhookConfiguration `name` whose caBundle the injector keeps")
	webhookName := fs.String("webhook-name", "inject.skills-sidecar.io", "with --tls-secret: the `name` of the webhook in it")
	certHosts := fs.String("cert-hosts", "", "with --tls-secret: comma-separated DNS names or IP addresses of the serving certificate")
	caValidity := fs.Duration("ca-validity", 10*365*24*time.Hour, "with --tls-secret: lifetime of a CA")
	certValidity := fs.Duration("cert-validity", 365*24*time.Hour, "with --tls-secret: lifetime of a serving certificate (never past its CA's)")
	certInterval := fs.Duration("cert-interval", 30*time.Second, "with --tls-secret: time between certificate steps (a new CA is trusted this long before it is used)")
	kubeServer := fs.String("kube-api-server", "", "outside a cluster: the API server's `URL`")
	kubeToken := fs.String("kube-token-file", "", "outside a cluster: `file` with the bearer token")
	kubeCA := fs.String("kube-ca-file", "", "outside a cluster: `file` with the CA of the API server's certificate")
	options := sidecarFlags(fs, host)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	opts, err := options()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	selfManaged := *tlsSecret != ""
	secretNS, secretName, _ := strings.Cut(*tlsSecret, "/")
	var hosts []string
	for _, h := range strings.Split(*certHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	switch {
	case selfManaged && (*certFile != "" || *keyFile != ""):
		errs = append(errs, errors.New("--tls-secret and --tls-cert-file/--tls-key-file: choose one"))
	case selfManaged:
		if secretNS == "" || secretName == "" || strings.Contains(secretName, "/") {
			errs = append(errs, fmt.Errorf("--tls-secret: %q is not NAMESPACE/NAME", *tlsSecret))
		}
		if *webhookConfig == "" {
			errs = append(errs, errors.New("--webhook-config: required with --tls-secret"))
		}
		if len(hosts) == 0 {
			errs = append(errs, errors.New("--cert-hosts: required with --tls-secret"))
		}
		if *caValidity <= 0 || *certValidity <= 0 || *certInterval <= 0 {
			errs = append(errs, errors.New("--ca-validity, --cert-validity and --cert-interval: must be positive"))
		}
		if *certInterval*3 > *certValidity {
			errs = append(errs, errors.New("--cert-interval: must be under a third of --cert-validity, or a renewal could come too late"))
		}
	case *certFile == "" || *keyFile == "":
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file (or --tls-secret): required"))
	}
	outOfCluster := *kubeServer != "" || *kubeToken != "" || *kubeCA != ""
	if outOfCluster && (*kubeServer == "" || *kubeToken == "" || *kubeCA == "") {
		errs = append(errs, errors.New("--kube-api-server, --kube-token-file and --kube-ca-file: give all three or none"))
	}
	if *onError != "deny" && *onError != "allow" {
		errs = append(errs, fmt.Errorf("--on-error: %q is neither deny nor allow", *onError))
	}
	level, err := zap.ParseAtomicLevel(*logLevel)
	if err != nil {
		errs = append(errs, fmt.Errorf("--log-level: %w", err))
	}
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "webhook: %v\n", err)
		return ExitUsage
	}
	logCfg := zap.NewProductionConfig()
	logCfg.Level = level
	log := zap.New(zapCore(logCfg, stderr))
	defer func() { _ = log.Sync() }()

	h := &Webhook{Options: opts, Deny: *onError == "deny", Log: log}
	reg := prometheus.NewRegistry()
	var certs CertSource
	if selfManaged {
		// The API only for the certificate: plugin ConfigMaps are mounted
		// whole, so the injector never reads them.
		var api *APIClient
		if outOfCluster {
			api, err = NewAPIClient(*kubeServer, *kubeToken, *kubeCA)
		} else {
			api, err = InClusterAPI(host.getenv)
		}
		if err != nil {
			log.Error("the Kubernetes API is needed to manage the certificate", zap.Error(err))
			return ExitFail
		}
		sc := &SelfCerts{API: api, Namespace: secretNS, Secret: secretName, WebhookConfig: *webhookConfig, WebhookName: *webhookName,
			Policy: CertPolicy{CAValidity: *caValidity, CertValidity: *certValidity, Hosts: hosts}, Interval: *certInterval, Log: log.Named("certs")}
		h.Metrics = NewWebhookMetrics(reg, sc.NotAfter)
		sc.OnError = h.Metrics.CertificateError
		certs = sc
		go sc.Run(ctx)
	} else {
		r, err := NewCertReloader(*certFile, *keyFile)
		if err != nil {
			log.Error("cannot load TLS certificate", zap.Error(err))
			return ExitFail
		}
		h.Metrics = NewWebhookMetrics(reg, r.NotAfter)
		certs = r
	}
	if *metricsListen != "" {
		stop, err := serveMetrics(*metricsListen, reg, log)
		if err != nil {
			log.Error("cannot listen for metrics", zap.String("addr", *metricsListen), zap.Error(err))
			return ExitFail
		}
		defer stop()
	}
	return serveWebhook(ctx, *listen, certs, h, log)
}

// serveMetrics serves GET /metrics of reg on addr until stop is called.
func serveMetrics(addr string, reg *prometheus.Registry, log *zap.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: zap.NewStdLog(log.Named("metrics"))}
	go func() { _ = srv.Serve(ln) }()
	log.Info("metrics serving", zap.String("addr", ln.Addr().String()))
	return func() { _ = srv.Close() }, nil
}

func serveWebhook(ctx context.Context, addr string, certs CertSource, h *Webhook, log *zap.Logger) int {
	mux := http.NewServeMux()
	mux.Handle("/mutate", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Error("cannot listen", zap.String("addr", addr), zap.Error(err))
		return ExitFail
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		TLSConfig:         &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12},
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	log.Info("webhook serving", zap.String("addr", ln.Addr().String()))
	select {
	case err := <-done:
		log.Error("webhook stopped", zap.Error(err))
		return ExitFail
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		log.Warn("shutdown", zap.Error(err))
	}
	<-done
	return ExitOK
}

// zapCore writes JSON log lines to w at cfg's level.
func zapCore(cfg zap.Config, w io.Writer) zapcore.Core {
	return zapcore.NewCore(zapcore.NewJSONEncoder(cfg.EncoderConfig), zapcore.AddSync(w), cfg.Level)
}
