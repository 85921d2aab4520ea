package cni

import (
	"context"
	"errors"
	"net/netip"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/calico-host/calico-host/pkg/api"
)

// CalicoPlugin returns the calico plugin's commands.
func CalicoPlugin(opts Options) skel.CNIFuncs {
	p := &calicoPlugin{opts: opts}
	return skel.CNIFuncs{Add: p.add, Del: p.del, Check: p.check}
}

type calicoPlugin struct{ opts Options }

// add: IPAM, veth, host routes, WorkloadEndpoint, Profile. Anything failing after IPAM undoes
// what was done. A repeated ADD of a container that is set up returns the same result.
func (p *calicoPlugin) add(args *skel.CmdArgs) error {
	s, err := newSession(args, p.opts, "calico")
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.addSteps(); err != nil {
		return s.fail("ADD", err)
	}
	return nil
}

func (s *session) addSteps() error {
	if err := checkNetNS(s.args.Netns); err != nil {
		return err
	}
	mtu, err := s.conf.ResolveMTU(s.opts.MTUFile)
	if err != nil {
		return err
	}
	if err := s.ready(); err != nil {
		return err
	}
	existing, err := getEndpoint(s.ctx, s.ds, s.w)
	if err != nil {
		return err
	}
	if existing != nil && ContainerIfExists(s.args.Netns, s.args.IfName) {
		return s.repeatAdd(existing, mtu)
	}
	addrs, err := s.ipamAdd()
	if err != nil {
		return err
	}
	mac, err := s.plumbAndRecord(addrs, mtu, existing)
	if err != nil {
		s.undoAdd()
		return err
	}
	s.log.Info().Str("endpoint", s.w.Name).Interface("ips", addrs.hosts()).Msg("container networked")
	return printResult(pluginResult(s.conf.CNIVersion, s.w, s.args.Netns, mtu, mac, addrs, s.conf.DNS), s.conf.CNIVersion, s.opts.Stdout)
}

// plumbAndRecord sets up the veth and writes the endpoint and profile.
func (s *session) plumbAndRecord(addrs addresses, mtu int, existing *api.WorkloadEndpoint) (string, error) {
	mac, err := SetupVeth(s.ctx, VethConfig{NetNS: s.args.Netns, ContainerIf: s.args.IfName, HostIf: s.w.HostVeth,
		MTU: mtu, IPs: addrs.hosts(), AllowForwarding: s.conf.ContainerSettings.AllowIPForwarding})
	if err != nil {
		return "", cniErr(CodeNetworking, "setting up the container's veth", err)
	}
	wep := newEndpoint(s.w, addrs.hosts(), mac.String())
	if err := writeEndpoint(s.ctx, s.ds, wep, existing); err != nil {
		return "", err
	}
	if err := ensureProfile(s.ctx, s.ds, s.conf.Name, s.w.Orchestrator == OrchestratorK8s); err != nil {
		return "", err
	}
	return mac.String(), nil
}

// undoAdd removes whatever a failed ADD left: endpoint, interface and addresses.
func (s *session) undoAdd() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), cleanupTimeout)
	defer cancel()
	if err := deleteEndpoint(ctx, s.ds, s.w); err != nil {
		s.log.Error().Err(err).Msg("undoing ADD: deleting the endpoint")
	}
	if err := DeleteContainerIf(s.args.Netns, s.args.IfName, s.w.HostVeth); err != nil {
		s.log.Error().Err(err).Msg("undoing ADD: deleting the veth")
	}
	if err := s.ipamDel(ctx); err != nil {
		s.log.Error().Err(err).Msg("undoing ADD: releasing addresses")
	}
}

// repeatAdd answers an ADD for a container that is already set up from what is stored.
func (s *session) repeatAdd(wep *api.WorkloadEndpoint, mtu int) error {
	if err := ensureProfile(s.ctx, s.ds, s.conf.Name, s.w.Orchestrator == OrchestratorK8s); err != nil {
		return err
	}
	addrs, err := s.storedAddresses(wep)
	if err != nil {
		return err
	}
	s.log.Info().Str("endpoint", wep.Name).Msg("endpoint exists; returning its result")
	return printResult(pluginResult(s.conf.CNIVersion, s.w, s.args.Netns, mtu, wep.Spec.MAC, addrs, s.conf.DNS), s.conf.CNIVersion, s.opts.Stdout)
}

