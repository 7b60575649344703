// iket.cuh: in-kernel event tracing for CUDA C++ (nvcc and NVRTC).
//
// One header, no other includes. Define IKET_ENABLE=1 to record events; leave it
// undefined (or 0) and every call below compiles to nothing, so one source gives
// both the instrumented and the uninstrumented (baseline) build.
//
// Use:
//
//   #define MY_NAMES(X)                                 \
//     X(ROLE, producer) X(ROLE, consumer)               \
//     X(RANGE, producer_load) X(MARK, kernel_start)
//   IKET_NAMES(MY_NAMES)            // once per module, at file scope
//
//   __global__ void k(...) {
//     iket::Warp tr;                // first statement: one per thread
//     tr.mark(iket_id::kernel_start);
//     if (warp == 0) {
//       tr.set_role(iket_id::producer);
//       tr.range_push(iket_id::producer_load, /*payload=*/stage);
//       ...
//       tr.range_pop();
//     }
//   }                               // the destructor closes the warp's record
//
// Fast mode: define IKET_SAME_LANES=1 too when every event of a warp is
// recorded by the same set of lanes (always the whole warp, or always the
// same single lane). Events then skip the activemask/redux step that keeps
// lanes' cursors in step, which is most of an event's latency.
//
// Every call may be made by any subset of a warp's lanes (inside
// `if (lane == 0)` too); the active lanes write one shared record. Lanes of
// one warp must not record in two divergent branches at once (`if (lane ==
// 0) tr.mark(a); else tr.mark(b);`): both groups would take the same slot.
// Record before the branch or after the lanes rejoin. The binary
// layout written here is specified in docs/FORMAT.md; trace/ decodes it.
#ifndef IKET_CUH
#define IKET_CUH

#define IKET_FORMAT_VERSION 1

// Record kinds (3 bits). 0 marks an unwritten slot.
#define IKET_KIND_MARK 1u
#define IKET_KIND_PUSH 2u
#define IKET_KIND_POP 3u
#define IKET_KIND_START 4u
#define IKET_KIND_END 5u
#define IKET_KIND_ROLE 6u

// Name table. LIST is an X-macro whose entries are X(KIND, identifier) with
// KIND one of RANGE, MARK, ROLE. Ids start at 1 in list order; 0 means "none".
#define IKET__ENUM_ENTRY(kind, ident) ident,
#define IKET__TABLE_ENTRY(kind, ident) #kind " " #ident "\n"

#if defined(IKET_ENABLE) && IKET_ENABLE
#define IKET__DEFINE_TABLE(LIST)                                               \
  extern "C" __device__ char iket_name_table[] =                             \
      "iket-names 1\n" LIST(IKET__TABLE_ENTRY);
#else
#define IKET__DEFINE_TABLE(LIST)
#endif

#define IKET_NAMES(LIST)                                                       \
  namespace iket_id {                                                          \
  enum : unsigned short { iket_none_ = 0, LIST(IKET__ENUM_ENTRY) iket_count_ }; \
  static_assert(iket_count_ <= 8192, "iket: at most 8191 names");            \
  }                                                                            \
  IKET__DEFINE_TABLE(LIST)

namespace iket {

// Token names one start/end range: its name and payload. range_end(token)
// closes the most recent open range_start with the same name and payload.
struct Token {
  unsigned short name;
  unsigned short payload;
};

}  // namespace iket

#if defined(IKET_ENABLE) && IKET_ENABLE

namespace iket {

// State is set by the runtime (cuModuleGetGlobal "iket_state") before each
// launch. base == 0 means no buffers: events go to a scratch slot.
struct State {
  unsigned long long base;   // device address of warp 0's header
  unsigned capacity;         // records per warp (power of two in wrap mode)
  unsigned wrap_mask;        // 0xffffffff: stop mode; capacity-1: wrap mode
  unsigned warps_per_cta;    // ceil(threads per CTA / 32)
  unsigned version;          // IKET_FORMAT_VERSION, checked by the runtime
};

// Per-warp header, 64 bytes, followed by capacity+1 records of 8 bytes (the
// last one is the scratch slot that absorbs events past capacity in stop mode).
struct WarpHeader {
  unsigned magic;  // 0x5745_4b49 "IKEW" once the warp started
  unsigned smid;
  unsigned cta[3];
  unsigned warp;  // warp index within the CTA
  unsigned long long start_globaltimer;
  unsigned long long start_clock;
  unsigned long long end_globaltimer;
  unsigned long long end_clock;
  unsigned count;  // events attempted (stored + dropped), written at exit
  unsigned flags;  // bit 0: started, bit 1: finished, 16-28: role id
};
static_assert(sizeof(WarpHeader) == 64, "iket: WarpHeader must be 64 bytes");

}  // namespace iket

