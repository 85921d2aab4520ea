// Package sim runs a packet through nftables tables (package nft's model)
// the way the kernel's nf_tables does, at the level of the kernel's
// instructions (package vm): every rule is lowered by nft.LowerRule, the
// code that writes it to the kernel, and the simulator executes what the
// kernel would execute, so it cannot drift from the rules as loaded. It
// reports the verdict of each hook and the path: every rule whose matches
// held (table, chain, index, comment, log statements, counters), every
// jump, goto and return, every policy applied, as the kernel's nftrace
// reports them.
//
//	rs, err := sim.Compile(tables...)
//	res, err := rs.Run(sim.Input{Packet: pkt, IIF: &eth0, CT: sim.Conntrack{State: nft.CTStateNew}, FIB: fib})
//	for _, s := range res.Steps() { ... s.Table, s.Chain, s.Rule, s.Comment, s.Verdict ... }
//
// The files:
//
//   - packet.go: Packet, and what the kernel derives from it before a
//     chain runs (nft_set_pktinfo_*).
//   - build.go: IPPacket and ARPPacket, packets built byte by byte with
//     correct checksums.
//   - input.go: Input, Iface, Conntrack, and FIB, the caller's answers
//     to routing questions.
//   - staticfib.go: StaticFIB, a FIB given as addresses and routes (for a
//     host known from the datastore); package hostfib answers from a live
//     network namespace instead.
//   - ruleset.go: Compile: tables lowered to instructions, sets indexed,
//     base chains placed in their hooks.
//   - stages.go: the order of a hook's entries: base chains, the NAT
//     core, conntrack.
//   - sets.go: set and verdict map lookups.
//   - machine.go: the register machine, one rule's instructions.
//   - state.go: the packet's metadata (mark, conntrack, interfaces) and
//     the payload, meta and ct instructions.
//   - fib.go: the fib instruction.
//   - nat.go: the nat and masq statements and the NAT they set up.
//   - chain.go: nft_do_chain: rules, jump stack, returns, policies.
//   - run.go: Run: the hooks a packet takes, routing between them.
//   - result.go: Result, HookRun, Step, Count.
//
// A caller maps a Step to what wrote it through the rule's Comment or a
// log statement's prefix (Step.Logs), which renderers fill with their own
// identifiers (felix's tiers, policies and rules).
//
// # Proof
//
// TestKernelDifferential (kernel_*_test.go) loads random rulesets built
// from pkg/nft's constructors (every match, set and statement kind felix's
// rules use, in ip, ip6, inet and arp tables, filter and nat chains at
// random priorities) into a fresh network namespace, sends random probes
// through the real kernel (received on two interfaces, sent by the host,
// replies of established connections, ARP) with nftrace on, reads the
// kernel's trace events (NFT_MSG_TRACE, package nft/internal/nftrace) and
// requires the simulator's steps (kind, table, chain, rule index, verdict,
// mark) to equal them probe by probe, and the counters it predicts to
// equal the kernel's. pkg/felix/dataplane's TestSimulatorAgreesWithPackets
// runs it on felix's own ruleset and compares with real connections.
//
// # Kernel semantics followed
//
// From the kernel's net/netfilter (Linux 6.x):
//
//   - nf_tables_core.c (nft_do_chain): a rule's instructions run until
//     one sets the verdict register; NFT_BREAK (a failed match) goes on
//     with the next rule; a rule that ends with NFT_CONTINUE is traced and
//     the next rule runs; jump pushes the following rule on a stack of
//     NFT_JUMP_STACK_SIZE (16), goto does not; return and the end of a
//     chain pop it; at the base chain's end its policy applies. accept
//     ends the base chain (the next base chain of the hook runs), drop
//     ends the hook. The trace (nf_tables_trace.c) has an event for every
//     rule that matched, for every return (the end of a chain has no rule
//     handle) and for the policy. Linux 6.x labels returns as rule events:
//     __nft_trace_verdict compares the verdict code masked with
//     NF_VERDICT_MASK to NFT_CONTINUE and NFT_RETURN, which never match;
//     a Step's kind follows the meaning, not that label.
//   - nft_payload.c: loads from the link-layer header need a MAC header
//     (none for a packet the host sends), from the transport header the
//     transport protocol found (NFT_PKTINFO_L4PROTO) and fragment offset
//     0; a load past the packet's end fails the match. The last 32-bit
//     word of a register a load writes is zeroed first, so the padding of
//     concatenations is zero.
//   - nft_meta.c: iifname and oifname are the name padded with NULs (an
//     empty name without the interface); iiftype and l4proto fail the
//     match when absent; protocol is skb->protocol, nfproto the hook's
//     family.
//   - nft_cmp.c, nft_range.c, nft_bitwise.c: memcmp order; bitwise works
//     on whole 32-bit words with the mask and xor zero past their length.
//   - nft_lookup.c and the set backends: a hash set matches keys exactly;
//     an interval set (rbtree) matches a key within a range; a
//     concatenated interval set (pipapo) matches when every field lies
//     within that field's range; an inverted lookup matches a miss; a
//     verdict map's hit loads the verdict register, a miss ends the rule.
//   - nft_ct.c: `ct state` without a connection is invalid, or untracked
//     after notrack; `ct status` without a connection fails the match
//     (negated or not); notrack only affects a packet without a
//     connection (before conntrack at priority -200, or invalid).
//   - nft_fib_ipv4.c, nft_fib_ipv6.c: the type lookup asks FIB.AddrType
//     (of the iif or oif when flagged); the oif lookup skips the FIB for a
//     packet from a loopback interface in prerouting and input
//     (nft_fib_can_skip), for an IPv4 packet from 0.0.0.0 to a broadcast
//     or local multicast address and an ICMPv6 one from :: to a link-local
//     address; it looks the destination (daddr) or the source (saddr, from
//     the loopback interface, or in forward with iif from the output
//     interface) up, finds nothing for a local route, and with iif gives
//     that interface only when the route's nexthops use it.
//   - nf_nat_core.c (nf_nat_inet_fn, nf_nat_setup_info), nft_nat.c,
//     nft_masq.c: nat chains run from the NAT core's hook (priority -100
//     in prerouting and output, 100 in input and postrouting) in their own
//     priority order, for new connections only, until one drops the
//     packet or sets a NAT up (the statement accepts); later base chains
//     see the translated packet; the connection gets the SNAT or DNAT
//     status bit when the tuple changed. In an inet table a NAT of the
//     other IP version does nothing.
//   - nft_reject*.c: reject sends its error and drops.
//   - Hooks (ip_input.c, ip_forward.c, ip_output.c and their IPv6
//     twins): prerouting and input have an input interface only, forward
//     both; output has an output interface only, and postrouting the
//     output interface and, for a forwarded packet, the input one
//     (ip_output passes skb->dev). A forwarded packet loses one TTL (hop
//     limit) before forward, and is not forwarded when it has 1 or less.
//     Conntrack attaches the connection at priority -200 in prerouting and
//     output and confirms it at the end of postrouting; a packet the host
//     sends is routed before output and again after it when a NAT changed
//     its destination or a route chain its mark or addresses; one to the
//     host's own address comes back in on the loopback interface (with
//     its zero Ethernet header) through prerouting and input.
//   - The NAT core (nf_nat_register_fn) is registered in the four NAT
//     hooks of a family as soon as one nat chain of that family exists,
//     so a connection's NAT is set up (or left alone) in each of them even
//     without chains there. The kernel refuses nat chains at or below
//     conntrack's priority.
//
// # What it refuses
//
// Anything it does not model is an error naming the table, chain and rule
// (or the object), never a guess: tables of family bridge and netdev,
// ingress and egress hooks, instructions other than payload loads, meta
// (the keys above; setting the mark), cmp, bitwise (mask and xor), range,
// lookup, immediate, ct (state, status), fib, counter, log, reject,
// notrack, nat and masq; NAT to an address range; a port the NAT would
// choose, read afterwards; the NAT of an established connection; IPv6
// extension headers; the link-layer header in postrouting; ARP packets the
// host sends; base chains of one table with the same priority in a hook,
// or with the priority of conntrack or of the NAT core. What the kernel
// refuses to load is refused too where the simulator meets it: NAT outside
// a nat chain or in the wrong hook, nat chains at or below priority -200,
// fib iif or oif flags in hooks without that interface, fib oif lookups
// outside prerouting, input and forward, jumps nested deeper than 16.
//
// The simulator assumes that a NAT finds its tuple free (the kernel picks
// another port when another connection holds it, or drops a new
// connection whose tuple clashes with another's when it confirms it), and
// takes a packet of a related connection for an ICMP error of a
// connection whose NAT is set up. A received packet without Link has no
// link-layer header (link-layer loads fail), as on a tunnel. Step.Counters
// counts only the counters of rules that matched; Result.Counters has
// every counter the packet bumped, also those before a match that then
// failed. Sockets are not simulated: the kernel's fib skips its lookup for
// a packet of an early-demuxed local socket (nft_fib_can_skip).
package sim