// storedAddresses are the endpoint's addresses, with their block masks when calico-ipam holds them.
func (s *session) storedAddresses(wep *api.WorkloadEndpoint) (addresses, error) {
	if s.usesCalicoIPAM() {
		held, err := s.ipam.PrefixesByHandle(s.ctx, s.w.Handle)
		if err != nil {
			return nil, ipamErr(err)
		}
		if len(held) > 0 {
			return held, nil
		}
	}
	var out addresses
	for _, n := range wep.Spec.IPNetworks {
		p, err := netip.ParsePrefix(n)
		if err != nil {
			return nil, cniErr(CodeEndpoint, "endpoint "+wep.Name+" holds an invalid address", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// del: release the addresses, delete the endpoint and the container interface. Each step
// tolerates what is already gone; an IPAM error is reported last.
func (p *calicoPlugin) del(args *skel.CmdArgs) error {
	s, err := newSession(args, p.opts, "calico")
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.ready(); err != nil {
		return s.fail("DEL", err)
	}
	ipamErr := s.ipamDel(s.ctx)
	err = errors.Join(deleteEndpoint(s.ctx, s.ds, s.w), deleteIf(args, s.w))
	if err == nil {
		err = ipamErr
	}
	if err != nil {
		return s.fail("DEL", err)
	}
	s.log.Info().Str("endpoint", s.w.Name).Msg("container removed")
	return nil
}

func deleteIf(args *skel.CmdArgs, w Workload) error {
	if err := DeleteContainerIf(args.Netns, args.IfName, w.HostVeth); err != nil {
		return cniErr(CodeNetworking, "deleting the container interface", err)
	}
	return nil
}

// check verifies the addresses, routes and endpoint that ADD set up.
func (p *calicoPlugin) check(args *skel.CmdArgs) error {
	s, err := newSession(args, p.opts, "calico")
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.checkSteps(); err != nil {
		return s.fail("CHECK", err)
	}
	return nil
}

func (s *session) checkSteps() error {
	prev, err := s.prevResult()
	if err != nil {
		return err
	}
	ips := prevAddresses(prev)
	if err := s.ready(); err != nil {
		return err
	}
	if err := CheckVeth(VethConfig{NetNS: s.args.Netns, ContainerIf: s.args.IfName, HostIf: s.w.HostVeth, IPs: ips}); err != nil {
		return cniErr(CodeCheck, "container networking differs from ADD", err)
	}
	wep, err := getEndpoint(s.ctx, s.ds, s.w)
	if err != nil {
		return err
	}
	if wep == nil {
		return cniErrf(CodeCheck, "WorkloadEndpoint %s/%s does not exist", s.w.Namespace, s.w.Name)
	}
	if err := endpointMatches(wep, s.w, ips); err != nil {
		return cniErr(CodeCheck, "WorkloadEndpoint differs from ADD", err)
	}
	if s.usesCalicoIPAM() {
		return s.calicoIPAMCheck(ips)
	}
	return nil
}

// prevResult decodes the prevResult CHECK must verify.
func (s *session) prevResult() (*types100.Result, error) {
	if len(s.conf.PrevResult) == 0 {
		return nil, cniErrf(types.ErrInvalidNetworkConfig, "CHECK needs prevResult in the network configuration")
	}
	r, err := version.NewResult(s.conf.CNIVersion, s.conf.PrevResult)
	if err != nil {
		return nil, cniErr(types.ErrDecodingFailure, "decoding prevResult", err)
	}
	res, err := types100.NewResultFromResult(r)
	if err != nil {
		return nil, cniErr(types.ErrDecodingFailure, "converting prevResult", err)
	}
	return res, nil
}
