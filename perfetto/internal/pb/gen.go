// Package pb holds iket's own minimal protobuf description of the Perfetto
// trace format and its generated Go types. The writer's hot path encodes with
// protowire directly; these types serve tests and rare packets.
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative iket_perfetto.proto
