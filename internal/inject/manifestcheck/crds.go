package manifestcheck

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The custom resources the chart may render, reduced to the fields it
// uses; strict decoding then catches a field outside that set (a typo or a
// field the chart was never meant to set), which is the point of the check.

// PodMonitor is the prometheus-operator monitoring.coreos.com/v1 PodMonitor.
type PodMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		JobLabel            string               `json:"jobLabel,omitempty"`
		Selector            metav1.LabelSelector `json:"selector"`
		NamespaceSelector   *NamespaceSelector   `json:"namespaceSelector,omitempty"`
		PodMetricsEndpoints []struct {
			Port           string `json:"port,omitempty"`
			Path           string `json:"path,omitempty"`
			Interval       string `json:"interval,omitempty"`
			ScrapeTimeout  string `json:"scrapeTimeout,omitempty"`
			HonorLabels    bool   `json:"honorLabels,omitempty"`
			RelabelConfigs []struct {
				Action       string   `json:"action,omitempty"`
				SourceLabels []string `json:"sourceLabels,omitempty"`
				Regex        string   `json:"regex,omitempty"`
				TargetLabel  string   `json:"targetLabel,omitempty"`
				Replacement  string   `json:"replacement,omitempty"`
			} `json:"relabelings,omitempty"`
		} `json:"podMetricsEndpoints"`
	} `json:"spec"`
}

// PrometheusRule is the prometheus-operator monitoring.coreos.com/v1
// PrometheusRule: groups of alerting rules.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert,omitempty"`
				Record      string            `json:"record,omitempty"`
				Expr        string            `json:"expr"`
				For         string            `json:"for,omitempty"`
				Labels      map[string]string `json:"labels,omitempty"`
				Annotations map[string]string `json:"annotations,omitempty"`
			} `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

// NamespaceSelector is the prometheus-operator namespace selector.
type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

// Certificate is the cert-manager.io/v1 Certificate.
type Certificate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		SecretName  string          `json:"secretName"`
		DNSNames    []string        `json:"dnsNames"`
		Duration    string          `json:"duration,omitempty"`
		RenewBefore string          `json:"renewBefore,omitempty"`
		IsCA        bool            `json:"isCA,omitempty"`
		CommonName  string          `json:"commonName,omitempty"`
		IssuerRef   ObjectReference `json:"issuerRef"`
		PrivateKey  *struct {
			Algorithm      string `json:"algorithm,omitempty"`
			Size           int    `json:"size,omitempty"`
			RotationPolicy string `json:"rotationPolicy,omitempty"`
		} `json:"privateKey,omitempty"`
	} `json:"spec"`
}

// ObjectReference names a cert-manager issuer.
type ObjectReference struct {
	Name  string `json:"name"`
	Kind  string `json:"kind,omitempty"`
	Group string `json:"group,omitempty"`
}

// Issuer is the cert-manager.io/v1 Issuer (self-signed or CA).
type Issuer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		SelfSigned *struct{} `json:"selfSigned,omitempty"`
		CA         *struct {
			SecretName string `json:"secretName"`
		} `json:"ca,omitempty"`
	} `json:"spec"`
}
