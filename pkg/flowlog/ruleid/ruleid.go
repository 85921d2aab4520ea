package ruleid

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/calico-host/calico-host/pkg/flowlog"
)

// Direction is the direction of the policy a rule belongs to, by the
// letter felix writes into prefixes.
type Direction byte

// Directions.
const (
	Ingress Direction = 'I'
	Egress  Direction = 'E'
)

// NFLOG groups of felix's rules (felix/rules/rule_defs.go).
const (
	IngressGroup uint16 = 1
	EgressGroup  uint16 = 2
)

// Group returns the NFLOG group the direction's rules log to.
func (d Direction) Group() uint16 {
	if d == Egress {
		return EgressGroup
	}
	return IngressGroup
}

// Reporter returns the flow reporter of the direction: ingress policy is
// applied at the destination, egress at the source.
func (d Direction) Reporter() flowlog.Reporter {
	if d == Egress {
		return flowlog.Src
	}
	return flowlog.Dst
}

func (d Direction) String() string {
	switch d {
	case Ingress:
		return "Ingress"
	case Egress:
		return "Egress"
	}
	return fmt.Sprintf("Direction(%q)", byte(d))
}

// NoMatchProfile is the name a flow gives the verdict "no profile matched"
// (felix's NoMatchNameStr).
const NoMatchProfile = "__NO_MATCH__"

// Policy names a policy (Kind one of the policy kinds) or a profile
// (KindProfile, no namespace).
type Policy struct {
	Kind      flowlog.PolicyKind
	Namespace string
	Name      string
}

// ID is what felix writes into prefixes for the policy: its short kind,
// namespace and name ("gnp/allow-web", "np/prod/egress"), or the profile's
// name (felix/types: PolicyID.ID, ProfileID.ID).
func (p Policy) ID() string {
	switch {
	case p.Kind == flowlog.KindProfile:
		return p.Name
	case p.Namespace != "":
		return flowlog.ShortKind(p.Kind) + "/" + p.Namespace + "/" + p.Name
	}
	return flowlog.ShortKind(p.Kind) + "/" + p.Name
}

func (p Policy) validate() error {
	if !p.Kind.Valid() || p.Kind == flowlog.KindEndOfTier {
		return fmt.Errorf("policy %q: kind %v is no policy kind", p.Name, p.Kind)
	}
	if err := checkName("name", p.Name); err != nil {
		return fmt.Errorf("%v %q: %w", p.Kind, p.Name, err)
	}
	switch {
	case p.Kind.Namespaced() && p.Namespace == "":
		return fmt.Errorf("%v %q: no namespace", p.Kind, p.Name)
	case !p.Kind.Namespaced() && p.Namespace != "":
		return fmt.Errorf("%v %q: has namespace %q", p.Kind, p.Name, p.Namespace)
	case p.Namespace != "":
		if err := checkName("namespace", p.Namespace); err != nil {
			return fmt.Errorf("%v %q: %w", p.Kind, p.Name, err)
		}
	}
	return nil
}

// namePattern is what a tier, namespace, policy or profile name may hold to
// be written into a prefix: letters, digits, '-', '_' and '.', starting and
// ending with a letter or digit. Project Calico's names (Kubernetes object
// names) all fit; nothing that could end the prefix, split its fields or
// break nft's text does.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)

const maxNameLen = 253

func checkName(what, s string) error {
	if len(s) > maxNameLen || !namePattern.MatchString(s) {
		return fmt.Errorf("%s %q is not a name (letters, digits, '-', '_', '.'; at most %d)", what, s, maxNameLen)
	}
	return nil
}

// RuleID identifies the rule that decided a packet: a policy's or a
// profile's rule, a tier's default action (Kind EndOfTier, Index -1), a
// staged policy's no-match (a staged Kind, Index -1), or "no profile
// matched" (KindProfile, Name NoMatchProfile). Make one with the
// constructors, which validate it.
type RuleID struct {
	Kind      flowlog.PolicyKind
	Tier      string // "" for profiles
	Namespace string
	Name      string
	Direction Direction
	Index     int
	Action    flowlog.Action
}

// Pending says whether the rule belongs to a staged policy: its verdict is
// pending, never enforced.
func (r RuleID) Pending() bool { return r.Kind.Staged() }

