package cni

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"

	"github.com/calico-host/calico-host/pkg/ipam"
)

// usesCalicoIPAM reports whether addresses come from calico-ipam, which the calico plugin runs
// in-process (same code as the calico-ipam binary, one etcd connection instead of two).
func (s *session) usesCalicoIPAM() bool { return s.conf.IPAM.Type == calicoIPAMType }

// ipamAdd obtains the container's addresses from the configured IPAM plugin; assigned reports
// whether this call assigned them (false when the handle already held them).
func (s *session) ipamAdd() (a addresses, assigned bool, err error) {
	if s.usesCalicoIPAM() {
		return s.calicoIPAMAdd()
	}
	if err := s.findIPAMPlugin(); err != nil {
		return nil, false, err
	}
	r, err := invoke.DelegateAdd(s.ctx, s.conf.IPAM.Type, s.args.StdinData, nil)
	if err != nil {
		return nil, false, cniErr(CodeNoAddress, "IPAM plugin "+s.conf.IPAM.Type+" failed", err)
	}
	undo := func() {
		if err := s.ipamUndo(context.WithoutCancel(s.ctx)); err != nil {
			s.log.Error().Err(err).Msg("releasing the addresses of a result that cannot be used")
		}
	}
	res, err := types100.NewResultFromResult(r)
	if err != nil {
		undo()
		return nil, false, cniErr(types.ErrDecodingFailure, "reading the IPAM result", err)
	}
	if a, err = fromIPAMResult(res); err != nil {
		undo()
		return nil, false, cniErr(CodeNoAddress, "IPAM plugin "+s.conf.IPAM.Type, err)
	}
	return a, true, nil
}

// ipamUndo releases what this call's ADD assigned: the container's own handle (never the legacy
// one), or a delegated plugin's DEL.
func (s *session) ipamUndo(ctx context.Context) error {
	if !s.usesCalicoIPAM() {
		return s.ipamDel(ctx)
	}
	unlock, err := s.lockIPAM(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.ipam.ReleaseByHandle(ctx, s.w.Handle); err != nil {
		return ipamErr(err)
	}
	return nil
}

// lockIPAM takes the host-wide IPAM lock.
func (s *session) lockIPAM(ctx context.Context) (func(), error) {
	path, err := s.conf.LockFile()
	if err != nil {
		return nil, err
	}
	unlock, err := lockIPAM(ctx, path)
	if err != nil {
		return nil, cniErr(types.ErrTryAgainLater, "taking the IPAM lock", err)
	}
	return unlock, nil
}

// findIPAMPlugin fails clearly when the IPAM type names no plugin in CNI_PATH.
func (s *session) findIPAMPlugin() error {
	if _, err := invoke.FindInPath(s.conf.IPAM.Type, filepath.SplitList(s.args.Path)); err != nil {
		return cniErr(types.ErrInvalidNetworkConfig, fmt.Sprintf("unknown IPAM type %q: no such plugin in CNI_PATH", s.conf.IPAM.Type), err)
	}
	return nil
}

// ipamDel releases the container's addresses; released-already is not an error.
func (s *session) ipamDel(ctx context.Context) error {
	if s.usesCalicoIPAM() {
		return s.calicoIPAMDel(ctx)
	}
	if err := s.findIPAMPlugin(); err != nil {
		return err
	}
	if err := invoke.DelegateDel(ctx, s.conf.IPAM.Type, s.args.StdinData, nil); err != nil {
		return cniErr(CodeNoAddress, "IPAM plugin "+s.conf.IPAM.Type+" DEL failed", err)
	}
	return nil
}

// calicoIPAMAdd is calico-ipam's ADD: under the host-wide lock, return what the handle already
// holds (a repeated ADD), else the requested IP= addresses, else auto-assigned ones.
func (s *session) calicoIPAMAdd() (addresses, bool, error) {
	unlock, err := s.lockIPAM(s.ctx)
	if err != nil {
		return nil, false, err
	}
	defer unlock()
	requested, err := s.cniArgs.RequestedIPs()
	if err != nil {
		return nil, false, err
	}
	attrs := s.w.Attrs(time.Now().UTC().String())
	if len(requested) > 0 {
		return s.assignRequested(requested, attrs)
	}
	args := ipam.AutoAssignArgs{HandleID: s.w.Handle, Attrs: attrs, Hostname: s.node,
		IPv4Pools: s.conf.IPAM.IPv4Pools, IPv6Pools: s.conf.IPAM.IPv6Pools}
	if s.conf.IPAM.WantIPv4() {
		args.Num4 = 1
	}
	if s.conf.IPAM.WantIPv6() {
		args.Num6 = 1
	}
	addrs, assigned, err := s.ipam.AssignToHandle(s.ctx, args)
	if err != nil {
		return nil, false, ipamErr(err)
	}
	s.logAssigned(addrs, assigned)
	return addrs, assigned, nil
}

func (s *session) logAssigned(addrs addresses, assigned bool) {
	if assigned {
		s.log.Info().Str("handle", s.w.Handle).Interface("ips", addrs).Msg("assigned addresses")
		return
	}
	s.log.Info().Str("handle", s.w.Handle).Interface("ips", addrs).Msg("handle already holds addresses; reusing them")
}

// assignRequested returns what the handle already holds, else assigns the IP= addresses of
// CNI_ARGS; on failure none stays assigned. assigned tells which.
func (s *session) assignRequested(ips []netip.Addr, attrs map[string]string) (addresses, bool, error) {
	held, err := s.ipam.PrefixesByHandle(s.ctx, s.w.Handle)
	if err != nil {
		return nil, false, ipamErr(err)
	}
	if len(held) > 0 {
		s.logAssigned(held, false)
		return held, false, nil
	}
	for _, ip := range ips {
		err := s.ipam.AssignIP(s.ctx, ipam.AssignIPArgs{IP: ip, HandleID: s.w.Handle, Attrs: attrs, Hostname: s.node})
		if err != nil {
			if relErr := s.ipam.ReleaseByHandle(context.WithoutCancel(s.ctx), s.w.Handle); relErr != nil {
				s.log.Error().Err(relErr).Msg("releasing requested addresses after a failure")
			}
			return nil, false, ipamErr(fmt.Errorf("assigning requested address %s: %w", ip, err))
		}
	}
	held, err = s.ipam.PrefixesByHandle(s.ctx, s.w.Handle)
	if err != nil {
		return nil, false, ipamErr(err)
	}
	s.logAssigned(held, true)
	return held, true, nil
}

// calicoIPAMDel releases by the handle and by the legacy workload handle, under the lock.
func (s *session) calicoIPAMDel(ctx context.Context) error {
	unlock, err := s.lockIPAM(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.ipam.ReleaseByHandles(ctx, s.w.Handle, s.w.LegacyHandle); err != nil {
		return ipamErr(err)
	}
	s.log.Info().Str("handle", s.w.Handle).Msg("released addresses")
	return nil
}

// calicoIPAMCheck verifies that the handle still holds the addresses of the previous result.
func (s *session) calicoIPAMCheck(want []netip.Prefix) error {
	held, err := s.ipam.IPsByHandle(s.ctx, s.w.Handle)
	if err != nil {
		return ipamErr(err)
	}
	for _, p := range want {
		if !slices.Contains(held, p.Addr()) {
			return cniErrf(CodeCheck, "address %s is no longer assigned to handle %s (it holds %v)", p.Addr(), s.w.Handle, held)
		}
	}
	return nil
}
