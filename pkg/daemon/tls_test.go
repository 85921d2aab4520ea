package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

func genTLS(t *testing.T) *etcdtest.TLSFiles {
	t.Helper()
	f, err := etcdtest.GenerateTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// client trusts caFile and presents the given certificate (none when certFile is "").
func client(t *testing.T, caFile, certFile, keyFile string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{c}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
}

func scrape(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func serveMetricsTLS(t *testing.T, st ServerTLS) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "tls_test_total", Help: "x"}))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr, err := ServeTLS(ctx, "127.0.0.1:0", MetricsHandler(reg), st, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return "https://" + addr.String() + "/metrics"
}

// TestMetricsTLS: as Project Calico's felix, the metrics server with a certificate serves HTTPS;
// PrometheusMetricsClientAuth decides whether clients need a certificate signed by
// PrometheusMetricsCAFile; the files are read again for each connection.
func TestMetricsTLS(t *testing.T) {
	good, other := genTLS(t), genTLS(t)
	st := ServerTLS{CertFile: good.ServerCert, KeyFile: good.ServerKey, CAFile: good.CA}

	url := serveMetricsTLS(t, st) // NoClientCert by default
	if body, err := scrape(client(t, good.CA, "", ""), url); err != nil || !strings.Contains(body, "tls_test_total 0") {
		t.Errorf("NoClientCert: scrape without a client certificate: %v %q", err, body)
	}
	if resp, err := http.Get(strings.Replace(url, "https", "http", 1)); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP served metrics on the TLS metrics port")
		}
	}

	st.ClientAuth = tls.RequireAndVerifyClientCert
	url = serveMetricsTLS(t, st)
	if _, err := scrape(client(t, good.CA, "", ""), url); err == nil {
		t.Errorf("RequireAndVerifyClientCert: a client without a certificate was served")
	}
	if _, err := scrape(client(t, good.CA, other.ClientCert, other.ClientKey), url); err == nil {
		t.Errorf("RequireAndVerifyClientCert: a client certificate from another CA was accepted")
	}
	if body, err := scrape(client(t, good.CA, good.ClientCert, good.ClientKey), url); err != nil || !strings.Contains(body, "tls_test_total") {
		t.Errorf("RequireAndVerifyClientCert: a valid client was refused: %v", err)
	}

	// Renewed server certificate (from another CA) applies to the next connection.
	for src, dst := range map[string]string{other.ServerCert: good.ServerCert, other.ServerKey: good.ServerKey} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := scrape(client(t, other.CA, good.ClientCert, good.ClientKey), url); err != nil {
		t.Errorf("renewed server certificate not used: %v", err)
	}
}

func TestMetricsTLSRefusesBadSettings(t *testing.T) {
	f := genTLS(t)
	for name, st := range map[string]ServerTLS{
		"no CA file":       {CertFile: f.ServerCert, KeyFile: f.ServerKey},
		"no key":           {CertFile: f.ServerCert, CAFile: f.CA},
		"bad client auth":  {CertFile: f.ServerCert, KeyFile: f.ServerKey, CAFile: f.CA, ClientAuth: tls.ClientAuthType(9)},
		"CA file not a CA": {CertFile: f.ServerCert, KeyFile: f.ServerKey, CAFile: filepath.Join(t.TempDir(), "x")},
	} {
		if _, err := ServeTLS(context.Background(), "127.0.0.1:0", http.NotFoundHandler(), st, zerolog.Nop()); err == nil {
			t.Errorf("%s: server started", name)
		}
	}
}

// TestProfileOnSignals: SIGUSR1 writes a heap profile and SIGUSR2 a CPU profile to the
// configured paths, with <timestamp> filled in, as Project Calico's felix.
func TestProfileOnSignals(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	ProfileOnSignals(ctx, Profiles{Memory: dir + "/mem-<timestamp>.pprof", CPU: dir + "/cpu.pprof",
		CPUDuration: 50 * time.Millisecond, Now: now}, zerolog.Nop())
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2} {
		if err := syscall.Kill(os.Getpid(), s); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"mem-2026-01-02-03:04:05.pprof", "cpu.pprof"} {
		waitNonEmpty(t, filepath.Join(dir, f))
	}
}

func waitNonEmpty(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not written", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPprofHandler(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := Serve(ctx, "127.0.0.1:0", PprofHandler(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine?debug=1"} {
		resp, err := http.Get("http://" + addr.String() + p)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", p, err, resp)
			continue
		}
		resp.Body.Close()
	}
}
