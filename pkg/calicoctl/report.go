package calicoctl

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/calico-host/calico-host/pkg/api"
)

// Project Calico's wording of what a resource command did and of why it failed, which scripts
// parse: calicoctl's crud_commands.go and get_command.go, and libcalico-go's error types.

// validationError is a document's validation failures, worded as libcalico-go's ErrorValidation:
// "error with field PeerIP = 'x' (reason)", or "error with the following fields:" and one
// "-  <field>" line per failure.
type validationError []api.FieldError

func (v validationError) Error() string {
	switch len(v) {
	case 0:
		return "unknown validation error"
	case 1:
		return "error with field " + fieldString(v[0])
	}
	var b strings.Builder
	b.WriteString("error with the following fields:\n")
	for _, fe := range v {
		fmt.Fprintf(&b, "-  %s\n", fieldString(fe))
	}
	return b.String()
}

// fieldString is one failure as libcalico-go's ErroredField prints it: the field's name, its
// value if the failure is about it, and the reason.
func fieldString(fe api.FieldError) string {
	name := fe.Name
	switch {
	case name != "":
	case fe.Value != nil:
		name = goFieldName(fe.Field)
	default:
		name = fe.Field // Project Calico's CRD rules name the field by its path
	}
	if fe.Value != nil {
		name = fmt.Sprintf("%s = '%v'", name, fe.Value)
	}
	return fmt.Sprintf("%s (%s)", name, fe.Message)
}

// initialisms are the leading words our JSON names spell in lower case that Project Calico's Go
// field names spell in capitals ("cidr" -> "CIDR", "asNumber" -> "ASNumber").
var initialisms = map[string]string{
	"as": "AS", "bgp": "BGP", "cidr": "CIDR", "cidrs": "CIDRs", "icmp": "ICMP", "ip": "IP", "ipip": "IPIP",
	"ipv4": "IPv4", "ipv6": "IPv6", "ips": "IPs", "mac": "MAC", "mtu": "MTU", "nat": "NAT", "vxlan": "VXLAN",
}

var leadingWord = regexp.MustCompile(`^[a-z0-9]+`)

// goFieldName is the Go name Project Calico's validator gives the last element of a JSON path:
// "spec.egress[0].source.nets[1]" -> "Nets[1]", "spec.cidr" -> "CIDR".
func goFieldName(path string) string {
	last := path[strings.LastIndex(path, ".")+1:]
	word := leadingWord.FindString(last)
	if up, ok := initialisms[word]; ok {
		return up + last[len(word):]
	}
	if last == "" {
		return last
	}
	return strings.ToUpper(last[:1]) + last[1:]
}

// rejection is why a document is not written: a validationError or another error of Project
// Calico's wording.
type rejection struct {
	doc *document
	err error
}

// rejected is the error of a write command that refused its input before writing anything.
func rejected(act action, total int, kind string, rs []rejection) error {
	errs := make([]error, len(rs))
	for i, r := range rs {
		errs[i] = r.err
	}
	if act == actReplace {
		return nothingHandled(act, total, kind, errs[len(errs)-1]) // Project Calico reports the last
	}
	return nothingHandled(act, total, kind, errs)
}

// nothingHandled is Project Calico's error when no resource was handled; errs is one error or a
// list ("[e1 e2]").
func nothingHandled(act action, total int, kind string, errs any) error {
	switch {
	case total == 1:
		return fmt.Errorf("failed to %s '%s' resource: %v", act.op(), kind, errs)
	case kind != "":
		return fmt.Errorf("failed to %s any '%s' resources: %v", act.op(), kind, errs)
	}
	return fmt.Errorf("failed to %s any resources: %v", act.op(), errs)
}

// outcome counts what a resource command did.
type outcome struct {
	total   int
	handled int
	kind    string // the single kind of every document, or ""
	errs    []error
}

// pastTense is the participle of an action in Project Calico's messages.
var pastTense = map[action]string{actApply: "applied", actCreate: "created", actReplace: "replaced",
	actDelete: "deleted", actValidate: "validated"}

// report prints the outcome of create, apply or validate as Project Calico does and returns the
// error to print, if any.
func (o *outcome) report(out io.Writer, act action) error {
	switch {
	case o.handled == 0 && len(o.errs) > 0:
		return nothingHandled(act, o.total, o.kind, o.errs)
	case len(o.errs) == 0:
		o.printSuccess(out, act)
		return nil
	}
	// Project Calico prints the partial success line only when more resources were handled than
	// failed.
	if o.handled-len(o.errs) > 0 {
		o.printPartial(out, act, o.handled)
	}
	return fmt.Errorf("hit error: %v", o.errs)
}

// reportReplace prints the outcome of replace as Project Calico does: it counts a resource whose
// update failed as handled and reports the last error.
func (o *outcome) reportReplace(out io.Writer) error {
	if len(o.errs) == 0 {
		o.printSuccess(out, actReplace)
		return nil
	}
	o.printPartial(out, actReplace, o.total)
	return fmt.Errorf("hit error: %v", o.errs[len(o.errs)-1])
}

func (o *outcome) printSuccess(out io.Writer, act action) {
	if o.kind != "" {
		fmt.Fprintf(out, "Successfully %s %d '%s' resource(s)\n", pastTense[act], o.handled, o.kind)
	} else {
		fmt.Fprintf(out, "Successfully %s %d resource(s)\n", pastTense[act], o.handled)
	}
}

func (o *outcome) printPartial(out io.Writer, act action, handled int) {
	if o.kind != "" {
		fmt.Fprintf(out, "Partial success: %s the first %d out of %d '%s' resources:\n", pastTense[act], handled, o.total, o.kind)
	} else {
		fmt.Fprintf(out, "Partial success: %s the first %d out of %d resources:\n", pastTense[act], handled, o.total)
	}
}

// reportDelete prints the result of delete as Project Calico does: the count deleted, then one
// line per failure.
func (o *outcome) reportDelete(out io.Writer) error {
	if o.handled > 0 {
		o.printSuccess(out, actDelete)
	}
	if len(o.errs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, err := range o.errs {
		if o.kind != "" {
			fmt.Fprintf(&b, "Failed to delete '%s' resource: %v\n", o.kind, err)
		} else {
			fmt.Fprintf(&b, "Failed to delete resource: %v\n", err)
		}
	}
	return fmt.Errorf("%s", b.String())
}

var unknownField = regexp.MustCompile(`unknown field "([^"]+)"`)

// massageError words an error for display as Project Calico's calicoctl does: a document's
// unknown field replaces the whole message.
func massageError(err error) string {
	msg := err.Error()
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		return "field in document is not recognized or is in the wrong location: " + m[1]
	}
	return msg
}
