// iket.cuh: in-kernel event tracing for CUDA C++ (nvcc and NVRTC).
//
// One header, no other includes. Build with -DIKET_ENABLE=1 to record events;
// without it every call compiles to nothing, so one source gives both the
// instrumented and the uninstrumented (baseline) build. Run the program
// under `iket run -- ./app` to trace it. An nvcc build is dormant: its SASS
// is the plain code and its PTX keeps the events, which `iket run` compiles
// again when the program loads it, so build with PTX (-arch=sm_90a does);
// -DIKET_LIVE=1 keeps them in the SASS instead (the default for NVRTC,
// -rdc=true and PyTorch extensions, which often keep no PTX).
//
//   #define MY_NAMES(X)                                 \
//     X(ROLE, producer) X(ROLE, consumer)               \
//     X(RANGE, load) X(RANGE, wait) X(RANGE, compute)   \
//     X(MARK, done)
//   IKET_NAMES(MY_NAMES)            // once per module, at file scope
//
//   __global__ void k(...) {
//     iket::Warp tr;                // first statement: one per thread
//     if (warp == 0) {
//       tr.set_role(iket_id::producer);
//       tr.range_push(iket_id::load, /*payload=*/stage);
//       ...
//       tr.range_pop();
//     } else {
//       tr.set_role(iket_id::consumer);
//       tr.range_push(iket_id::wait, stage);
//       ...
//       tr.range_next(iket_id::compute, stage);  // pop and push, one event
//       ...
//       tr.range_pop();
//     }
//     if (threadIdx.x == 0) tr.mark(iket_id::done);
//   }
//
// The calls: mark(name, payload), range_push(name, payload) / range_pop(),
// range_next(name, payload), range_start(name, payload) -> Token /
// range_end(token) for ranges that overlap, set_role(role). A payload is 16
// bits (a stage, an iteration).
//
// Lanes. Record with any lanes: the whole warp, lane 0 alone, some lanes,
// one after the other. Lane 0 stores the warp's events; an event recorded
// while lane 0 is elsewhere is stored apart by the lowest lane recording,
// and the decoder puts it back in time order (a wrap build counts it
// only). Such events from different lowest lanes (`if (lane == 5) ...; if
// (lane == 7) ...`), or ranges in two branches that run at once, can
// collide: the decoder names the warp.
//
// One advanced form, for hot loops where the plain calls cost too much:
// stamped pairs. tr.stamp() takes the time where a phase changes and
// range_next_pair / range_next_pop store two phase changes at once;
// iket::Batch keeps such pairs in registers and stores 32 at a time (see
// there). The layout written here is docs/FORMAT.md's; trace/ decodes it.
#ifndef IKET_CUH
#define IKET_CUH

#define IKET_FORMAT_VERSION 3

// Record kinds (3 bits). 0 marks an unwritten slot.
#define IKET_KIND_MARK 1u
#define IKET_KIND_PUSH 2u
#define IKET_KIND_POP 3u
#define IKET_KIND_START 4u
#define IKET_KIND_END 5u
#define IKET_KIND_ROLE 6u
#define IKET_KIND_NEXT 7u  // format 2: a pop and a push at one instant

// Name table. LIST is an X-macro whose entries are X(KIND, identifier) with
// KIND one of RANGE, MARK, ROLE. Ids start at 1 in list order; 0 means "none".
#define IKET__ENUM_ENTRY(kind, ident) ident,
#define IKET__TABLE_ENTRY(kind, ident) #kind " " #ident "\n"

#if defined(IKET_ENABLE) && IKET_ENABLE
// A separately compiled program (-rdc=true) links every translation unit's
// device globals into one module: there the header's globals are inline
// variables (one definition; C++17), so each translation unit may include
// this header, and all of them must declare the same IKET_NAMES list (one
// names header included everywhere). A whole-program build keeps a module
// per translation unit, each with its own globals.
#if defined(__CUDACC_RDC__)
#if __cplusplus < 201703L
#error "iket: -rdc=true builds need C++17 (-std=c++17) for the header's inline device globals"
#endif
#define IKET__LINKONCE inline
#else
#define IKET__LINKONCE
#endif
// A linkage block, not `extern "C" __device__ char ...[] = ...`: nvcc's host
// pass takes the latter for a declaration and leaves the symbol that the
// host-side registration of device globals refers to undefined.
#define IKET__DEFINE_TABLE(LIST)                                               \
  extern "C" {                                                                 \
  IKET__LINKONCE __device__ char iket_name_table[] =                           \
      "iket-names 1\n" LIST(IKET__TABLE_ENTRY);                               \
  }
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

// Stamp is a clock reading taken by Warp::stamp() for an event stored later
// (range_next(Stamp, ...), range_next_pair, range_next_pop).
struct Stamp {
  unsigned long long clock;
};

}  // namespace iket

#if defined(IKET_ENABLE) && IKET_ENABLE

// IKET_LIVE: 1 keeps the events in the SASS that the compiler builds (a
// live build: a launch without iket attached runs them with their stores
// off); 0, the default for nvcc, compiles them out of the SASS and keeps
// them in the module's PTX, which `iket run` compiles again with them on
// (a dormant build: without iket, the plain code). Builds that often
// leave no PTX to compile again are live by default: NVRTC (programs
// load what they compile, often a cubin), -rdc=true (the linked cubin
// has none) and PyTorch extensions (torch.utils.cpp_extension defines
// TORCH_EXTENSION_NAME; with TORCH_CUDA_ARCH_LIST set, as images often set
// it, it builds PTX only where the list says +PTX).
#ifndef IKET_LIVE
#if defined(__CUDACC_RTC__) || defined(__CUDACC_RDC__) || defined(TORCH_EXTENSION_NAME)
#define IKET_LIVE 1
#else
#define IKET_LIVE 0
#endif
#endif

// Build flags the runtime reads from iket_state: which buffer mode this build
// records in. (Bit 1 was the lane catch-up of format 2; format 3 needs none,
// and IKET_SAFE_LANES is ignored.)
#if defined(IKET_WRAP) && IKET_WRAP
#define IKET__BUILD_WRAP 1u
#else
#define IKET__BUILD_WRAP 0u
#endif

