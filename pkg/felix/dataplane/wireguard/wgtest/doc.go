// Package wgtest gives tests a userspace WireGuard device (golang.zx2c4.com/wireguard over TUN)
// inside a network namespace, for kernels without the wireguard driver. The device runs in a
// child process, the test binary itself re-executed inside the namespace with `ip netns exec`,
// so that its TUN device and UDP sockets live there; it answers wgctrl on the usual UAPI socket
// /var/run/wireguard/<name>.sock, so each namespace's device needs a distinct name. Only tests
// import this package.
//
// One file, wgtest.go: MaybeServe (called from TestMain: serve the device when re-executed),
// Start (the child process, stopped at the test's end), SocketPath and KernelDriver (whether the
// kernel has the wireguard driver).
package wgtest
