// hang: the consumer warp waits for a "data ready" flag that its producer
// never sets (the producer's signalling store is missing): the classic
// missed-arrive deadlock. The wait also ends when the host writes a non-zero
// word to release (host-mapped memory) or after limit_ns nanoseconds of
// %globaltimer, so a test can end the kernel after iket's timeout fired.
//
// Launch: grid = (ctas), block = (64); arguments (unsigned* ready,
// const unsigned* release, unsigned long long limit_ns); ready holds ctas
// words, zeroed; release one word.
#include "iket.cuh"

#define HANG_NAMES(X)     \
  X(ROLE, producer)       \
  X(ROLE, consumer)       \
  X(RANGE, produce)       \
  X(RANGE, wait_ready)    \
  X(MARK, forgot_signal)
IKET_NAMES(HANG_NAMES)

__device__ __forceinline__ unsigned long long hang_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void __launch_bounds__(64)
    hang(unsigned* ready, const unsigned* release, unsigned long long limit_ns) {
  iket::Warp tr;
  const int warp = threadIdx.x / 32;
  volatile unsigned* flag = ready + blockIdx.x;
  const volatile unsigned* stop = release;
  if (warp == 0) {
    tr.set_role(iket_id::producer);
    tr.range_push(iket_id::produce);
    __nanosleep(1000);
    tr.range_pop(iket_id::produce);
    tr.mark(iket_id::forgot_signal);  // the bug: *flag = 1 is missing here
    return;
  }
  tr.set_role(iket_id::consumer);
  tr.range_push(iket_id::wait_ready);
  const unsigned long long t0 = hang_globaltimer();
  while (*flag == 0u && *stop == 0u && hang_globaltimer() - t0 < limit_ns) {
    __nanosleep(2000);
  }
  tr.range_pop(iket_id::wait_ready);
}
