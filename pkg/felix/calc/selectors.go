package calc

import (
	"fmt"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
	"github.com/calico-host/calico-host/pkg/selector"
)

// The functions in this file combine the selector fields of policies and rules into single
// selectors over endpoint labels, as libcalico's update processors do before felix sees them
// (updateprocessors/rules.go getEndpointSelector, parseServiceAccounts; networkpolicyprocessor):
//
//   - a namespaceSelector X becomes X with every key prefixed by "pcns.", all() becoming
//     has(projectcalico.org/namespace) and global() !has(projectcalico.org/namespace);
//   - serviceAccounts.names becomes `projectcalico.org/serviceaccount in {...}` and
//     serviceAccounts.selector is prefixed by "pcsa." (all() = any service account);
//   - in a NetworkPolicy, a rule that uses any selector, and the policy selector itself, are
//     ANDed with `projectcalico.org/namespace == "<ns>"`.

// parseSel parses a selector, naming the field in the error.
func parseSel(field, s string) (*selector.Selector, error) {
	sel, err := selector.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return sel, nil
}

// keyPrefixing is how libcalico rewrites a namespace or service-account selector over the
// labels an endpoint inherits (parseSelectorAttachPrefix): every key prefixed, all() and, for
// namespaces, global() replaced.
type keyPrefixing struct {
	prefix      string
	all, global *selector.Selector
}

var (
	// namespacePrefixing: all() is any namespace, global() no namespace.
	namespacePrefixing = keyPrefixing{nsLabelPrefix,
		selector.MustParse("has(" + labelNamespace + ")"), selector.MustParse("!has(" + labelNamespace + ")")}
	// svcAcctPrefixing: all() is any service account.
	svcAcctPrefixing = keyPrefixing{saLabelPrefix, selector.MustParse("has(" + labelServiceAccount + ")"), nil}
)

// prefixed parses s and returns its text with keys prefixed.
func prefixed(field, s string, kp keyPrefixing) (string, error) {
	sel, err := parseSel(field, s)
	if err != nil {
		return "", err
	}
	return sel.PrefixKeys(kp.prefix, kp.all, kp.global).String(), nil
}

// namespaceEquals is the selector text `projectcalico.org/namespace == "<ns>"`.
func namespaceEquals(ns string) string {
	return labelNamespace + " == " + quoteSelValue(ns)
}

// quoteSelValue quotes a value for selector text. The language has no escapes, so a value
// containing both quote characters cannot be written; it is replaced by one that matches nothing
// real (such values are not valid label values anyway).
func quoteSelValue(v string) string {
	switch {
	case !strings.Contains(v, `"`):
		return `"` + v + `"`
	case !strings.Contains(v, `'`):
		return `'` + v + `'`
	}
	return `"invalid value"`
}

// and2 joins two selector texts as Calico does: "(a) && (b)", or whichever is non-empty.
func and2(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return "(" + a + ") && (" + b + ")"
}

// serviceAccountSelector is the selector text for a rule's serviceAccounts match.
func serviceAccountSelector(sam *api.ServiceAccountMatch) (string, error) {
	var bySel string
	if sam.Selector != "" {
		s, err := prefixed("serviceAccounts.selector", sam.Selector, svcAcctPrefixing)
		if err != nil {
			return "", err
		}
		bySel = s
	}
	if len(sam.Names) == 0 {
		return bySel, nil
	}
	quoted := make([]string, len(sam.Names))
	for i, n := range sam.Names {
		quoted[i] = quoteSelValue(n)
	}
	byName := labelServiceAccount + " in {" + strings.Join(quoted, ", ") + "}"
	return and2(bySel, byName), nil
}

// entitySelector returns the positive selector text of a rule's source or destination for a
// policy in namespace ns ("" for global policies and profiles).
func entitySelector(er *api.EntityRule, ns string) (string, error) {
	var nsSel string
	switch {
	case er.NamespaceSelector != "":
		s, err := prefixed("namespaceSelector", er.NamespaceSelector, namespacePrefixing)
		if err != nil {
			return "", err
		}
		nsSel = s
	case ns != "":
		nsSel = namespaceEquals(ns)
	}
	var saSel string
	if er.ServiceAccounts != nil {
		s, err := serviceAccountSelector(er.ServiceAccounts)
		if err != nil {
			return "", err
		}
		saSel = s
	}
	sel := and2(saSel, er.Selector)
	if nsSel != "" && (sel != "" || er.NotSelector != "" || er.NamespaceSelector != "") {
		sel = and2(nsSel, sel)
	}
	return sel, nil
}

// ruleSelectors returns the parsed positive and negative selectors of one side of a rule. As
// in Calico's rule scanner, a negative selector is folded into the positive one when there is
// one ("(pos) && (!(neg))"), since the rule can then only match known endpoints anyway.
func ruleSelectors(er *api.EntityRule, ns string) (pos, neg *selector.Selector, err error) {
	posText, err := entitySelector(er, ns)
	if err != nil {
		return nil, nil, err
	}
	negText := er.NotSelector
	if posText != "" && negText != "" {
		posText = "(" + posText + ") && (!(" + negText + "))"
		negText = ""
	}
	if posText != "" {
		if pos, err = parseSel("selector", posText); err != nil {
			return nil, nil, err
		}
	}
	if negText != "" {
		if neg, err = parseSel("notSelector", negText); err != nil {
			return nil, nil, err
		}
	}
	return pos, neg, nil
}

// policySelector returns the selector of the endpoints a policy applies to.
func policySelector(v *api.PolicySpecView) (*selector.Selector, error) {
	text := v.Selector
	if v.Namespace != "" {
		text = and2(namespaceEquals(v.Namespace), text)
	}
	if v.NamespaceSel != "" {
		s, err := prefixed("namespaceSelector", v.NamespaceSel, namespacePrefixing)
		if err != nil {
			return nil, err
		}
		text = and2(text, s)
	}
	if v.ServiceAcctSel != "" {
		s, err := prefixed("serviceAccountSelector", v.ServiceAcctSel, svcAcctPrefixing)
		if err != nil {
			return nil, err
		}
		text = and2(text, s)
	}
	return parseSel("selector", text)
}