namespace iket {

// State is set by the runtime (cuModuleGetGlobal "iket_state") before each
// launch. base == 0 means no buffers: the warp's header address is null
// (its records start at address 0x40), each event's store is predicated
// off and the start and exit records are skipped.
struct State {
  unsigned long long base;   // device address of warp 0's header
  unsigned capacity;         // records per warp (power of two in wrap mode)
  unsigned wrap_mask;        // capacity-1 in a wrap build, else 0xffffffff
  unsigned warps_per_cta;    // ceil(threads per CTA / 32)
  unsigned version;          // IKET_FORMAT_VERSION, checked by the runtime
  unsigned build;            // bit 0: wrap build (read only)
  unsigned reserved;
};

// Per-warp header, 64 bytes, followed by capacity records of 8 bytes and the
// tail word (8 bytes). Lane 0 stores the warp's events upward from record 0
// (in stop mode the store of an event past capacity is predicated off; in
// wrap mode a ring). An event recorded while lane 0 is inactive is a side
// event: the lowest active lane stores it, in stop mode, downward from the
// last record with a cursor of its own (a wrap build only counts it), and
// at exit merges its count into the tail word (docs/FORMAT.md section 3).
struct WarpHeader {
  unsigned magic;  // 0x5745_4b49 "IKEW" once the warp started
  unsigned smid;
  unsigned cta[3];
  unsigned warp;  // warp index within the CTA
  unsigned long long start_globaltimer;
  unsigned long long start_clock;
  unsigned long long end_globaltimer;
  unsigned long long end_clock;
  unsigned count;  // lane 0's events attempted (stored + dropped), at exit
  unsigned flags;  // bit 0 started, 1 finished, 3 count saturated,
                   // 16-28 role id
};
static_assert(sizeof(WarpHeader) == 64, "iket: WarpHeader must be 64 bytes");

}  // namespace iket

// In the module so the runtime finds it by name (see IKET__LINKONCE for
// programs of several translation units).
extern "C" {
IKET__LINKONCE __constant__ iket::State iket_state = {
    0ull, 0u, 0xffffffffu, 1u, IKET_FORMAT_VERSION, IKET__BUILD_WRAP, 0u};
}
#if !IKET_LIVE
// iket_jit marks a dormant build's module: 0 in the SASS that nvcc built
// (its events are compiled out), 1 where iket compiled its PTX again with
// the events on.
extern "C" {
IKET__LINKONCE __device__ unsigned iket_jit = 0u;
}
#endif

