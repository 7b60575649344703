// gemm: a warp-specialized bf16 GEMM for Hopper (sm_90a): TMA + wgmma.
//
//   C[M][N] = sum_k A[M][k] * B[N][k]   ("TN": A row-major MxK, B row-major NxK)
//
// bf16 inputs, fp32 accumulation, bf16 output (round to nearest).
//
// Persistent: the host launches one CTA per SM (or one per tile when the
// tiles are fewer); CTA b computes the 128x256 tiles of C numbered b,
// b + gridDim.x, ... (rasterised in groups of GEMM_GROUP_M tile rows so that
// concurrently running CTAs share A and B panels in L2). The ring's stages and
// phases run on from one tile to the next, so the producer loads the next
// tile while the consumers store this one. Block = 384 threads = 3 warpgroups:
//   warpgroup 0, producer: gives registers back (setmaxnreg.dec 40); its warp
//     0 walks K in steps of 64: waits for a free stage of a GEMM_STAGES-deep
//     ring (empty mbarrier), then lane 0 issues two 2D tensor copies
//     (cp.async.bulk.tensor, 128-byte swizzle): A 128x64 and B 256x64,
//     completing on the stage's full mbarrier. Warps 1-3 only set their role.
//   warpgroups 1 and 2, consumers: take registers (setmaxnreg.inc 232); each
//     owns 64 rows of the tile and, per stage, waits for the data, issues 4
//     wgmma.m64n256k16 (fp32 accumulators, 128 registers per thread), commits
//     and waits for the previous stage's group, which it then frees (one
//     arrive per warp: the empty barrier counts 8).
//   Epilogue, after freeing the tile's last stage: each consumer warp
//     converts its 16 rows to bf16 in four chunks of 64 columns, each
//     written to one of the warp's two 2 KiB shared-memory buffers
//     (128-byte swizzle) and stored by lane 0 with a 2D TMA store
//     (cp.async.bulk.tensor, box 64 x 16), so the SM's global-memory queue
//     stays free. GEMM_EPI_TMA=0 stores bf16 pairs straight from the
//     accumulators instead.
//
// Not done: thread-block clusters with TMA multicast,
// ping-pong consumers (one warpgroup's epilogue under the other's MMAs).
// Shapes must be multiples of the tile: M % 128 == 0, N % 256 == 0,
// K % 64 == 0 (the host checks).
//
// Tracing (iket.cuh; same source with and without -DIKET_ENABLE=1): every warp
// sets its role once; per k step, with the ring stage as the payload, the
// producer warp records wait_free and issue, every consumer warp wait_data and
// compute; each consumer warp records one epilogue range per tile. The
// consumers' per-k pairs go through an iket::Batch: held in registers and
// stored 32 at a time, the same records at the same slots.
//
// Launch: grid = (min(M/128 * N/256, SMs)) (any grid size is correct),
// block = (384), dynamic shared memory =
// GEMM_SMEM_BYTES; arguments (const __grid_constant__ CUtensorMap tmA,
// const __grid_constant__ CUtensorMap tmB, const __grid_constant__
// CUtensorMap tmC, bf16* C, int M, int N, int K). tmA: bf16, dims {K, M},
// row stride K*2 bytes, box {64, 128}; tmB: bf16, dims {K, N}, row stride
// K*2 bytes, box {64, 256}; tmC: bf16, dims {N, M}, row stride N*2 bytes,
// box {64, 16}; all SWIZZLE_128B. C is written through tmC (C itself is used
// only with GEMM_EPI_TMA=0).
// Build: nvcc -cubin -gencode=arch=compute_90a,code=sm_90a.
#include <cuda_bf16.h>
#include <stdio.h>

#include "hopper.cuh"
#include "iket.cuh"
#include "wgmma.cuh"

#define GEMM_NAMES(X) \
  X(ROLE, producer)   \
  X(ROLE, consumer)   \
  X(RANGE, wait_free) \
  X(RANGE, issue)     \
  X(RANGE, wait_data) \
  X(RANGE, compute)   \
  X(RANGE, epilogue)
IKET_NAMES(GEMM_NAMES)

// GEMM_TRACE picks the events recorded (for measuring what each costs; the
// header's start and exit are always recorded): bit 0 the producer's
// wait_free and issue, bit 1 a consumer's wait_data, bit 2 its compute, bit 3
// the epilogue, bit 4 set_role. Default all.
#ifndef GEMM_TRACE
#define GEMM_TRACE 31
#endif
// GEMM_NEXT=1 (default) records back-to-back phases with range_next (one
// NEXT record: a pop and a push at one instant): per k-tile, a warp records
// two events instead of four for the same ranges, stamping the first phase
// change where it happens and storing both records together after the
// copies or MMAs are issued (the producer's by range_next_pair: two 8-byte
// stores; the consumers' through an iket::Batch, 32 pairs at a time).
// Then a consumer's wait_data and compute go together (bits 1 and 2 both
// set, or neither).
// GEMM_NEXT=0 records push/pop pairs.
#ifndef GEMM_NEXT
#define GEMM_NEXT 1
#endif
#define GEMM_EV(bits, call)                     \
  do {                                          \
    if (((GEMM_TRACE) & (bits)) == (bits)) call; \
  } while (0)

