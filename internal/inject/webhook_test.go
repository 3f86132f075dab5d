package inject

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	yamlv3 "gopkg.in/yaml.v3"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"sigs.k8s.io/yaml"
)

func testWebhook(deny bool) *Webhook {
	return &Webhook{
		Options: Options{Image: "img:1", NativeSidecar: true},
		Deny:    deny,
	}
}

// TestWebhookFixtures posts each testdata/admission review through the
// handler and checks the decision; a patch is applied to the pod, which
// must then decode strictly and carry the sidecar.
func TestWebhookFixtures(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		deny        bool
		wantAllowed bool
		wantPatch   bool
		wantMessage string
	}{
		"opt-in":           {wantAllowed: true, wantPatch: true},
		"no-annotations":   {wantAllowed: true},
		"opt-out":          {wantAllowed: true},
		"injected":         {wantAllowed: true},
		"update":           {wantAllowed: true},
		"malformed":        {deny: true, wantMessage: `annotation skills-sidecar.io/port: "eighty" is not a port number`},
		"malformed-allows": {wantAllowed: true, wantMessage: `annotation skills-sidecar.io/port: "eighty"`},
		"hostnetwork":      {deny: true, wantMessage: "spec.hostNetwork is true"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file := strings.TrimSuffix(name, "-allows")
			body, err := os.ReadFile(filepath.Join("testdata/admission", file+".json"))
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			testWebhook(tc.deny).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body)))
			if rec.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200: %s", rec.Code, rec.Body)
			}
			var in, out admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &in); err != nil {
				t.Fatal(err)
			}
			if err := yaml.UnmarshalStrict(rec.Body.Bytes(), &out); err != nil {
				t.Fatalf("response does not decode strictly: %v", err)
			}
			r := out.Response
			if r == nil || r.UID != in.Request.UID || out.Kind != "AdmissionReview" || out.APIVersion != "admission.k8s.io/v1" {
				t.Fatalf("response = %+v, want an AdmissionReview answering uid %s", out, in.Request.UID)
			}
			if r.Allowed != tc.wantAllowed || (r.Patch != nil) != tc.wantPatch {
				t.Errorf("allowed %v, patch %v; want %v, %v", r.Allowed, r.Patch != nil, tc.wantAllowed, tc.wantPatch)
			}
			msg := strings.Join(r.Warnings, "\n")
			if r.Result != nil {
				msg += r.Result.Message
			}
			if tc.wantMessage != "" && !strings.Contains(msg, tc.wantMessage) {
				t.Errorf("message %q lacks %q", msg, tc.wantMessage)
			}
			if !tc.wantPatch {
				return
			}
			if r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
				t.Errorf("patchType = %v, want JSONPatch", r.PatchType)
			}
			var ops []PatchOp
			if err := json.Unmarshal(r.Patch, &ops); err != nil {
				t.Fatal(err)
			}
			var pod yamlv3.Node
			if err := yamlv3.Unmarshal(in.Request.Object.Raw, &pod); err != nil {
				t.Fatal(err)
			}
			if err := ApplyPatch(&pod, "", ops); err != nil {
				t.Fatal(err)
			}
			y, _ := yamlv3.Marshal(&pod)
			var got corev1.Pod
			if err := yaml.UnmarshalStrict(y, &got); err != nil {
				t.Fatalf("patched pod does not decode strictly: %v", err)
			}
			if n := len(got.Spec.InitContainers); n != 1 || got.Spec.InitContainers[0].Name != ContainerName {
				t.Errorf("init containers = %+v, want the sidecar", got.Spec.InitContainers)
			}
			if v := got.Spec.Volumes[0]; v.ConfigMap == nil || v.ConfigMap.Name != "acme-plugin" || v.ConfigMap.Items != nil {
				t.Errorf("plugin volume = %+v, want ConfigMap acme-plugin mounted whole", v)
			}
		})
	}
}

func TestWebhookBadRequests(t *testing.T) {
	t.Parallel()
	h := testWebhook(true)
	for name, tc := range map[string]struct {
		method, body string
		want         int
	}{
		"get":        {http.MethodGet, "", http.StatusMethodNotAllowed},
		"not json":   {http.MethodPost, "{", http.StatusBadRequest},
		"no request": {http.MethodPost, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, http.StatusBadRequest},
		"too large":  {http.MethodPost, strings.Repeat(" ", maxReviewBytes+1), http.StatusRequestEntityTooLarge},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tc.method, "/mutate", strings.NewReader(tc.body)))
			if rec.Code != tc.want {
				t.Errorf("status = %d, want %d", rec.Code, tc.want)
			}
		})
	}
}

