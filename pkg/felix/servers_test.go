package felix

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// TestMetricsOverTLSAndDebugPort: with PrometheusMetricsCertFile/KeyFile/CAFile and
// ClientAuth RequireAndVerifyClientCert felix serves /metrics over HTTPS to clients with a
// certificate from the CA only; DebugPort serves pprof on DebugHost.
func TestMetricsOverTLSAndDebugPort(t *testing.T) {
	f, err := etcdtest.GenerateTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mp, dport := freePort(t), freePort(t)
	h := newHarness(t, "FELIX_PROMETHEUSMETRICSENABLED=true", "FELIX_PROMETHEUSMETRICSHOST=127.0.0.1",
		"FELIX_PROMETHEUSMETRICSPORT="+mp, "FELIX_PROMETHEUSMETRICSCERTFILE="+f.ServerCert,
		"FELIX_PROMETHEUSMETRICSKEYFILE="+f.ServerKey, "FELIX_PROMETHEUSMETRICSCAFILE="+f.CA,
		"FELIX_PROMETHEUSMETRICSCLIENTAUTH=RequireAndVerifyClientCert",
		"FELIX_DEBUGHOST=127.0.0.1", "FELIX_DEBUGPORT="+dport)
	h.snapshot(clusterInfo(true, ""), wep1Update())
	close(h.dataplane().release)

	code, body := get(t, "http://127.0.0.1:"+dport+"/debug/pprof/goroutine?debug=1")
	if code != 200 || !strings.Contains(body, "goroutine profile") {
		t.Errorf("pprof on DebugPort: %d %.80q", code, body)
	}
	if code, body := get(t, "http://127.0.0.1:"+mp+"/metrics"); code == 200 {
		t.Errorf("plain HTTP served metrics: %.80q", body)
	}
	withCert, err := f.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	noCert := withCert.Clone()
	noCert.Certificates, noCert.GetClientCertificate = nil, nil
	url := "https://127.0.0.1:" + mp + "/metrics"
	if _, err := httpsGet(noCert, url); err == nil {
		t.Error("a client without a certificate was served")
	}
	body, err = httpsGet(withCert, url)
	if err != nil || !strings.Contains(body, `felix_host{host="host-a"} 1`) || !strings.Contains(body, "felix_resync_state 3") {
		t.Errorf("metrics over TLS with a client certificate: %v %.200q", err, body)
	}
}

func httpsGet(cfg *tls.Config, url string) (string, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
