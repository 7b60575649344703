/* fakestream.c: the fake driver's streams, captures and graphs, events, and
 * the launch entry points (which call the CUPTI subscriber around the
 * launch). Work runs synchronously when it is submitted, unless its stream
 * is capturing (it is recorded) or stalled behind a hung kernel (it never
 * runs). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

static struct CUstream_st g_legacy = {.magic = FK_MAGIC_STREAM, .kind = 1};
static struct CUstream_st g_ptds = {.magic = FK_MAGIC_STREAM, .kind = 2};
static struct CUstream_st *g_streams;
static struct CUevent_st *g_events;
static struct CUgraph_st *g_graphs;
static struct CUgraphExec_st *g_execs;
static uint32_t g_correlation;

struct CUstream_st *fk_stream(CUstream h, int ptsz) {
  if (h == NULL) return ptsz ? &g_ptds : &g_legacy;
  if (h == CU_STREAM_LEGACY) return &g_legacy;
  if (h == CU_STREAM_PER_THREAD) return &g_ptds;
  for (struct CUstream_st *s = g_streams; s; s = s->next)
    if (s == h) return s;
  return NULL;
}

static int blocking(const struct CUstream_st *s) {
  return s->kind == 2 || (s->kind == 0 && !(s->flags & CU_STREAM_NON_BLOCKING));
}

int fk_stalled(struct CUstream_st *s) {
  if (s->hung) return 1;
  if (s->kind == 1) {
    if (g_ptds.hung) return 1;
    for (struct CUstream_st *p = g_streams; p; p = p->next)
      if (p->hung && blocking(p)) return 1;
    return 0;
  }
  return blocking(s) && g_legacy.hung;
}

static int any_hung(void) {
  if (g_legacy.hung || g_ptds.hung) return 1;
  for (struct CUstream_st *p = g_streams; p; p = p->next)
    if (p->hung) return 1;
  return 0;
}

/* A thread's capture interaction mode (cuThreadExchangeStreamCaptureMode)
 * decides which captures forbid its potentially unsafe calls: in global
 * mode its own captures but relaxed ones, and other threads' global ones;
 * in thread-local mode its own but relaxed ones; in relaxed mode none. */
static _Thread_local int tls_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

