package inject

import (
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

	corev1 "k8s.io/api/core/v1"
)

// In-cluster service account files (the token is re-read on every request,
// since bound tokens rotate).
const (
	serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	maxConfigMapBytes = 4 << 20
)

// ErrNoAPI is returned by InClusterConfigMaps outside a cluster.
var ErrNoAPI = errors.New("inject: no Kubernetes API (KUBERNETES_SERVICE_HOST unset)")

// APIClient reads ConfigMaps from the Kubernetes API with a bearer token:
// the one call the injector needs, without client-go.
type APIClient struct {
	// Server is the API server's base URL, e.g. https://10.0.0.1:443.
	Server string
	// TokenFile holds the bearer token, re-read per request.
	TokenFile string
	// Client makes the requests; it must trust the API server.
	Client *http.Client
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

// ConfigMap reads one ConfigMap; it is a NamespacedConfigMapGetter.
func (a *APIClient) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	u := a.Server + "/api/v1/namespaces/" + url.PathEscape(namespace) + "/configmaps/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
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
	resp, err := a.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get configmap: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConfigMapBytes))
	if err != nil {
		return nil, fmt.Errorf("get configmap: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var st struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(body, &st)
		return nil, fmt.Errorf("get configmap: %s %s", resp.Status, st.Message)
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(body, &cm); err != nil {
		return nil, fmt.Errorf("decode configmap: %w", err)
	}
	return &cm, nil
}
