package calicoctl

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

func init() {
	register(&command{name: "validate", summary: "Validate a resource by file, directory or stdin.", run: (*cli).runValidate})
}

const validateUsage = `Usage:
  calicoctl validate --filename=<FILENAME> [--recursive] [--skip-empty] [--config=<CONFIG>]
                     [--namespace=<NS>]

Examples:
  # Validate a policy using the data in policy.yaml.
  calicoctl validate -f ./policy.yaml

  # Validate a policy based on the JSON passed into stdin.
  cat policy.json | calicoctl validate -f -

Options:
  -h --help                    Show this screen.
  -f --filename=<FILENAME>     Filename to use to validate the resource.  If set to
                               "-" loads from stdin. If filename is a directory, this command is
                               invoked for each .json .yaml and .yml file within that directory.
  -R --recursive               Process the filename specified in -f or --filename recursively.
     --skip-empty              Do not error if any files or directory specified using -f or --filename contain no
                               data.
  -c --config=<CONFIG>         Also check the resources against this datastore, as apply
                               does (pool overlaps, immutable pool fields, existing tiers).
                               Nothing is written.
  -n --namespace=<NS>          Namespace of the resources (as apply: the default for namespaced
                               resources without one; a resource in another one is refused).

Description:
  The validate command parses, defaults and validates a set of resources by filename or
  stdin, exactly as apply does before writing, and writes nothing. JSON and YAML formats are
  accepted.

  Without --config it works offline: every resource is checked on its own and the IP pools of
  the input are checked against each other. With --config the checks against the datastore
  that apply makes are added.

  The output of the command indicates how many resources were successfully validated, and
  the error reason for each resource that is not valid. The exit code is non-zero if any
  resource is not valid.
`

func (c *cli) runValidate(args []string) error {
	f := newFlags("validate", validateUsage)
	var in inputOptions
	var ns namespaceOptions
	var cfg string
	in.define(f)
	ns.define(f, false)
	f.str(&cfg, "", "c", "config")
	pos, err := c.parseFlags(f, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || in.filename == "" {
		return failf("Invalid option: 'calicoctl validate %s'. Use flag '--help' to read about a specific subcommand.", strings.Join(args, " "))
	}
	docs, err := c.readDocuments(in)
	var bad docErrors
	if errors.As(err, &bad) {
		return failf("failed to execute command: %v", err)
	}
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		fmt.Fprintln(c.stdout, "No resources specified")
		return nil
	}
	var s *session
	if cfg != "" {
		if s, err = c.connect(cfg); err != nil {
			return err
		}
		defer s.close()
	}
	problems, err := validateDocuments(docs, ns, s)
	if err != nil {
		return err
	}
	return reportValidation(c.stdout, docs, problems)
}

// validateDocuments checks every document as apply does and returns the problems of each (by
// document index). The cross checks run on the documents that are valid on their own: against
// each other, and against the datastore when s is not nil.
func validateDocuments(docs []*document, ns namespaceOptions, s *session) (map[int][]string, error) {
	problems := map[int][]string{}
	var valid []*document
	for _, d := range docs {
		if msgs := checkContent(d, ns, actApply); len(msgs) > 0 {
			problems[d.index] = msgs
			continue
		}
		valid = append(valid, d)
	}
	var cross []crossProblem
	if s == nil {
		cross = poolProblems(nil, valid, actApply)
	} else {
		var err error
		if cross, err = s.crossCheck(valid, actApply); err != nil {
			return nil, err
		}
	}
	for _, c := range cross {
		problems[c.doc.index] = append(problems[c.doc.index], c.msg)
	}
	return problems, nil
}

// reportValidation prints the outcome in Project Calico's words and returns the error to print
// (naming every invalid document and all its problems) when any document is invalid.
func reportValidation(out io.Writer, docs []*document, problems map[int][]string) error {
	var errs []error
	for _, d := range docs {
		if msgs := problems[d.index]; len(msgs) > 0 {
			errs = append(errs, docError{index: d.index, kind: d.kind.Kind, name: d.meta().Name, msg: strings.Join(msgs, "; ")})
		}
	}
	o := &outcome{total: len(docs), handled: len(docs) - len(errs), kind: singleKind(docs), errs: errs}
	switch {
	case len(errs) == 0 && o.kind != "":
		fmt.Fprintf(out, "Successfully validated %d '%s' resource(s)\n", o.handled, o.kind)
		return nil
	case len(errs) == 0:
		fmt.Fprintf(out, "Successfully validated %d resource(s)\n", o.handled)
		return nil
	case o.handled == 0 && o.total == 1:
		return failf("failed to validate '%s' resource: %v", o.kind, errs)
	case o.handled == 0 && o.kind != "":
		return failf("failed to validate any '%s' resources: %v", o.kind, errs)
	case o.handled == 0:
		return failf("failed to validate any resources: %v", errs)
	case o.kind != "":
		fmt.Fprintf(out, "Partial success: validated the first %d out of %d '%s' resources:\n", o.handled, o.total, o.kind)
	default:
		fmt.Fprintf(out, "Partial success: validated the first %d out of %d resources:\n", o.handled, o.total)
	}
	return failf("hit error(s): %v", errs)
}
