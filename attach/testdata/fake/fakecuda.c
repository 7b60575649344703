/* fakecuda.c: a fake CUDA driver (libcuda.so.1) for iket's CI: cuInit
 * (loading CUDA_INJECTION64_PATH), errors, the device, contexts and memory.
 * Device memory is host memory: a CUdeviceptr is a host address. Streams,
 * events, graphs and launches are in fakestream.c, modules and kernels in
 * fakemod.c, CUPTI in fakecupti.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_internal.h"

static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static _Thread_local int tls_depth;
static _Thread_local CUcontext tls_ctx;
static int g_init, g_fault;
static uint32_t g_ctx_uid;
static struct CUctx_st *g_ctxs, *g_primary;
static fk_alloc *g_allocs;
static size_t g_nallocs, g_capallocs;

void fk_lock(void) {
  pthread_mutex_lock(&g_mu);
  tls_depth++;
}

void fk_unlock(void) {
  tls_depth--;
  pthread_mutex_unlock(&g_mu);
}

int fk_initialized(void) {
  fk_lock();
  int r = g_init;
  fk_unlock();
  return r;
}

int fk_debug(void) {
  const char *e = getenv("FAKE_CUDA_DEBUG");
  return e && *e && strcmp(e, "0") != 0;
}

void fk_set_fault(int loud, const char *why) {
  if (!g_fault && (loud || fk_debug())) fprintf(stderr, "fakecuda: illegal address: %s\n", why);
  g_fault = 1;
}

_Noreturn void fk_block_forever(void) {
  if (fk_debug()) fprintf(stderr, "fakecuda: blocking forever (a hung kernel)\n");
  while (tls_depth > 0) fk_unlock();
  for (;;) pause();
}

CUcontext fk_current_ctx(void) { return tls_ctx; }

CUresult fk_enter(int flags) {
  fk_lock();
  if ((flags & FK_NEED_INIT) && !g_init) return CUDA_ERROR_NOT_INITIALIZED;
  if ((flags & FK_STICKY) && g_fault) return CUDA_ERROR_ILLEGAL_ADDRESS;
  if ((flags & FK_NEED_CTX) && !tls_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if ((flags & FK_UNSAFE) && fk_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  return CUDA_SUCCESS;
}

/* cuInit and the injection library. */

static void load_injection(void) {
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    if (fk_debug()) fprintf(stderr, "fakecuda: injection %s: %s\n", path, dlerror());
    return;
  }
  int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
  if (!init) {
    if (fk_debug()) fprintf(stderr, "fakecuda: injection %s has no InitializeInjection\n", path);
    return;
  }
  int r = init();
  if (fk_debug()) fprintf(stderr, "fakecuda: InitializeInjection returned %d\n", r);
}

FK_EXPORT CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  fk_lock();
  int first = !g_init;
  g_init = 1;
  fk_unlock();
  if (first) {
    load_injection();
    fk_resource_callback(CUPTI_CBID_RESOURCE_CU_INIT_FINISHED, NULL, NULL, NULL);
  }
  return CUDA_SUCCESS;
}

/* Errors. */

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", "operation failed due to a previous error during capture"},
};

static CUresult error_lookup(CUresult e, const char **p, int text) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
    if (errors[i].code == e) {
      *p = text ? errors[i].text : errors[i].name;
      return CUDA_SUCCESS;
    }
  *p = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

FK_EXPORT CUresult cuGetErrorName(CUresult e, const char **p) { return error_lookup(e, p, 0); }
FK_EXPORT CUresult cuGetErrorString(CUresult e, const char **p) { return error_lookup(e, p, 1); }

FK_EXPORT CUresult cuDriverGetVersion(int *v) {
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = 13000;
  return CUDA_SUCCESS;
}

/* The device: one "Fake H200" of 4 SMs. Device queries work after a fault,
 * as the real driver's do. */

#define DEVICE_CHECK(dev)                                 \
  FK_BEGIN(FK_NEED_INIT);                                 \
  if ((dev) != 0) FK_FAIL(CUDA_ERROR_INVALID_DEVICE)

FK_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) {
  FK_BEGIN(FK_NEED_INIT);
  if (!d) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (ordinal != 0) FK_FAIL(CUDA_ERROR_INVALID_DEVICE);
  *d = 0;
  FK_END;
}

