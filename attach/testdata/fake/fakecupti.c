/* fakecupti.c: the fake CUPTI callback API, in the fake libcuda.so.1 (the
 * injection library is given that file as its CUPTI through IKET_CUPTI_LIB).
 * One subscriber at a time, as CUPTI allows; FAKE_CUPTI_TAKEN=1 makes even
 * the first subscription fail as when nsys or ncu holds CUPTI;
 * FAKE_NO_CUPTI_NAMES=1 makes cuptiGetCallbackName fail (code 17). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "fake_internal.h"

#define MAX_CBID 700 /* the highest callback id the fake knows, per domain */

struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback;
  void *userdata;
  unsigned char enabled[4][MAX_CBID + 1];
};

static pthread_mutex_t c_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUpti_Subscriber_st *c_sub;

static int env_on(const char *name) {
  const char *e = getenv(name);
  return e && strcmp(e, "1") == 0;
}

FK_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud) {
  if (!sub) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&c_mu);
  CUptiResult r = CUPTI_SUCCESS;
  if (c_sub || env_on("FAKE_CUPTI_TAKEN")) {
    r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  } else if (!(c_sub = calloc(1, sizeof *c_sub))) {
    r = CUPTI_ERROR_INVALID_PARAMETER;
  } else {
    c_sub->callback = cb;
    c_sub->userdata = ud;
    *sub = c_sub;
  }
  pthread_mutex_unlock(&c_mu);
  return r;
}

FK_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub) {
  pthread_mutex_lock(&c_mu);
  CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
  if (sub && sub == c_sub) {
    /* Not freed: a callback may be running on another thread. */
    c_sub->callback = NULL;
    c_sub = NULL;
    r = CUPTI_SUCCESS;
  }
  pthread_mutex_unlock(&c_mu);
  return r;
}

static CUptiResult enable(uint32_t on, CUpti_SubscriberHandle sub, CUpti_CallbackDomain d,
                          CUpti_CallbackId cbid, int all) {
  pthread_mutex_lock(&c_mu);
  CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
  if (sub && sub == c_sub && d > CUPTI_CB_DOMAIN_INVALID && d <= CUPTI_CB_DOMAIN_RESOURCE &&
      (all || (cbid > 0 && cbid <= MAX_CBID))) {
    if (all)
      memset(c_sub->enabled[d], on != 0, sizeof c_sub->enabled[d]);
    else
      c_sub->enabled[d][cbid] = on != 0;
    r = CUPTI_SUCCESS;
  }
  pthread_mutex_unlock(&c_mu);
  return r;
}

FK_EXPORT CUptiResult cuptiEnableCallback(uint32_t on, CUpti_SubscriberHandle sub,
                                          CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
  return enable(on, sub, d, cbid, 0);
}

FK_EXPORT CUptiResult cuptiEnableDomain(uint32_t on, CUpti_SubscriberHandle sub, CUpti_CallbackDomain d) {
  return enable(on, sub, d, 0, 1);
}

