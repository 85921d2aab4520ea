// Package routes converges the kernel's routing tables on a desired list of routes. Which kernel
// routes are its own is decided by an Ownership, Project Calico's ownership policy for the main
// table: routes carrying our exclusive protocol (80 by default) anywhere; in the main table also
// routes through workload interfaces carrying a device-route protocol (DeviceRouteProtocol, 3 by
// default) or, with RemoveExternalRoutes, any protocol, and every route through the VXLAN devices.
// Only such routes are ever deleted, so routes of BIRD, the kernel or the administrator elsewhere
// are never removed. A route of another owner with the same destination, table and metric as a
// desired route is replaced by ours (it becomes ours), as Project Calico's felix does.
//
// Apply is cheap when little changed: an in-memory mirror of our routes in the kernel is diffed
// against the desired list and only the differences are written, adds and replacements before any
// deletion. A resync (the first Apply, RequestResync, or after a failure) re-reads our routes from
// the kernel (both families, every table) and repairs drift.
//
// The files:
//
//	route.go       Route (what the dataplane asks for), its canonical form and KernelRoute
//	ownership.go   Ownership: which kernel routes are ours
//	reconciler.go  Reconciler: the mirror, Apply, resyncs, interface changes, Stats
//	handle.go      Handle and Netlink (on nlhandle.Handle): listing, replacing and deleting routes
//	               over netlink
//	fake.go        Fake: an in-memory kernel for tests
package routes
