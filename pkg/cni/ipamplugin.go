package cni

import (
	"github.com/containernetworking/cni/pkg/skel"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// IPAMPlugin returns the calico-ipam plugin's commands.
func IPAMPlugin(opts Options) skel.CNIFuncs {
	p := &ipamPlugin{opts: opts}
	return skel.CNIFuncs{Add: p.add, Del: p.del, Check: p.check}
}

type ipamPlugin struct{ opts Options }

func (p *ipamPlugin) open(args *skel.CmdArgs) (*session, error) {
	s, err := newSession(args, p.opts, "calico-ipam")
	if err != nil {
		return nil, err
	}
	if err := s.connect(); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// add assigns the container's addresses and prints them with their block masks.
func (p *ipamPlugin) add(args *skel.CmdArgs) error {
	s, err := p.open(args)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.identityValid(); err != nil {
		return s.fail("IPAM ADD", err)
	}
	addrs, _, err := s.calicoIPAMAdd()
	if err != nil {
		return s.fail("IPAM ADD", err)
	}
	return printResult(ipamResult(s.conf.CNIVersion, addrs), s.conf.CNIVersion, s.opts.Stdout)
}

// del releases the container's addresses (already released is fine).
func (p *ipamPlugin) del(args *skel.CmdArgs) error {
	s, err := p.open(args)
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.identityValid(); err != nil {
		s.log.Warn().Err(err).Msg("IPAM DEL of a container identity that ADD refuses: nothing of it can exist, nothing is touched")
		return nil
	}
	if err := s.calicoIPAMDel(s.ctx); err != nil {
		return s.fail("IPAM DEL", err)
	}
	return nil
}

// check verifies that the handle still holds the previous result's addresses.
func (p *ipamPlugin) check(args *skel.CmdArgs) error {
	s, err := p.open(args)
	if err != nil {
		return err
	}
	defer s.close()
	err = s.identityValid()
	var prev *types100.Result
	if err == nil {
		prev, err = s.prevResult()
	}
	if err == nil {
		err = s.calicoIPAMCheck(prevAddresses(prev))
	}
	if err != nil {
		return s.fail("IPAM CHECK", err)
	}
	return nil
}
