// Package filelock provides exclusive file locks (flock(2)) shared between processes, as the CNI
// plugins take them: a bounded wait that names the process holding the lock when it runs out, and
// a lock file that its holder may remove (a process that was waiting on the removed file notices
// and locks the file now at the path instead).
//
//   - lock.go: Acquire, Release, Remove and the content of the lock file.
//   - holders.go: the processes holding a lock, read from /proc/locks for messages.
package filelock
