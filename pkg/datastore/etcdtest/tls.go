package etcdtest

import (
	"crypto/tls"
	"crypto/x509"

	"go.etcd.io/etcd/client/pkg/v3/transport"

	"github.com/calico-host/calico-host/internal/pkitest"
)

// TLSFiles are the PEM files of a test CA, a server certificate for 127.0.0.1 and a client certificate.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// ClientConfig returns a client TLS config using the client certificate.
func (f *TLSFiles) ClientConfig() (*tls.Config, error) {
	return transport.TLSInfo{CertFile: f.ClientCert, KeyFile: f.ClientKey, TrustedCAFile: f.CA}.ClientConfig()
}

// GenerateTLS writes a fresh CA, server ("etcd", for 127.0.0.1 and localhost) and client
// ("calico") certificate into dir.
func GenerateTLS(dir string) (*TLSFiles, error) {
	ca, err := pkitest.NewCA(dir, "calico-host test CA")
	if err != nil {
		return nil, err
	}
	server, err := ca.Issue("etcd", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, "127.0.0.1", "localhost")
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue("calico", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	return &TLSFiles{CA: ca.File, ServerCert: server.CertFile, ServerKey: server.KeyFile,
		ClientCert: client.CertFile, ClientKey: client.KeyFile}, nil
}
