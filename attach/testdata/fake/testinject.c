/* testinject.c: a tiny injection library for attach/fake_test.go, to prove
 * the fake's plumbing. InitializeInjection subscribes through the CUPTI named
 * by IKET_CUPTI_LIB and writes what happens, a line per event, to the file
 * FAKE_TEST_OUT. With FAKE_TEST_LAYOUT=DIR it also traces each launch of
 * cuLaunchKernel and cuLaunchKernelEx as iket would (capacity
 * FAKE_TEST_CAP, default 16; wrap mode when the module's build says so;
 * pinned host buffers with FAKE_TEST_HOST=1; in the relaxed capture mode
 * with FAKE_TEST_RELAXED=1) and writes DIR/launch-N.bin
 * (the warp buffers), DIR/launch-N.names and DIR/launch-N.txt. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"

static FILE *out;
static int launches;
static CUdeviceptr buf;
static void *host_buf;
static size_t buf_size;
static unsigned capacity;

#define CK(call)                                                     \
  do {                                                               \
    CUresult r_ = (call);                                            \
    if (r_ != CUDA_SUCCESS) {                                        \
      fprintf(out, "error %s %d\n", #call, r_);                      \
      return;                                                        \
    }                                                                \
  } while (0)

static void grid_of(CUpti_CallbackId cbid, const void *p, unsigned g[3], unsigned b[3]) {
  if (cbid == IKET_CBID_cuLaunchKernelEx) {
    const CUlaunchConfig *c = ((const cuLaunchKernelEx_params *)p)->config;
    g[0] = c->gridDimX, g[1] = c->gridDimY, g[2] = c->gridDimZ;
    b[0] = c->blockDimX, b[1] = c->blockDimY, b[2] = c->blockDimZ;
  } else {
    const cuLaunchKernel_params *l = p;
    g[0] = l->gridDimX, g[1] = l->gridDimY, g[2] = l->gridDimZ;
    b[0] = l->blockDimX, b[1] = l->blockDimY, b[2] = l->blockDimZ;
  }
}

static CUfunction func_of(CUpti_CallbackId cbid, const void *p) {
  return cbid == IKET_CBID_cuLaunchKernelEx ? ((const cuLaunchKernelEx_params *)p)->f
                                            : ((const cuLaunchKernel_params *)p)->f;
}

static void layout_calls(CUpti_CallbackId cbid, const CUpti_CallbackData *cd);

/* layout traces a launch; with FAKE_TEST_RELAXED=1 its calls run in the
 * relaxed capture interaction mode, so that they do not invalidate the
 * application's stream capture. */
static void layout(CUpti_CallbackId cbid, const CUpti_CallbackData *cd) {
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  int relaxed = getenv("FAKE_TEST_RELAXED") != NULL;
  if (relaxed && cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) fprintf(out, "error exchange\n");
  layout_calls(cbid, cd);
  if (relaxed && cuThreadExchangeStreamCaptureMode(&mode) != CUDA_SUCCESS) fprintf(out, "error exchange\n");
}

static void layout_calls(CUpti_CallbackId cbid, const CUpti_CallbackData *cd) {
  const char *dir = getenv("FAKE_TEST_LAYOUT");
  unsigned g[3], b[3];
  grid_of(cbid, cd->functionParams, g, b);
  static CUmodule m;
  static CUdeviceptr st;
  static uint32_t state[8];
  size_t n;
  if (cd->callbackSite == CUPTI_API_ENTER) {
    st = 0;
    CK(cuFuncGetModule(&m, func_of(cbid, cd->functionParams)));
    if (cuModuleGetGlobal_v2(&st, &n, m, "iket_state") != CUDA_SUCCESS) return;
    CK(cuMemcpyDtoH_v2(state, st, sizeof state));
  } else if (st == 0) {
    return;
  }
  unsigned wpc = (b[0] * b[1] * b[2] + 31) / 32;
  size_t warps = (size_t)g[0] * g[1] * g[2] * wpc, stride = 64 + 8 * ((size_t)capacity + 1);
  if (cd->callbackSite == CUPTI_API_ENTER) {
    buf_size = warps * stride;
    if (getenv("FAKE_TEST_HOST")) {
      CK(cuMemHostAlloc(&host_buf, buf_size, CU_MEMHOSTALLOC_DEVICEMAP));
      memset(host_buf, 0, buf_size);
      CK(cuMemHostGetDevicePointer_v2(&buf, host_buf, 0));
    } else {
      CK(cuMemAlloc_v2(&buf, buf_size));
      CK(cuMemsetD8_v2(buf, 0, buf_size));
    }
    memcpy(state, &buf, 8);
    state[2] = capacity;
    state[3] = (state[6] & 1) ? capacity - 1 : 0xffffffffu;
    state[4] = wpc;
    CK(cuMemcpyHtoD_v2(st, state, sizeof state));
    return;
  }
  char path[4096], *data = malloc(buf_size);
  if (!data) return;
  if (host_buf) {
    memcpy(data, host_buf, buf_size);
  } else if (cuMemcpyDtoH_v2(data, buf, buf_size) != CUDA_SUCCESS) {
    fprintf(out, "error copy\n");
    free(data);
    return;
  }
  snprintf(path, sizeof path, "%s/launch-%d.bin", dir, launches);
  FILE *f = fopen(path, "wb");
  if (f) fwrite(data, 1, buf_size, f), fclose(f);
  free(data);
  CUdeviceptr nt;
  if (cuModuleGetGlobal_v2(&nt, &n, m, "iket_name_table") == CUDA_SUCCESS && (data = malloc(n))) {
    if (cuMemcpyDtoH_v2(data, nt, n) == CUDA_SUCCESS) {
      snprintf(path, sizeof path, "%s/launch-%d.names", dir, launches);
      if ((f = fopen(path, "wb"))) fwrite(data, 1, n - 1, f), fclose(f);
    }
    free(data);
  }
  snprintf(path, sizeof path, "%s/launch-%d.txt", dir, launches);
  if ((f = fopen(path, "w")))
    fprintf(f, "%s %u %u %u %u %u %u %u %u %s\n", cd->symbolName, g[0], g[1], g[2], b[0], b[1],
            b[2], wpc, capacity, (state[6] & 1) ? "wrap" : "stop"), fclose(f);
  state[0] = state[1] = 0; /* base 0 again: later launches write no freed buffer */
  if (cuMemcpyHtoD_v2(st, state, sizeof state) != CUDA_SUCCESS) fprintf(out, "error reset\n");
  if (host_buf) cuMemFreeHost(host_buf), host_buf = NULL;
  else cuMemFree_v2(buf);
}

