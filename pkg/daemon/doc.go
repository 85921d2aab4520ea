// Package daemon holds what every calico-host daemon shares: logging setup, systemd notification
// (READY, STATUS, WATCHDOG), a watchdog that only pets systemd while every loop makes progress,
// signal handling, and the health and metrics HTTP servers.
//
// The files:
//
//	log.go       ParseLevel, NewLogger: a component's logger: console, text or JSON
//	notify.go    Notifier: READY, STATUS, STOPPING and WATCHDOG to systemd; SignalContext
//	watchdog.go  Watchdog: loops beat, and systemd's watchdog is petted only while none is stale
//	http.go      the health handler (liveness and readiness probes), the metrics handler, Serve
//	tls.go       ServerTLS and ServeTLS: the metrics server over HTTPS
//	profile.go   Profiles: heap and CPU profiles on SIGUSR1 and SIGUSR2 (Project Calico's
//	             felix), and the pprof handler
//	exit.go      exit codes: ExitFailure (1) and ExitConfig (78, a configuration error that
//	             systemd does not restart)
package daemon