FK_EXPORT CUresult cuDeviceGetCount(int *n) {
  FK_BEGIN(FK_NEED_INIT);
  if (!n) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *n = 1;
  FK_END;
}

FK_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  DEVICE_CHECK(dev);
  if (!name || len <= 0) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  snprintf(name, (size_t)len, "%s", "Fake H200");
  FK_END;
}

FK_EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice dev) {
  static const char uuid[16] = {0x6b, 0x65, 0x74, 0x66, 0x61, 0x6b, 0x65, 0x00,
                                0x48, 0x32, 0x30, 0x30, 0x00, 0x00, 0x00, 0x01};
  DEVICE_CHECK(dev);
  if (!u) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  memcpy(u->bytes, uuid, 16);
  FK_END;
}

FK_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice dev) { return cuDeviceGetUuid(u, dev); }

FK_EXPORT CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev) {
  DEVICE_CHECK(dev);
  if (!bus || len <= 0) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  snprintf(bus, (size_t)len, "%s", "0000:1B:00.0");
  FK_END;
}

/* FAKE_L2_REFUSE=limit or window: cuCtxSetLimit, or cuStreamSetAttribute
 * of a window of some bytes, fails with CUDA_ERROR_NOT_SUPPORTED. */
int fk_l2_refuses(const char *what) {
  const char *e = getenv("FAKE_L2_REFUSE");
  return e && strcmp(e, what) == 0;
}

/* FAKE_NO_L2_PERSIST=1: a device without persisting L2 lines. */
static int no_l2_persist(void) {
  const char *e = getenv("FAKE_NO_L2_PERSIST");
  return e && *e && strcmp(e, "0") != 0;
}

FK_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute a, CUdevice dev) {
  static const int attrs[][2] = {
      {1, 1024},        {2, 1024},    {3, 1024},    {4, 64},     {5, 2147483647},
      {6, 65535},       {7, 65535},   {8, 49152},   {9, 65536},  {10, 32},
      {12, 65536},      {13, 1980000}, {16, 4},     {33, 0x1b},  {36, 2619000},
      {37, 6144},       {38, 52428800}, {39, 2048}, {41, 1},     {75, 9},
      {76, 0},          {81, 233472}, {82, 65536},  {97, 232448},
      {108, 31457280},  {109, 134217728},
  };
  DEVICE_CHECK(dev);
  if (!pi || a <= 0 || a >= 200) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *pi = 0;
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if (attrs[i][0] == a) *pi = attrs[i][1];
  if ((a == 108 || a == 109) && no_l2_persist()) *pi = 0;
  FK_END;
}

/* The L2's persisting lines: the set-aside (clamped to the device's
 * maximum, as CUDA does), the reset, and FAKE_L2_LOG. */
size_t fk_l2_limit;

void fk_l2_log(const char *fmt, ...) {
  const char *path = getenv("FAKE_L2_LOG");
  if (!path || !*path) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

FK_EXPORT CUresult cuCtxGetLimit(size_t *pv, int limit) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY);
  if (!pv) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (limit != CU_LIMIT_PERSISTING_L2_CACHE_SIZE) FK_FAIL(CUDA_ERROR_UNSUPPORTED_LIMIT);
  *pv = fk_l2_limit;
  FK_END;
}

FK_EXPORT CUresult cuCtxSetLimit(int limit, size_t v) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY);
  if (limit != CU_LIMIT_PERSISTING_L2_CACHE_SIZE || no_l2_persist()) FK_FAIL(CUDA_ERROR_UNSUPPORTED_LIMIT);
  if (fk_l2_refuses("limit")) FK_FAIL(CUDA_ERROR_NOT_SUPPORTED);
  fk_l2_limit = v < 31457280 ? v : 31457280;
  fk_l2_log("limit %zu", fk_l2_limit);
  FK_END;
}

FK_EXPORT CUresult cuCtxResetPersistingL2Cache(void) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY);
  fk_l2_log("reset");
  FK_END;
}

/* Contexts: a current one per thread. */

static struct CUctx_st *ctx_new(int primary) {
  struct CUctx_st *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->magic = FK_MAGIC_CTX;
  c->uid = ++g_ctx_uid;
  c->primary = primary;
  c->next = g_ctxs;
  g_ctxs = c;
  return c;
}

static int ctx_valid(CUcontext c) {
  for (struct CUctx_st *p = g_ctxs; p; p = p->next)
    if (p == c) return 1;
  return 0;
}

