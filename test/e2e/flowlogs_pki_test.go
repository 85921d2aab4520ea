package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// goldmanePKI is a CA, a server certificate for an IP address and a client certificate, the
// client's files in dir as felix's TyphaCAFile, TyphaCertFile and TyphaKeyFile take them.
type goldmanePKI struct {
	server                    *tls.Config // requires and verifies the client's certificate
	caFile, certFile, keyFile string
}

func newGoldmanePKI(dir string, serverIP net.IP) (*goldmanePKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flow logs test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	issue := func(serial int64, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: fmt.Sprint("flow logs ", serial)},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		return der, key, err
	}
	serverDER, serverKey, err := issue(2, x509.ExtKeyUsageServerAuth, []net.IP{serverIP})
	if err != nil {
		return nil, err
	}
	clientDER, clientKey, err := issue(3, x509.ExtKeyUsageClientAuth, nil)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	p := &goldmanePKI{
		server: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}},
			ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		caFile: filepath.Join(dir, "goldmane-ca.pem"), certFile: filepath.Join(dir, "felix.pem"), keyFile: filepath.Join(dir, "felix-key.pem"),
	}
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		return nil, err
	}
	for path, block := range map[string]*pem.Block{p.caFile: {Type: "CERTIFICATE", Bytes: caDER},
		p.certFile: {Type: "CERTIFICATE", Bytes: clientDER}, p.keyFile: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// felixEnv is what felix needs to present its certificate and check Goldmane's.
func (p *goldmanePKI) felixEnv() []string {
	return []string{"FELIX_TYPHACAFILE=" + p.caFile, "FELIX_TYPHACERTFILE=" + p.certFile, "FELIX_TYPHAKEYFILE=" + p.keyFile}
}