int fk_capture_forbids(void) {
  int forbid = 0;
  if (tls_capture_mode == CU_STREAM_CAPTURE_MODE_RELAXED) return 0;
  struct CUstream_st *all[2] = {&g_ptds, g_streams};
  for (int k = 0; k < 2; k++)
    for (struct CUstream_st *s = all[k]; s; s = k ? s->next : NULL) {
      if (s->capturing != CU_STREAM_CAPTURE_STATUS_ACTIVE) continue;
      int own = pthread_equal(s->capture_thread, pthread_self());
      if ((own && s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
          (!own && tls_capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
           s->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
        s->capturing = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        forbid = 1;
      }
    }
  if (forbid && fk_debug()) fprintf(stderr, "fakecuda: an unsafe call during a capture invalidates it\n");
  return forbid;
}

FK_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  FK_BEGIN(FK_NEED_INIT);
  if (!mode || *mode < 0 || *mode > CU_STREAM_CAPTURE_MODE_RELAXED) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  int old = tls_capture_mode;
  tls_capture_mode = *mode;
  *mode = old;
  FK_END;
}

static int graph_append(struct CUgraph_st *g, const fk_node *n) {
  if (g->n == g->cap) {
    int c = g->cap ? 2 * g->cap : 8;
    fk_node *p = realloc(g->nodes, (size_t)c * sizeof *p);
    if (!p) return -1;
    g->nodes = p;
    g->cap = c;
  }
  g->nodes[g->n++] = *n;
  return 0;
}

CUresult fk_submit(struct CUstream_st *s, const fk_node *n) {
  if (s->capturing == CU_STREAM_CAPTURE_STATUS_ACTIVE)
    return graph_append(s->capture, n) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
  if (s->capturing == CU_STREAM_CAPTURE_STATUS_INVALIDATED) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  if (fk_stalled(s)) {
    s->hung = 1;
    if (n->kind == FK_NODE_EVENT) n->ev->recorded = n->ev->pending = 1;
    return CUDA_SUCCESS;
  }
  switch (n->kind) {
    case FK_NODE_KERNEL: fk_run_kernel(s, n); break;
    case FK_NODE_COPY: memmove(n->dst, n->src, n->n); break;
    case FK_NODE_SET: memset(n->dst, n->value, n->n); break;
    case FK_NODE_EVENT:
      n->ev->recorded = 1;
      n->ev->pending = 0;
      n->ev->busy_ns = fk_busy_ns;
      break;
  }
  return CUDA_SUCCESS;
}

/* Streams. */

#define STREAM_FLAGS (FK_NEED_INIT | FK_NEED_CTX | FK_STICKY)

FK_EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
  struct CUstream_st *s = NULL;
  {
    FK_BEGIN(STREAM_FLAGS);
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
    if (!(s = calloc(1, sizeof *s))) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
    s->magic = FK_MAGIC_STREAM;
    s->flags = flags;
    s->next = g_streams;
    g_streams = s;
    *ph = s;
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  fk_resource_callback(CUPTI_CBID_RESOURCE_STREAM_CREATED, fk_current_ctx(), s, NULL);
  return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuStreamDestroy_v2(CUstream h) {
  {
    FK_BEGIN(STREAM_FLAGS);
    struct CUstream_st *s = fk_stream(h, 0);
    if (!s || s->kind != 0) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  fk_resource_callback(CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING, fk_current_ctx(), h, NULL);
  fk_lock();
  for (struct CUstream_st **p = &g_streams; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      break;
    }
  h->magic = 0;
  free(h);
  fk_unlock();
  return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuStreamSynchronize(CUstream h) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (s->capturing) {
    s->capturing = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    FK_FAIL(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  if (fk_capture_forbids()) FK_FAIL(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  if (fk_stalled(s)) fk_block_forever();
  FK_END;
}

FK_EXPORT CUresult cuStreamQuery(CUstream h) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (s->capturing) {
    s->capturing = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    FK_FAIL(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  }
  if (fk_capture_forbids()) FK_FAIL(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  if (fk_stalled(s)) FK_FAIL(CUDA_ERROR_NOT_READY);
  FK_END;
}

FK_EXPORT CUresult cuCtxSynchronize(void) {
  FK_BEGIN(STREAM_FLAGS | FK_UNSAFE);
  if (any_hung()) fk_block_forever();
  FK_END;
}

/* A stream's access-policy window (the only attribute the fake keeps):
 * checked as CUDA does (at most the device's window size, a hit ratio in
 * [0, 1], a miss property other than persisting) and logged. */
FK_EXPORT CUresult cuStreamGetAttribute(CUstream h, int attr, CUstreamAttrValue *v) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!v || attr != CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  memset(v, 0, sizeof *v);
  v->accessPolicyWindow = s->window;
  FK_END;
}

FK_EXPORT CUresult cuStreamSetAttribute(CUstream h, int attr, const CUstreamAttrValue *v) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!v || attr != CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  const CUaccessPolicyWindow *w = &v->accessPolicyWindow;
  int maxw = 0;
  cuDeviceGetAttribute(&maxw, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 0);
  if (w->num_bytes > (size_t)maxw || !(w->hitRatio >= 0.0f && w->hitRatio <= 1.0f) ||
      w->missProp == CU_ACCESS_PROPERTY_PERSISTING || (w->num_bytes && !w->base_ptr))
    FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (w->num_bytes && fk_l2_refuses("window")) FK_FAIL(CUDA_ERROR_NOT_SUPPORTED);
  s->window = *w;
  fk_l2_log("window %d %#llx %zu %.3f %d", s->kind, (unsigned long long)(uintptr_t)w->base_ptr, w->num_bytes,
            (double)w->hitRatio, w->hitProp);
  FK_END;
}

FK_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!st) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *st = s->capturing;
  FK_END;
}

FK_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (s->kind == 1) FK_FAIL(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  if (mode < 0 || mode > CU_STREAM_CAPTURE_MODE_RELAXED) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (s->capturing) FK_FAIL(CUDA_ERROR_ILLEGAL_STATE);
  if (!(s->capture = calloc(1, sizeof *s->capture))) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
  s->capture->magic = FK_MAGIC_GRAPH;
  s->capturing = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  s->capture_mode = mode;
  s->capture_thread = pthread_self();
  FK_END;
}

static void graph_free(struct CUgraph_st *g) {
  g->magic = 0;
  free(g->nodes);
  free(g);
}

FK_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *pg) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUstream_st *s = fk_stream(h, 0);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!pg) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (!s->capturing) FK_FAIL(CUDA_ERROR_ILLEGAL_STATE);
  struct CUgraph_st *g = s->capture;
  int invalid = s->capturing == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  s->capturing = 0;
  s->capture = NULL;
  if (invalid) {
    graph_free(g);
    *pg = NULL;
    FK_FAIL(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  }
  g->next = g_graphs;
  g_graphs = g;
  *pg = g;
  FK_END;
}

FK_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *pe, CUgraph g, unsigned long long flags) {
  FK_BEGIN(STREAM_FLAGS);
  (void)flags;
  struct CUgraph_st *p = g_graphs;
  while (p && p != g) p = p->next;
  if (!p) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!pe) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  struct CUgraphExec_st *e = calloc(1, sizeof *e);
  if (!e || (g->n && !(e->nodes = malloc((size_t)g->n * sizeof *e->nodes)))) {
    free(e);
    FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
  }
  if (g->n) memcpy(e->nodes, g->nodes, (size_t)g->n * sizeof *e->nodes);
  e->magic = FK_MAGIC_EXEC;
  e->n = g->n;
  e->next = g_execs;
  g_execs = e;
  *pe = e;
  FK_END;
}

