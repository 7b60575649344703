// hopper.cuh: the few Hopper (sm_90) primitives the kernels in this directory
// use, as thin inline-PTX wrappers: mbarriers, 1D bulk copies (cp.async.bulk),
// 2D tensor copies (cp.async.bulk.tensor) and, for sm_90a, wgmma and setmaxnreg.
//
// Waits: by default an mbarrier wait spins until the phase completes. Build with
// -DHOPPER_SPIN_LIMIT=N (the debug build of scripts/overhead.sh) and a wait that
// has not completed after N polls prints which barrier it was (block, thread,
// barrier tag, parity) and traps, so a protocol bug ends the kernel with a
// diagnostic instead of hanging the GPU. The timed builds leave it undefined.
#ifndef IKET_HOPPER_CUH
#define IKET_HOPPER_CUH

#include <stdint.h>
#ifdef HOPPER_SPIN_LIMIT
#include <stdio.h>
#endif

namespace hopper {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier ---------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(count)
               : "memory");
}

// Makes the barrier initialisation visible to the async proxy (the copy
// engine) and to the other threads; follow with __syncthreads().
__device__ __forceinline__ void mbar_fence_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile(
      "{\n\t.reg .b64 st;\n\t"
      "mbarrier.arrive.shared::cta.b64 st, [%0];\n\t}" ::"r"(smem_u32(bar))
      : "memory");
}

// Arrives once and announces tx_bytes that the copy engine will deliver.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar,
                                                      uint32_t tx_bytes) {
  asm volatile(
      "{\n\t.reg .b64 st;\n\t"
      "mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}" ::"r"(
          smem_u32(bar)),
      "r"(tx_bytes)
      : "memory");
}

__device__ __forceinline__ bool mbar_try_wait(uint64_t* bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
      "selp.u32 %0, 1, 0, p;\n\t}"
      : "=r"(ok)
      : "r"(smem_u32(bar)), "r"(parity)
      : "memory");
  return ok != 0;
}

// Waits until the phase of the given parity has completed. tag names the
// barrier in the debug build's diagnostic.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity,
                                          uint32_t tag) {
#ifdef HOPPER_SPIN_LIMIT
  for (unsigned long long n = 0; !mbar_try_wait(bar, parity); ++n) {
    if (n == (unsigned long long)(HOPPER_SPIN_LIMIT)) {
      printf("hopper: mbarrier wait timed out: block %d thread %d tag 0x%x "
             "parity %u\n",
             blockIdx.x, threadIdx.x, tag, parity);
      __trap();
    }
  }
#else
  (void)tag;
  while (!mbar_try_wait(bar, parity)) {
  }
#endif
}

// ---- bulk copies ------------------------------------------------------------

// 1D bulk copy global -> shared, completing tx bytes on bar. bytes and both
// addresses must be multiples of 16.
__device__ __forceinline__ void bulk_g2s(void* dst_smem, const void* src,
                                         uint32_t bytes, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
      "[%0], [%1], %2, [%3];" ::"r"(smem_u32(dst_smem)),
      "l"(src), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}

// 2D tensor copy of one box at (c0 = inner coordinate, c1 = outer) into
// shared memory, completing its bytes on bar. tmap is the address of a
// __grid_constant__ CUtensorMap parameter.
__device__ __forceinline__ void tma_load_2d(void* dst_smem, const void* tmap,
                                            int32_t c0, int32_t c1,
                                            uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
      "complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(
          smem_u32(dst_smem)),
      "l"(tmap), "r"(c0), "r"(c1), "r"(smem_u32(bar))
      : "memory");
}

// 2D tensor store of one box from shared memory to (c0, c1) of the tensor
// (TMA engine, bulk async group of the issuing thread; the global-memory
// queue of the SM is not used).
__device__ __forceinline__ void tma_store_2d(const void* tmap, const void* src_smem,
                                             int32_t c0, int32_t c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group "
      "[%0, {%1, %2}], [%3];" ::"l"(tmap),
      "r"(c0), "r"(c1), "r"(smem_u32(src_smem))
      : "memory");
}
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// bulk_wait_read waits until at most N of the thread's bulk groups still
// read their shared-memory source; bulk_wait until at most N are pending.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes before async-proxy
// (TMA) reads of them.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void st_shared_u32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

__device__ __forceinline__ void prefetch_tmap(const void* tmap) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(tmap) : "memory");
}

// ---- sm_90a: warpgroup MMA and register reallocation -------------------------

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HOPPER_HAS_WGMMA 1

template <uint32_t RegCount>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(RegCount));
}
template <uint32_t RegCount>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(RegCount));
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Shared-memory matrix descriptor for a K-major operand tile written by TMA
// with 128-byte swizzle: rows of 128 bytes, 8-row atoms 1024 bytes apart
// (stride byte offset), leading byte offset unused for this layout (1), base
// offset 0 (tiles are 1024-byte aligned), layout type 1 = SWIZZLE_128B.
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void* smem) {
  const uint64_t addr = smem_u32(smem);
  uint64_t d = 0;
  d |= (addr & 0x3FFFFull) >> 4;          // bits 0-13: start address >> 4
  d |= (uint64_t)1 << 16;                 // bits 16-29: leading byte offset >> 4
  d |= (uint64_t)(1024 >> 4) << 32;       // bits 32-45: stride byte offset >> 4
  d |= (uint64_t)1 << 62;                 // bits 62-63: swizzle mode 128B
  return d;
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

}  // namespace hopper

#endif  // IKET_HOPPER_CUH