// Both live in the module so the runtime finds them by name; a module holds
// one translation unit that includes this header with tracing enabled.
extern "C" {
__constant__ iket::State iket_state = {0ull, 0u, 0xffffffffu, 1u,
                                     IKET_FORMAT_VERSION};
__device__ unsigned long long iket_scratch[9];
}

namespace iket {
namespace detail {

__device__ __forceinline__ unsigned active_mask() {
  unsigned m;
  asm volatile("activemask.b32 %0;" : "=r"(m));
  return m;
}

// Largest cursor among the active lanes: lanes that sat out earlier events
// (inside `if (lane == 0)`) catch up here, so the record stream stays whole.
__device__ __forceinline__ unsigned max_active(unsigned mask, unsigned v) {
  unsigned r;
  asm volatile("redux.sync.max.u32 %0, %1, %2;" : "=r"(r) : "r"(v), "r"(mask));
  return r;
}

// clock32 reads the low word of %clock64: one CS2R, where %clock takes a
// uniform-register read and a move.
// leader reports whether this lane is the lowest active lane of mask.
__device__ __forceinline__ bool leader(unsigned mask) {
  unsigned lt;
  asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  return (mask & lt) == 0u;
}

__device__ __forceinline__ unsigned clock32() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return static_cast<unsigned>(c);
}

__device__ __forceinline__ unsigned long long clock64v() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return c;
}

