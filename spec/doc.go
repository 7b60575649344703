// Package spec reads the declarative description of a user's kernel launch
// (a YAML file): the kernel file and entry point, the launch configuration,
// the arguments (buffers with dtype, shape and initialisation; scalars), the
// trace buffer settings and an optional correctness reference. It builds the
// host-side argument data and compares outputs, and [Spec.Program] turns a
// spec into an [iket.Program] that iket.Run checks, traces and times like a
// built-in one; the runtime (package iket) allocates, launches and reads
// back.
//
// Every error names the field it is about, as a path such as
// `args[1].buffer.init.kind`, and says what was expected.
package spec