#define GEMM_BM 128
#define GEMM_BN 256
#define GEMM_BK 64
#define GEMM_STAGES 4
#define GEMM_GROUP_M 16
#define GEMM_THREADS 384
#define GEMM_A_BYTES (GEMM_BM * GEMM_BK * 2)  // 16 KiB
#define GEMM_B_BYTES (GEMM_BN * GEMM_BK * 2)  // 32 KiB
#define GEMM_STAGE_BYTES (GEMM_A_BYTES + GEMM_B_BYTES)
// GEMM_EPI_TMA=1 (default): the epilogue writes each consumer warp's 16 rows
// in chunks of 64 columns to shared memory (128-byte swizzle, two buffers of
// 2 KiB per warp) and stores them with TMA (cp.async.bulk.tensor), so the
// SM's global-memory queue stays free for the other warps (and for the
// event stores of a traced build). GEMM_EPI_TMA=0 stores bf16 pairs
// straight from the accumulators.
#ifndef GEMM_EPI_TMA
#define GEMM_EPI_TMA 1
#endif
#define GEMM_C_BUF_BYTES (16 * 64 * 2)  // 16 rows of 64 bf16: 2 KiB
// The ring, the epilogue's buffers (8 consumer warps x 2), plus 1 KiB to
// align the ring to the 1024 bytes the swizzle needs.
#define GEMM_SMEM_BYTES \
  (GEMM_STAGES * GEMM_STAGE_BYTES + 8 * 2 * GEMM_C_BUF_BYTES + 1024)

// The 128-byte opaque tensor map (CUtensorMap), passed by value.
struct __align__(64) TensorMap {
  unsigned long long opaque[16];
};

// gemm_tile maps tile index t to its tile row and column, rasterised in
// groups of GEMM_GROUP_M tile rows: CTAs that run at the same time share A and
// B panels in L2.
__device__ __forceinline__ void gemm_tile(int t, int tiles_m, int tiles_n,
                                          int* tm, int* tn) {
  const int per_group = GEMM_GROUP_M * tiles_n;
  const int first_m = (t / per_group) * GEMM_GROUP_M;
  const int group_m = min(tiles_m - first_m, GEMM_GROUP_M);
  *tm = first_m + (t % per_group) % group_m;
  *tn = (t % per_group) / group_m;
}

