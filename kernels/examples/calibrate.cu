// calibrate: a grid-wide barrier, repeated, to measure how well iket's
// per-SM clock fits put warps of different SMs on one timeline. Every warp
// of every SM marks `after_barrier` the moment the barrier releases it, so
// the marks of one round happened at (nearly) the same true instant: their
// spread on the decoded timeline bounds the cross-SM alignment error (plus
// the barrier's own release skew). `iket calibrate` reads it.
//
// The barrier needs no cooperative launch: one CTA per SM (grid = SMs, 128
// threads, a few registers) is always co-resident on an otherwise idle GPU.
// Each round r has its own 64-bit counter that only ever grows: thread 0 of
// each CTA takes a ticket with atomicAdd, the CTA's release target is the
// next multiple of gridDim.x above its ticket, and each warp's lane 0 polls
// the counter until it reaches the target. Because every CTA arrives exactly
// once per round, the counters stay multiples of gridDim.x between launches,
// so repeated launches (iket's timing rounds) need no reset.
//
// Never hangs: a warp gives up after CALIBRATE_MAX_POLLS polls (or as soon
// as it sees another warp gave up), sets *failed to 1 and skips the waits of
// the remaining rounds; the host checks the flag.
//
// Launch: grid = (SMs), block = (128); arguments (unsigned long long* out,
// unsigned long long* counters, unsigned* failed, unsigned rounds);
// out holds gridDim.x * 4 * rounds words: out[(cta * 4 + warp) * rounds + r]
// is the warp's raw %globaltimer right after round r's release; counters
// holds rounds words, zeroed before the first launch; failed one word, zero.
#include "iket.cuh"

#define CALIBRATE_NAMES(X)    \
  X(ROLE, calibrator)         \
  X(RANGE, barrier_wait)      \
  X(MARK, after_barrier)      \
  X(MARK, gt_sample)
IKET_NAMES(CALIBRATE_NAMES)

#define CALIBRATE_THREADS 128
#define CALIBRATE_MAX_POLLS 10000000u

__device__ __forceinline__ unsigned long long calibrate_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

extern "C" __global__ void __launch_bounds__(CALIBRATE_THREADS)
    calibrate(unsigned long long* __restrict__ out,
              unsigned long long* counters, unsigned* failed,
              unsigned rounds) {
  iket::Warp tr;
  __shared__ unsigned long long target;
  const unsigned warp = threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warps = blockDim.x / 32;
  unsigned long long* mine =
      out + (static_cast<unsigned long long>(blockIdx.x) * warps + warp) * rounds;
  const volatile unsigned* stop = failed;
  bool gave_up = false;  // this warp stopped waiting (uniform per warp)

  tr.set_role(iket_id::calibrator);
#pragma unroll 1
  for (unsigned r = 0; r < rounds; ++r) {
    tr.range_push(iket_id::barrier_wait, r);
    __syncthreads();  // every warp of the CTA has arrived at round r
    if (threadIdx.x == 0) {
      const unsigned long long ticket = atomicAdd(counters + r, 1ull);
      target = (ticket / gridDim.x + 1ull) * gridDim.x;
    }
    __syncthreads();
    if (lane == 0 && !gave_up) {
      const volatile unsigned long long* c = counters + r;
      const unsigned long long want = target;
      unsigned polls = 0;
      while (*c < want) {
        if (++polls >= CALIBRATE_MAX_POLLS || ((polls & 1023u) == 0u && *stop != 0u)) {
          gave_up = true;
          break;
        }
      }
    }
    gave_up = __shfl_sync(0xffffffffu, gave_up, 0);
    tr.mark(iket_id::after_barrier, r);
    const unsigned long long t = calibrate_globaltimer();
    // The raw timer's low 16 bits ride on a mark whose clock is read just
    // after: the decoder compares its converted time with the timer itself
    // (trace.TimerCheck), which measures the timeline's alignment directly.
    tr.mark(iket_id::gt_sample, static_cast<unsigned>(t & 0xffffu));
    tr.range_pop(iket_id::barrier_wait);
    if (lane == 0) {
      mine[r] = t;
      if (gave_up) {
        atomicExch(failed, 1u);
      }
    }
  }
}
