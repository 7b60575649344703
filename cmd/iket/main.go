// Command iket traces warp-specialized CUDA kernels: it runs a kernel with
// in-kernel event tracing, writes a Perfetto trace and a latency comparison
// against the uninstrumented build, and checks captures in CI.
//
// Exit codes: 0 success; 1 a check failed; 2 bad input, bad usage, or a CUDA
// error (a kernel that faulted or hung); 130 interrupted (SIGINT or SIGTERM),
// with every output either as it was or whole.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal the command winds down; a second one
		// kills the process as usual.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
