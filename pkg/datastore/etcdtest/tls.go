package etcdtest

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

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// TLSFiles are the PEM files of a test CA, a server certificate for 127.0.0.1 and a client certificate.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// ClientConfig returns a client TLS config using the client certificate.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	return transport.TLSInfo{CertFile: f.ClientCert, KeyFile: f.ClientKey, TrustedCAFile: f.CA}.ClientConfig()
}

// GenerateTLS writes a fresh CA, server and client certificate into dir.
func GenerateTLS(dir string) (*TLSFiles, error) {
	caKey, caCert, err := newCert(nil, nil, &x509.Certificate{
		Subject: pkix.Name{CommonName: "calico-host test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
	if err != nil {
		return nil, err
	}
	f := &TLSFiles{CA: filepath.Join(dir, "ca.pem")}
	if err := writePEM(f.CA, "CERTIFICATE", caCert.Raw); err != nil {
		return nil, err
	}
	leaves := []struct {
		cert, key *string
		tmpl      *x509.Certificate
	}{
		{&f.ServerCert, &f.ServerKey, &x509.Certificate{Subject: pkix.Name{CommonName: "etcd"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}},
		{&f.ClientCert, &f.ClientKey, &x509.Certificate{Subject: pkix.Name{CommonName: "calico"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	}
	for _, l := range leaves {
		key, cert, err := newCert(caKey, caCert, l.tmpl)
		if err != nil {
			return nil, err
		}
		name := l.tmpl.Subject.CommonName
		*l.cert, *l.key = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		if err := writePEM(*l.cert, "CERTIFICATE", cert.Raw); err != nil {
			return nil, err
		}
		if err := writePEM(*l.key, "EC PRIVATE KEY", der); err != nil {
			return nil, err
		}
	}
	return f, nil
}

var serial atomic.Int64

func newCert(parentKey *ecdsa.PrivateKey, parent, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate, error) {
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
