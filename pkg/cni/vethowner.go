package cni

import (
	"errors"
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/nlhandle"
	"github.com/vishvananda/netlink"
)

// Whose interface is it? The plugin changes only interfaces it can tell are this container's:
//   - a host veth carries its container's ID in its alias (ownerAlias), set when it is created;
//   - a container interface is this container's when it is one end of a veth pair whose other
//     end is this workload's host veth, marked for this container (or unmarked: made by an
//     earlier release, and still the pair's own end).
//
// A host veth name is derived from the pod (Kubernetes) or from the first 11 characters of the
// container ID, so another container's veth can carry the same name: a DEL of an old sandbox must
// not remove the new sandbox's veth, and a failed ADD must not remove an interface it found.

const ownerAliasPrefix = "calico-host-cni:container="

// ownerAlias is the alias marking the host veth of a container.
func ownerAlias(containerID string) string { return ownerAliasPrefix + containerID }

// vethOwner is the container ID marked on a host veth, "" when it carries no mark of ours.
func vethOwner(l netlink.Link) string {
	if o, ok := strings.CutPrefix(l.Attrs().Alias, ownerAliasPrefix); ok {
		return o
	}
	return ""
}

// ownerText describes a link's owner for messages.
func ownerText(l netlink.Link) string {
	if o := vethOwner(l); o != "" {
		return fmt.Sprintf("container %q", o)
	}
	return "not marked with a container"
}

// ErrNotOurs: an interface the operation would have to change belongs to someone else.
var ErrNotOurs = errors.New("interface belongs to someone else")

// containerIfAbsent refuses a container interface that already exists: ADD never takes over or
// removes an interface it did not create.
func containerIfAbsent(cont *netNS, c VethConfig) error {
	_, err := cont.nl.LinkByName(string(c.ContainerIf))
	switch {
	case err == nil:
		return fmt.Errorf("interface %s already exists in %s; it is left alone: %w", c.ContainerIf, c.NetNS, ErrNotOurs)
	case !nlhandle.IsLinkNotFound(err):
		return fmt.Errorf("looking for %s in %s: %w", c.ContainerIf, c.NetNS, err)
	}
	return nil
}

// replaceableHostVeth returns an existing host link named c.HostIf that ADD may replace (nil when
// there is none): a veth of this container, or with ReplaceOther a veth of another container.
func replaceableHostVeth(host *netlink.Handle, c VethConfig) (netlink.Link, error) {
	link, err := host.LinkByName(string(c.HostIf))
	if nlhandle.IsLinkNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("looking for host interface %s: %w", c.HostIf, err)
	}
	switch {
	case link.Type() != "veth":
		return nil, fmt.Errorf("host interface %s exists and is a %s, not a veth: %w", c.HostIf, link.Type(), ErrNotOurs)
	case vethOwner(link) == c.Owner, c.ReplaceOther:
		return link, nil
	}
	return nil, fmt.Errorf("host veth %s exists and is %s, not container %q; it is left alone: %w",
		c.HostIf, ownerText(link), c.Owner, ErrNotOurs)
}

// paired reports whether contLink (in cont) is the other end of the host veth hostLink.
func paired(host *netlink.Handle, hostLink netlink.Link, cont *netNS, contLink netlink.Link) bool {
	if hostLink.Type() != "veth" || contLink.Type() != "veth" {
		return false
	}
	id, err := host.GetNetNsIdByFd(int(cont.ns))
	return err == nil && id >= 0 && hostLink.Attrs().NetNsID == id && hostLink.Attrs().ParentIndex == contLink.Attrs().Index
}

// ContainerIfIsOurs reports whether the container interface exists and is the pair of this
// container's host veth (a repeated ADD then only reports what is there).
func ContainerIfIsOurs(c VethConfig) bool {
	cont, err := openNetNS(c.NetNS)
	if err != nil {
		return false
	}
	defer cont.Close()
	host, err := nlhandle.Open("")
	if err != nil {
		return false
	}
	defer host.Close()
	hostLink, err := host.LinkByName(string(c.HostIf))
	if err != nil {
		return false
	}
	contLink, err := cont.nl.LinkByName(string(c.ContainerIf))
	owner := vethOwner(hostLink)
	return err == nil && (owner == c.Owner || owner == "") && paired(host, hostLink, cont, contLink)
}

