// Package filesink writes flow records as JSON lines to
// /var/log/calico/flowlogs/flows.log (Project Calico's directory for flow
// log files, felix/fv/infrastructure), rotating by size.
//
// The files:
//
//	sink.go  Open, Write (one line per flow), size-based rotation, Close
//
// Rotation is ours, not a library's: flows.log is renamed flows.log.1 (the
// others shift up, the oldest beyond MaxFiles is removed) before the line
// that would take it past MaxFileSize, so a line is never split and
// `tail -F` follows it. gopkg.in/natefinch/lumberjack.v2 (already in the
// module graph) was considered: its sizes are whole megabytes, its backup
// names carry timestamps and it prunes from a goroutine of its own; this
// is a few dozen lines with none of that. Defaults: 100 MiB per file, 5
// rotated files (the values Calico Enterprise's file reporter uses).
package filesink
