/* fake_internal.h: state shared by fakecuda.c (driver), fakemod.c (modules
 * and kernels) and fakecupti.c (CUPTI), which build one libcuda.so.1. */
#ifndef FAKE_INTERNAL_H
#define FAKE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "fake_cuda.h"

#define FK_EXPORT __attribute__((visibility("default")))

enum { FK_MAGIC_CTX = 0x43545831, FK_MAGIC_STREAM = 0x53545231, FK_MAGIC_EVENT = 0x45564e31,
       FK_MAGIC_MOD = 0x4d4f4431, FK_MAGIC_FUNC = 0x46554e31, FK_MAGIC_GRAPH = 0x47525031,
       FK_MAGIC_EXEC = 0x45584531 };

struct CUctx_st {
  uint32_t magic;
  uint32_t uid;
  int primary;
  struct CUctx_st *next;
};

struct CUstream_st {
  uint32_t magic;
  unsigned flags;          /* CU_STREAM_NON_BLOCKING or 0 */
  int kind;                /* 0 created, 1 legacy, 2 per-thread */
  int hung;                /* a kernel on it (or work it waits for) never ends */
  int capturing;           /* CU_STREAM_CAPTURE_STATUS_* */
  int capture_mode;
  pthread_t capture_thread;
  struct CUgraph_st *capture;
  CUaccessPolicyWindow window; /* cuStreamSetAttribute's access-policy window */
  struct CUstream_st *next;
};

struct CUevent_st {
  uint32_t magic;
  unsigned flags;
  int recorded, pending;
  uint64_t busy_ns; /* the device's busy time when it completed */
  struct CUevent_st *next;
};

enum { FK_PLAIN, FK_PC, FK_UNPAIRED, FK_HANG, FK_FAULT };

struct CUfunc_st {
  uint32_t magic;
  struct CUmod_st *mod;
  char *name;
  int behaviour;
  struct CUfunc_st *next;
};

struct CUmod_st {
  uint32_t magic;
  uint32_t id;
  int instrumented;
  char *image;            /* the descriptor, as given */
  unsigned char *cubin;   /* a "cubin PATH" line's file: the image CUPTI reports */
  size_t cubin_size;
  unsigned char *state;   /* iket_state, 32 bytes */
  unsigned char *jit;     /* iket_jit, 4 bytes, when a ".global ... iket_jit" line declares it */
  int gate;               /* a "mov.b32 iket_gate, N;" line's N (0: the kernels write nothing), else 1 */
  char *names;            /* iket_name_table */
  size_t names_size;      /* with its NUL */
  uint16_t id_producer, id_consumer, id_load, id_compute;
  struct CUfunc_st *funcs;
  struct CUmod_st *next;
};

enum { FK_NODE_KERNEL, FK_NODE_COPY, FK_NODE_SET, FK_NODE_EVENT };

typedef struct {
  int kind;
  struct CUfunc_st *f;
  unsigned grid[3], block[3];
  void *dst;
  const void *src;
  size_t n;
  unsigned char value;
  struct CUevent_st *ev;
} fk_node;

struct CUgraph_st {
  uint32_t magic;
  fk_node *nodes;
  int n, cap;
  struct CUgraph_st *next;
};

struct CUgraphExec_st {
  uint32_t magic;
  fk_node *nodes;
  int n;
  struct CUgraphExec_st *next;
};

enum { FK_ALLOC_DEVICE, FK_ALLOC_HOST, FK_ALLOC_GLOBAL };

typedef struct {
  uintptr_t base;
  size_t size;
  int kind;
  void *map;      /* munmap this (FAKE_ALLOC_STRADDLE) or NULL: free(base) */
  size_t map_len;
} fk_alloc;

/* Checks at the start of an entry point (fk_enter, which takes the lock). */
enum { FK_NEED_INIT = 1, FK_NEED_CTX = 2, FK_STICKY = 4, FK_UNSAFE = 8 };
CUresult fk_enter(int flags);
#define FK_BEGIN(flags)                 \
  CUresult rc_ = fk_enter(flags);       \
  if (rc_ != CUDA_SUCCESS) goto out_
#define FK_FAIL(code) \
  do {                \
    rc_ = (code);     \
    goto out_;        \
  } while (0)
#define FK_END \
  out_:        \
  fk_unlock(); \
  return rc_

/* The lock serialises the fake's state. It is recursive, and the fake
 * never holds it while it calls a CUPTI callback or blocks forever. */
void fk_lock(void);
void fk_unlock(void);
int fk_initialized(void);
int fk_debug(void);
/* fk_set_fault makes every later call fail with CUDA_ERROR_ILLEGAL_ADDRESS;
 * loud prints why to stderr (else only with FAKE_CUDA_DEBUG). */
void fk_set_fault(int loud, const char *why);
_Noreturn void fk_block_forever(void);

/* Memory. */
fk_alloc *fk_find_alloc(uintptr_t p, size_t n);
int fk_add_alloc(uintptr_t base, size_t size, int kind, void *map, size_t map_len);
void fk_remove_alloc(uintptr_t base);

/* Streams: resolve a handle (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD
 * or a created stream); NULL when invalid. */
struct CUstream_st *fk_stream(CUstream h, int ptsz);
int fk_stalled(struct CUstream_st *s);

/* Whether a capture forbids a potentially unsafe call now (a global
 * capture, or a thread-local one of this thread): it invalidates them. */
int fk_capture_forbids(void);

/* Work: run a node on s now, or queue it behind a hang, or record it into
 * s's capture. Called with the lock held. */
CUresult fk_submit(struct CUstream_st *s, const fk_node *n);

/* Modules and kernels (fakemod.c), called with the lock held. */
CUresult fk_module_load(struct CUmod_st **out, const char *image);
void fk_module_free(struct CUmod_st *m);
int fk_func_valid(struct CUfunc_st *f);
/* Runs a kernel node on s (not capturing, not stalled): writes the warp
 * buffers, advances the device's time, hangs s or faults the process. */
void fk_run_kernel(struct CUstream_st *s, const fk_node *n);
int fk_occupancy(unsigned threads, size_t dyn_smem);
extern uint64_t fk_busy_ns; /* the device's busy time, for events */

/* The L2's persisting lines (fakecuda.c): the context's set-aside (one
 * for all contexts: one device) and FAKE_L2_LOG's lines. */
extern size_t fk_l2_limit;
int fk_l2_refuses(const char *what); /* FAKE_L2_REFUSE */
void fk_l2_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CUPTI (fakecupti.c). The callers do not hold the lock. */
void fk_api_callback(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const char *fname,
                     const void *params, CUresult *ret, const char *symbol,
                     uint32_t correlation, uint64_t *corr_data);
void fk_resource_callback(CUpti_CallbackId cbid, CUcontext ctx, CUstream stream,
                          void *descriptor);
CUcontext fk_current_ctx(void);

#endif