// Policy returns the policy or profile the rule belongs to (zero for an
// end of tier).
func (r RuleID) Policy() Policy {
	if r.Kind == flowlog.KindEndOfTier {
		return Policy{}
	}
	return Policy{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}

func (r RuleID) String() string {
	return fmt.Sprintf("%v %s tier=%q index=%d %v %v", r.Kind, Policy{r.Kind, r.Namespace, r.Name}.ID(),
		r.Tier, r.Index, r.Direction, r.Action)
}

// Rule identifies rule index of a policy (not a profile) in tier.
func Rule(p Policy, tier string, dir Direction, index int, action flowlog.Action) (RuleID, error) {
	if p.Kind == flowlog.KindProfile {
		return RuleID{}, fmt.Errorf("profile %q: use ProfileRule", p.Name)
	}
	if err := errors.Join(p.validate(), checkName("tier", tier), checkDir(dir), checkIndex(index),
		checkAction(action)); err != nil {
		return RuleID{}, fmt.Errorf("rule %d of %s: %w", index, p.ID(), err)
	}
	return RuleID{Kind: p.Kind, Tier: tier, Namespace: p.Namespace, Name: p.Name, Direction: dir, Index: index, Action: action}, nil
}

// ProfileRule identifies rule index of profile name.
func ProfileRule(name string, dir Direction, index int, action flowlog.Action) (RuleID, error) {
	p := Policy{Kind: flowlog.KindProfile, Name: name}
	if err := errors.Join(p.validate(), checkDir(dir), checkIndex(index), checkAction(action)); err != nil {
		return RuleID{}, fmt.Errorf("rule %d of profile %q: %w", index, name, err)
	}
	return RuleID{Kind: flowlog.KindProfile, Name: name, Direction: dir, Index: index, Action: action}, nil
}

// EndOfTier identifies a tier's default action: Deny, or Pass for a tier
// whose policies (for this endpoint and direction) are all staged.
func EndOfTier(tier string, dir Direction, action flowlog.Action) (RuleID, error) {
	var err error
	if action != flowlog.Deny && action != flowlog.Pass {
		err = fmt.Errorf("action %v is no tier default action", action)
	}
	if err := errors.Join(err, checkName("tier", tier), checkDir(dir)); err != nil {
		return RuleID{}, fmt.Errorf("end of tier %q: %w", tier, err)
	}
	return RuleID{Kind: flowlog.KindEndOfTier, Tier: tier, Direction: dir, Index: -1, Action: action}, nil
}

// StagedNoMatch identifies a staged policy's no-match in tier: the tier's
// default deny that the policy would trigger if it were enforced.
func StagedNoMatch(p Policy, tier string, dir Direction) (RuleID, error) {
	var err error
	if !p.Kind.Staged() {
		err = fmt.Errorf("kind %v is not staged", p.Kind)
	}
	if err := errors.Join(err, p.validate(), checkName("tier", tier), checkDir(dir)); err != nil {
		return RuleID{}, fmt.Errorf("no-match of %s: %w", p.ID(), err)
	}
	return RuleID{Kind: p.Kind, Tier: tier, Namespace: p.Namespace, Name: p.Name, Direction: dir, Index: -1, Action: flowlog.Deny}, nil
}

// NoProfileMatch identifies the default deny after an endpoint's profiles.
func NoProfileMatch(dir Direction) (RuleID, error) {
	if err := checkDir(dir); err != nil {
		return RuleID{}, fmt.Errorf("no profile match: %w", err)
	}
	return RuleID{Kind: flowlog.KindProfile, Name: NoMatchProfile, Direction: dir, Action: flowlog.Deny}, nil
}

func checkDir(d Direction) error {
	if d != Ingress && d != Egress {
		return fmt.Errorf("direction %q is neither I nor E", byte(d))
	}
	return nil
}

// maxIndex bounds rule indices well past any policy's rule count, so that
// an index always prints in a handful of digits.
const maxIndex = 1 << 20

func checkIndex(i int) error {
	if i < 0 || i >= maxIndex {
		return fmt.Errorf("rule index %d out of [0, %d)", i, maxIndex)
	}
	return nil
}

func checkAction(a flowlog.Action) error {
	if a != flowlog.Allow && a != flowlog.Deny && a != flowlog.Pass {
		return fmt.Errorf("action %v is no rule action", a)
	}
	return nil
}

// Hit turns the rule into the policy hit a flow reports at policyIndex (its
// position in the trace). An end of tier names the policy that triggered it
// (the last policy of the tier that applied to the endpoint in this
// direction), which trigger gives; other rules ignore it.
func (r RuleID) Hit(policyIndex int, trigger Policy) (flowlog.PolicyHit, error) {
	h := flowlog.PolicyHit{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Tier: r.Tier,
		Action: r.Action, PolicyIndex: int64(policyIndex), RuleIndex: int64(r.Index)}
	switch {
	case r.Kind == flowlog.KindEndOfTier:
		h.Trigger = &flowlog.PolicyHit{Kind: trigger.Kind, Namespace: trigger.Namespace, Name: trigger.Name, Tier: r.Tier}
	case r.Index == -1: // a staged policy's no-match is its tier's default action
		h.Kind, h.Namespace, h.Name = flowlog.KindEndOfTier, "", ""
		h.Trigger = &flowlog.PolicyHit{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Tier: r.Tier}
	}
	if err := h.Validate(); err != nil {
		return flowlog.PolicyHit{}, fmt.Errorf("hit of %v: %w", r, err)
	}
	return h, nil
}