FK_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev) {
  (void)flags;
  struct CUctx_st *c = NULL;
  {
    DEVICE_CHECK(dev);
    if (g_fault) FK_FAIL(CUDA_ERROR_ILLEGAL_ADDRESS);
    if (!pctx) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
    if (!(c = ctx_new(0))) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    *pctx = tls_ctx = c;
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  fk_resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, c, NULL, NULL);
  return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) {
  {
    FK_BEGIN(FK_NEED_INIT);
    if (!ctx_valid(ctx) || ctx->primary) FK_FAIL(CUDA_ERROR_INVALID_CONTEXT);
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  fk_resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, ctx, NULL, NULL);
  fk_lock();
  for (struct CUctx_st **p = &g_ctxs; *p; p = &(*p)->next)
    if (*p == ctx) {
      *p = ctx->next;
      break;
    }
  if (tls_ctx == ctx) tls_ctx = NULL;
  ctx->magic = 0;
  free(ctx);
  fk_unlock();
  return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  int created = 0;
  {
    DEVICE_CHECK(dev);
    if (g_fault) FK_FAIL(CUDA_ERROR_ILLEGAL_ADDRESS);
    if (!pctx) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
    if (!g_primary) {
      if (!(g_primary = ctx_new(1))) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
      created = 1;
    }
    *pctx = g_primary;
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  if (created) fk_resource_callback(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, g_primary, NULL, NULL);
  return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  DEVICE_CHECK(dev);
  FK_END;
}

FK_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  FK_BEGIN(FK_NEED_INIT);
  if (ctx && !ctx_valid(ctx)) FK_FAIL(CUDA_ERROR_INVALID_CONTEXT);
  tls_ctx = ctx;
  FK_END;
}

FK_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  FK_BEGIN(FK_NEED_INIT);
  if (!pctx) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *pctx = tls_ctx;
  FK_END;
}

FK_EXPORT CUresult cuCtxGetDevice(CUdevice *d) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY);
  if (!d) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *d = 0;
  FK_END;
}

/* Memory. A FAKE_ALLOC_STRADDLE=1 allocation of 4 KiB or more straddles a
 * 4 GiB boundary of the address space at its middle (iket must then take
 * one twice the size and use the half that does not). */

fk_alloc *fk_find_alloc(uintptr_t p, size_t n) {
  for (size_t i = 0; i < g_nallocs; i++) {
    fk_alloc *a = &g_allocs[i];
    if (p >= a->base && p - a->base <= a->size && n <= a->size - (p - a->base)) return a;
  }
  return NULL;
}

int fk_add_alloc(uintptr_t base, size_t size, int kind, void *map, size_t map_len) {
  if (g_nallocs == g_capallocs) {
    size_t c = g_capallocs ? 2 * g_capallocs : 64;
    fk_alloc *a = realloc(g_allocs, c * sizeof *a);
    if (!a) return -1;
    g_allocs = a;
    g_capallocs = c;
  }
  g_allocs[g_nallocs++] = (fk_alloc){base, size, kind, map, map_len};
  return 0;
}

void fk_remove_alloc(uintptr_t base) {
  for (size_t i = 0; i < g_nallocs; i++)
    if (g_allocs[i].base == base) {
      if (g_allocs[i].map)
        munmap(g_allocs[i].map, g_allocs[i].map_len);
      else
        free((void *)base);
      g_allocs[i] = g_allocs[--g_nallocs];
      return;
    }
}

static void *raw_alloc(size_t n, int kind) {
  size_t size = (n + 255) & ~(size_t)255;
  const char *st = getenv("FAKE_ALLOC_STRADDLE");
  if (st && strcmp(st, "1") == 0 && n >= 4096) {
    size_t len = ((size_t)1 << 32) + size + 3 * 4096;
    void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return NULL;
    uintptr_t lo = (uintptr_t)m + size / 2 + 4096;
    uintptr_t boundary = (lo + 0xffffffffu) & ~(uintptr_t)0xffffffffu;
    uintptr_t p = boundary - ((size / 2) & ~(size_t)255);
    uintptr_t page = p & ~(uintptr_t)4095, end = (p + size + 4095) & ~(uintptr_t)4095;
    if (mprotect((void *)page, end - page, PROT_READ | PROT_WRITE) != 0 ||
        fk_add_alloc(p, size, kind, m, len)) {
      munmap(m, len);
      return NULL;
    }
    return (void *)p;
  }
  void *p = aligned_alloc(256, size);
  if (!p) return NULL;
  if (fk_add_alloc((uintptr_t)p, size, kind, NULL, 0)) {
    free(p);
    return NULL;
  }
  return p;
}