static const struct {
  int domain;
  uint32_t cbid;
  const char *name;
} known[] = {
    {1, IKET_CBID_cuLaunchKernel, "cuLaunchKernel"},
    {1, IKET_CBID_cuModuleLoadData, "cuModuleLoadData"},
    {1, IKET_CBID_cuModuleUnload, "cuModuleUnload"},
    {1, IKET_CBID_cuLaunchKernel_ptsz, "cuLaunchKernel_ptsz"},
    {1, IKET_CBID_cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel"},
    {1, IKET_CBID_cuLaunchCooperativeKernel_ptsz, "cuLaunchCooperativeKernel_ptsz"},
    {1, IKET_CBID_cuGraphLaunch, "cuGraphLaunch"},
    {1, IKET_CBID_cuGraphLaunch_ptsz, "cuGraphLaunch_ptsz"},
    {1, IKET_CBID_cuLaunchKernelEx, "cuLaunchKernelEx"},
    {1, IKET_CBID_cuLaunchKernelEx_ptsz, "cuLaunchKernelEx_ptsz"},
    {2, IKET_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel_v7000"},
    {2, IKET_CBID_cudaLaunchKernel_ptsz_v7000, "cudaLaunchKernel_ptsz_v7000"},
    {2, IKET_CBID_cudaLaunchCooperativeKernel_v9000, "cudaLaunchCooperativeKernel_v9000"},
    {2, IKET_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, "cudaLaunchCooperativeKernel_ptsz_v9000"},
    {2, IKET_CBID_cudaGraphLaunch_v10000, "cudaGraphLaunch_v10000"},
    {2, IKET_CBID_cudaGraphLaunch_ptsz_v10000, "cudaGraphLaunch_ptsz_v10000"},
    {2, IKET_CBID_cudaLaunchKernelExC_v11060, "cudaLaunchKernelExC_v11060"},
    {2, IKET_CBID_cudaLaunchKernelExC_ptsz_v11060, "cudaLaunchKernelExC_ptsz_v11060"},
};

FK_EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char **name) {
  static char fake[2][MAX_CBID + 1][16];
  if (env_on("FAKE_NO_CUPTI_NAMES")) return CUPTI_ERROR_FAKE_NOT_SUPPORTED;
  if (!name || (d != CUPTI_CB_DOMAIN_DRIVER_API && d != CUPTI_CB_DOMAIN_RUNTIME_API) || cbid == 0 ||
      cbid > MAX_CBID)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i].domain == (int)d && known[i].cbid == cbid) {
      *name = known[i].name;
      return CUPTI_SUCCESS;
    }
  pthread_mutex_lock(&c_mu);
  char *s = fake[d - 1][cbid];
  if (!s[0]) snprintf(s, sizeof fake[0][0], "cuFake%u", cbid);
  pthread_mutex_unlock(&c_mu);
  *name = s;
  return CUPTI_SUCCESS;
}

FK_EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **str) {
  static const struct {
    CUptiResult r;
    const char *s;
  } results[] = {
      {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
      {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
      {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
      {CUPTI_ERROR_FAKE_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
      {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
      {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
  };
  if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < sizeof results / sizeof results[0]; i++)
    if (results[i].r == r) {
      *str = results[i].s;
      return CUPTI_SUCCESS;
    }
  *str = "CUPTI_ERROR_UNKNOWN";
  return CUPTI_ERROR_INVALID_PARAMETER;
}

/* subscriber returns the callback for (domain, cbid) when it is enabled. */
static CUpti_CallbackFunc subscriber(CUpti_CallbackDomain d, CUpti_CallbackId cbid, void **ud) {
  CUpti_CallbackFunc cb = NULL;
  pthread_mutex_lock(&c_mu);
  if (c_sub && cbid <= MAX_CBID && c_sub->enabled[d][cbid]) {
    cb = c_sub->callback;
    *ud = c_sub->userdata;
  }
  pthread_mutex_unlock(&c_mu);
  return cb;
}

void fk_api_callback(CUpti_CallbackId cbid, CUpti_ApiCallbackSite site, const char *fname,
                     const void *params, CUresult *ret, const char *symbol, uint32_t correlation,
                     uint64_t *corr_data) {
  void *ud = NULL;
  CUpti_CallbackFunc cb = subscriber(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &ud);
  if (!cb) return;
  CUcontext ctx = fk_current_ctx();
  CUpti_CallbackData d = {site, fname, params, ret, symbol, ctx, ctx ? ctx->uid : 0, corr_data,
                          correlation};
  cb(ud, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

void fk_resource_callback(CUpti_CallbackId cbid, CUcontext ctx, CUstream stream, void *descriptor) {
  void *ud = NULL;
  CUpti_CallbackFunc cb = subscriber(CUPTI_CB_DOMAIN_RESOURCE, cbid, &ud);
  if (!cb) return;
  CUpti_ResourceData d = {ctx, {stream}, descriptor};
  cb(ud, CUPTI_CB_DOMAIN_RESOURCE, cbid, &d);
}
