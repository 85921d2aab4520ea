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

// open starts a command of the calico plugin: it refuses a CNI_NETNS that is the plugin's own
// network namespace (the host's) before anything is touched, then starts connecting to etcd.
func (p *calicoPlugin) open(args *skel.CmdArgs, op string) (*session, error) {
	s, err := newSession(args, p.opts, "calico")
	if err != nil {
		return nil, err
	}
	own, err := isOwnNetNS(args.Netns)
	if err == nil && own {
		err = cniErrf(types.ErrInvalidEnvironmentVariables,
			"CNI_NETNS %q is the network namespace the plugin runs in: refusing to change its interfaces", args.Netns)
	}
	if err != nil {
		s.close()
		return nil, s.fail(op, err)
	}
	s.connectEarly()
	return s, nil
}

// add: IPAM, veth, host routes, Profile, WorkloadEndpoint. Anything failing after IPAM undoes
// what this call did, and only that. A repeated ADD of a container that is set up returns the
// same result.
func (p *calicoPlugin) add(args *skel.CmdArgs) error {
	s, err := p.open(args, "ADD")
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
	if err := s.identityValid(); err != nil {
		return err
	}
	if err := s.lockAttachment(); err != nil {
		return err
	}
	if err := checkNetNS(s.args.Netns); err != nil {
		return err
	}
	if err := validateObjects(s.w); err != nil {
		return err
	}
	if _, err := s.cniArgs.RequestedIPs(); err != nil {
		return err
	}
	mtu, err := s.conf.ResolveMTU(s.opts.MTUFile)
	if err != nil {
		return err
	}
	if err := s.notNetworkedElsewhere(); err != nil {
		return err
	}
	st, err := s.ready()
	if err != nil {
		return err
	}
	existing := st.endpoint
	if existing != nil && existing.Spec.ContainerID == s.w.ContainerID && ContainerIfIsOurs(s.vethConfig(mtu, nil)) {
		return s.repeatAdd(existing, mtu, st.profile)
	}
	if err := VethPreflight(s.vethConfig(mtu, nil)); err != nil {
		return vethErr("checking the interfaces ADD would create", err)
	}
	addrs, assigned, err := s.ipamAdd()
	if err != nil {
		return err
	}
	mac, err := s.plumbAndRecord(addrs, mtu, st, assigned)
	if err != nil {
		return err
	}
	s.recordNetNS(s.args.Netns)
	s.log.Info().Str("endpoint", s.w.Name).Interface("ips", addrs.hosts()).Msg("container networked")
	s.waitForPolicy()
	return printResult(pluginResult(s.conf.CNIVersion, s.w, s.args.Netns, mtu, mac, addrs, s.conf.DNS), s.conf.CNIVersion, s.opts.Stdout)
}

// vethConfig is the veth pair of this container.
func (s *session) vethConfig(mtu MTU, ips []netip.Prefix) VethConfig {
	return VethConfig{NetNS: s.args.Netns, ContainerIf: s.w.Endpoint, HostIf: s.w.HostVeth, Owner: s.w.ContainerID,
		ReplaceOther: s.w.Orchestrator == OrchestratorK8s, MTU: mtu, IPs: ips,
		AllowForwarding: s.conf.ContainerSettings.AllowIPForwarding}
}

func vethErr(msg string, err error) error {
	if errors.Is(err, ErrNotOurs) {
		return cniErr(CodeNetworking, "an interface this container needs belongs to someone else", err)
	}
	return cniErr(CodeNetworking, msg, err)
}

// plumbAndRecord sets up the veth and writes the profile and, last, the endpoint (st: as the
// command found them). On failure it undoes what it did: the veth it created and, when this call
// assigned them, the addresses.
func (s *session) plumbAndRecord(addrs addresses, mtu MTU, st *startState, assigned bool) (string, error) {
	vc := s.vethConfig(mtu, addrs.hosts())
	mac, hostIdx, err := SetupVeth(vc)
	if err != nil {
		s.undoAdd(vc, 0, assigned)
		return "", vethErr("setting up the container's veth", err)
	}
	err = ensureProfile(s.ctx, s.ds, s.conf.Name, s.w.Orchestrator == OrchestratorK8s, st.profile)
	if err == nil {
		err = writeEndpoint(s.ctx, s.ds, newEndpoint(s.w, addrs.hosts(), mac.String()), st.endpoint)
	}
	if err != nil {
		s.undoAdd(vc, hostIdx, assigned)
		return "", err
	}
	return mac.String(), nil
}

