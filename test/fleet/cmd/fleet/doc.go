// Command fleet runs the fleet load harness (package test/fleet) and prints its tables; run it
// as root through `make scale N=<hosts>`.
//
// One file, main.go: the flags, Run and the report's tables.
package main
