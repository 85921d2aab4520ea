// Command calico-confd renders BIRD's BGP configuration from the datastore and reloads BIRD.
//
// One file, main.go: the flags (--config, --datastore-config, --onetime, --version), the signal
// context and the exit code (daemon.ExitCode: 78 for an invalid configuration, which
// calico-confd.service does not restart). Everything else lives in pkg/confd.
package main