FK_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t n) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY | FK_UNSAFE);
  if (!dptr || n == 0) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  void *p = raw_alloc(n, FK_ALLOC_DEVICE);
  if (!p) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
  memset(p, 0xa5, n); /* device memory is not cleared */
  *dptr = (CUdeviceptr)(uintptr_t)p;
  FK_END;
}

FK_EXPORT CUresult cuMemFree_v2(CUdeviceptr d) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY | FK_UNSAFE);
  if (d == 0) FK_FAIL(CUDA_SUCCESS);
  fk_alloc *a = fk_find_alloc((uintptr_t)d, 0);
  if (!a || a->base != (uintptr_t)d || a->kind != FK_ALLOC_DEVICE) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  fk_remove_alloc((uintptr_t)d);
  FK_END;
}

FK_EXPORT CUresult cuMemHostAlloc(void **pp, size_t n, unsigned int flags) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY | FK_UNSAFE);
  if (!pp || n == 0 || (flags & ~7u)) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  void *p = raw_alloc(n, FK_ALLOC_HOST);
  if (!p) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
  memset(p, 0, n);
  *pp = p;
  FK_END;
}

FK_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pd, void *p, unsigned int flags) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY);
  fk_alloc *a = fk_find_alloc((uintptr_t)p, 0);
  if (!pd || flags != 0 || !a || a->kind != FK_ALLOC_HOST) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *pd = (CUdeviceptr)(uintptr_t)p;
  FK_END;
}

FK_EXPORT CUresult cuMemFreeHost(void *p) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY | FK_UNSAFE);
  fk_alloc *a = fk_find_alloc((uintptr_t)p, 0);
  if (!a || a->base != (uintptr_t)p || a->kind != FK_ALLOC_HOST) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  fk_remove_alloc((uintptr_t)p);
  FK_END;
}

/* Synchronous copies and sets go through the legacy stream: behind a hang
 * of it (or of a blocking stream) they wait forever. */
static CUresult sync_op(int kind, void *dst, const void *src, size_t n, unsigned char v,
                        uintptr_t dev) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY | FK_UNSAFE);
  if (n == 0) FK_FAIL(CUDA_SUCCESS);
  if (!dst || (kind == FK_NODE_COPY && !src) || !fk_find_alloc(dev, n))
    FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (fk_stalled(fk_stream(CU_STREAM_LEGACY, 0))) fk_block_forever();
  if (kind == FK_NODE_COPY)
    memmove(dst, src, n);
  else
    memset(dst, v, n);
  FK_END;
}

FK_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *src, size_t n) {
  return sync_op(FK_NODE_COPY, (void *)(uintptr_t)d, src, n, 0, (uintptr_t)d);
}

FK_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr s, size_t n) {
  return sync_op(FK_NODE_COPY, dst, (const void *)(uintptr_t)s, n, 0, (uintptr_t)s);
}

FK_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  return sync_op(FK_NODE_SET, (void *)(uintptr_t)d, NULL, n, v, (uintptr_t)d);
}

static CUresult async_op(int kind, void *dst, const void *src, size_t n, unsigned char v,
                         uintptr_t dev, CUstream h) {
  FK_BEGIN(FK_NEED_INIT | FK_NEED_CTX | FK_STICKY);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (n == 0) FK_FAIL(CUDA_SUCCESS);
  if (!dst || (kind == FK_NODE_COPY && !src) || !fk_find_alloc(dev, n))
    FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  fk_node node = {.kind = kind, .dst = dst, .src = src, .n = n, .value = v};
  rc_ = fk_submit(s, &node);
  FK_END;
}

FK_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h) {
  return async_op(FK_NODE_SET, (void *)(uintptr_t)d, NULL, n, v, (uintptr_t)d, h);
}

FK_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr s, size_t n, CUstream h) {
  return async_op(FK_NODE_COPY, dst, (const void *)(uintptr_t)s, n, 0, (uintptr_t)s, h);
}

FK_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *src, size_t n, CUstream h) {
  return async_op(FK_NODE_COPY, (void *)(uintptr_t)d, src, n, 0, (uintptr_t)d, h);
}
