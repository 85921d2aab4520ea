package datastore

import (
	"context"
	"testing"
	"time"

	"github.com/calico-host/calico-host/pkg/config"
	"github.com/calico-host/calico-host/pkg/datastore/etcdtest"
)

// TestClientConfig: the reconnect and keepalive settings are applied, and one connection attempt
// never outlasts the configured dial timeout.
func TestClientConfig(t *testing.T) {
	tests := []struct {
		name        string
		dialTimeout time.Duration
		wantConnect time.Duration
	}{
		{"default dial timeout", 5 * time.Second, minConnectTimeout},
		{"short dial timeout caps the attempt", time.Second, time.Second},
		{"no dial timeout", 0, minConnectTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := config.Etcd{Endpoints: []string{"http://127.0.0.1:2379"}, DialTimeout: config.Duration{Duration: tt.dialTimeout}}
			c := clientConfig(e, nil)
			if got := connectTimeout(e); got != tt.wantConnect {
				t.Errorf("connect timeout %s, want %s", got, tt.wantConnect)
			}
			if len(c.DialOptions) != 1 || c.DialKeepAliveTime != keepAliveTime || c.DialKeepAliveTimeout != keepAliveTimeout ||
				c.MaxUnaryRetries != maxUnaryRetries || c.BackoffWaitBetween != retryWait {
				t.Errorf("client config %+v lacks the reconnect, keepalive or retry settings", c)
			}
		})
	}
}

// TestReconnectAfterLongOutage: after etcd was away long enough for gRPC's default backoff to
// reach several seconds, a request made when etcd is back is answered within about a second (the
// reconnect backoff is capped at 1 s).
func TestReconnectAfterLongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("waits through an outage")
	}
	s := etcdtest.Start(t)
	c, err := New(s.Datastore())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	time.Sleep(10 * time.Second) // gRPC's default backoff would now be 6-7 s between attempts
	s.Restart()
	back := time.Now()
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	took := time.Since(back)
	t.Logf("first request after etcd's return answered in %s", took.Round(time.Millisecond))
	if took > 2*reconnectMaxDelay+time.Second {
		t.Errorf("first request after etcd's return took %s, want at most about %s", took, reconnectMaxDelay)
	}
}
