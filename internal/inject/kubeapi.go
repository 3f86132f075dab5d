package inject

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
)

// In-cluster service account files (the token is re-read on every request,
// since bound tokens rotate).
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	maxAPIBytes       = 4 << 20 // one object read from the API
)

// ErrNoAPI is returned by InClusterAPI outside a cluster.
var ErrNoAPI = errors.New("inject: no Kubernetes API (KUBERNETES_SERVICE_HOST unset)")

// APIClient talks to the Kubernetes API with a bearer token, without
// client-go: when the injector manages its own certificate, it reads,
// watches and updates its TLS Secret and its webhook's caBundle. Nothing
// else.
type APIClient struct {
	// Server is the API server's base URL, e.g. https://10.0.0.1:443.
	Server string
	// TokenFile holds the bearer token, re-read per request.
	TokenFile string
	// Client makes the requests; it must trust the API server.
	Client *http.Client
}

// NewAPIClient builds an APIClient for an API server outside the pod (the
// webhook's --kube-* flags): server URL, bearer token file and the CA file
// that signed the server's certificate.
func NewAPIClient(server, tokenFile, caFile string) (*APIClient, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read API server CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	return &APIClient{Server: strings.TrimSuffix(server, "/"), TokenFile: tokenFile, Client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}}}, nil
}

// InClusterAPI builds an APIClient from the pod's service account, as the
// getenv function sees KUBERNETES_SERVICE_HOST and _PORT.
func InClusterAPI(getenv func(string) string) (*APIClient, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, ErrNoAPI
	}
	ca, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return nil, fmt.Errorf("read service account CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("service account CA holds no certificate")
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return &APIClient{
		Server:    "https://" + host + ":" + port,
		TokenFile: serviceAccountDir + "/token",
		Client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		}},
	}, nil
}

// APIError is an answer of the API server other than 2xx.
type APIError struct {
	Code    int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%d %s %s", e.Code, http.StatusText(e.Code), e.Message)
}

// IsConflict reports whether err is the API server's 409 (a stale
// resourceVersion: someone else wrote first).
func IsConflict(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == http.StatusConflict
}

// do sends one request with the bearer token and decodes a 2xx JSON answer
// into out (when not nil).
func (a *APIClient) do(ctx context.Context, method, path, contentType string, body []byte, out any) error {
	req, err := a.newRequest(ctx, method, path, contentType, body)
	if err != nil {
		return err
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return readAPIError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBytes))
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// newRequest builds a request to the API server with the bearer token.
func (a *APIClient) newRequest(ctx context.Context, method, path, contentType string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.Server+path, rd)
	if err != nil {
		return nil, err
	}
	if a.TokenFile != "" {
		tok, err := os.ReadFile(a.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("read service account token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// readAPIError turns an answer other than 2xx into an *APIError with the
// Status message the API server sent.
func readAPIError(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAPIBytes))
	var st struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &st)
	return &APIError{Code: resp.StatusCode, Message: st.Message}
}

// Secret reads one Secret.
func (a *APIClient) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	var s corev1.Secret
	if err := a.do(ctx, http.MethodGet, secretPath(namespace, name), "", nil, &s); err != nil {
		return nil, fmt.Errorf("get secret %s/%s: %w", namespace, name, err)
	}
	return &s, nil
}

// UpdateSecretData replaces the Secret's data if its resourceVersion is
// still resourceVersion (a JSON merge patch carrying it, which the API
// server answers with 409 when another writer came first).
func (a *APIClient) UpdateSecretData(ctx context.Context, namespace, name, resourceVersion string, data map[string][]byte) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": resourceVersion},
		"data":     data,
	})
	if err != nil {
		return err
	}
	if err := a.do(ctx, http.MethodPatch, secretPath(namespace, name), "application/merge-patch+json", patch, nil); err != nil {
		return fmt.Errorf("update secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

func secretPath(namespace, name string) string {
	return secretsPath(namespace) + "/" + url.PathEscape(name)
}

func webhookConfigPath(name string) string {
	return webhookConfigsPath + "/" + url.PathEscape(name)
}

// webhookConfigsPath is the collection of MutatingWebhookConfigurations.
const webhookConfigsPath = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"

// secretsPath is the collection of a namespace's Secrets.
func secretsPath(namespace string) string {
	return "/api/v1/namespaces/" + url.PathEscape(namespace) + "/secrets"
}

// WebhookCABundle returns the caBundle of the webhook named webhook in the
// MutatingWebhookConfiguration config.
func (a *APIClient) WebhookCABundle(ctx context.Context, config, webhook string) ([]byte, error) {
	var c admissionregistrationv1.MutatingWebhookConfiguration
	if err := a.do(ctx, http.MethodGet, webhookConfigPath(config), "", nil, &c); err != nil {
		return nil, fmt.Errorf("get mutatingwebhookconfiguration %s: %w", config, err)
	}
	for _, w := range c.Webhooks {
		if w.Name == webhook {
			return w.ClientConfig.CABundle, nil
		}
	}
	return nil, fmt.Errorf("mutatingwebhookconfiguration %s has no webhook %s", config, webhook)
}

// SetWebhookCABundle sets the caBundle of one webhook of the configuration
// with a strategic merge patch (webhooks merge by name), touching nothing
// else, so that a `helm upgrade` or `kubectl apply` of a configuration
// without caBundle leaves it in place.
func (a *APIClient) SetWebhookCABundle(ctx context.Context, config, webhook string, bundle []byte) error {
	patch, err := json.Marshal(map[string]any{"webhooks": []any{map[string]any{
		"name": webhook, "clientConfig": map[string]any{"caBundle": bundle},
	}}})
	if err != nil {
		return err
	}
	if err := a.do(ctx, http.MethodPatch, webhookConfigPath(config), "application/strategic-merge-patch+json", patch, nil); err != nil {
		return fmt.Errorf("patch mutatingwebhookconfiguration %s: %w", config, err)
	}
	return nil
}
