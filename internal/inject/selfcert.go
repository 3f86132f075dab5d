package inject

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// CertSource serves the webhook's certificate: files (CertReloader) or the
// injector's own Secret (SelfCerts).
type CertSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// NotAfter is the expiry of the certificate being served (zero when
	// none is).
	NotAfter() time.Time
}

// SelfCerts is the injector managing its own certificate, as vault-k8s and
// Linkerd's injectors do: the CA, the trust bundle and the leaf live in one
// Secret that the chart creates empty; every replica runs the same
// reconcile step (PlanCerts) on a timer and whenever the Secret or the
// webhook configuration changes (a watch on each), writes the Secret with
// optimistic concurrency (a replica that loses the race reads the winner's
// next time), makes the webhook's caBundle equal the Secret's bundle, and
// serves the Secret's leaf only once its CA is in the caBundle the API
// server has. Nothing about the certificate is rendered by the chart, so
// renders are byte-identical and upgrades or GitOps syncs cannot change it;
// one that replaces the objects (`helm upgrade --force`, Argo CD's
// Replace=true) empties both, and the watches let the next step put back
// at once what this replica held (RestoreFrom).
type SelfCerts struct {
	API           *APIClient
	Namespace     string
	Secret        string
	WebhookConfig string
	WebhookName   string
	Policy        CertPolicy
	// Interval between reconcile steps; a new CA is published at least
	// one Interval before any leaf it signs is served.
	Interval time.Duration
	// WatchTimeout is how long one watch lasts before it is made anew
	// (zero: 5 minutes).
	WatchTimeout time.Duration
	Log          *zap.Logger
	// OnError counts failed steps (nil: not counted).
	OnError func()
	now     func() time.Time

	held     CertState // what the Secret held at the last step; only Run's goroutine
	mu       sync.Mutex
	cert     *tls.Certificate
	notAfter time.Time
}

// Run reconciles until ctx is done; the first step runs at once, later ones
// every Interval and as soon as a watch sees the Secret or the webhook
// configuration change. It returns once its watches have stopped.
func (s *SelfCerts) Run(ctx context.Context) {
	kick := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, w := range []struct{ path, name string }{
		{secretsPath(s.Namespace), s.Secret},
		{webhookConfigsPath, s.WebhookConfig},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.watch(ctx, w.path, w.name, kick)
		}()
	}
	t := time.NewTicker(s.Interval)
	defer t.Stop()
	var last time.Time // when the last step ended
	for {
		err := s.Step(ctx)
		last = time.Now()
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("certificate step failed; serving the last good certificate", zap.Error(err))
			if s.OnError != nil {
				s.OnError()
			}
		}
		wait := s.Interval
		if s.NotAfter().IsZero() {
			wait = time.Second // nothing served yet: no reason to wait long
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
			// Each step's own writes come back as events: a plan that
			// never settled (or two replicas that disagree) could loop, so
			// a kicked step waits until minKickGap after the last one.
			select {
			case <-ctx.Done():
				return
			case <-time.After(minKickGap - time.Since(last)):
			}
		}
	}
}

// minKickGap spaces the steps a watch kicks: at most ten a second.
const minKickGap = 100 * time.Millisecond

// watch keeps a watch on one object open until ctx is done, kicking a step
// on every change; a watch that fails is made anew after a pause that
// doubles up to Interval (the timer's steps go on meanwhile).
func (s *SelfCerts) watch(ctx context.Context, path, name string, kick chan<- struct{}) {
	timeout := s.WatchTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	changed := func() {
		select {
		case kick <- struct{}{}:
		default: // a step is already due
		}
	}
	pause := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := s.API.Watch(ctx, path, name, timeout, changed)
		if ctx.Err() != nil {
			return
		}
		if err == nil && time.Since(start) >= timeout/2 {
			pause = time.Second
			continue // the API server ended it on time
		}
		if err != nil {
			// E.g. a role without watch: the timed steps still run.
			s.Log.Warn("watch failed; watching again", zap.String("object", name), zap.Duration("pause", pause), zap.Error(err))
		} else {
			s.Log.Debug("watch ended early; watching again", zap.String("object", name), zap.Duration("pause", pause))
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, max(s.Interval, time.Second))
	}
}

// Step is one reconcile: read the Secret and the live caBundle, plan,
// write what changed, and pick the leaf to serve.
func (s *SelfCerts) Step(ctx context.Context) error {
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	sec, err := s.API.Secret(ctx, s.Namespace, s.Secret)
	if err != nil {
		return err
	}
	live, err := s.API.WebhookCABundle(ctx, s.WebhookConfig, s.WebhookName)
	if err != nil {
		return err
	}
	read := CertState{CABundle: sec.Data[SecretCABundle], CAKey: sec.Data[SecretCAKey], Cert: sec.Data[SecretCertKey], Key: sec.Data[SecretPrivateKey]}
	cur, restored := RestoreFrom(read, s.held, now())
	next, changed, err := PlanCerts(cur, live, s.Policy, now())
	if err != nil {
		return err
	}
	if changed || restored {
		err := s.API.UpdateSecretData(ctx, s.Namespace, s.Secret, sec.ResourceVersion, map[string][]byte{
			SecretCABundle: next.CABundle, SecretCAKey: next.CAKey, SecretCertKey: next.Cert, SecretPrivateKey: next.Key,
		})
		switch {
		case IsConflict(err):
			// Serve what was read; the next step reads the winner's. What
			// this replica held stays held (what was read may be empty).
			s.Log.Debug("another replica updated the certificate Secret first")
			next = read
		case err != nil:
			return err
		case restored:
			s.Log.Info("certificate Secret restored: it had lost its CA (replaced?); the keys this injector held are back", zap.Int("trusted_cas", len(parseBundle(next.CABundle))))
		default:
			s.Log.Info("certificate Secret updated", zap.Int("trusted_cas", len(parseBundle(next.CABundle))))
		}
	}
	if next.HasCA(now()) {
		s.held = next
	}
	if string(live) != string(next.CABundle) && len(next.CABundle) > 0 {
		if err := s.API.SetWebhookCABundle(ctx, s.WebhookConfig, s.WebhookName, next.CABundle); err != nil {
			return err
		}
		s.Log.Info("webhook caBundle updated", zap.Int("trusted_cas", len(parseBundle(next.CABundle))), zap.Bool("was_empty", len(live) == 0))
	}
	// Serve the leaf only if the API server already trusted its CA before
	// this step (live, not what was just patched).
	if len(next.Cert) == 0 || !BundleContainsIssuer(live, next.Cert) {
		return nil
	}
	pair, err := tls.X509KeyPair(next.Cert, next.Key)
	if err != nil {
		return errors.New("certificate Secret holds a broken key pair")
	}
	exp, _ := LeafNotAfter(next.Cert)
	s.mu.Lock()
	s.cert, s.notAfter = &pair, exp
	s.mu.Unlock()
	return nil
}

// GetCertificate is tls.Config.GetCertificate; before the first leaf is
// ready every handshake fails (and /healthz with it, so the pod is not
// ready).
func (s *SelfCerts) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		return nil, errors.New("no certificate yet: the injector has not completed a certificate step")
	}
	return s.cert, nil
}

// NotAfter is the expiry of the leaf being served.
func (s *SelfCerts) NotAfter() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notAfter
}
