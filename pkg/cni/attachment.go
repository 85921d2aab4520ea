package cni

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/filelock"
)

// One operation per attachment at a time. An attachment is a container ID and an interface name
// (CNI_CONTAINERID, CNI_IFNAME); its ADD, DEL and CHECK hold an flock on the attachment's file,
// <directory of ipam_lock_file>/cni/containers/<container ID>_<interface> (by default under
// /var/run/calico/cni/containers), across processes. An operation waits for the one before it up
// to attachmentLockTimeout, then fails with "try again later". The file holds the network
// namespace the last successful ADD networked; it is removed when the attachment is deleted (or
// was never networked), so the directory holds one file per networked container.

// attachmentLockTimeout bounds the wait for another operation on the same attachment: half the
// command's time, leaving the other half for the operation itself.
const attachmentLockTimeout = 30 * time.Second

// AttachmentDir is the directory of the attachments' lock files: cni/containers beside the IPAM
// lock file.
func (c *NetConf) AttachmentDir() (FilePath, error) {
	lock, err := c.LockFile()
	if err != nil {
		return "", err
	}
	return FilePath(filepath.Join(filepath.Dir(string(lock)), "cni", "containers")), nil
}

// attachmentPath is the lock file of a workload's attachment. A container ID holds no "_", so
// "<container ID>_<interface>" names one attachment only.
func attachmentPath(dir FilePath, w Workload) string {
	return filepath.Join(string(dir), w.ContainerID+"_"+string(w.Endpoint))
}

// lockAttachment waits for and takes the lock of this attachment (the identity must be valid);
// the session releases it when it closes.
func (s *session) lockAttachment() error {
	dir, err := s.conf.AttachmentDir()
	if err != nil {
		return err
	}
	path := attachmentPath(dir, s.w)
	l, err := filelock.Acquire(s.ctx, path, attachmentLockTimeout, func() {
		s.log.Info().Str("lock", path).Ints("holders", filelock.Holders(path)).
			Msg("another CNI operation on this container and interface is running: waiting for it")
	})
	var timeout *filelock.TimeoutError
	switch {
	case errors.As(err, &timeout):
		return cniErr(types.ErrTryAgainLater, fmt.Sprintf("another CNI operation on container %q interface %s is still running",
			s.w.ContainerID, s.w.Endpoint), err)
	case err != nil:
		return cniErr(types.ErrInternal, "taking the lock of container "+s.w.ContainerID, err)
	}
	s.attachment = l
	s.closers = append(s.closers, s.releaseAttachment)
	return nil
}

// releaseAttachment releases the lock, removing the file when it records no network namespace.
func (s *session) releaseAttachment() {
	if s.recordedNetNS() != "" {
		s.attachment.Release()
		return
	}
	if err := s.attachment.Remove(); err != nil {
		s.log.Warn().Err(err).Msg("removing the attachment's lock file")
	}
}

// recordedNetNS is the network namespace the last successful ADD of this attachment networked
// ("" when none is recorded).
func (s *session) recordedNetNS() string {
	b, err := s.attachment.Content()
	if err != nil {
		s.log.Warn().Err(err).Msg("reading the attachment's network namespace")
		return ""
	}
	return string(b)
}

// recordNetNS records the network namespace ADD networked ("" after DEL). It only names the
// namespace in messages, so a failure is logged and the command goes on.
func (s *session) recordNetNS(path string) {
	if err := s.attachment.SetContent([]byte(path)); err != nil {
		s.log.Warn().Err(err).Msg("recording the attachment's network namespace")
	}
}

// notNetworkedElsewhere refuses an ADD while this attachment's interface lives in another
// network namespace: the runtime must DEL it first. Project Calico's plugin answers such an ADD
// (cni orchestrator) with the stored endpoint's result and no interface in the new namespace; the
// previous release moved the interface, leaving the first namespace without it. Nothing of the
// existing attachment (interface, addresses, WorkloadEndpoint, IPAM handle) is touched.
func (s *session) notNetworkedElsewhere() error {
	nsid, elsewhere, err := networkedElsewhere(s.vethConfig(0, nil))
	if err != nil {
		return vethErr("looking for this container's interface", err)
	}
	if !elsewhere {
		return nil
	}
	return cniErrf(CodeNetworking, "container %q interface %s is networked in %s: ADD into network namespace %q is refused "+
		"(DEL the container first); its interface, addresses and WorkloadEndpoint are left as they are",
		s.w.ContainerID, s.w.Endpoint, s.describeNetNS(nsid), s.args.Netns)
}

// networkedInOtherNetNS reports, for DEL, whether this attachment's interface lives in a network
// namespace other than CNI_NETNS, an existing namespace: that DEL is for an ADD that was refused
// (see notNetworkedElsewhere) and must leave the attachment alone. A CNI_NETNS that is empty or
// gone deletes the attachment wherever it is.
func (s *session) networkedInOtherNetNS() (bool, error) {
	nsid, elsewhere, err := networkedElsewhere(s.vethConfig(0, nil))
	if errors.Is(err, errNoNetNS) {
		return false, nil
	}
	if err != nil {
		return false, vethErr("looking for this container's interface", err)
	}
	if elsewhere {
		s.log.Warn().Str("networked_in", s.describeNetNS(nsid)).
			Msg("DEL names a network namespace the container is not networked in: its interface, addresses and WorkloadEndpoint are left alone")
	}
	return elsewhere, nil
}

// describeNetNS names the network namespace the host knows by nsid: the recorded path when it is
// that namespace.
func (s *session) describeNetNS(nsid int) string {
	if rec := s.recordedNetNS(); rec != "" && isNetNSWithID(rec, nsid) {
		return fmt.Sprintf("network namespace %q", rec)
	}
	if nsid < 0 {
		return "the plugin's own network namespace"
	}
	return fmt.Sprintf("an unrecorded network namespace (id %d on the host)", nsid)
}
