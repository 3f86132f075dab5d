package inject

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxReviewBytes bounds an AdmissionReview body; the API server's own
// request limit is 3 MiB.
const maxReviewBytes = 8 << 20

// Webhook serves the mutation as a mutating admission webhook
// (admission.k8s.io/v1 AdmissionReview over POST).
type Webhook struct {
	// Options are the injector's settings.
	Options Options
	// Deny, when true, rejects a pod whose annotations are malformed (the
	// message names each); when false the pod is admitted unchanged with
	// the message as an admission warning. The chart sets it from the
	// webhook's failurePolicy (Fail denies).
	Deny bool
	// Log receives one line per admission decision; nil logs nothing.
	Log *zap.Logger
	// Metrics counts the calls by result; nil counts nothing.
	Metrics *WebhookMetrics
}

// ServeHTTP answers one AdmissionReview.
func (h *Webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	result := ResultInvalid
	defer func() { h.Metrics.observe(result, time.Since(start)) }()
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil || len(body) > maxReviewBytes {
		http.Error(w, "admission review unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	resp, res, err := h.review(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result = res
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(resp)
}

// Review answers the AdmissionReview in body with an AdmissionReview
// carrying the response. The review is decoded leniently: the API server
// may send fields newer than this build, and the pod is only read, never
// re-encoded (the answer is a patch), so nothing it carries is lost.
func (h *Webhook) Review(body []byte) ([]byte, error) {
	out, _, err := h.review(body)
	return out, err
}

// review is Review, also returning the result the call is counted under.
func (h *Webhook) review(body []byte) ([]byte, string, error) {
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		return nil, ResultInvalid, fmt.Errorf("decode admission review: %w", err)
	}
	if review.Request == nil {
		return nil, ResultInvalid, errors.New("admission review has no request")
	}
	req := review.Request
	resp, result := h.respond(req)
	resp.UID = req.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	b, err := json.Marshal(out)
	return b, result, err
}

func (h *Webhook) respond(req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	log := h.Log
	if log == nil {
		log = zap.NewNop()
	}
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Kind != "Pod" || req.Kind.Group != "" || req.Operation != admissionv1.Create {
		return allow, ResultSkipped
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return h.fail(log, req, fmt.Errorf("decode pod: %w", err))
	}
	ns := req.Namespace
	if ns == "" {
		ns = pod.Namespace
	}
	ops, warns, skip, err := Mutate(pod.ObjectMeta, pod.Spec, h.Options)
	if err != nil {
		return h.fail(log, req, err)
	}
	if ops == nil {
		log.Debug("not injected", zap.String("namespace", ns), zap.String("pod", podName(pod)), zap.String("reason", skip))
		return allow, ResultSkipped
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return h.fail(log, req, fmt.Errorf("encode patch: %w", err))
	}
	log.Info("injected", zap.String("namespace", ns), zap.String("pod", podName(pod)), zap.Strings("warnings", warns))
	pt := admissionv1.PatchTypeJSONPatch
	resp := &admissionv1.AdmissionResponse{Allowed: true, Patch: patch, PatchType: &pt}
	for _, w := range warns {
		resp.Warnings = append(resp.Warnings, warningText("skills-sidecar injection: "+w))
	}
	return resp, ResultInjected
}

// fail turns a mutation error into a denial or an admission with a
// warning, as Deny says; the pod is never patched.
func (h *Webhook) fail(log *zap.Logger, req *admissionv1.AdmissionRequest, err error) (*admissionv1.AdmissionResponse, string) {
	msg := "skills-sidecar injection: " + err.Error()
	log.Warn("not injected", zap.String("namespace", req.Namespace), zap.String("pod", req.Name), zap.Bool("denied", h.Deny), zap.Error(err))
	if h.Deny {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{
			Status: metav1.StatusFailure, Message: msg, Reason: metav1.StatusReasonBadRequest, Code: http.StatusBadRequest,
		}}, ResultDenied
	}
	return &admissionv1.AdmissionResponse{Allowed: true, Warnings: warnings(err)}, ResultWarned
}

// maxWarning is how long one admission warning may be: the API server
// truncates longer ones.
const maxWarning = 250

// warnings are err's problems as admission warnings, one each (at most
// maxWarnings): the API server drops, without a trace, a warning holding a
// control character (errors.Join's newlines) or invalid UTF-8, so each is
// cleaned, and cut at a rune boundary.
func warnings(err error) []string {
	const maxWarnings = 8
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if len(out) == maxWarnings {
			out[len(out)-1] = "skills-sidecar injection: more problems; see the injector's log"
			break
		}
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, warningText("skills-sidecar injection: "+line))
		}
	}
	return out
}

// warningText is s as one valid warning: control characters and invalid
// UTF-8 replaced, at most maxWarning bytes, cut between runes.
func warningText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxWarning {
		return s
	}
	cut := maxWarning - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func podName(p corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName + "*"
}

// CertReloader serves a TLS certificate from files and reloads them when
// their modification time or size changes (a cert-manager renewal or a
// Secret volume update), checked at most once per second. A failed reload
// keeps the last good certificate.
type CertReloader struct {
	certFile, keyFile string
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   string
	checked time.Time
}

// NewCertReloader loads the certificate and key once, failing if they do
// not form a pair.
func NewCertReloader(certFile, keyFile string) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile, now: time.Now}
	if err := r.Load(); err != nil {
		return nil, err
	}
	return r, nil
}

// Load reloads the files if they changed since the last load.
func (r *CertReloader) Load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked()
}

func (r *CertReloader) loadLocked() error {
	r.checked = r.now()
	stamp, err := fileStamp(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	if r.cert != nil && stamp == r.stamp {
		return nil
	}
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("load TLS key pair: %w", err)
	}
	r.cert, r.stamp = &c, stamp
	return nil
}

// GetCertificate is tls.Config.GetCertificate.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.now().Sub(r.checked) >= time.Second {
		_ = r.loadLocked() // on failure the last good certificate stays
	}
	return r.cert, nil
}

// NotAfter is the expiry of the certificate being served.
func (r *CertReloader) NotAfter() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert == nil || len(r.cert.Certificate) == 0 {
		return time.Time{}
	}
	c, err := x509.ParseCertificate(r.cert.Certificate[0])
	if err != nil {
		return time.Time{}
	}
	return c.NotAfter
}

func fileStamp(files ...string) (string, error) {
	var s string
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("stat TLS file: %w", err)
		}
		s += fmt.Sprintf("%s:%d:%d;", f, fi.ModTime().UnixNano(), fi.Size())
	}
	return s, nil
}
