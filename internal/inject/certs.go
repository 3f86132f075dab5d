package inject

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// The keys of the injector's TLS Secret when it manages its own
// certificate. ca.crt is the trust bundle the webhook's caBundle carries
// (every CA still trusted, newest first), ca.key the key of the newest CA,
// tls.crt and tls.key the leaf every replica serves.
const (
	SecretCAKey      = "ca.key"
	SecretCABundle   = "ca.crt"
	SecretCertKey    = "tls.crt"
	SecretPrivateKey = "tls.key"
)

// CertState is what the injector's TLS Secret holds, in PEM.
type CertState struct {
	CABundle, CAKey, Cert, Key []byte
}

// CertPolicy says how long certificates live and which names the leaf
// carries. Each certificate is renewed once less than a third of its
// lifetime is left, so a renewal always overlaps the old one's validity.
type CertPolicy struct {
	CAValidity, CertValidity time.Duration
	// Hosts are the leaf's DNS names or IP addresses (the injector
	// Service's names, or the host of the webhook URL).
	Hosts []string
}

// clockSkew is how far before its issue a certificate's NotBefore is set,
// so that a verifier whose clock is a little behind accepts it.
const clockSkew = time.Minute

// due reports whether c has less than a third of its lifetime left at now:
// the lifetime from its issue, not from the backdated NotBefore, or a
// certificate living less than half a minute would be due the moment it
// is made, and every step (each one kicked by the last one's write) would
// make another.
func due(c *x509.Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore.Add(clockSkew))
	return c.NotAfter.Sub(now) < life/3
}