func FuzzWebhookReview(f *testing.F) {
	files, _ := filepath.Glob("testdata/admission/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	h := testWebhook(true)
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := h.Review(body)
		if err != nil {
			return
		}
		var r admissionv1.AdmissionReview
		if err := json.Unmarshal(out, &r); err != nil || r.Response == nil {
			t.Fatalf("Review answered %q, not an AdmissionReview with a response", out)
		}
	})
}

// writeCert writes a fresh self-signed certificate for 127.0.0.1 and its
// key, and returns the certificate's serial number.
func writeCert(t *testing.T, certFile, keyFile string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "injector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCertReload serves TLS from files on loopback, replaces them, and
// checks the next handshake presents the new certificate; a broken
// replacement keeps the last good one.
func TestCertReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writeCert(t, certFile, keyFile, 1)
	r, err := NewCertReloader(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // seconds added to the real time
	r.now = func() time.Time { return time.Now().Add(time.Duration(clock.Load()) * time.Second) }

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{TLSConfig: &tls.Config{GetCertificate: r.GetCertificate}, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()
	serial := func() int64 {
		t.Helper()
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true}) // the test reads the serial, trust is not the point
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	if got := serial(); got != 1 {
		t.Fatalf("first serial = %d, want 1", got)
	}
	writeCert(t, certFile, keyFile, 2)
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(certFile, later, later); err != nil {
		t.Fatal(err)
	}
	clock.Add(2)
	if got := serial(); got != 2 {
		t.Errorf("serial after the files changed = %d, want 2", got)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.Load(); err == nil {
		t.Error("Load of a broken key pair succeeded")
	}
	clock.Add(2)
	if got := serial(); got != 2 {
		t.Errorf("serial after a broken update = %d, want the last good 2", got)
	}
	if _, err := NewCertReloader(certFile, keyFile); err == nil {
		t.Error("NewCertReloader accepted a broken key pair")
	}
}

// TestWarningsTheAPIServerKeeps: with failurePolicy Ignore (Deny false) a
// malformed pod is admitted without the sidecar and the problem goes back
// as an admission warning. The API server passes each warning through
// apimachinery's NewWarningHeader and drops, without a trace, one that is
// not valid UTF-8 or holds a control character (found in review: several
// problems at once were joined with newlines, so the pod ran without the
// sidecar and nobody was told). A long value is cut between runes (a cut
// mid-rune reaches the API server as U+FFFD: encoding/json replaces it).
func TestWarningsTheAPIServerKeeps(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		ann  map[string]string
		want []string // one warning each, in order
	}{
		"two bad annotations":     {optIn(AnnotationPort, "x", AnnotationUpstreamPath, "y"), []string{AnnotationPort, AnnotationUpstreamPath}},
		"long value cut mid-rune": {optIn(AnnotationUpstreamPath, "é"+strings.Repeat("é", 200)), []string{AnnotationUpstreamPath}},
		"odd cut":                 {optIn(AnnotationUpstreamPath, "xé"+strings.Repeat("é", 200)), []string{AnnotationUpstreamPath}},
		"control character":       {optIn(AnnotationUpstreamPath, "/a\x01b"), []string{AnnotationUpstreamPath}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			raw, _ := json.Marshal(testPod(tc.ann, 3000))
			review := admissionv1.AdmissionReview{Request: &admissionv1.AdmissionRequest{
				UID: "u", Operation: admissionv1.Create, Namespace: "ns", Object: runtime.RawExtension{Raw: raw},
			}}
			review.Request.Kind.Kind, review.Request.Kind.Version = "Pod", "v1"
			body, _ := json.Marshal(review)
			rec := httptest.NewRecorder()
			testWebhook(false).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body)))
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			ws := got.Response.Warnings
			if !got.Response.Allowed || got.Response.Patch != nil || len(ws) != len(tc.want) {
				t.Fatalf("allowed %v, patch %v, warnings %q; want admitted unpatched with %d warnings", got.Response.Allowed, got.Response.Patch != nil, ws, len(tc.want))
			}
			for i, w := range ws {
				if _, err := utilnet.NewWarningHeader(299, "", w); err != nil {
					t.Errorf("the API server drops warning %d (%v): %q", i, err, w)
				}
				if !strings.Contains(w, tc.want[i]) {
					t.Errorf("warning %d %q lacks %q", i, w, tc.want[i])
				}
			}
		})
	}
}
