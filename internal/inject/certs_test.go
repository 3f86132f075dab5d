package inject

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"
)

// verifies reports whether the leaf in st verifies for host against the
// CAs of bundle, checked by crypto/x509 (what the API server's TLS client
// does).
func verifies(t *testing.T, bundle, leafPEM []byte, host string, now time.Time) bool {
	t.Helper()
	blk, _ := pem.Decode(leafPEM)
	if blk == nil {
		return false
	}
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host, CurrentTime: now})
	return err == nil
}

// TestPlanCertsLifecycle walks one Secret through install, steady state,
// CA rotation and the old CA's expiry, with the API server's caBundle
// following one step behind, as it does in the cluster. At every step the
// leaf the injector would serve (the Secret's, once its CA is live) must
// verify against the live caBundle: no admission call can fail TLS.
func TestPlanCertsLifecycle(t *testing.T) {
	t.Parallel()
	p := CertPolicy{CAValidity: 90 * time.Hour, CertValidity: 30 * time.Hour, Hosts: []string{"inj.ns.svc", "127.0.0.1"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var st CertState
	var live []byte
	var served []byte
	step := func(what string) bool {
		t.Helper()
		next, changed, err := PlanCerts(st, live, p, now)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		st = next
		if BundleContainsIssuer(live, st.Cert) {
			served = st.Cert
		}
		if served != nil && !verifies(t, live, served, p.Hosts[0], now) {
			t.Fatalf("%s: the served leaf does not verify against the live caBundle", what)
		}
		live = st.CABundle // the injector patches the caBundle after the Secret
		// Other replicas serve what they read on their last step until their
		// next one: that leaf must verify against the new caBundle too.
		if served != nil && !verifies(t, live, served, p.Hosts[0], now) {
			t.Fatalf("%s: after the caBundle update, a leaf still being served no longer verifies", what)
		}
		return changed
	}

	if !step("install") || len(parseBundle(st.CABundle)) != 1 || st.Cert != nil {
		t.Fatalf("install: want one CA and no leaf yet, got %d CAs, leaf %v", len(parseBundle(st.CABundle)), st.Cert != nil)
	}
	if !step("first leaf") || st.Cert == nil || !verifies(t, st.CABundle, st.Cert, "inj.ns.svc", now) {
		t.Fatal("second step: want a leaf the CA signed")
	}
	if !verifies(t, st.CABundle, st.Cert, "127.0.0.1", now) {
		t.Error("the leaf does not carry the IP host")
	}
	if step("steady") {
		t.Error("a step with nothing due changed the Secret")
	}
	first := st
	// Every hour for 200 hours: leaves renew at 20h, the CA at 60h, the
	// first CA expires at 90h.
	var rotations, leaves int
	for range 200 {
		now = now.Add(time.Hour)
		before := st
		step("hourly")
		if len(parseBundle(st.CABundle)) > 0 && !parseBundle(st.CABundle)[0].Equal(parseBundle(before.CABundle)[0]) {
			rotations++
			if string(st.Cert) != string(before.Cert) {
				t.Fatal("the step that added a CA also replaced the leaf: the API server cannot trust it yet")
			}
		}
		if string(st.Cert) != string(before.Cert) {
			leaves++
		}
		if n := len(parseBundle(st.CABundle)); n < 1 || n > 2 {
			t.Fatalf("bundle holds %d CAs", n)
		}
	}
	if rotations < 2 || leaves < 6 {
		t.Errorf("over 200h: %d CA rotations and %d leaves, want at least 2 and 6", rotations, leaves)
	}
	if bundleHas(parseBundle(st.CABundle), parseBundle(first.CABundle)[0]) {
		t.Error("the first CA, expired, is still in the bundle")
	}

	// New hosts: a new leaf at once (the CA is live).
	p.Hosts = []string{"other.ns.svc"}
	step("hosts changed")
	if !verifies(t, live, st.Cert, "other.ns.svc", now) {
		t.Error("a change of hosts did not reissue the leaf")
	}

	// A CA key that does not match the newest CA: a new CA.
	st.CAKey = first.CAKey
	before := parseBundle(st.CABundle)[0]
	step("foreign CA key")
	if parseBundle(st.CABundle)[0].Equal(before) {
		t.Error("a CA whose key is not in the Secret was kept as the signer")
	}
}

func TestPlanCertsRefusesBadPolicy(t *testing.T) {
	t.Parallel()
	now := time.Now()
	if _, _, err := PlanCerts(CertState{}, nil, CertPolicy{CertValidity: time.Hour, Hosts: []string{"a"}}, now); err == nil {
		t.Error("zero CA validity accepted")
	}
	st, _, err := PlanCerts(CertState{}, nil, CertPolicy{CAValidity: time.Hour, CertValidity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := PlanCerts(st, st.CABundle, CertPolicy{CAValidity: time.Hour, CertValidity: time.Hour}, now); err == nil {
		t.Error("a leaf without hosts was issued")
	}
}

// TestPlanCertsSettles: once the CA is live and the leaf issued, another
// step at the same moment changes nothing, whatever the lifetimes (the
// kube stage's are seconds). Steps are kicked by the watch on the Secret,
// so a plan that always changed something would write the Secret in a
// loop; measuring lifetimes from the backdated NotBefore did, for a leaf
// of 30 s.
func TestPlanCertsSettles(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, p := range map[string]CertPolicy{
		"seconds": {CAValidity: 90 * time.Second, CertValidity: 30 * time.Second, Hosts: []string{"127.0.0.1"}},
		"minutes": {CAValidity: 3 * time.Minute, CertValidity: time.Minute, Hosts: []string{"127.0.0.1"}},
		"years":   {CAValidity: 10 * 365 * 24 * time.Hour, CertValidity: 365 * 24 * time.Hour, Hosts: []string{"inj.ns.svc"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st, _, err := PlanCerts(CertState{}, nil, p, now)
			if err != nil {
				t.Fatal(err)
			}
			st, changed, err := PlanCerts(st, st.CABundle, p, now) // the CA is live: the leaf
			if err != nil || !changed || len(st.Cert) == 0 {
				t.Fatalf("no leaf once the CA was live: changed %v, err %v", changed, err)
			}
			for _, at := range []time.Duration{0, time.Second, p.CertValidity / 2} {
				if _, changed, err := PlanCerts(st, st.CABundle, p, now.Add(at)); err != nil || changed {
					t.Errorf("PlanCerts %v after the leaf was issued: changed %v, err %v; want nothing to do", at, changed, err)
				}
			}
		})
	}
}
