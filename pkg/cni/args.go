package cni

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
)

// Args are the CNI_ARGS the plugins understand (unknown keys are ignored).
type Args struct {
	types.CommonArgs
	IP                         types.UnmarshallableString `json:"IP,omitempty"`
	K8S_POD_NAME               types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_NAMESPACE          types.UnmarshallableString //nolint:revive // CNI_ARGS key
	K8S_POD_INFRA_CONTAINER_ID types.UnmarshallableString //nolint:revive // CNI_ARGS key
}

// ParseArgs decodes CNI_ARGS ("K1=V1;K2=V2").
func ParseArgs(s string) (*Args, error) {
	a := &Args{}
	a.IgnoreUnknown = true
	if err := types.LoadArgs(s, a); err != nil {
		return nil, cniErr(types.ErrInvalidEnvironmentVariables, "invalid CNI_ARGS", err)
	}
	return a, nil
}

// IsK8s reports whether the runtime named a Kubernetes pod (both name and namespace set).
func (a *Args) IsK8s() bool { return a.K8S_POD_NAME != "" && a.K8S_POD_NAMESPACE != "" }

// RequestedIPs parses IP=<addr>[,<addr>] (at most one per family).
func (a *Args) RequestedIPs() ([]netip.Addr, error) {
	if a.IP == "" {
		return nil, nil
	}
	var out []netip.Addr
	seen := map[bool]bool{}
	for _, s := range strings.Split(string(a.IP), ",") {
		ip, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil, cniErr(types.ErrInvalidEnvironmentVariables, fmt.Sprintf("invalid IP %q in CNI_ARGS", s), err)
		}
		if ip.Zone() != "" {
			return nil, cniErrf(types.ErrInvalidEnvironmentVariables, "invalid IP %q in CNI_ARGS: an address with a zone cannot be assigned", s)
		}
		ip = ip.Unmap()
		if seen[ip.Is4()] {
			return nil, cniErrf(types.ErrInvalidEnvironmentVariables, "CNI_ARGS IP holds more than one address of a family: %q", a.IP)
		}
		seen[ip.Is4()] = true
		out = append(out, ip)
	}
	return out, nil
}
