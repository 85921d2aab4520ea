package cni

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// addresses are what IPAM handed out: each address with the mask of its block.
type addresses []netip.Prefix

// hosts narrows the addresses to /32 and /128.
func (a addresses) hosts() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(a))
	for _, p := range a {
		out = append(out, netip.PrefixFrom(p.Addr(), p.Addr().BitLen()))
	}
	return out
}

// fromIPAMResult reads the addresses of an IPAM plugin's result.
func fromIPAMResult(r *types100.Result) (addresses, error) {
	var out addresses
	for _, ip := range r.IPs {
		a, ok := netip.AddrFromSlice(ip.Address.IP)
		if !ok {
			return nil, fmt.Errorf("IPAM returned an invalid address %v", ip.Address)
		}
		ones, _ := ip.Address.Mask.Size()
		out = append(out, netip.PrefixFrom(a.Unmap(), ones))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("IPAM returned no address")
	}
	return out, nil
}

// ipamResult is calico-ipam's result: the addresses with their block masks, as Project Calico's.
func ipamResult(version string, a addresses) *types100.Result {
	r := &types100.Result{CNIVersion: version}
	for _, p := range a {
		r.IPs = append(r.IPs, &types100.IPConfig{Address: *prefixNet(p)})
	}
	return r
}

// pluginResult is the calico plugin's result in Project Calico's shape: the host veth and the
// container interface, the addresses as /32 and /128 on the container interface, and a route for
// each address's block; no gateway.
func pluginResult(version string, w Workload, nsPath string, mtu MTU, mac string, a addresses, dns types.DNS) *types100.Result {
	r := &types100.Result{
		CNIVersion: version,
		Interfaces: []*types100.Interface{
			{Name: string(w.HostVeth)},
			{Name: string(w.Endpoint), Mac: mac, Mtu: int(mtu), Sandbox: nsPath},
		},
		DNS: dns,
	}
	one := 1
	for i, p := range a.hosts() {
		r.IPs = append(r.IPs, &types100.IPConfig{Address: *prefixNet(p), Interface: &one})
		if blk := a[i]; blk.Bits() < blk.Addr().BitLen() {
			r.Routes = append(r.Routes, &types.Route{Dst: *prefixNet(blk.Masked())})
		}
	}
	return r
}

// printResult writes the result in the CNI version the runtime asked for.
func printResult(r *types100.Result, version string, out io.Writer) error {
	v, err := r.GetAsVersion(version)
	if err != nil {
		return cniErr(types.ErrIncompatibleCNIVersion, "converting the result to CNI version "+version, err)
	}
	if err := v.PrintTo(out); err != nil {
		return cniErr(types.ErrIOFailure, "writing the result", err)
	}
	return nil
}

// prevAddresses reads the container addresses of a previous result (for CHECK).
func prevAddresses(r *types100.Result) []netip.Prefix {
	var out []netip.Prefix
	for _, ip := range r.IPs {
		if a, ok := netip.AddrFromSlice(ip.Address.IP); ok {
			ones, _ := ip.Address.Mask.Size()
			out = append(out, netip.PrefixFrom(a.Unmap(), ones))
		}
	}
	return out
}