FK_EXPORT CUresult cuGraphDestroy(CUgraph g) {
  FK_BEGIN(FK_NEED_INIT | FK_STICKY);
  struct CUgraph_st **p = &g_graphs;
  while (*p && *p != g) p = &(*p)->next;
  if (!*p) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *p = g->next;
  graph_free(g);
  FK_END;
}

FK_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
  FK_BEGIN(FK_NEED_INIT | FK_STICKY);
  struct CUgraphExec_st **p = &g_execs;
  while (*p && *p != e) p = &(*p)->next;
  if (!*p) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *p = e->next;
  e->magic = 0;
  free(e->nodes);
  free(e);
  FK_END;
}

/* Events: times are the device's busy time, so the time between two events
 * is the kernels' between them (10 us a launch plus 1 ns a warp). */

static struct CUevent_st *event(CUevent h) {
  for (struct CUevent_st *e = g_events; e; e = e->next)
    if (e == h) return e;
  return NULL;
}

FK_EXPORT CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
  FK_BEGIN(STREAM_FLAGS);
  if (!pe || (flags & ~7u)) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) FK_FAIL(CUDA_ERROR_OUT_OF_MEMORY);
  e->magic = FK_MAGIC_EVENT;
  e->flags = flags;
  e->next = g_events;
  g_events = e;
  *pe = e;
  FK_END;
}

FK_EXPORT CUresult cuEventRecord(CUevent h, CUstream hs) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUevent_st *e = event(h);
  struct CUstream_st *s = fk_stream(hs, 0);
  if (!e || !s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  fk_node n = {.kind = FK_NODE_EVENT, .ev = e};
  rc_ = fk_submit(s, &n);
  FK_END;
}

FK_EXPORT CUresult cuEventQuery(CUevent h) {
  FK_BEGIN(STREAM_FLAGS | FK_UNSAFE);
  struct CUevent_st *e = event(h);
  if (!e) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (e->pending) FK_FAIL(CUDA_ERROR_NOT_READY);
  FK_END;
}