static void callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId cbid, const void *p) {
  (void)ud;
  if (d == CUPTI_CB_DOMAIN_RESOURCE) {
    const CUpti_ResourceData *r = p;
    fprintf(out, "resource %u ctx=%d", cbid, r->context != NULL);
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      const CUpti_ModuleResourceData *m = r->resourceDescriptor;
      fprintf(out, " %.9s", m->pCubin);
    }
    fprintf(out, "\n");
    fflush(out);
    return;
  }
  const CUpti_CallbackData *cd = p;
  unsigned g[3], b[3];
  grid_of(cbid, cd->functionParams, g, b);
  if (cd->callbackSite == CUPTI_API_ENTER) {
    *cd->correlationData = 1000u + cd->correlationId;
    fprintf(out, "enter %s %s %u grid=%u block=%u ctx=%d\n", cd->functionName, cd->symbolName,
            cd->correlationId, g[0], b[0], cd->context != NULL);
  }
  if (getenv("FAKE_TEST_LAYOUT") && cbid != IKET_CBID_cuGraphLaunch) layout(cbid, cd);
  if (cd->callbackSite == CUPTI_API_EXIT) {
    fprintf(out, "exit %s %u rc=%d data=%llu\n", cd->functionName, cd->correlationId,
            *(const CUresult *)cd->functionReturnValue, (unsigned long long)*cd->correlationData);
    launches++;
  }
  fflush(out);
}

int InitializeInjection(void) {
  const char *o = getenv("FAKE_TEST_OUT"), *lib = getenv("IKET_CUPTI_LIB");
  if (!o || !(out = fopen(o, "a"))) return 0;
  setvbuf(out, NULL, _IOLBF, 0);
  capacity = getenv("FAKE_TEST_CAP") ? (unsigned)atoi(getenv("FAKE_TEST_CAP")) : 16;
  void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (!h) {
    fprintf(out, "dlopen %s\n", dlerror());
    return 0;
  }
  CUptiResult (*sub)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *) = (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))dlsym(h, "cuptiSubscribe");
  CUptiResult (*en)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) = (CUptiResult(*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))dlsym(h, "cuptiEnableCallback");
  CUptiResult (*name)(CUpti_CallbackDomain, uint32_t, const char **) = (CUptiResult(*)(CUpti_CallbackDomain, uint32_t, const char **))dlsym(h, "cuptiGetCallbackName");
  CUptiResult (*str)(CUptiResult, const char **) = (CUptiResult(*)(CUptiResult, const char **))dlsym(h, "cuptiGetResultString");
  if (!sub || !en || !name || !str) {
    fprintf(out, "dlsym missing\n");
    return 0;
  }
  static const struct { int d; uint32_t id; } ids[] = {{1, 307}, {1, 652}, {1, 5}, {2, 211}, {2, 430}, {1, 701}, {3, 1}};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
    const char *n = NULL;
    CUptiResult r = name((CUpti_CallbackDomain)ids[i].d, ids[i].id, &n);
    fprintf(out, "name %d %u %d %s\n", ids[i].d, ids[i].id, r, r ? "-" : n);
  }
  CUpti_SubscriberHandle s, s2;
  CUptiResult r = sub(&s, callback, NULL);
  const char *rs = NULL;
  str(r, &rs);
  fprintf(out, "subscribe %d %s\n", r, rs);
  if (r != CUPTI_SUCCESS) return 0;
  fprintf(out, "second %d\n", sub(&s2, callback, NULL));
  en(1, s, CUPTI_CB_DOMAIN_DRIVER_API, IKET_CBID_cuLaunchKernel);
  if (getenv("FAKE_TEST_LAYOUT")) en(1, s, CUPTI_CB_DOMAIN_DRIVER_API, IKET_CBID_cuLaunchKernelEx);
  en(1, s, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED);
  en(1, s, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  fprintf(out, "enable-bad %d\n", en(1, s, CUPTI_CB_DOMAIN_DRIVER_API, 100000));
  return 1;
}
