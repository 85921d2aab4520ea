// Package announce detects a workload announcing itself on its interface: a gratuitous ARP
// (sender and target protocol addresses equal) or a RARP frame, which a hypervisor sends from a
// VM as soon as it runs on its new host after a live migration. The dataplane's live-migration
// state machine uses it to learn when a migrated VM runs here.
//
// One file, announce.go: IsAnnouncement (the frame test) and Watch, which reads frames with an
// AF_PACKET socket bound to the interface in the given network namespace, filtered in the kernel
// (a classic BPF program) to ARP and RARP, and calls back on the first announcement.
package announce
