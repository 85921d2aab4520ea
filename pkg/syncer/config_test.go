package syncer

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/datastore"
)

func TestNormalizePrefixes(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"single", []string{"/a/"}, []string{"/a/"}},
		{"sorted", []string{"/b/", "/a/"}, []string{"/a/", "/b/"}},
		{"duplicate", []string{"/a/", "/a/"}, []string{"/a/"}},
		{"nested dropped", []string{datastore.BlockPrefix, datastore.IPAMPrefix, datastore.ResourcePrefix},
			[]string{datastore.IPAMPrefix, datastore.ResourcePrefix}},
		{"sibling kept", []string{"/a/b", "/a/bc"}, []string{"/a/b"}},
		{"empty covers all", []string{"/x/", ""}, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.in)
			if got := normalizePrefixes(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("normalizePrefixes(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !slices.Equal(in, tt.in) {
				t.Errorf("input modified: %q", tt.in)
			}
		})
	}
}

func TestPrefixRange(t *testing.T) {
	tests := []struct{ prefix, start, end string }{
		{"/calico/a/", "/calico/a/", "/calico/a0"},
		{"", "\x00", "\x00"},
	}
	for _, tt := range tests {
		if s, e := prefixRange(tt.prefix); s != tt.start || e != tt.end {
			t.Errorf("prefixRange(%q) = %q, %q; want %q, %q", tt.prefix, s, e, tt.start, tt.end)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	got := Config{Prefixes: []string{"/a/"}}.withDefaults()
	if got.Decoder == nil || got.PageSize != DefaultPageSize || got.MinBackoff != DefaultMinBackoff ||
		got.MaxBackoff != DefaultMaxBackoff || got.WatchTimeout != DefaultWatchTimeout ||
		got.RequestTimeout != DefaultRequestTimeout {
		t.Errorf("defaults not applied: %+v", got)
	}
	kept := Config{Prefixes: []string{"/a/"}, PageSize: 7, MinBackoff: time.Second, MaxBackoff: time.Millisecond}.withDefaults()
	if kept.PageSize != 7 || kept.MinBackoff != time.Second || kept.MaxBackoff != time.Second {
		t.Errorf("explicit values: got page %d, backoff %s..%s; want 7, 1s..1s (max raised to min)",
			kept.PageSize, kept.MinBackoff, kept.MaxBackoff)
	}
}

func TestNewPanicsWithoutPrefixes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New with no prefixes did not panic")
		}
	}()
	New(datastore.NewFromEtcd(nil), Config{}, zerolog.Nop())
}

func TestDefaultDecoder(t *testing.T) {
	pool := datastore.ResourcePrefix + "ippools/p1"
	tests := []struct {
		name    string
		key     string
		value   string
		wantErr string
		want    func(t *testing.T, v any)
	}{
		{"valid pool, defaults applied", pool, `{"kind":"IPPool","apiVersion":"projectcalico.org/v3","metadata":{},"spec":{"cidr":"10.65.0.0/16"}}`, "",
			func(t *testing.T, v any) {
				p, ok := v.(*api.IPPool)
				if !ok {
					t.Fatalf("got %T, want *api.IPPool", v)
				}
				if p.Name != "p1" || p.ResourceVersion != "42" || p.Spec.AssignmentMode != "Automatic" || p.Spec.BlockSize != 26 {
					t.Errorf("got %+v", p)
				}
			}},
		{"invalid pool", pool, `{"spec":{"cidr":"banana"}}`, "invalid IPPool", nil},
		{"bad JSON", pool, `{"spec":`, "decoding", nil},
		{"block", datastore.BlockKey("10.65.0.0/26"), `{"cidr":"10.65.0.0/26","allocations":[null],"unallocated":[0],"attributes":[]}`, "",
			func(t *testing.T, v any) {
				if b, ok := v.(*api.AllocationBlock); !ok || b.CIDR != "10.65.0.0/26" {
					t.Errorf("got %#v", v)
				}
			}},
		{"unknown key", "/calico/other", `{}`, "", func(t *testing.T, v any) {
			if v != nil {
				t.Errorf("got %#v, want nil", v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := DefaultDecoder(datastore.IDOf(tt.key), []byte(tt.value), 42)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want(t, v)
		})
	}
}

// TestDefaultDecoderKeepsPolicyTypesEmpty: networking-calico writes security-group policies
// without types; they apply to both directions, so decoding must not derive types from the rules.
func TestDefaultDecoderKeepsPolicyTypesEmpty(t *testing.T) {
	key := datastore.ResourcePrefix + "networkpolicies/openstack/ossg.default.sg1"
	value := `{"kind":"NetworkPolicy","apiVersion":"projectcalico.org/v3","metadata":{"name":"ossg.default.sg1","namespace":"openstack"},` +
		`"spec":{"selector":"has(sg.projectcalico.org/openstack-sg1)","ingress":[{"action":"Allow","protocol":6}]}}`
	v, err := DefaultDecoder(datastore.IDOf(key), []byte(value), 7)
	if err != nil {
		t.Fatal(err)
	}
	np := v.(*api.NetworkPolicy)
	if len(np.Spec.Types) != 0 || np.Spec.Tier != "default" {
		t.Errorf("types %v tier %q; want no types and tier default", np.Spec.Types, np.Spec.Tier)
	}
}
