// fault: a two-role kernel in which one consumer warp (CTA 0, warp 1) faults
// after recording a few events: mode 0 stores through an invalid address
// (CUDA_ERROR_ILLEGAL_ADDRESS), mode 1 executes a trap
// (CUDA_ERROR_LAUNCH_FAILED or CUDA_ERROR_ILLEGAL_INSTRUCTION). It exists to
// test iket's fault path: the error names the CUDA error, and host-mapped
// (watch-mode) buffers still show each warp's last event.
//
// What the faulting warp's buffer is guaranteed to hold (watch mode): its
// header started (magic, CTA 0, warp 1, role consumer) and the events
// set_role(consumer), range_push(consume), mark(about_to_fault, mode), in
// host memory: a system-scope fence after the mark waits for those stores to
// be performed before the faulting instruction issues. After that nothing is
// guaranteed. A trap stops the warp at once (no later event, no finish). An
// illegal-address store is reported asynchronously: the warp may run on to
// its range_pop and its end (header finished, count 4) before the kernel is
// torn down, or not, and those later stores may or may not reach the host.
//
// Launch: grid = (ctas), block = (64); arguments (float* out, unsigned mode);
// out holds ctas * 64 floats.
#include "iket.cuh"

#define FAULT_NAMES(X)    \
  X(ROLE, producer)       \
  X(ROLE, consumer)       \
  X(RANGE, produce)       \
  X(RANGE, consume)       \
  X(MARK, about_to_fault)
IKET_NAMES(FAULT_NAMES)

extern "C" __global__ void __launch_bounds__(64) fault(float* out, unsigned mode) {
  iket::Warp tr;
  const int warp = threadIdx.x / 32;
  float* mine = out + static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (warp == 0) {
    tr.set_role(iket_id::producer);
    tr.range_push(iket_id::produce);
    *mine = 1.0f;
    tr.range_pop(iket_id::produce);
    return;
  }
  tr.set_role(iket_id::consumer);
  tr.range_push(iket_id::consume);
  if (blockIdx.x == 0 && warp == 1) {
    tr.mark(iket_id::about_to_fault, mode);
    // Everything recorded so far reaches host memory before the fault.
    __threadfence_system();
    if (mode == 1) {
      __trap();
    }
    // Address 16 is never mapped: the store faults.
    volatile float* bad = reinterpret_cast<volatile float*>(16ull + mode);
    *bad = 2.0f;
  }
  *mine = 2.0f;
  tr.range_pop(iket_id::consume);
}