// DeleteVeth removes this container's veth pair: through the container interface when it is the
// pair of this container's host veth, or the host veth alone (its namespace gone) when it is
// marked for this container. Anything else is left alone and reported in the returned notes. A
// missing namespace or interface is not an error.
func DeleteVeth(c VethConfig) (notes []string, err error) {
	host, err := nlhandle.Open("")
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	defer host.Close()
	hostLink, err := host.LinkByName(string(c.HostIf))
	if err != nil && !nlhandle.IsLinkNotFound(err) {
		return nil, fmt.Errorf("looking for host interface %s: %w", c.HostIf, err)
	}
	if err != nil {
		hostLink = nil
	}
	done, notes, err := deleteContainerEnd(host, hostLink, c)
	if err != nil || done || hostLink == nil {
		return notes, err
	}
	if owner := vethOwner(hostLink); owner != c.Owner || hostLink.Type() != "veth" {
		return append(notes, fmt.Sprintf("host interface %s is %s: left alone", c.HostIf, ownerText(hostLink))), nil
	}
	if err := host.LinkDel(hostLink); err != nil && !nlhandle.IsLinkNotFound(err) {
		return notes, fmt.Errorf("deleting host veth %s: %w", c.HostIf, err)
	}
	return notes, nil
}

// deleteContainerEnd deletes the container interface when it is this container's pair end.
func deleteContainerEnd(host *netlink.Handle, hostLink netlink.Link, c VethConfig) (bool, []string, error) {
	cont, err := openNetNS(c.NetNS)
	if errors.Is(err, errNoNetNS) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	defer cont.Close()
	contLink, err := cont.nl.LinkByName(string(c.ContainerIf))
	if nlhandle.IsLinkNotFound(err) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("looking for %s in %s: %w", c.ContainerIf, c.NetNS, err)
	}
	owner := ""
	if hostLink != nil {
		owner = vethOwner(hostLink)
	}
	if hostLink == nil || (owner != c.Owner && owner != "") || !paired(host, hostLink, cont, contLink) {
		return false, []string{fmt.Sprintf("%s in %s is not the pair of this container's host veth %s: left alone", c.ContainerIf, c.NetNS, c.HostIf)}, nil
	}
	if err := cont.nl.LinkDel(contLink); err != nil && !nlhandle.IsLinkNotFound(err) {
		return false, nil, fmt.Errorf("deleting %s in %s: %w", c.ContainerIf, c.NetNS, err)
	}
	return true, nil, nil
}

// RemoveCreatedVeth undoes a SetupVeth of this call: it deletes the host veth with index idx if it
// is still the one created (same name, this container's mark), and with it the container end.
func RemoveCreatedVeth(c VethConfig, idx int) error {
	host, err := nlhandle.Open("")
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer host.Close()
	link, err := host.LinkByIndex(idx)
	if nlhandle.IsLinkNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("looking for host veth %s: %w", c.HostIf, err)
	}
	if link.Attrs().Name != string(c.HostIf) || vethOwner(link) != c.Owner {
		return nil // gone and its index reused: not ours
	}
	if err := host.LinkDel(link); err != nil && !nlhandle.IsLinkNotFound(err) {
		return fmt.Errorf("deleting host veth %s: %w", c.HostIf, err)
	}
	return nil
}

// networkedElsewhere reports whether this container's host veth (marked for c.Owner) is paired
// with an interface outside c.NetNS, and the id the host gives that interface's namespace (-1:
// the host's own). A c.NetNS that does not exist is errNoNetNS.
func networkedElsewhere(c VethConfig) (int, bool, error) {
	cont, err := openNetNS(c.NetNS)
	if err != nil {
		return 0, false, err
	}
	defer cont.Close()
	host, err := nlhandle.Open("")
	if err != nil {
		return 0, false, fmt.Errorf("netlink socket: %w", err)
	}
	defer host.Close()
	link, err := host.LinkByName(string(c.HostIf))
	if nlhandle.IsLinkNotFound(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("looking for host interface %s: %w", c.HostIf, err)
	}
	if link.Type() != "veth" || vethOwner(link) != c.Owner {
		return 0, false, nil
	}
	peer := link.Attrs().NetNsID
	id, err := host.GetNetNsIdByFd(int(cont.ns))
	if err != nil {
		return 0, false, fmt.Errorf("reading the id of %s: %w", c.NetNS, err)
	}
	return peer, id < 0 || peer != id, nil
}

// isNetNSWithID reports whether path is the network namespace the host knows by id nsid.
func isNetNSWithID(path string, nsid int) bool {
	n, err := openNetNS(path)
	if err != nil {
		return false
	}
	defer n.Close()
	host, err := nlhandle.Open("")
	if err != nil {
		return false
	}
	defer host.Close()
	id, err := host.GetNetNsIdByFd(int(n.ns))
	return err == nil && id >= 0 && id == nsid
}
