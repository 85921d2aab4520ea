package cni

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/containernetworking/cni/pkg/types"
)

// The plugins' inputs (CNI_* variables, CNI_ARGS, the network configuration, files) reach
// netlink messages, /proc/sys paths, files and etcd keys only as the typed values below, each made
// by its parse function from a validated string. A value that does not parse is refused with a
// CNI error naming the input, before anything is allocated or changed.

// Name rules of Project Calico's validator (libcalico-go lib/validator/v3) and the kernel.
var (
	// dnsSubdomain: resource names, node, pod, endpoint and profile names.
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// dnsLabel: namespaces.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// containerIDRule: WorkloadEndpoint spec.containerID.
	containerIDRule = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?$`)
	// ifNameRule: interface names (spec.interfaceName); at most 15 bytes, the kernel's IFNAMSIZ-1.
	ifNameRule = regexp.MustCompile(`^[a-zA-Z0-9_.\-]{1,15}$`)
)

// maxContainerID bounds a container ID so that the owner mark on its host veth fits the kernel's
// interface alias (IFALIASZ, 256 bytes); runtimes use 64 hex digits.
const maxContainerID = 200

// IfName is a Linux interface name that is safe in a netlink message and a /proc/sys path.
type IfName string

// ParseIfName validates an interface name given by input (named in the error).
func ParseIfName(input, s string) (IfName, error) {
	if !ifNameRule.MatchString(s) || s == "." || s == ".." {
		return "", cniErrf(types.ErrInvalidEnvironmentVariables,
			"invalid %s %q: an interface name is 1-15 characters of a-z, A-Z, 0-9, '_', '.', '-' (and not . or ..)", input, s)
	}
	return IfName(s), nil
}

// MTU is a link MTU: from 576 (the IPv4 minimum every host accepts) to 65535 (the veth maximum).
type MTU int

// Limits of an MTU.
const (
	MinMTU = 576
	MaxMTU = 65535
)

// ParseMTU validates an MTU given by input.
func ParseMTU(input string, n int) (MTU, error) {
	if n < MinMTU || n > MaxMTU {
		return 0, cniErrf(types.ErrInvalidNetworkConfig, "invalid %s %d: must be between %d and %d", input, n, MinMTU, MaxMTU)
	}
	return MTU(n), nil
}

// FilePath is an absolute, clean path (no "..", no repeated or trailing slash, no NUL).
type FilePath string

// ParseFilePath validates a path given by input.
func ParseFilePath(input, s string) (FilePath, error) {
	if !filepath.IsAbs(s) || filepath.Clean(s) != s || strings.ContainsRune(s, 0) {
		return "", cniErrf(types.ErrInvalidNetworkConfig, "invalid %s %q: must be an absolute, clean path", input, s)
	}
	return FilePath(s), nil
}

// pathOr parses s, or returns def when s is empty.
func pathOr(input, s string, def FilePath) (FilePath, error) {
	if s == "" {
		return def, nil
	}
	return ParseFilePath(input, s)
}

// checkName validates one identity part against a name rule.
func checkName(code uint, input, s string, rule *regexp.Regexp, ruleText string, maxLen int) error {
	if s == "" {
		return cniErrf(code, "%s is empty", input)
	}
	if len(s) > maxLen || !rule.MatchString(s) {
		return cniErrf(code, "invalid %s %q: must be %s of at most %d characters", input, s, ruleText, maxLen)
	}
	return nil
}

const (
	subdomainText = "lower-case letters, digits, '-' and '.', starting and ending with a letter or digit"
	labelText     = "lower-case letters, digits and '-', starting and ending with a letter or digit"
	containerText = "letters, digits and '-', starting and ending with a letter or digit"
)