FK_EXPORT CUresult cuEventSynchronize(CUevent h) {
  FK_BEGIN(STREAM_FLAGS | FK_UNSAFE);
  struct CUevent_st *e = event(h);
  if (!e) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (e->pending) fk_block_forever();
  FK_END;
}

FK_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUevent_st *s = event(a), *e = event(b);
  if (!ms) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (!s || !e || !s->recorded || !e->recorded || ((s->flags | e->flags) & CU_EVENT_DISABLE_TIMING))
    FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (s->pending || e->pending) FK_FAIL(CUDA_ERROR_NOT_READY);
  *ms = (float)((double)(int64_t)(e->busy_ns - s->busy_ns) / 1e6);
  FK_END;
}

FK_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  return cuEventElapsedTime(ms, a, b);
}

FK_EXPORT CUresult cuEventDestroy_v2(CUevent h) {
  FK_BEGIN(STREAM_FLAGS);
  struct CUevent_st **p = &g_events;
  while (*p && *p != h) p = &(*p)->next;
  if (!*p) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  *p = h->next;
  h->magic = 0;
  free(h);
  FK_END;
}

/* Launches. */

typedef struct {
  struct CUfunc_st *f;
  unsigned grid[3], block[3], smem, cluster[3];
  CUstream h;
  int ptsz, coop;
} launch_args;

static CUresult launch(const launch_args *a) {
  FK_BEGIN(STREAM_FLAGS);
  if (!fk_func_valid(a->f)) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  struct CUstream_st *s = fk_stream(a->h, a->ptsz);
  if (!s) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  uint64_t threads = (uint64_t)a->block[0] * a->block[1] * a->block[2];
  uint64_t ctas = (uint64_t)a->grid[0] * a->grid[1] * a->grid[2];
  if (threads == 0 || ctas == 0 || threads > 1024 || a->block[2] > 64 || a->grid[1] > 65535 ||
      a->grid[2] > 65535 || a->grid[0] > 2147483647u || a->smem > 48 * 1024)
    FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  for (int i = 0; i < 3; i++)
    if (a->cluster[i] == 0 || a->grid[i] % a->cluster[i]) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  if (a->coop && ctas > (uint64_t)fk_occupancy((unsigned)threads, a->smem) * 4)
    FK_FAIL(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
  fk_node n = {.kind = FK_NODE_KERNEL, .f = a->f};
  memcpy(n.grid, a->grid, sizeof n.grid);
  memcpy(n.block, a->block, sizeof n.block);
  rc_ = fk_submit(s, &n);
  FK_END;
}

static const char *symbol_of(struct CUfunc_st *f) {
  fk_lock();
  const char *s = fk_func_valid(f) ? f->name : NULL;
  fk_unlock();
  return s;
}

/* with_callbacks calls the subscriber at ENTER, runs the call, and calls it
 * at EXIT with the call's result. */
static CUresult with_callbacks(CUpti_CallbackId cbid, const char *fname, const void *params,
                               struct CUfunc_st *f, const launch_args *a, CUgraphExec ge,
                               CUstream gs) {
  if (!fk_initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  fk_lock();
  uint32_t corr = ++g_correlation;
  fk_unlock();
  uint64_t corr_data = 0;
  CUresult ret = CUDA_SUCCESS;
  const char *sym = f ? symbol_of(f) : NULL;
  fk_api_callback(cbid, CUPTI_API_ENTER, fname, params, &ret, sym, corr, &corr_data);
  if (a) {
    ret = launch(a);
  } else {
    ret = fk_enter(STREAM_FLAGS);
    struct CUgraphExec_st *e = g_execs;
    while (e && e != ge) e = e->next;
    struct CUstream_st *s = fk_stream(gs, cbid == IKET_CBID_cuGraphLaunch_ptsz);
    if (ret == CUDA_SUCCESS && (!e || !s)) ret = CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; ret == CUDA_SUCCESS && e && i < e->n; i++) ret = fk_submit(s, &e->nodes[i]);
    fk_unlock();
  }
  fk_api_callback(cbid, CUPTI_API_EXIT, fname, params, &ret, sym, corr, &corr_data);
  return ret;
}

static CUresult launch_kernel(int ptsz, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                              unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream h,
                              void **kp, void **extra) {
  cuLaunchKernel_params p = {f, gx, gy, gz, bx, by, bz, smem, h, kp, extra};
  launch_args a = {f, {gx, gy, gz}, {bx, by, bz}, smem, {1, 1, 1}, h, ptsz, 0};
  return with_callbacks(ptsz ? IKET_CBID_cuLaunchKernel_ptsz : IKET_CBID_cuLaunchKernel,
                        ptsz ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", &p, f, &a, NULL, NULL);
}

FK_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                  unsigned by, unsigned bz, unsigned smem, CUstream h, void **kp,
                                  void **extra) {
  return launch_kernel(0, f, gx, gy, gz, bx, by, bz, smem, h, kp, extra);
}

FK_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                       unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                       CUstream h, void **kp, void **extra) {
  return launch_kernel(1, f, gx, gy, gz, bx, by, bz, smem, h, kp, extra);
}

