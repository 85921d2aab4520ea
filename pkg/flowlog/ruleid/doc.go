// Package ruleid is the identifier of the rule that decided a packet, as
// felix writes it into the prefix of an NFLOG statement, and the table
// that maps prefixes back to rules.
//
// The files:
//
//	ruleid.go  RuleID (validated constructors), Policy, Direction and its NFLOG group, Hit
//	prefix.go  RuleID -> prefix (felix's format, hashed when long); ParsePrefix
//	table.go   Table: the prefixes of one ruleset -> RuleID
//	path.go    Path (one packet's rules up to the verdict) -> enforced policy hits; Assembler
//
// # The prefix: Project Calico's format
//
// Facts from felix/rules (nflogprefix.go, policy.go, endpoints.go,
// rule_defs.go) and felix/types (policy_id.go):
//
//   - A rule: "AODIII|ID": A the action (A allow, D deny, P pass), O the
//     owner (P policy, R profile), D the direction (I ingress, E egress),
//     III the rule index in decimal, ID "<short kind>/[<namespace>/]<name>"
//     for a policy (short kinds gnp, np, sgnp, snp, sknp, knp, kcnp) or the
//     profile's name.
//   - A tier's default action: "DPD|tier" (deny), or "PPD|tier" (pass) for a
//     tier whose policies are all staged.
//   - No profile matched: "DRI" / "DRE".
//   - A staged policy's no-match: "DPD|ID".
//   - A prefix of 63 bytes or more is replaced by its first 10 characters,
//     "_", the first 41 characters of the unpadded URL-safe base64 SHA-256
//     of the whole prefix, "_", and its last 10 characters: 63 bytes, since
//     iptables' NFLOG prefix holds 64 bytes with its NUL (felix applies the
//     same limit to nftables' log statement).
//   - The NFLOG groups are 1 for ingress (inbound) and 2 for egress
//     (outbound); nftables statements are `log prefix "..." snaplen 80
//     group N` (felix/nftables/actions.go; iptables: --nflog-size 80).
//   - Felix renders the NFLOG before the verdict of every allow, deny and
//     pass rule (not for untracked policy), before each tier's end-of-tier
//     drop (or pass), and before the endpoint's final "no profile matched"
//     drop, only when flow logs are enabled. Staged policies are not
//     rendered at all in Project Calico's open-source dataplane: their
//     pending verdicts are evaluated in user space (see package flowlog's
//     integration notes, docs/flowlogs.md).
//
// The prefix does not carry the tier of a policy's rule nor, once hashed,
// anything but its first letters. So, as felix's PolicyLookupsCache does,
// the collector maps prefixes back through a table; ours is filled by the
// dataplane from exactly the NFLOG statements it renders and published
// with the ruleset (Table), so that it can never disagree with the kernel.
// Two different rules with one prefix in one ruleset are refused by Add.
//
// Every name that reaches a prefix is checked first (letters, digits, '-',
// '_', '.'; at most 253 bytes; Project Calico's Kubernetes-style names all
// fit): a prefix never holds a quote, a '|' or '/' of a name, a NUL or
// anything nft's text could misread.
package ruleid
