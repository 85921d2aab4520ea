// Package etcdtest starts a real, embedded etcd server for tests: on random loopback ports, with
// or without TLS, with helpers to stop, restart and compact it and to load the fixtures written by
// Project Calico's tools.
//
// The files:
//
//	etcdtest.go  Server: Start, StartTLS, Stop, Restart, Compact; its Datastore config and Client
//	tls.go       GenerateTLS: a CA and server and client certificates in a directory
//	fixtures.go  the key files under test/fixtures: FixturePath, ReadFixture, LoadFixture
package etcdtest