// st_global stores one record with a global-space store (the pointer came
// from an integer, so the compiler would otherwise emit a generic store).
__device__ __forceinline__ void st_global(unsigned long long* p,
                                          unsigned long long v) {
  asm volatile("st.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ unsigned smid() {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

// Anchor pairs %globaltimer with %clock64 at the instant the timer ticks, so
// the pair is exact to a few cycles although the timer is coarse (32 ns on
// H200). Bounded: gives up after 4096 spins and takes the unaligned pair.
__device__ __forceinline__ void anchor(unsigned long long* gt,
                                       unsigned long long* clk) {
  unsigned long long t0 = globaltimer();
  unsigned long long t = t0;
  unsigned long long c = clock64v();
  for (int i = 0; i < 4096 && t == t0; ++i) {
    c = clock64v();
    t = globaltimer();
  }
  *gt = t;
  *clk = c;
}

}  // namespace detail

// Warp records one warp's events. Construct it once per thread at the top of
// the kernel; pass it by reference to device functions. Not copyable.
class Warp {
 public:
  __device__ __forceinline__ Warp() {
    const State s = iket_state;
    const unsigned tid =
        threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned w = tid >> 5;
    if (s.base == 0ull) {
      hdr_ = reinterpret_cast<WarpHeader*>(iket_scratch);
      cap_ = 0u;
      mask_ = 0xffffffffu;
      rec_ = iket_scratch + 8;
      cursor_ = 0u;
      return;
    }
    const unsigned long long cta =
        blockIdx.x +
        static_cast<unsigned long long>(gridDim.x) *
            (blockIdx.y + static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
    const unsigned long long stride = 64ull + 8ull * (s.capacity + 1ull);
    char* p = reinterpret_cast<char*>(s.base) +
              (cta * s.warps_per_cta + w) * stride;
    hdr_ = reinterpret_cast<WarpHeader*>(p);
    rec_ = reinterpret_cast<unsigned long long*>(p + 64);
    cap_ = s.capacity;
    mask_ = s.wrap_mask;
    cursor_ = 0u;
    unsigned long long gt, clk;
    detail::anchor(&gt, &clk);
    // Every active lane stores the same values to the same addresses.
    hdr_->smid = detail::smid();
    hdr_->cta[0] = blockIdx.x;
    hdr_->cta[1] = blockIdx.y;
    hdr_->cta[2] = blockIdx.z;
    hdr_->warp = w;
    hdr_->start_globaltimer = gt;
    hdr_->start_clock = clk;
    hdr_->magic = 0x57454b49u;
    hdr_->flags = 1u;
  }

  __device__ __forceinline__ ~Warp() {
    const unsigned m = detail::active_mask();
    const unsigned c = detail::max_active(m, cursor_);
    unsigned long long gt, clk;
    detail::anchor(&gt, &clk);
    if (detail::leader(m)) {  // one lane's atomics, not 32 serialized ones
      atomicMax(&hdr_->count, c);
      // The pair sits at offset 40, 8-byte aligned only: two 8-byte stores.
      hdr_->end_globaltimer = gt;
      hdr_->end_clock = clk;
      atomicOr(&hdr_->flags, 2u);
    }
  }

  Warp(const Warp&) = delete;
  Warp& operator=(const Warp&) = delete;

  __device__ __forceinline__ void mark(unsigned short name,
                                       unsigned payload = 0u) {
    emit(IKET_KIND_MARK, name, payload);
  }
  __device__ __forceinline__ void range_push(unsigned short name,
                                             unsigned payload = 0u) {
    emit(IKET_KIND_PUSH, name, payload);
  }
  // range_pop closes the innermost open push range.
  __device__ __forceinline__ void range_pop() { emit(IKET_KIND_POP, 0, 0u); }
  // range_pop(name) also asks the decoder to check that it closes `name`.
  __device__ __forceinline__ void range_pop(unsigned short name) {
    emit(IKET_KIND_POP, name, 0u);
  }
  __device__ __forceinline__ Token range_start(unsigned short name,
                                               unsigned payload = 0u) {
    emit(IKET_KIND_START, name, payload);
    Token t = {name, static_cast<unsigned short>(payload)};
    return t;
  }
  __device__ __forceinline__ void range_end(Token t) {
    emit(IKET_KIND_END, t.name, t.payload);
  }
  __device__ __forceinline__ void range_end(unsigned short name,
                                            unsigned payload = 0u) {
    emit(IKET_KIND_END, name, payload);
  }
  // set_role names the warp's role (a ROLE name); the last one set wins.
  // The role also goes into the header's flags (bits 16-28), so a wrapped
  // buffer that lost the ROLE event still names the warp's role.
  __device__ __forceinline__ void set_role(unsigned short role) {
    emit(IKET_KIND_ROLE, role, 0u);
    // Atomics (lanes that already left may have set the finished bit), by
    // one lane.
    if (detail::leader(detail::active_mask())) {
      atomicAnd(&hdr_->flags, ~(0x1fffu << 16));
      atomicOr(&hdr_->flags, static_cast<unsigned>(role & 0x1fffu) << 16);
    }
  }

 private:
  // The hot path: activemask, redux, clock, address, one 8-byte store. No
  // fence, no branch: in stop mode events past capacity land on the scratch
  // slot (min), in wrap mode the mask keeps the newest.
  __device__ __forceinline__ void emit(unsigned kind, unsigned short name,
                                       unsigned payload) {
#if defined(IKET_SAME_LANES) && IKET_SAME_LANES
    // Fast mode: the kernel promises that each warp records every event
    // with the same set of lanes (always the whole warp, or always lane 0),
    // so every lane's cursor is already right and no lanes need syncing.
    const unsigned c = cursor_;
#else
    const unsigned m = detail::active_mask();
    const unsigned c = detail::max_active(m, cursor_);
#endif
    const unsigned idx = min(c & mask_, cap_);
    const unsigned hi = (kind << 29) | (static_cast<unsigned>(name) << 16) |
                        (payload & 0xffffu);
    const unsigned lo = detail::clock32();
    detail::st_global(rec_ + idx,
                      (static_cast<unsigned long long>(hi) << 32) | lo);
    cursor_ = c + 1u;
  }

  WarpHeader* hdr_;
  unsigned long long* rec_;
  unsigned cap_;
  unsigned mask_;
  unsigned cursor_;
};

}  // namespace iket

#else  // tracing disabled: every call compiles to nothing.

namespace iket {
class Warp {
 public:
  __device__ __forceinline__ Warp() {}
  Warp(const Warp&) = delete;
  Warp& operator=(const Warp&) = delete;
  __device__ __forceinline__ void mark(unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void range_push(unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void range_pop() {}
  __device__ __forceinline__ void range_pop(unsigned short) {}
  __device__ __forceinline__ Token range_start(unsigned short name,
                                               unsigned payload = 0u) {
    Token t = {name, static_cast<unsigned short>(payload)};
    return t;
  }
  __device__ __forceinline__ void range_end(Token) {}
  __device__ __forceinline__ void range_end(unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void set_role(unsigned short) {}
};
}  // namespace iket

#endif  // IKET_ENABLE

#endif  // IKET_CUH
