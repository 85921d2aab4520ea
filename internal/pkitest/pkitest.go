// Package pkitest is a certificate authority for tests: it issues ECDSA P-256 server and client
// certificates, valid from an hour ago for a day, and writes them as the PEM files the daemons
// read (the CA, each certificate and its key).
package pkitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// CA is a test certificate authority whose certificate is in File.
type CA struct {
	File string
	dir  string
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

// Leaf is an issued certificate: its files and the same as a tls.Certificate.
type Leaf struct {
	CertFile, KeyFile string
	TLS               tls.Certificate
}

// NewCA makes a CA named name and writes its certificate to dir/ca.pem; the certificates it
// issues are written to dir too.
func NewCA(dir, name string) (*CA, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	key, cert, err := sign(nil, nil, tmpl)
	if err != nil {
		return nil, err
	}
	ca := &CA{File: filepath.Join(dir, "ca.pem"), dir: dir, key: key, cert: cert}
	return ca, writePEM(ca.File, "CERTIFICATE", cert.Raw)
}

// Pool is a certificate pool holding the CA.
func (ca *CA) Pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	return pool
}

// Issue signs a certificate with common name name for the uses given and for hosts (IP
// addresses or DNS names), and writes it to dir/<name>.pem and its key to dir/<name>-key.pem.
func (ca *CA) Issue(name string, uses []x509.ExtKeyUsage, hosts ...string) (Leaf, error) {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, ExtKeyUsage: uses, KeyUsage: x509.KeyUsageDigitalSignature}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	key, cert, err := sign(ca.key, ca.cert, tmpl)
	if err != nil {
		return Leaf{}, err
	}
	l := Leaf{CertFile: filepath.Join(ca.dir, name+".pem"), KeyFile: filepath.Join(ca.dir, name+"-key.pem"),
		TLS: tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Leaf{}, err
	}
	if err := writePEM(l.CertFile, "CERTIFICATE", cert.Raw); err != nil {
		return Leaf{}, err
	}
	return l, writePEM(l.KeyFile, "EC PRIVATE KEY", der)
}

var serial atomic.Int64

// sign makes a key and a certificate from tmpl, signed by parent (self-signed when nil).
func sign(parentKey *ecdsa.PrivateKey, parent, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano() + serial.Add(1))
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return key, cert, err
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}