extern "C" __global__ void __launch_bounds__(GEMM_THREADS, 1)
    gemm(const __grid_constant__ TensorMap tmA,
         const __grid_constant__ TensorMap tmB,
         const __grid_constant__ TensorMap tmC, __nv_bfloat16* __restrict__ C,
         int M, int N, int K) {
  iket::Warp tr;
#if defined(HOPPER_HAS_WGMMA)
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t full[GEMM_STAGES];
  __shared__ __align__(8) uint64_t empty[GEMM_STAGES];
  unsigned char* smem = reinterpret_cast<unsigned char*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

  // The warp index through a shuffle, so the compiler knows every lane has
  // the same one and the role branches below are warp-uniform to it. With
  // threadIdx.x / 32 alone, ptxas puts convergence regions and divergence
  // checks inside them in the traced build (whose exit record joins the
  // branches again) and lengthens the producer's code.
  const int warp = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 32), 0);
  const int lane = threadIdx.x % 32;
  const int wg = warp / 4;

  if (threadIdx.x == 0) {
    for (int s = 0; s < GEMM_STAGES; ++s) {
      hopper::mbar_init(&full[s], 1);
      hopper::mbar_init(&empty[s], 8);  // one arrive per consumer warp
    }
    hopper::mbar_fence_init();
  }
  __syncthreads();

  // Persistent: CTA b computes tiles b, b + gridDim.x, ... (any grid size
  // works; the host launches min(tiles, SMs) CTAs). The ring's stage and
  // phase run on across tiles: `it` counts k steps over all of the CTA's tiles
  // in the producer and the consumers alike.
  const int tiles_m = M / GEMM_BM;
  const int tiles_n = N / GEMM_BN;
  const int tiles = tiles_m * tiles_n;
  const int ktiles = K / GEMM_BK;

  if (wg == 0) {
    hopper::setmaxnreg_dec<40>();
    GEMM_EV(16, tr.set_role(iket_id::producer));
    if (warp == 0 && ktiles > 0 && (int)blockIdx.x < tiles) {
      if (lane == 0) {
        hopper::prefetch_tmap(&tmA);
        hopper::prefetch_tmap(&tmB);
      }
#if GEMM_NEXT
      GEMM_EV(1, tr.range_push(iket_id::wait_free, 0));
#endif
      uint32_t it = 0;
#pragma unroll 1
      for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tm, tn;
        gemm_tile(t, tiles_m, tiles_n, &tm, &tn);
#if GEMM_NEXT
        const bool last_tile = t + (int)gridDim.x >= tiles;
#endif
#pragma unroll 1
        for (int kt = 0; kt < ktiles; ++kt, ++it) {
          const int s = it % GEMM_STAGES;
          const uint32_t round = it / GEMM_STAGES;
#if !GEMM_NEXT
          GEMM_EV(1, tr.range_push(iket_id::wait_free, s));
#endif
          hopper::mbar_wait(&empty[s], (round & 1u) ^ 1u, 0x100u + s);
          __syncwarp();
#if GEMM_NEXT
          // The issue phase starts now; its record is stored with the next
          // wait_free's, after the copies are issued.
          const iket::Stamp issued = tr.stamp();
#else
          GEMM_EV(1, tr.range_pop());
          GEMM_EV(1, tr.range_push(iket_id::issue, s));
#endif
          if (lane == 0) {
            unsigned char* a = smem + s * GEMM_STAGE_BYTES;
            unsigned char* b = a + GEMM_A_BYTES;
            hopper::mbar_arrive_expect_tx(&full[s], GEMM_STAGE_BYTES);
            hopper::tma_load_2d(a, &tmA, kt * GEMM_BK, tm * GEMM_BM, &full[s]);
            hopper::tma_load_2d(b, &tmB, kt * GEMM_BK, tn * GEMM_BN, &full[s]);
          }
          __syncwarp();
#if GEMM_NEXT
          if (!last_tile || kt + 1 < ktiles) {
            GEMM_EV(1, tr.range_next_pair(issued, iket_id::issue, s, iket_id::wait_free,
                                          (it + 1) % GEMM_STAGES));
          } else {
            GEMM_EV(1, tr.range_next_pop(issued, iket_id::issue, s));
          }
#else
          GEMM_EV(1, tr.range_pop());
#endif
        }
      }
    }
  } else {
    hopper::setmaxnreg_inc<232>();
    GEMM_EV(16, tr.set_role(iket_id::consumer));
    const int cw = wg - 1;  // which 64-row half of the tile
    const int wi = warp % 4;
    // The per-k pairs wait in registers and are stored 32 at a time
    // (iket.cuh, Batch): a store in every k step costs more than the
    // records' instructions (docs/OVERHEAD.md, "Where the cost goes").
#if GEMM_NEXT
    iket::Batch batch(tr);
#endif
    uint32_t it = 0;
#pragma unroll 1
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
      int tm, tn;
      gemm_tile(t, tiles_m, tiles_n, &tm, &tn);
      float acc[128];
#pragma unroll
      for (int i = 0; i < 128; ++i) acc[i] = 0.f;

#if GEMM_NEXT
      if (ktiles > 0) GEMM_EV(6, tr.range_push(iket_id::wait_data, it % GEMM_STAGES));
#endif
#pragma unroll 1
      for (int kt = 0; kt < ktiles; ++kt, ++it) {
        const int s = it % GEMM_STAGES;
        const uint32_t round = it / GEMM_STAGES;
#if !GEMM_NEXT
        GEMM_EV(2, tr.range_push(iket_id::wait_data, s));
#endif
        hopper::mbar_wait(&full[s], round & 1u, 0x200u + s);
        __syncwarp();  // reconverge before the .aligned wgmma instructions
#if GEMM_NEXT
        // Compute starts now; its record is stored with the next wait_data's,
        // after the MMAs are issued.
        const iket::Stamp computing = tr.stamp();
#else
        GEMM_EV(2, tr.range_pop());
        GEMM_EV(4, tr.range_push(iket_id::compute, s));
#endif
        const unsigned char* a =
            smem + s * GEMM_STAGE_BYTES + cw * (64 * GEMM_BK * 2);
        const unsigned char* b = smem + s * GEMM_STAGE_BYTES + GEMM_A_BYTES;
        const uint64_t da = hopper::wgmma_desc_sw128(a);
        const uint64_t db = hopper::wgmma_desc_sw128(b);
        hopper::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < GEMM_BK / 16; ++kk) {
          // 16 bf16 = 32 bytes further along K: +2 in the 16-byte address field.
          hopper::wgmma_m64n256k16(acc, da + 2 * kk, db + 2 * kk);
        }
        hopper::wgmma_commit();
        // The previous stage's MMAs have completed: free its slot.
        hopper::wgmma_wait<1>();
        if (kt > 0) {
          __syncwarp();
          if (lane == 0) hopper::mbar_arrive(&empty[(it - 1) % GEMM_STAGES]);
        }
#if GEMM_NEXT
        if (kt + 1 < ktiles) {
          GEMM_EV(6, batch.range_next_pair(computing, iket_id::compute, s, iket_id::wait_data,
                                           (it + 1) % GEMM_STAGES));
        } else {
          GEMM_EV(6, batch.range_next_pop(computing, iket_id::compute, s));
        }
#else
        GEMM_EV(4, tr.range_pop());
#endif
      }
      // Pairs still held (k steps per tile not a multiple of 32) are stored
      // now, so that a warp that hangs in a later tile shows this one whole.