static CUresult launch_coop(int ptsz, CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz, unsigned smem, CUstream h,
                            void **kp) {
  cuLaunchCooperativeKernel_params p = {f, gx, gy, gz, bx, by, bz, smem, h, kp};
  launch_args a = {f, {gx, gy, gz}, {bx, by, bz}, smem, {1, 1, 1}, h, ptsz, 1};
  return with_callbacks(
      ptsz ? IKET_CBID_cuLaunchCooperativeKernel_ptsz : IKET_CBID_cuLaunchCooperativeKernel,
      ptsz ? "cuLaunchCooperativeKernel_ptsz" : "cuLaunchCooperativeKernel", &p, f, &a, NULL,
      NULL);
}

FK_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                             unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                             CUstream h, void **kp) {
  return launch_coop(0, f, gx, gy, gz, bx, by, bz, smem, h, kp);
}

FK_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                  unsigned gz, unsigned bx, unsigned by,
                                                  unsigned bz, unsigned smem, CUstream h,
                                                  void **kp) {
  return launch_coop(1, f, gx, gy, gz, bx, by, bz, smem, h, kp);
}

static CUresult launch_ex(int ptsz, const CUlaunchConfig *c, CUfunction f, void **kp, void **extra) {
  cuLaunchKernelEx_params p = {c, f, kp, extra};
  CUpti_CallbackId cbid = ptsz ? IKET_CBID_cuLaunchKernelEx_ptsz : IKET_CBID_cuLaunchKernelEx;
  const char *name = ptsz ? "cuLaunchKernelEx_ptsz" : "cuLaunchKernelEx";
  launch_args a = {f, {0, 0, 0}, {0, 0, 0}, 0, {1, 1, 1}, NULL, ptsz, 0};
  if (c) {
    a = (launch_args){f, {c->gridDimX, c->gridDimY, c->gridDimZ},
                      {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
                      {1, 1, 1}, c->hStream, ptsz, 0};
    for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        a.cluster[0] = c->attrs[i].value.clusterDim.x;
        a.cluster[1] = c->attrs[i].value.clusterDim.y;
        a.cluster[2] = c->attrs[i].value.clusterDim.z;
      }
  }
  return with_callbacks(cbid, name, &p, f, &a, NULL, NULL);
}

FK_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **kp, void **extra) {
  return launch_ex(0, c, f, kp, extra);
}

FK_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **kp,
                                         void **extra) {
  return launch_ex(1, c, f, kp, extra);
}

FK_EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream h) {
  cuGraphLaunch_params p = {e, h};
  return with_callbacks(IKET_CBID_cuGraphLaunch, "cuGraphLaunch", &p, NULL, NULL, e, h);
}

FK_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream h) {
  cuGraphLaunch_params p = {e, h};
  return with_callbacks(IKET_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz", &p, NULL, NULL, e, h);
}
