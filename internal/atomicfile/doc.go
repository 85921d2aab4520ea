// Package atomicfile replaces files whole and durably: a reader sees the old content or the
// new, never a mix, and after a crash or power loss the file holds one of them.
//
// One file, atomicfile.go: Write (a uniquely named temporary file in the same directory, fsync,
// rename, fsync of the directory) and SyncDir.
package atomicfile
