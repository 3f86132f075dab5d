package inject

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// The results an admission call is counted under (the label values of
// skills_sidecar_injector_admissions_total; a fixed set).
const (
	ResultInjected = "injected" // patched with the sidecar
	ResultSkipped  = "skipped"  // not a pod create, not opted in, or already injected
	ResultDenied   = "denied"   // malformed annotations, pod rejected (--on-error=deny)
	ResultWarned   = "warned"   // malformed annotations, pod admitted unchanged with a warning
	ResultInvalid  = "invalid"  // the request was not a readable AdmissionReview
)

// WebhookMetrics are the injector's own metrics, served on its metrics
// port (--metrics-listen), apart from the sidecar's. A nil *WebhookMetrics
// records nothing.
type WebhookMetrics struct {
	admissions *prometheus.CounterVec
	duration   prometheus.Histogram
	certErrors prometheus.Counter
}

// NewWebhookMetrics registers the injector's metrics on reg, with the Go
// and process collectors; notAfter gives the served certificate's expiry
// (zero: none yet).
func NewWebhookMetrics(reg prometheus.Registerer, notAfter func() time.Time) *WebhookMetrics {
	const ns = "skills_sidecar_injector"
	m := &WebhookMetrics{
		admissions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "admissions_total",
			Help: "Admission calls answered, by result: injected, skipped (not a pod create, not opted in or already injected), denied or warned (malformed annotations), invalid (not an AdmissionReview)."},
			[]string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "admission_duration_seconds",
			Help:    "Time from an admission call's arrival to its answer (ConfigMap reads included).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
		certErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "certificate_errors_total",
			Help: "Failed certificate steps (reading or updating the TLS Secret or the webhook's caBundle, or a certificate file that does not load); the last good certificate keeps being served."}),
	}
	expiry := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "certificate_expiry_timestamp_seconds",
		Help: "Unix time at which the serving certificate expires; 0 while none is served."},
		func() float64 {
			t := notAfter()
			if t.IsZero() {
				return 0
			}
			return float64(t.Unix())
		})
	for _, r := range []string{ResultInjected, ResultSkipped, ResultDenied, ResultWarned, ResultInvalid} {
		m.admissions.WithLabelValues(r) // every series exists from the start, so rate() sees the first call
	}
	reg.MustRegister(m.admissions, m.duration, m.certErrors, expiry,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *WebhookMetrics) observe(result string, d time.Duration) {
	if m == nil {
		return
	}
	m.admissions.WithLabelValues(result).Inc()
	m.duration.Observe(d.Seconds())
}

// CertificateError counts one failed certificate step.
func (m *WebhookMetrics) CertificateError() {
	if m != nil {
		m.certErrors.Inc()
	}
}
