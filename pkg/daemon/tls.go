package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// ServerTLS is the TLS of a metrics server, as Project Calico's felix configures it: a server
// certificate and key, the CA that client certificates are checked against, and how clients
// authenticate (PrometheusMetricsClientAuth, as felix's configuration parsed it; the zero value
// is NoClientCert). As in Project Calico, the
// three files are all required, and they are read again for every connection, so that renewed
// certificates apply without a restart.
type ServerTLS struct {
	CertFile, KeyFile, CAFile string
	ClientAuth                tls.ClientAuthType
}

// Enabled reports whether TLS is asked for (a certificate or a key is set).
func (s ServerTLS) Enabled() bool { return s.CertFile != "" || s.KeyFile != "" }

// Config loads the files into a TLS configuration (TLS 1.2 or newer).
func (s ServerTLS) Config() (*tls.Config, error) {
	if s.ClientAuth < tls.NoClientCert || s.ClientAuth > tls.RequireAndVerifyClientCert {
		return nil, fmt.Errorf("invalid client authentication type %d", s.ClientAuth)
	}
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the server certificate %s and key %s: %w", s.CertFile, s.KeyFile, err)
	}
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in the CA file %s", s.CAFile)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
		ClientCAs: pool, ClientAuth: s.ClientAuth}, nil
}

// ServeTLS is Serve over TLS. The files are checked once before listening (an error is
// returned) and loaded again for every connection (a connection fails, and is logged, while
// they do not load).
func ServeTLS(ctx context.Context, addr string, h http.Handler, st ServerTLS, log zerolog.Logger) (net.Addr, error) {
	cfg, err := st.Config()
	if err != nil {
		return nil, err
	}
	cfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := st.Config()
		if err != nil {
			log.Error().Err(err).Msg("Reloading the metrics server's TLS files failed")
		}
		return c, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, TLSConfig: cfg}
	go func() {
		if err := srv.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("addr", addr).Msg("HTTPS server failed")
		}
	}()
	go shutdownOnDone(ctx, srv)
	log.Info().Str("addr", l.Addr().String()).Stringer("client_auth", st.ClientAuth).Msg("Serving HTTPS")
	return l.Addr(), nil
}

func shutdownOnDone(ctx context.Context, srv *http.Server) {
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
}
