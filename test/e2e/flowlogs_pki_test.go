package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net"

	"github.com/calico-host/calico-host/internal/pkitest"
)

// goldmanePKI is a CA, a server certificate for an IP address and a client certificate, the
// client's files in dir as felix's TyphaCAFile, TyphaCertFile and TyphaKeyFile take them.
type goldmanePKI struct {
	server                    *tls.Config // requires and verifies the client's certificate
	caFile, certFile, keyFile string
}

func newGoldmanePKI(dir string, serverIP net.IP) (*goldmanePKI, error) {
	ca, err := pkitest.NewCA(dir, "flow logs test CA")
	if err != nil {
		return nil, err
	}
	server, err := ca.Issue("goldmane", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, serverIP.String())
	if err != nil {
		return nil, err
	}
	client, err := ca.Issue("felix", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return nil, err
	}
	return &goldmanePKI{
		server: &tls.Config{Certificates: []tls.Certificate{server.TLS}, ClientCAs: ca.Pool(),
			ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		caFile: ca.File, certFile: client.CertFile, keyFile: client.KeyFile,
	}, nil
}

// felixEnv is what felix needs to present its certificate and check Goldmane's.
func (p *goldmanePKI) felixEnv() []string {
	return []string{"FELIX_TYPHACAFILE=" + p.caFile, "FELIX_TYPHACERTFILE=" + p.certFile, "FELIX_TYPHAKEYFILE=" + p.keyFile}
}
