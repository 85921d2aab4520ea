// Package birdctl speaks BIRD's control-socket protocol (what birdc speaks): it sends commands
// such as "configure" and "show protocols" and parses the numbered reply lines. It imports nothing
// of calico-host, so both calico-confd (reload) and calicoctl (node status) use it.
//
// The files:
//
//	birdctl.go    Client (Dial, Command, Configure), Line, ReplyError, ErrNotRunning: the
//	              protocol, one command at a time, reply lines parsed and control characters escaped
//	protocols.go  Protocol and ParseProtocols: the rows of "show protocols" (and for BGP the
//	              details of "show protocols all")
//
// The subpackage birdtest serves the protocol on a unix socket, with scripted replies, for unit
// tests.
package birdctl
