#include <cstdio>
// Which clock reads after __syncthreads() see the barrier completed, and what each costs.
template <int V> __device__ __forceinline__ unsigned long long clk(unsigned pf, unsigned long long a) {
  unsigned long long c;
  if (V == 0) asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  if (V == 1) { unsigned x; asm volatile("mov.u32 %0, %%clock;" : "=r"(x)::"memory"); c = x; }
  if (V == 2) asm volatile("bar.warp.sync -1;\n\tmov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  if (V == 3) asm volatile("nanosleep.u32 0;\n\tmov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  if (V == 4) asm volatile("{.reg .pred p; setp.ne.u32 p, %1, 0;\n\t@p st.global.u32 [%2], 0;\n\tmov.u64 %0, %%clock64;}" : "=l"(c) : "r"(pf), "l"(a) : "memory");
  if (V == 5) asm volatile("{.reg .u32 t; .shared .u32 sh; ld.volatile.shared.u32 t, [sh];\n\tmov.u64 %0, %%clock64;}" : "=l"(c)::"memory");
  if (V == 6) asm volatile("membar.cta;\n\tmov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  if (V == 7) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(c)::"memory");
  if (V == 8) asm volatile("{.reg .u32 m; activemask.b32 m;\n\tmov.u64 %0, %%clock64;}" : "=l"(c)::"memory");
  if (V == 9) asm volatile("{.reg .pred p; setp.ne.u32 p, %1, 0;\n\t.reg .u32 t; @p ld.global.u32 t, [%2];\n\tmov.u64 %0, %%clock64;}" : "=l"(c) : "r"(pf), "l"(a) : "memory");
  if (V == 10) asm volatile("{.reg .u32 t; mov.u32 t, %%laneid;\n\tmov.u64 %0, %%clock64;}" : "=l"(c)::"memory");
  if (V == 11) asm volatile("{.reg .u64 t; mov.u64 t, %%clock64;\n\tmov.u64 %0, %%clock64;}" : "=l"(c)::"memory");
  if (V == 12) asm volatile("{.reg .pred p; setp.ne.u32 p, %1, 0;\n\t@p st.shared.u32 [%2], 0;\n\tmov.u64 %0, %%clock64;}" : "=l"(c) : "r"(pf), "r"((unsigned)a) : "memory");
  if (V == 13) asm volatile("{.reg .u32 t; mov.u32 t, %%clock_hi;\n\tmov.u64 %0, %%clock64;}" : "=l"(c)::"memory");
  return c;
}
template <int V> __global__ void order(long long spin, unsigned pf, long long* t) {
  const int w = threadIdx.x / 32;
  if (w == 0) {
    const long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
  }
  unsigned long long b = V == 7 ? clk<7>(pf, 0) : clk<0>(pf, 0);
  __syncthreads();
  unsigned long long c = clk<V>(pf, (unsigned long long)t);
  if (V == 1) c = (unsigned)c - (unsigned)b + b;  // 32-bit: relative
  if (threadIdx.x == 32) t[blockIdx.x] = (long long)(c - b);
}
// cost: 256 reads in a loop, each mixed into the next address operand.
template <int V> __global__ void cost(unsigned pf, long long* t) {
  unsigned long long acc = 0, t0 = clk<0>(pf, 0);
#pragma unroll 1
  for (int i = 0; i < 256; ++i) acc += clk<V>(pf, (unsigned long long)t + (acc & 0));
  unsigned long long t1 = clk<0>(pf, 0);
  if (threadIdx.x == 0) t[blockIdx.x] = (long long)(t1 - t0);
  if (acc == 42) t[1000] = 1;
}
template <int V> void one(long long* t) {
  long long h[4];
  order<V><<<4, 64>>>(200000, 0, t);
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("V%d: %s\n", V, cudaGetErrorString(e)); return; }
  cudaMemcpy(h, t, sizeof h, cudaMemcpyDeviceToHost);
  long long hc[4];
  cost<V><<<1, 32>>>(0, t + 8); cost<V><<<1, 32>>>(0, t + 8);
  cudaDeviceSynchronize();
  cudaMemcpy(hc, t + 8, 8, cudaMemcpyDeviceToHost);
  printf("V%-2d barrier-to-clock %lld %lld %lld %lld  | loop of 256: %.1f cycles each\n", V, h[0], h[1], h[2], h[3], hc[0] / 256.0);
}
int main() {
  long long* t; cudaMalloc(&t, 2048 * 8);
  one<0>(t); one<1>(t); one<2>(t); one<3>(t); one<4>(t); one<5>(t); one<6>(t); one<7>(t); one<8>(t); one<9>(t); one<10>(t); one<11>(t); one<12>(t); one<13>(t);
  return 0;
}