#if GEMM_NEXT
      batch.flush();
#endif
      hopper::wgmma_wait<0>();
      // The tile's last stage is read: free it for the next tile's loads,
      // which the producer issues while this warp stores the epilogue.
      if (ktiles > 0) {
        __syncwarp();
        if (lane == 0) hopper::mbar_arrive(&empty[(it - 1) % GEMM_STAGES]);
      }

      GEMM_EV(8, tr.range_push(iket_id::epilogue));
      // Accumulator i of thread (warp w in the warpgroup, lane l) holds row
      // 16w + l/4 (+8 when i%4 >= 2), column 8*(i/4) + 2*(l%4) + i%2.
#if GEMM_EPI_TMA
      {
        unsigned char* cbuf = smem + GEMM_STAGES * GEMM_STAGE_BYTES +
                              (warp - 4) * 2 * GEMM_C_BUF_BYTES;
        const int r = lane / 4;  // this thread's rows: r and r + 8
        const int y0 = tm * GEMM_BM + cw * 64 + wi * 16;
#pragma unroll
        for (int q = 0; q < GEMM_BN / 64; ++q) {
          unsigned char* buf = cbuf + (q & 1) * GEMM_C_BUF_BYTES;
          // The store that read this buffer (two chunks ago) is done.
          if (lane == 0) hopper::bulk_wait_read<1>();
          __syncwarp();
          const uint32_t base = hopper::smem_u32(buf);
#pragma unroll
          for (int kk = 0; kk < 8; ++kk) {
            const int i = 4 * (8 * q + kk);
            // Byte column 16*kk + 4*(l%4) of a 128-byte row; the 128-byte
            // swizzle XORs the 16-byte chunk (kk) with the row mod 8.
            const uint32_t off = (uint32_t)((((kk ^ r) & 7) << 4) + 4 * (lane % 4));
            __nv_bfloat162 lo = __floats2bfloat162_rn(acc[i], acc[i + 1]);
            __nv_bfloat162 hi = __floats2bfloat162_rn(acc[i + 2], acc[i + 3]);
            hopper::st_shared_u32(base + r * 128 + off, *reinterpret_cast<uint32_t*>(&lo));
            hopper::st_shared_u32(base + (r + 8) * 128 + off, *reinterpret_cast<uint32_t*>(&hi));
          }
          hopper::fence_proxy_async_smem();
          __syncwarp();
          if (lane == 0) {
            hopper::tma_store_2d(&tmC, buf, tn * GEMM_BN + q * 64, y0);
            hopper::bulk_commit();
          }
        }
      }
#else
      const long long row0 =
          (long long)tm * GEMM_BM + cw * 64 + wi * 16 + lane / 4;
      const int col0 = tn * GEMM_BN + 2 * (lane % 4);
#pragma unroll
      for (int i = 0; i < 128; i += 4) {
        const int col = col0 + 8 * (i / 4);
        __nv_bfloat162 lo = __floats2bfloat162_rn(acc[i], acc[i + 1]);
        __nv_bfloat162 hi = __floats2bfloat162_rn(acc[i + 2], acc[i + 3]);
        *reinterpret_cast<__nv_bfloat162*>(C + row0 * N + col) = lo;
        *reinterpret_cast<__nv_bfloat162*>(C + (row0 + 8) * N + col) = hi;
      }
#endif
      GEMM_EV(8, tr.range_pop());
    }
#if GEMM_EPI_TMA
    // The tile stores must be complete before the CTA ends.
    if (lane == 0) hopper::bulk_wait<0>();
    __syncwarp();
#endif
  }
#else
  // Built for a target without wgmma (plain sm_90 or older): refuse loudly.
  if (threadIdx.x == 0 && blockIdx.x == 0)
    printf("gemm: built without sm_90a features; rebuild with "
           "-gencode=arch=compute_90a,code=sm_90a\n");
  __trap();
#endif
}
