package cni

import (
	"context"
	"errors"
	"fmt"

	"github.com/containernetworking/cni/pkg/types"

	"github.com/calico-host/calico-host/pkg/ipam"
)

// Plugin-specific CNI error codes (the CNI spec reserves 100 and above for plugins).
const (
	// CodeDatastore: etcd is unreachable or not ready (ClusterInformation datastoreReady false).
	CodeDatastore uint = 100
	// CodeNoAddress: no pool, pools exhausted or the host's block limit reached.
	CodeNoAddress uint = 101
	// CodeNetworking: setting up or checking the veth, addresses, routes or sysctls failed.
	CodeNetworking uint = 102
	// CodeEndpoint: writing or reading the WorkloadEndpoint or Profile failed.
	CodeEndpoint uint = 103
	// CodeCheck: CHECK found the container's networking differs from what ADD set up.
	CodeCheck uint = 104
)

// cniErr wraps err in a CNI error with a code and a message; an existing CNI error passes through.
func cniErr(code uint, msg string, err error) *types.Error {
	var e *types.Error
	if errors.As(err, &e) {
		return e
	}
	details := ""
	if err != nil {
		details = err.Error()
	}
	return &types.Error{Code: code, Msg: msg, Details: details}
}

func cniErrf(code uint, format string, args ...any) *types.Error {
	return &types.Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ipamErr classifies an IPAM failure.
func ipamErr(err error) *types.Error {
	switch {
	case errors.Is(err, ipam.ErrNoPool), errors.Is(err, ipam.ErrExhausted), errors.Is(err, ipam.ErrBlockLimit),
		errors.Is(err, ipam.ErrAlreadyAssigned), errors.Is(err, ipam.ErrNotInPool):
		return cniErr(CodeNoAddress, "IPAM could not assign addresses", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ipam.ErrTooManyRetries):
		return cniErr(types.ErrTryAgainLater, "IPAM timed out talking to etcd", err)
	}
	return cniErr(CodeDatastore, "IPAM failed", err)
}
