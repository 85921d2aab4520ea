package calicoctl

import (
	"fmt"
	"sort"
	"strings"
)

func init() {
	register(&command{name: "validate", summary: "Validate a resource by file, directory or stdin.", run: (*cli).runValidate})
}

const validateUsage = `Usage:
  calicoctl validate --filename=<FILENAME> [--recursive] [--skip-empty] [--namespace=<NS>]

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
  -n --namespace=<NS>          Namespace of the resources (as apply: the default for namespaced
                               resources without one; a resource in another one is refused).
  -c --config=<CONFIG>         Accepted and ignored: validation works offline.

Description:
  The validate command parses, defaults and validates a set of resources by filename or
  stdin, as apply does before writing, and writes nothing. JSON and YAML formats are
  accepted. It works offline: the datastore configuration is never read. Every resource is
  checked on its own, and the IP pools of the input against each other.

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
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		fmt.Fprintln(c.stdout, "No resources specified")
		return nil
	}
	rs := validateDocuments(docs, ns)
	o := &outcome{total: len(docs), handled: len(docs) - len(rs), kind: singleKind(docs)}
	for _, r := range rs {
		o.errs = append(o.errs, r.err)
	}
	return o.report(c.stdout, actValidate)
}

// validateDocuments checks every document as apply does without a datastore and returns why
// each invalid one is refused, in document order. The IP pools valid on their own are also
// checked against each other.
func validateDocuments(docs []*document, ns namespaceOptions) []rejection {
	var rs []rejection
	var valid []*document
	for _, d := range docs {
		if err := checkContent(d, ns, actApply); err != nil {
			rs = append(rs, rejection{d, err})
			continue
		}
		valid = append(valid, d)
	}
	rs = append(rs, crossRefusals(valid, poolProblems(nil, valid, actApply))...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].doc.index < rs[j].doc.index })
	return rs
}