// undoAdd removes what a failed ADD created: the veth pair (by the index it was created with) and
// the addresses it assigned. Interfaces and addresses it found are left alone.
func (s *session) undoAdd(vc VethConfig, hostIdx int, assigned bool) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), cleanupTimeout)
	defer cancel()
	if hostIdx > 0 {
		if err := RemoveCreatedVeth(vc, hostIdx); err != nil {
			s.log.Error().Err(err).Msg("undoing ADD: deleting the veth")
		}
	}
	if !assigned {
		return
	}
	if err := s.ipamUndo(ctx); err != nil {
		s.log.Error().Err(err).Msg("undoing ADD: releasing addresses")
	}
}

// repeatAdd answers an ADD for a container that is already set up from what is stored.
func (s *session) repeatAdd(wep *api.WorkloadEndpoint, mtu MTU, profile bool) error {
	if err := ensureProfile(s.ctx, s.ds, s.conf.Name, s.w.Orchestrator == OrchestratorK8s, profile); err != nil {
		return err
	}
	addrs, err := s.storedAddresses(wep)
	if err != nil {
		return err
	}
	s.recordNetNS(s.args.Netns)
	s.log.Info().Str("endpoint", wep.Name).Msg("endpoint exists; returning its result")
	s.waitForPolicy()
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

// del: delete this container's endpoint and veth pair, then release its addresses. An endpoint
// or interface of another container is left alone; what is gone already is fine. A container
// identity that ADD refuses has nothing to delete.
func (p *calicoPlugin) del(args *skel.CmdArgs) error {
	s, err := p.open(args, "DEL")
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.identityValid(); err != nil {
		s.log.Warn().Err(err).Msg("DEL of a container identity that ADD refuses: nothing of it can exist, nothing is touched")
		return nil
	}
	if err := s.lockAttachment(); err != nil {
		return s.fail("DEL", err)
	}
	if err := s.delSteps(); err != nil {
		return s.fail("DEL", err)
	}
	return nil
}

func (s *session) delSteps() error {
	if other, err := s.networkedInOtherNetNS(); other || err != nil {
		return err
	}
	if err := s.deleteAttachment(); err != nil {
		return err
	}
	s.recordNetNS("")
	s.log.Info().Str("endpoint", s.w.Name).Msg("container removed")
	return nil
}

// deleteAttachment deletes the endpoint, the veth pair and the addresses of this container.
func (s *session) deleteAttachment() error {
	st, err := s.ready()
	if err != nil {
		return err
	}
	// Without knowing whose the endpoint is, nothing is deleted (as Project Calico's plugin).
	if err := deleteOwnEndpoint(s.ctx, s.ds, s.w, st.endpoint, s.log); err != nil {
		return err
	}
	notes, err := DeleteVeth(s.vethConfig(0, nil))
	for _, n := range notes {
		s.log.Warn().Msg(n)
	}
	if err != nil {
		err = cniErr(CodeNetworking, "deleting the container's veth", err)
	}
	return errors.Join(err, s.ipamDel(s.ctx))
}

// check verifies the addresses, routes and endpoint that ADD set up.
func (p *calicoPlugin) check(args *skel.CmdArgs) error {
	s, err := p.open(args, "CHECK")
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
	if err := s.identityValid(); err != nil {
		return err
	}
	if err := s.lockAttachment(); err != nil {
		return err
	}
	prev, err := s.prevResult()
	if err != nil {
		return err
	}
	ips := prevAddresses(prev)
	st, err := s.ready()
	if err != nil {
		return err
	}
	if err := CheckVeth(s.vethConfig(0, ips)); err != nil {
		return cniErr(CodeCheck, "container networking differs from ADD", err)
	}
	wep := st.endpoint
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