// parseBundle returns the certificates of a PEM bundle, skipping blocks
// that do not parse.
func parseBundle(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func encodeBundle(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

// PlanCerts is the pure step of certificate management: given the Secret's
// state, the caBundle the API server currently uses and the time, it
// returns the state the Secret should hold (changed reports whether it
// differs). One step does one thing, in this order, so that the API server
// trusts a CA before any replica serves a leaf it signed:
//
//  1. no usable CA, or the newest is due: a new CA is added to the front of
//     the bundle (older CAs stay until they expire), the leaf is kept;
//  2. expired CAs are dropped from the bundle;
//  3. only when the live caBundle already holds the newest CA: a leaf that
//     is missing, due, for other hosts or not signed by the newest CA is
//     replaced by one the newest CA signs.
//
// Random keys come from rand; everything else is a function of the inputs.
func PlanCerts(cur CertState, liveBundle []byte, p CertPolicy, now time.Time) (next CertState, changed bool, err error) {
	next = cur
	bundle := parseBundle(cur.CABundle)
	caKey, _ := parseKey(cur.CAKey)
	var ca *x509.Certificate
	if usableCA(bundle, caKey, now) {
		ca = bundle[0]
	}
	if ca == nil || due(ca, now) {
		newCA, key, err := newCA(p.CAValidity, now)
		if err != nil {
			return cur, false, err
		}
		keyPEM, err := encodeKey(key)
		if err != nil {
			return cur, false, err
		}
		bundle = append([]*x509.Certificate{newCA}, bundle...)
		next.CAKey = keyPEM
		ca, caKey = newCA, key
		changed = true
	}
	kept := bundle[:0:0]
	for _, c := range bundle {
		if now.Before(c.NotAfter) {
			kept = append(kept, c)
		}
	}
	if len(kept) != len(bundle) {
		changed = true
	}
	next.CABundle = encodeBundle(kept)
	if !bundleHas(parseBundle(liveBundle), ca) {
		return next, changed, nil // publish the CA first; the leaf comes on a later step
	}
	if leafOK(cur.Cert, cur.Key, ca, p.Hosts, now) {
		return next, changed, nil
	}
	cert, key, err := newLeaf(ca, caKey, p, now)
	if err != nil {
		return cur, false, err
	}
	next.Cert, next.Key = cert, key
	return next, true, nil
}

// leafOK reports whether the leaf pair is usable: it parses, matches its
// key, is signed by ca, names exactly hosts and is not due.
func leafOK(certPEM, keyPEM []byte, ca *x509.Certificate, hosts []string, now time.Time) bool {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || leaf.CheckSignatureFrom(ca) != nil || due(leaf, now) || now.Before(leaf.NotBefore) {
		return false
	}
	var names []string
	names = append(names, leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	want := slices.Clone(hosts)
	slices.Sort(names)
	slices.Sort(want)
	return slices.Equal(names, want)
}

func bundleHas(bundle []*x509.Certificate, c *x509.Certificate) bool {
	for _, b := range bundle {
		if b.Equal(c) {
			return true
		}
	}
	return false
}

// BundleContainsIssuer reports whether the PEM certificate cert was signed
// by one of the CAs of the PEM bundle: the injector serves a leaf only then.
func BundleContainsIssuer(bundle, cert []byte) bool {
	blk, _ := pem.Decode(cert)
	if blk == nil {
		return false
	}
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return false
	}
	for _, ca := range parseBundle(bundle) {
		if leaf.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

// keyAndSerial makes what every certificate here starts from: a P-256 key
// and a random 127-bit serial number.
func keyAndSerial() (*ecdsa.PrivateKey, *big.Int, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	sn, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return key, sn, err
}

func newCA(validity time.Duration, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	if validity <= 0 {
		return nil, nil, errors.New("CA validity must be positive")
	}
	key, sn, err := keyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          sn,
		Subject:               pkix.Name{CommonName: "skills-sidecar injector CA " + now.UTC().Format(time.RFC3339)},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	c, err := x509.ParseCertificate(der)
	return c, key, err
}

func newLeaf(ca *x509.Certificate, caKey crypto.Signer, p CertPolicy, now time.Time) (certPEM, keyPEM []byte, err error) {
	if p.CertValidity <= 0 {
		return nil, nil, errors.New("certificate validity must be positive")
	}
	if len(p.Hosts) == 0 {
		return nil, nil, errors.New("the certificate needs at least one host")
	}
	key, sn, err := keyAndSerial()
	if err != nil {
		return nil, nil, err
	}
	notAfter := now.Add(p.CertValidity)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: sn,
		Subject:      pkix.Name{CommonName: p.Hosts[0]},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range p.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func encodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseKey(b []byte) (crypto.Signer, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, errors.New("no PEM key")
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, err
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", k)
	}
	return s, nil
}

func publicKeysEqual(a crypto.PublicKey, b crypto.PublicKey) bool {
	e, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && e.Equal(b)
}

// LeafNotAfter returns the expiry of the first certificate of a PEM chain.
func LeafNotAfter(certPEM []byte) (time.Time, bool) {
	c := parseBundle(certPEM)
	if len(c) == 0 {
		return time.Time{}, false
	}
	return c[0].NotAfter, true
}

// usableCA reports whether the newest CA of bundle has key and is unexpired.
func usableCA(bundle []*x509.Certificate, key crypto.Signer, now time.Time) bool {
	return len(bundle) > 0 && key != nil && publicKeysEqual(bundle[0].PublicKey, key.Public()) && now.Before(bundle[0].NotAfter)
}

// RestoreFrom says which state a certificate step should start from: the
// Secret's (cur), or held, the last state this injector read or wrote,
// when the Secret lost its usable CA and held still has one. A Secret is
// emptied when `helm upgrade --force` or a GitOps replace recreates it as
// the chart renders it; starting over would publish a new CA that no served
// leaf chains to, failing every admission call until a leaf signed by it
// is trusted, while held is what the API server still trusts and every
// replica still serves.
func RestoreFrom(cur, held CertState, now time.Time) (CertState, bool) {
	if cur.HasCA(now) || !held.HasCA(now) {
		return cur, false
	}
	return held, true
}

// HasCA reports whether the state's newest CA is unexpired at now and its
// key is the state's CA key.
func (st CertState) HasCA(now time.Time) bool {
	key, _ := parseKey(st.CAKey)
	return usableCA(parseBundle(st.CABundle), key, now)
}