namespace iket {
namespace detail {

// gate is 0 in the SASS that nvcc builds from this header, so that ptxas
// drops every event and the program runs its plain code, and 1 where iket
// compiled the module's PTX again with the gate set (`iket run` finds it by
// its register's name, iket_gate: the PTX that nvcc embeds keeps no
// comments). A live build
// (IKET_LIVE=1) has it 1 from the start.
__device__ __forceinline__ unsigned gate() {
#if IKET_LIVE
  return 1u;
#else
  unsigned g;
  asm volatile("{\n\t.reg .b32 iket_gate;\n\tmov.b32 iket_gate, 0;\n\tmov.b32 %0, iket_gate;\n\t}"
               : "=r"(g));
  return g;
#endif
}

__device__ __forceinline__ unsigned active_mask() {
  unsigned m;
  asm volatile("activemask.b32 %0;" : "=r"(m));
  return m;
}

// leader reports whether this lane is the lowest active lane of mask.
__device__ __forceinline__ bool leader(unsigned mask) {
  unsigned lt;
  asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
  return (mask & lt) == 0u;
}

__device__ __forceinline__ unsigned long long clock64v() {
  unsigned long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return c;
}

// IKET__NOW(r, w) reads the clock into r behind a store that never runs.
// A CS2R clock read right after a barrier (__syncthreads:
// BAR.SYNC.DEFER_BLOCKING) runs before the barrier completes; after a store
// (one predicated off at run time too), a shared load, a NOP, S2UR, a sleep
// or a fence it waits (measured on the H200 with CUDA 13.0): without one, a
// range_pop right after __syncthreads read its clock up to the whole wait
// early. The store writes the 32-bit word w to shared memory at address w,
// predicated on w being 1. w is the Warp's never() word, the same at every
// event and never 1 (a multiple of 8), which ptxas cannot know, so the
// store stays, and is tested once for the kernel: an issue slot that
// depends on nothing the event computes. A shared store, not a global one,
// needs no 64-bit address; and a barrier orders shared memory, so ptxas
// keeps the store after it (a local store, which needs no register at all,
// it moved above __syncthreads). (A WARPSYNC on the active mask, which
// also makes the clock wait, takes four instructions in a chain.)
#define IKET__NOW(r, w)                                                      \
  "{\n\t.reg .pred f;\n\tsetp.eq.u32 f, " w ", 1;\n\t"                        \
  "@f st.shared.u32 [" w "], " w ";\n\t}\n\t"                                 \
  "mov.u64 " r ", %%clock64;\n\t"

// IKET__TAG(dst, src, k, p) makes a record (format 2): the 64-bit clock src
// with the tag k and the payload part p added to its high word; the asm
// declares .b32 l and h.
#define IKET__TAG(dst, src, k, p)                                            \
  "mov.b64 {l, h}, " src ";\n\t"                                              \
  "add.u32 h, h, " k ";\n\t"                                                  \
  "add.u32 h, h, " p ";\n\t"                                                  \
  "mov.b64 " dst ", {l, h};\n\t"

// now is the clock read of an event (IKET__NOW), for Warp::stamp; w is the
// Warp's never() word.
__device__ __forceinline__ unsigned long long now(unsigned w) {
  unsigned long long c;
  asm volatile(IKET__NOW("%0", "%1") : "=l"(c) : "r"(w) : "memory");
  return c;
}

// An event reads the clock and stores one record. The record is the
// 64-bit clock plus the tag in the high word: low word = the clock's low
// word, high word = the clock's high word + k + p, with k = kind << 29 |
// name << 16 and p = payload & 0xffff (format version 2, docs/FORMAT.md:
// the decoder knows each event's full clock, so it subtracts the high word
// back out). Adding to the clock keeps the whole 64-bit read live, so
// ptxas reads it with one CS2R into the register pair it stores (CUDA 12.4
// and 13.0 alike; a record that keeps only the low word gets S2UR + NOP + a
// move from CUDA 13.0), and k + p is one IADD3. The clock is read behind a
// store that never runs (IKET__NOW), so an event after a barrier records
// the time the barrier completed. The "memory" clobber keeps every record
// these functions store in program order with the kernel's loads and
// stores in the compiler (volatile alone orders events only with each
// other and with other asm statements); Batch's packed records (pack_now,
// pack_at) carry none, their stores come later.
// record_one does that for Warp::emit in every lane with one cursor, one
// bound and one store: the lane records when no lane below it is active
// (lt is %lanemask_lt, all ones without buffers): lane 0 always, another
// lane only as the side writer, while lane 0 is not recording. Lane 0's
// cursor pos is the low word of its next record's address; another lane's
// is the complement of its next side record's (x is 0 in lane 0, all ones
// elsewhere, so pos ^ x is the address), so that every cursor steps up:
// the lane stores while pos < lim and steps pos by 8, not above top (the
// side cursor's address down by 8, not below its floor). Branch-free: the
// active mask (VOTE), LOP3, ISETP, LOP3, the store and the step (a VIADD
// and a VIMNMX predicated on the writer test: as many instructions as an
// add, a min and a select, and 1.82 SM cycles of throughput against 1.97
// on the H200), one store per event where lane 0 and the side writer had
// one each. The store that never runs is predicated on the lane's bound lim,
// the same at every event, so ptxas tests it once for the kernel: the event
// adds 12 cycles to a dependent chain, against 16 predicated on the cursor
// and 21 on the record's address (H200). The PTX both share:
// the declarations, the writer's test, the bound and the address (head);
// the store and the step (tail).
// Operands: %0 pos, %1 hi, %2 lim, %3 k, %4 p, %5 lt, %6 x, %7 top; c is the record.
// IKET__WRITER sets w when this lane records (record_one, record_two), and
// IKET__STEP(by) then steps its cursor by `by`, not above top, and closes
// the asm's block.
#define IKET__WRITER                                                         \
  "activemask.b32 m;\n\t"                                                    \
  "and.b32 m, m, %5;\n\t"                                                    \
  "setp.eq.u32 w, m, 0;\n\t"
#define IKET__STEP(by)                                                       \
  "@w add.u32 %0, %0, " by ";\n\t"                                            \
  "@w min.u32 %0, %0, %7;\n\t}"
#define IKET__ONE_HEAD                                                       \
  "{\n\t.reg .pred q, w;\n\t.reg .b64 c, a;\n\t"                            \
  ".reg .b32 al, l, h, m;\n\t"                                               \
  IKET__WRITER                                                               \
  "setp.lt.and.u32 q, %0, %2, w;\n\t"                                        \
  "xor.b32 al, %0, %6;\n\t"                                                  \
  "mov.b64 a, {al, %1};\n\t"
#define IKET__ONE_TAIL                                                       \
  "@q st.global.u64 [a], c;\n\t"                                             \
  IKET__STEP("8")
__device__ __forceinline__ void record_one(unsigned& pos, unsigned hi, unsigned lim,
                                           unsigned k, unsigned p, unsigned lt,
                                           unsigned x, unsigned top) {
  asm volatile(
      IKET__ONE_HEAD
      IKET__NOW("c", "%2")
      IKET__TAG("c", "c", "%3", "%4")
      IKET__ONE_TAIL
      : "+r"(pos)
      : "r"(hi), "r"(lim), "r"(k), "r"(p), "r"(lt), "r"(x), "r"(top)
      : "memory");
}
// record_one_c is record_one with a clock read earlier (Warp::stamp).
// record_one reads its clock inside its own asm statement on purpose: fed
// by a separate clock read, the same record compiles to as many
// instructions but issues more slowly.
__device__ __forceinline__ void record_one_c(unsigned& pos, unsigned hi, unsigned lim,
                                             unsigned k, unsigned p, unsigned lt,
                                             unsigned x, unsigned top,
                                             unsigned long long clk) {
  asm volatile(
      IKET__ONE_HEAD
      IKET__TAG("c", "%8", "%3", "%4")
      IKET__ONE_TAIL
      : "+r"(pos)
      : "r"(hi), "r"(lim), "r"(k), "r"(p), "r"(lt), "r"(x), "r"(top), "l"(clk)
      : "memory");
}
// record_two is record_one for two records, the first with the clock clk
// read earlier (Warp::stamp), the second with the clock now: the first at
// the address pos ^ x, the second at (pos + 8) ^ x (lane 0's next record,
// the side writer's next one down), each stored while its cursor is below
// lim, with the cursor stepped by 16. Two 8-byte stores, no branch.
// Operands: record_one's, then %8 clk, %9 k2, %10 p2 (%3, %4 the first's).
__device__ __forceinline__ void record_two(unsigned& pos, unsigned hi, unsigned lim,
                                           unsigned k1, unsigned p1, unsigned lt,
                                           unsigned x, unsigned top,
                                           unsigned long long clk, unsigned k2,
                                           unsigned p2) {
  asm volatile(
      "{\n\t.reg .pred q, r, w;\n\t.reg .b64 c, d, a, b;\n\t"
      ".reg .b32 al, bl, e, l, h, m;\n\t"
      IKET__WRITER
      "add.u32 e, %0, 8;\n\t"
      "setp.lt.and.u32 q, %0, %2, w;\n\t"
      "setp.lt.and.u32 r, e, %2, w;\n\t"
      "xor.b32 al, %0, %6;\n\t"
      "xor.b32 bl, e, %6;\n\t"
      "mov.b64 a, {al, %1};\n\t"
      "mov.b64 b, {bl, %1};\n\t"
      IKET__TAG("c", "%8", "%3", "%4")
      IKET__NOW("d", "%2")
      IKET__TAG("d", "d", "%9", "%10")
      "@q st.global.u64 [a], c;\n\t"
      "@r st.global.u64 [b], d;\n\t"
      IKET__STEP("16")
      : "+r"(pos)
      : "r"(hi), "r"(lim), "r"(k1), "r"(p1), "r"(lt), "r"(x), "r"(top), "l"(clk),
        "r"(k2), "r"(p2)
      : "memory");
}
#undef IKET__ONE_HEAD
#undef IKET__ONE_TAIL
#undef IKET__WRITER
#undef IKET__STEP
// record_at_c is record_at with a clock read earlier.
__device__ __forceinline__ void record_at_c(unsigned long long addr, unsigned on,
                                            unsigned k, unsigned p,
                                            unsigned long long clk) {
  asm volatile(
      "{\n\t.reg .pred q;\n\t.reg .b64 c;\n\t.reg .b32 l, h;\n\t"
      "setp.ne.u32 q, %1, 0;\n\t"
      IKET__TAG("c", "%4", "%2", "%3")
      "@q st.global.u64 [%0], c;\n\t}" ::"l"(addr),
      "r"(on), "r"(k), "r"(p), "l"(clk)
      : "memory");
}
// record_at is record_one's store without the bound or the writer test,
// stored when on is not zero: a wrap build's address is always inside the
// ring, and only lane 0 stores. w is the Warp's never() word (IKET__NOW).
__device__ __forceinline__ void record_at(unsigned long long addr, unsigned on,
                                          unsigned k, unsigned p, unsigned w) {
  asm volatile(
      "{\n\t.reg .pred q;\n\t.reg .b64 c;\n\t.reg .b32 l, h;\n\t"
      "setp.ne.u32 q, %1, 0;\n\t"
      IKET__NOW("c", "%4")
      IKET__TAG("c", "c", "%2", "%3")
      "@q st.global.u64 [%0], c;\n\t}" ::"l"(addr),
      "r"(on), "r"(k), "r"(p), "r"(w)
      : "memory");
}
// red_max, red_or, red_and and red_add update a header word with a reduction
// (red.global returns nothing; atomicMax and the like on the generic pointer
// compile to ATOM, which returns the old value) through its generic address,
// which points to global memory (the buffers: only live warps reduce). They
// cost what atomics do; ~Warp stores plainly where one lane may (see there).
#define IKET__RED(fn, op)                                                  \
  __device__ __forceinline__ void fn(unsigned* p, unsigned v) {            \
    asm volatile(                                                          \
        "{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\t"                \
        "red.global." op " [g], %1;\n\t}" ::"l"(p),                          \
        "r"(v)                                                             \
        : "memory");                                                       \
  }
IKET__RED(red_max, "max.u32")
IKET__RED(red_or, "or.b32")
IKET__RED(red_and, "and.b32")
IKET__RED(red_add, "add.u32")
#undef IKET__RED

// st_low_half stores v's low 16 bits over the low half of the word at p
// (little-endian: its first two bytes), a global address.
__device__ __forceinline__ void st_low_half(unsigned* p, unsigned v) {
  asm volatile(
      "{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\t"
      "st.global.u16 [g], %1;\n\t}" ::"l"(p),
      "h"(static_cast<unsigned short>(v))
      : "memory");
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

__device__ __forceinline__ unsigned lane_id() {
  unsigned l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

// pack_now is a record (format 2, as record_one writes it) with the clock now;
// pack_at one with a clock read earlier (IKET__TAG, as every record). For
// Batch, which stores later. w is the Warp's never() word (IKET__NOW).
__device__ __forceinline__ unsigned long long pack_now(unsigned k, unsigned p,
                                                       unsigned w) {
  unsigned long long r;
  asm volatile(
      "{\n\t.reg .b64 c;\n\t.reg .b32 l, h;\n\t"
      IKET__NOW("c", "%3")
      IKET__TAG("%0", "c", "%1", "%2") "}"
      : "=l"(r)
      : "r"(k), "r"(p), "r"(w));
  return r;
}
__device__ __forceinline__ unsigned long long pack_at(unsigned long long clk,
                                                      unsigned k, unsigned p) {
  unsigned long long r;
  asm("{\n\t.reg .b32 l, h;\n\t"
      IKET__TAG("%0", "%1", "%2", "%3") "}"
      : "=l"(r)
      : "l"(clk), "r"(k), "r"(p));
  return r;
}

// store_pair stores two packed records at addr (Batch: each lane its own
// pair): one 16-byte store when addr is 16-byte aligned and both fit below
// end, otherwise each record that fits alone.
__device__ __forceinline__ void store_pair(unsigned long long addr, unsigned end,
                                           unsigned long long r1,
                                           unsigned long long r2) {
  asm volatile(
      "{\n\t.reg .pred q1, q2, a, v, s1, s2;\n\t.reg .b32 al, ah, e;\n\t"
      "mov.b64 {al, ah}, %0;\n\t"
      "setp.lt.u32 q1, al, %1;\n\t"
      "add.u32 e, al, 8;\n\t"
      "setp.lt.u32 q2, e, %1;\n\t"
      "and.b32 e, al, 8;\n\t"
      "setp.eq.u32 a, e, 0;\n\t"
      "and.pred v, a, q2;\n\t"
      "and.pred s1, q1, !v;\n\t"
      "and.pred s2, q2, !a;\n\t"
      "@v st.global.v2.u64 [%0], {%2, %3};\n\t"
      "@s1 st.global.u64 [%0], %2;\n\t"
      "@s2 st.global.u64 [%0+8], %3;\n\t}" ::"l"(addr),
      "r"(end), "l"(r1), "l"(r2));
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

// The cursor saturates here instead of wrapping past 2^32 (then the header's
// count is a lower bound and flag bit 3 says so); far enough below 2^32 that
// a step of 8 (one event) or 16 (a pair) cannot wrap.
constexpr unsigned kCursorLimit = 0xffffffe0u;

}  // namespace detail

class Batch;

// Warp records one warp's events. Construct it once per thread at the top of
// the kernel; pass it by reference to device functions. Not copyable.
class Warp {
 public:
  __device__ __forceinline__ Warp() : g_(detail::gate()) {
    if (g_ == 0u) {
      // Dormant build: nothing below is compiled.
      first_ = 0u;
      lt_ = 0xffffffffu;
      pos_ = 0u;
#if IKET__BUILD_WRAP
      mask_ = 0u;
      on_ = 0u;
      sc_ = 0u;
#endif
      return;
    }
    const State s = iket_state;
    const unsigned tid =
        threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned w = tid >> 5;
    char* p;
    unsigned cap;
    if (s.base == 0ull) {
      p = nullptr;
      cap = 0u;
    } else {
      const unsigned long long cta =
          blockIdx.x +
          static_cast<unsigned long long>(gridDim.x) *
              (blockIdx.y +
               static_cast<unsigned long long>(gridDim.y) * blockIdx.z);
      const unsigned long long stride = 64ull + 8ull * (s.capacity + 1ull);
      p = reinterpret_cast<char*>(s.base) +
          (cta * s.warps_per_cta + w) * stride;
      cap = s.capacity;
    }
    WarpHeader* const hd = reinterpret_cast<WarpHeader*>(p);
    first_ = static_cast<unsigned>(reinterpret_cast<unsigned long long>(p + 64));
    // Lane 0 stores the warp's events; the lowest active lane stores those
    // recorded while lane 0 is elsewhere (record_one). Without buffers no
    // lane ever stores.
    unsigned lt;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    const bool lane0 = lt == 0u;  // no lane below it
    lt_ = s.base == 0ull ? 0xffffffffu : lt;
#if IKET__BUILD_WRAP
    pos_ = 0u;
    // From the capacity, not wrap_mask: any capacity keeps the ring in the
    // warp's slot. No buffers: nothing stored.
    mask_ = cap != 0u ? 8u * (cap - 1u) : 0u;
    on_ = lane0 && cap != 0u ? 1u : 0u;
    sc_ = 0u;
#else
    // Lane 0's records start at record 0 and stop before the tail word.
    // Another lane's side records start at the last record and go down
    // while their address is at least record 0's (lim), the cursor stopping
    // two slots below it (top), so that a side count of capacity + 1 says
    // that more were recorded than stored. The cursor is complemented, so
    // that it steps up in every lane.
    pos_ = lane0 ? first_ : ~(first_ + 8u * (cap - 1u));
#endif
    if (s.base == 0ull) return;
    unsigned long long gt, clk;
    detail::anchor(&gt, &clk);
    // Every active lane stores the same values to the same addresses.
    hd->smid = detail::smid();
    hd->cta[0] = blockIdx.x;
    hd->cta[1] = blockIdx.y;
    hd->cta[2] = blockIdx.z;
    hd->warp = w;
    hd->start_globaltimer = gt;
    hd->start_clock = clk;
    hd->magic = 0x57454b49u;
    hd->flags = 1u;
  }

  __device__ __forceinline__ ~Warp() {
    // No buffers (no iket attached): nothing to close.
    if (g_ == 0u || !live()) return;
    WarpHeader* const hd = hdr();
    const unsigned m = detail::active_mask();
#if IKET__BUILD_WRAP
    const unsigned n = pos_;
#else
    const unsigned n = pos_ - first_;
#endif
    // Lane 0's cursor is the warp's: bit 3 when it saturated.
    const unsigned f = pos_ == detail::kCursorLimit ? 2u | 8u : 2u;
    // A lane that wrote side events merges their count into the tail word
    // (the largest lane's) and counts itself in its high half.
    {
      const unsigned cap = iket_state.capacity;
#if IKET__BUILD_WRAP
      const unsigned ns = min(sc_, cap + 1u);  // at most capacity + 1, as in stop mode
#else
      const unsigned ns = x() != 0u ? (first_ + 8u * (cap - 1u) - ~pos_) >> 3 : 0u;
#endif
      if (ns != 0u) {
        unsigned* const tail =
            reinterpret_cast<unsigned*>(reinterpret_cast<char*>(hd) + 64 + 8ull * cap);
        detail::red_max(tail, ns);
        detail::red_add(tail + 1, 1u);
      }
    }
    unsigned long long gt, clk;
    detail::anchor(&gt, &clk);
    if (m == 0xffffffffu) {
      // The whole warp leaves together: no other lane of it wrote the exit
      // fields before or will after, so lane 0 stores them plainly: the
      // count, the end anchor, and the flags' low half (started, finished,
      // bit 3), which set_role's reductions leave alone (they own the role
      // in the high half). Plain stores because atomics or reductions at
      // the kernel's tail cost a long kernel measurably more. The warp
      // barrier orders a set_role by another lane (its reductions on the
      // same word) before lane 0's store.
      __syncwarp();
      if (detail::leader(m)) {
        hd->count = n >> 3;
        // The pair sits at offset 40, 8-byte aligned only: two 8-byte stores.
        hd->end_globaltimer = gt;
        hd->end_clock = clk;
        detail::st_low_half(&hd->flags, 1u | f);
      }
    } else if (detail::leader(m)) {
      // Lanes leaving apart (a partial warp, or lanes that returned early):
      // each group's leader merges its fields with reductions; the count
      // and the saturation bit are lane 0's group's.
      if (m & 1u) detail::red_max(&hd->count, n >> 3);
      hd->end_globaltimer = gt;
      hd->end_clock = clk;
      detail::red_or(&hd->flags, (m & 1u) ? f : 2u);
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
  // range_next closes the innermost open push range and opens `name` at the
  // same instant, for phases that follow each other (wait, then compute,
  // then wait ...): what range_pop(); range_push(name, payload); records,
  // as one NEXT record, so it costs one event.
  __device__ __forceinline__ void range_next(unsigned short name,
                                             unsigned payload = 0u) {
    emit(IKET_KIND_NEXT, name, payload);
  }
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
  // stamp reads the clock for an event stored later: take it where a phase
  // changes, store the event where the warp waits anyway (after issuing its
  // copies or MMAs, say), off the path the next phase waits on. The warp
  // must record no other event between stamp() and the call that uses the
  // stamp: a warp's records are stored in time order, and the decoder
  // unwraps each record's clock from the one before, so an older stamp
  // would put that record and every later one of the warp 2^32 cycles late
  // with wrong tags (docs/FORMAT.md). Until the stamped event is stored, a
  // warp that hangs or faults shows the previous phase as its last.
  __device__ __forceinline__ Stamp stamp() {
    Stamp t = {g_ != 0u ? detail::now(never()) : 0ull};
    return t;
  }
  // range_next(t, ...) is range_next at the instant t was stamped (no other
  // event since stamp(); see there).
  __device__ __forceinline__ void range_next(Stamp t, unsigned short name,
                                             unsigned payload = 0u) {
    emit_at(t, IKET_KIND_NEXT, name, payload);
  }
  // range_next_pair(t, n1, p1, n2, p2) is range_next(t, n1, p1) followed by
  // range_next(n2, p2) now, for the two phase changes of one loop step
  // (wait, then issue; wait, then compute); no other event since stamp().
  // Two 8-byte stores, in any lane pattern, as two events would make.
  __device__ __forceinline__ void range_next_pair(Stamp t, unsigned short n1,
                                                  unsigned p1, unsigned short n2,
                                                  unsigned p2 = 0u) {
    emit_pair(t, IKET_KIND_NEXT, n1, p1, IKET_KIND_NEXT, n2, p2);
  }
  // range_next_pop(t, name, payload) is range_next(t, name, payload)
  // followed by range_pop() now: a loop's last step (no other event since
  // stamp(); stored as range_next_pair is).
  __device__ __forceinline__ void range_next_pop(Stamp t, unsigned short name,
                                                 unsigned payload = 0u) {
    emit_pair(t, IKET_KIND_NEXT, name, payload, IKET_KIND_POP, 0, 0u);
  }
  // set_role names the warp's role (a ROLE name); the last one set wins.
  // The role also goes into the header's flags (bits 16-28), so a wrapped
  // buffer that lost the ROLE event still names the warp's role.
  __device__ __forceinline__ void set_role(unsigned short role) {
    emit(IKET_KIND_ROLE, role, 0u);
    // Reductions (lanes that already left may have set the finished bit), by
    // one lane.
    if (g_ != 0u && live() && detail::leader(detail::active_mask())) {
      detail::red_and(&hdr()->flags, ~(0x1fffu << 16));
      detail::red_or(&hdr()->flags, static_cast<unsigned>(role & 0x1fffu) << 16);
    }
  }
  // sync_lanes does nothing: format 3 records any lane pattern (kept so
  // that sources written for format 2 still build, with a warning).
  [[deprecated("iket: format 3 records any lane pattern; sync_lanes() does nothing")]]
  __device__ __forceinline__ void sync_lanes() {}

 private:
  friend class Batch;
  // The hot path (record_one): whether this lane records (the active mask,
  // VOTE, and a LOP3), the cursor (the low word of the next record's
  // address: a warp's buffer never straddles a 4 GiB boundary, the runtime
  // allocates so) against its bound (ISETP) and into an address (LOP3), a
  // shared store that never runs (STS, its predicate tested once: the
  // clock waits for a barrier before it), read the 64-bit clock (CS2R), add
  // kind, name and payload to its high word (IADD3), one 8-byte store
  // predicated off past capacity and in lanes that do not record (STG),
  // advance the cursor, saturating (VIADD, VIMNMX). A payload that changes
  // from event to event adds its add (a VIADD), one of unknown range also
  // its mask. z() is zero at run time: without a per-lane term, ptxas moves
  // the add of a warp-uniform payload (a stage index) to the uniform
  // datapath and the clock there and back, four moves more. No fence, no
  // branch, no warp-wide step. A wrap build masks a byte offset instead of
  // comparing, and only counts side events.
  __device__ __forceinline__ void emit(unsigned kind, unsigned short name,
                                       unsigned payload) {
    if (g_ == 0u) return;
#if IKET__BUILD_WRAP
    const unsigned c = pos_;
    detail::record_at(slot(c), on_, tag(kind, name), addend(payload), never());
    wrap_step(c, 1u);
#else
    detail::record_one(pos_, hi(), lim(), tag(kind, name), addend(payload), lt_, x(), top());
#endif
  }
  // emit_at is emit with a clock read earlier.
  __device__ __forceinline__ void emit_at(Stamp t, unsigned kind,
                                          unsigned short name, unsigned payload) {
    if (g_ == 0u) return;
#if IKET__BUILD_WRAP
    const unsigned c = pos_;
    detail::record_at_c(slot(c), on_, tag(kind, name), addend(payload), t.clock);
    wrap_step(c, 1u);
#else
    detail::record_one_c(pos_, hi(), lim(), tag(kind, name), addend(payload), lt_, x(), top(),
                         t.clock);
#endif
  }
  // emit_pair stores two events, the first at t, the second now.
  __device__ __forceinline__ void emit_pair(Stamp t, unsigned kind1,
                                            unsigned short name1, unsigned payload1,
                                            unsigned kind2, unsigned short name2,
                                            unsigned payload2) {
    emit_pair_tags(t, tag(kind1, name1), addend(payload1), tag(kind2, name2),
                   addend(payload2));
  }
  // emit_pair_tags is emit_pair with the tags and addends made (Batch).
  __device__ __forceinline__ void emit_pair_tags(Stamp t, unsigned k1, unsigned a1,
                                                 unsigned k2, unsigned a2) {
    if (g_ == 0u) return;
#if IKET__BUILD_WRAP
    const unsigned c = pos_;
    detail::record_at_c(slot(c), on_, k1, a1, t.clock);
    // Saturated, both go to the stuck slot, as every later event does.
    detail::record_at(slot(min(c + 8u, detail::kCursorLimit)), on_, k2, a2, never());
    wrap_step(c, 2u);
#else
    detail::record_two(pos_, hi(), lim(), k1, a1, lt_, x(), top(), t.clock, k2, a2);
#endif
  }
#if IKET__BUILD_WRAP
  // wrap_step advances a wrap build's cursor from c past n events, and
  // counts them as side events when this lane is the lowest active one but
  // not lane 0 (lt_ | 1 is 1 in lane 0, which is active when it records).
  __device__ __forceinline__ void wrap_step(unsigned c, unsigned n) {
    sc_ += (detail::active_mask() & (lt_ | 1u)) == 0u ? n : 0u;
    pos_ = min(c + 8u * n, detail::kCursorLimit);
  }
#endif
  // hi is the high word of every record's address: the runtime places the
  // buffers inside one 4 GiB window (docs/FORMAT.md), so it is the base's,
  // read from the constant bank. hi, x, lim and top are derived at each
  // event rather than held: a member is a register live through the whole
  // kernel, which a kernel at its register limit pays for in occupancy or
  // in loads kept in flight (docs/OVERHEAD.md).
  __device__ __forceinline__ unsigned hi() const {
    return static_cast<unsigned>(iket_state.base >> 32);
  }
#if !IKET__BUILD_WRAP
  // x is 0 in lane 0, all ones in the others (and without buffers), so
  // that pos_ ^ x is the record's address in one LOP3.
  __device__ __forceinline__ unsigned x() const { return lt_ | ~(lt_ - 1u); }
  // lim is the cursor's bound: lane 0's stops before the tail word, a side
  // cursor while its address is at least record 0's; 0 without buffers.
  __device__ __forceinline__ unsigned lim() const {
    return iket_state.base == 0ull ? 0u
           : x() != 0u             ? 0u - first_
                                   : first_ + 8u * iket_state.capacity;
  }
  // top is the cursor's saturation: lane 0's kCursorLimit, a side cursor's
  // two slots below record 0.
  __device__ __forceinline__ unsigned top() const {
    return x() != 0u ? ~(first_ - 16u) : detail::kCursorLimit;
  }
#endif
  // live reports whether the launch has buffers (the runtime set
  // iket_state.base): lt_ is all ones without (see the constructor).
  __device__ __forceinline__ bool live() const { return lt_ != 0xffffffffu; }
  // hdr is the warp's header, 64 bytes below record 0 (null without
  // buffers): derived, so that no register holds it through the kernel.
  __device__ __forceinline__ WarpHeader* hdr() const {
    return reinterpret_cast<WarpHeader*>(
        ((static_cast<unsigned long long>(hi()) << 32) | first_) - 64ull);
  }
  // slot is the address of cursor c's record: stop, c is its low word;
  // wrap, a byte count taken modulo the ring.
  __device__ __forceinline__ unsigned long long slot(unsigned c) const {
#if IKET__BUILD_WRAP
    return (static_cast<unsigned long long>(hi()) << 32) | (first_ + (c & mask_));
#else
    return (static_cast<unsigned long long>(hi()) << 32) | c;
#endif
  }
  // never is the word that IKET__NOW's store is predicated on and stored
  // to (it never runs): the same at every event and never 1 (a multiple
  // of 8). Stop: the lane's bound (0 without buffers); wrap: record 0's
  // low word.
  __device__ __forceinline__ unsigned never() const {
#if IKET__BUILD_WRAP
    return first_;
#else
    return lim();
#endif
  }
  // tag is a record's kind and name in place (format 2, docs/FORMAT.md);
  // addend is the payload's part, plus z() (see emit's comment).
  static __device__ __forceinline__ unsigned tag(unsigned kind, unsigned short name) {
    return (kind << 29) | (static_cast<unsigned>(name) << 16);
  }
  // z is 0 in a launch with buffers (bit 31 of %lanemask_lt is clear in
  // every lane), 1 without (nothing is stored then), and a per-lane value
  // to ptxas, which then keeps the tag's add on the vector datapath.
  __device__ __forceinline__ unsigned z() const { return lt_ >> 31; }
  __device__ __forceinline__ unsigned addend(unsigned payload) const {
    return (payload & 0xffffu) + z();
  }

  unsigned g_;      // detail::gate(): 0 in a dormant build
  unsigned first_;  // low word of record 0's address
#if IKET__BUILD_WRAP
  unsigned mask_;  // 8 * (capacity - 1): byte offset mask
  unsigned on_;    // 1 in lane 0 of a launch with buffers: it stores
  unsigned sc_;    // side events
#endif
  unsigned lt_;     // %lanemask_lt (all ones without buffers)
  // stop: in lane 0 the low word of the next record's address, in the
  // others its complement for the next side record; wrap: bytes.
  unsigned pos_;
};

// Batch keeps a warp's stamped pairs (range_next_pair, range_next_pop) in
// registers, lane i holding the warp's i-th pending pair, and stores them 32
// at a time: each lane stores its own pair, so one flush is one 16-byte store
// per lane (512 contiguous bytes) where 32 pairs recorded through Warp take
// 64 stores. For hot loops where the stores themselves cost (the gemm's
// consumer warps: docs/OVERHEAD.md, "Where the cost goes"). Use it where the warp
// records pairs with all 32 lanes:
//
//   iket::Batch batch(tr);          // in the scope of the loop
//   for (...) {
//     const iket::Stamp t = tr.stamp();
//     ...
//     batch.range_next_pair(t, iket_id::compute, s, iket_id::wait, s + 1);
//   }                               // pending pairs are stored when batch
//                                   // is destroyed, or by batch.flush()
//
// Each pair takes its slots when it is recorded, so the warp's other events
// (through tr) may come between and the buffer keeps program order; the
// records are the same, at the same slots, as Warp's calls would write
// (docs/FORMAT.md). A pair recorded without all 32 lanes active is stored at
// once, as Warp's call stores it, and so is every pair in a wrap build (in a
// ring a later event could take a pending pair's slot). flush() may be
// called by some lanes only (lanes that leave early run it in the
// destructor): each stores its own pair, and the batch starts again only
// when the whole warp flushes. Until a flush, pending pairs are only in
// registers: a warp that hangs or faults loses up to 32 of them, and readers
// take an unfinished warp's records as ending at its first unwritten slot,
// so it shows the phase before them as its last (watch mode too); flush
// where a hang should still show the last phases (the gemm does after each
// tile). Build without IKET_ENABLE and a Batch is nothing.
class Batch {
 public:
  // c_ starts at the end of the records, where a store is predicated off,
  // so a lane can never store outside the warp's slot (a wrap build's Batch
  // stores nothing itself).
  // Every lane stores its own pair, so each needs the records' end (the
  // Warp's bound is lane 0's only).
  __device__ __forceinline__ explicit Batch(Warp& w)
      : w_(w), n_(0u), lane_(detail::lane_id()), c_(0u), end_(0u), r1_(0ull), r2_(0ull) {
#if !IKET__BUILD_WRAP
    end_ = w.first_ + (w.live() ? 8u * iket_state.capacity : 0u);
    c_ = end_;
#endif
  }
  __device__ __forceinline__ ~Batch() { flush(); }
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;

  // range_next_pair is Warp::range_next_pair, batched.
  __device__ __forceinline__ void range_next_pair(Stamp t, unsigned short n1,
                                                  unsigned p1, unsigned short n2,
                                                  unsigned p2 = 0u) {
    add(t, Warp::tag(IKET_KIND_NEXT, n1), w_.addend(p1), Warp::tag(IKET_KIND_NEXT, n2),
        w_.addend(p2));
  }
  // range_next_pop is Warp::range_next_pop, batched.
  __device__ __forceinline__ void range_next_pop(Stamp t, unsigned short name,
                                                 unsigned payload = 0u) {
    add(t, Warp::tag(IKET_KIND_NEXT, name), w_.addend(payload), Warp::tag(IKET_KIND_POP, 0),
        w_.addend(0u));
  }
  // flush stores the pending pairs now, each lane its own. Only a flush by
  // the whole warp empties the batch: were some lanes to start again alone,
  // the lanes would disagree on which holds the next pair and lose some.
  // Lanes that flush without the others keep theirs and store it again,
  // the same bytes, when the whole warp flushes.
  __device__ __forceinline__ void flush() {
    if (w_.g_ == 0u) return;
    flush(detail::active_mask() == 0xffffffffu);
  }

 private:
  __device__ __forceinline__ void add(Stamp t, unsigned k1, unsigned p1, unsigned k2,
                                      unsigned p2) {
    if (w_.g_ == 0u) return;
    // A wrap build stores at once: in a ring an event recorded after a
    // pending pair could take its slot again before the flush, which would
    // then write the older pair over it.
    if (IKET__BUILD_WRAP) {
      w_.emit_pair_tags(t, k1, p1, k2, p2);
      return;
    }
    if (detail::active_mask() != 0xffffffffu) {
      // Some lanes have left, or record apart: those here store the pairs
      // they hold now rather than at the end, so that the buffer is whole
      // as soon as it can be (the header may already say finished).
      flush(false);
      w_.emit_pair_tags(t, k1, p1, k2, p2);
      return;
    }
    // Lane 0's cursor is the warp's (lanes may have recorded apart before).
    const unsigned c = __shfl_sync(0xffffffffu, w_.pos_, 0);
    const unsigned long long r1 = detail::pack_at(t.clock, k1, p1);
    const unsigned long long r2 = detail::pack_now(k2, p2, w_.never());
    // Selects, not a branch: every lane runs the same instructions.
    const bool mine = lane_ == n_;
    r1_ = mine ? r1 : r1_;
    r2_ = mine ? r2 : r2_;
    c_ = mine ? c : c_;
#if !IKET__BUILD_WRAP
    w_.pos_ = w_.x() == 0u ? min(c + 16u, detail::kCursorLimit) : w_.pos_;
#endif
    if (++n_ == 32u) flush(true);
  }
  // flush(whole) is flush() when the caller knows whether all 32 lanes are
  // here.
  __device__ __forceinline__ void flush(bool whole) {
    if (w_.g_ == 0u) return;
    if (n_ != 0u) {
      if (lane_ < n_) store();
      if (whole) n_ = 0u;
    }
  }
  // store writes this lane's pending pair where Warp::emit_pair would have
  // (stop mode: a wrap build has none pending).
  __device__ __forceinline__ void store() const {
#if !IKET__BUILD_WRAP
    detail::store_pair(w_.slot(c_), end_, r1_, r2_);
#endif
  }

  Warp& w_;
  unsigned n_;     // pending pairs: lanes 0 .. n_-1 hold one each
  unsigned lane_;  // this lane
  unsigned c_;     // this lane's pending pair's cursor
  unsigned end_;   // the records' end (stop mode)
  unsigned long long r1_, r2_;  // and its two records
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
  __device__ __forceinline__ void range_next(unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ Token range_start(unsigned short name,
                                               unsigned payload = 0u) {
    Token t = {name, static_cast<unsigned short>(payload)};
    return t;
  }
  __device__ __forceinline__ void range_end(Token) {}
  __device__ __forceinline__ void range_end(unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ Stamp stamp() {
    Stamp t = {0ull};
    return t;
  }
  __device__ __forceinline__ void range_next(Stamp, unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void range_next_pair(Stamp, unsigned short, unsigned,
                                                  unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void range_next_pop(Stamp, unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void set_role(unsigned short) {}
  [[deprecated("iket: format 3 records any lane pattern; sync_lanes() does nothing")]]
  __device__ __forceinline__ void sync_lanes() {}
};
class Batch {
 public:
  __device__ __forceinline__ explicit Batch(Warp&) {}
  Batch(const Batch&) = delete;
  Batch& operator=(const Batch&) = delete;
  __device__ __forceinline__ void range_next_pair(Stamp, unsigned short, unsigned,
                                                  unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void range_next_pop(Stamp, unsigned short, unsigned = 0u) {}
  __device__ __forceinline__ void flush() {}
};
}  // namespace iket

#endif  // IKET_ENABLE

#endif  // IKET_CUH
