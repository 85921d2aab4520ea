// Package goldmanepb is the generated Go code of collector.proto: the
// FlowCollector service of Goldmane's API and its messages.
//
// The files:
//
//	collector.proto        the part of Goldmane's API a node uses: names and numbers are Goldmane's
//	collector.pb.go        generated messages and enums (protoc-gen-go)
//	collector_grpc.pb.go   the generated FlowCollector client and server (protoc-gen-go-grpc)
//	generate.go            the go:generate line that regenerates both
package goldmanepb
