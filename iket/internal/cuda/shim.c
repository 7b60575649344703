// shim.c: calls into libcuda and libnvrtc through the function pointers that
// symbols.go resolves with dlsym. See shim.h.
#include "shim.h"

const char* iket_cu_names[CU_NUM] = {
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetUuid_v2|cuDeviceGetUuid",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2|cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxReset_v2|cuDevicePrimaryCtxReset",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemsetD8_v2",
    "cuMemsetD8Async",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemHostGetDevicePointer_v2",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuModuleGetGlobal_v2",
    "cuFuncGetAttribute",
    "cuFuncSetAttribute",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamQuery",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventElapsedTime_v2|cuEventElapsedTime",
    "cuLaunchKernelEx",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuCtxGetLimit",
    "cuCtxSetLimit",
    "cuCtxResetPersistingL2Cache",
};
void* iket_cu[CU_NUM];

const char* iket_rtc_names[RTC_NUM] = {
    "nvrtcVersion",          "nvrtcGetErrorString",   "nvrtcCreateProgram",
    "nvrtcDestroyProgram",   "nvrtcCompileProgram",   "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",    "nvrtcGetPTXSize",       "nvrtcGetPTX",
    "nvrtcGetCUBINSize",     "nvrtcGetCUBIN",
};
void* iket_rtc[RTC_NUM];

// CUDA_ERROR_NOT_INITIALIZED: returned when a symbol slot is empty, which
// symbols.go prevents; the check keeps a bug from becoming a crash.
#define NOT_LOADED 3
#define RTC_NOT_LOADED 11  // NVRTC_ERROR_INTERNAL_ERROR

#define CALL(slot, type, ...)                        \
  do {                                               \
    if (iket_cu[slot] == 0) return NOT_LOADED;       \
    return ((type)iket_cu[slot])(__VA_ARGS__);       \
  } while (0)

// CURRENT makes c current on this thread or returns the failure.
#define CURRENT(c)                                                      \
  do {                                                                  \
    if (iket_cu[CU_cuCtxSetCurrent] == 0) return NOT_LOADED;            \
    CUresult r_ = ((CUresult(*)(CUcontext))iket_cu[CU_cuCtxSetCurrent])(c); \
    if (r_ != 0) return r_;                                             \
  } while (0)

CUresult w_init(void) { CALL(CU_cuInit, CUresult(*)(unsigned), 0u); }

CUresult w_driver_version(int* v) {
  CALL(CU_cuDriverGetVersion, CUresult(*)(int*), v);
}

CUresult w_device_count(int* n) {
  CALL(CU_cuDeviceGetCount, CUresult(*)(int*), n);
}

CUresult w_device_get(CUdevice* d, int ordinal) {
  CALL(CU_cuDeviceGet, CUresult(*)(CUdevice*, int), d, ordinal);
}

CUresult w_device_name(char* buf, int len, CUdevice d) {
  CALL(CU_cuDeviceGetName, CUresult(*)(char*, int, CUdevice), buf, len, d);
}

CUresult w_device_uuid(unsigned char* uuid16, CUdevice d) {
  CALL(CU_cuDeviceGetUuid, CUresult(*)(unsigned char*, CUdevice), uuid16, d);
}

CUresult w_device_attr(int* v, int attr, CUdevice d) {
  CALL(CU_cuDeviceGetAttribute, CUresult(*)(int*, int, CUdevice), v, attr, d);
}

CUresult w_device_total_mem(size_t* n, CUdevice d) {
  CALL(CU_cuDeviceTotalMem, CUresult(*)(size_t*, CUdevice), n, d);
}

CUresult w_primary_retain(CUcontext* c, CUdevice d) {
  CALL(CU_cuDevicePrimaryCtxRetain, CUresult(*)(CUcontext*, CUdevice), c, d);
}

CUresult w_primary_release(CUdevice d) {
  CALL(CU_cuDevicePrimaryCtxRelease, CUresult(*)(CUdevice), d);
}

CUresult w_primary_reset(CUdevice d) {
  CALL(CU_cuDevicePrimaryCtxReset, CUresult(*)(CUdevice), d);
}

CUresult w_ctx_sync(CUcontext c) {
  CURRENT(c);
  CALL(CU_cuCtxSynchronize, CUresult(*)(void));
}

CUresult w_mem_info(CUcontext c, size_t* free_b, size_t* total_b) {
  CURRENT(c);
  CALL(CU_cuMemGetInfo, CUresult(*)(size_t*, size_t*), free_b, total_b);
}

CUresult w_mem_alloc(CUcontext c, CUdeviceptr* p, size_t n) {
  CURRENT(c);
  CALL(CU_cuMemAlloc, CUresult(*)(CUdeviceptr*, size_t), p, n);
}

CUresult w_mem_free(CUcontext c, CUdeviceptr p) {
  CURRENT(c);
  CALL(CU_cuMemFree, CUresult(*)(CUdeviceptr), p);
}

CUresult w_memset_d8(CUcontext c, CUdeviceptr p, unsigned char v, size_t n) {
  CURRENT(c);
  CALL(CU_cuMemsetD8, CUresult(*)(CUdeviceptr, unsigned char, size_t), p, v, n);
}

CUresult w_memset_d8_async(CUcontext c, CUdeviceptr p, unsigned char v,
                           size_t n, CUstream s) {
  CURRENT(c);
  CALL(CU_cuMemsetD8Async,
       CUresult(*)(CUdeviceptr, unsigned char, size_t, CUstream), p, v, n, s);
}

CUresult w_htod(CUcontext c, CUdeviceptr p, const void* src, size_t n) {
  CURRENT(c);
  CALL(CU_cuMemcpyHtoD, CUresult(*)(CUdeviceptr, const void*, size_t), p, src,
       n);
}

CUresult w_dtoh(CUcontext c, void* dst, CUdeviceptr p, size_t n) {
  CURRENT(c);
  CALL(CU_cuMemcpyDtoH, CUresult(*)(void*, CUdeviceptr, size_t), dst, p, n);
}

CUresult w_dtoh_async(CUcontext c, void* dst, CUdeviceptr p, size_t n,
                      CUstream s) {
  CURRENT(c);
  CALL(CU_cuMemcpyDtoHAsync,
       CUresult(*)(void*, CUdeviceptr, size_t, CUstream), dst, p, n, s);
}

CUresult w_host_alloc(CUcontext c, void** p, size_t n, unsigned flags) {
  CURRENT(c);
  CALL(CU_cuMemHostAlloc, CUresult(*)(void**, size_t, unsigned), p, n, flags);
}

CUresult w_host_free(CUcontext c, void* p) {
  CURRENT(c);
  CALL(CU_cuMemFreeHost, CUresult(*)(void*), p);
}

CUresult w_host_dptr(CUcontext c, CUdeviceptr* d, void* p) {
  CURRENT(c);
  CALL(CU_cuMemHostGetDevicePointer,
       CUresult(*)(CUdeviceptr*, void*, unsigned), d, p, 0u);
}

// JIT option numbers from the CUjit_option enum.
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6

CUresult w_module_load(CUcontext c, CUmodule* m, const void* image,
                       char* errlog, unsigned errlog_size) {
  CURRENT(c);
  int opts[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[2] = {errlog, (void*)(size_t)errlog_size};
  CALL(CU_cuModuleLoadDataEx,
       CUresult(*)(CUmodule*, const void*, unsigned, int*, void**), m, image,
       2u, opts, vals);
}

CUresult w_module_unload(CUcontext c, CUmodule m) {
  CURRENT(c);
  CALL(CU_cuModuleUnload, CUresult(*)(CUmodule), m);
}

CUresult w_module_function(CUcontext c, CUfunction* f, CUmodule m,
                           const char* name) {
  CURRENT(c);
  CALL(CU_cuModuleGetFunction, CUresult(*)(CUfunction*, CUmodule, const char*),
       f, m, name);
}

CUresult w_module_global(CUcontext c, CUdeviceptr* p, size_t* n, CUmodule m,
                         const char* name) {
  CURRENT(c);
  CALL(CU_cuModuleGetGlobal,
       CUresult(*)(CUdeviceptr*, size_t*, CUmodule, const char*), p, n, m,
       name);
}

CUresult w_func_get_attr(CUcontext c, int* v, int attr, CUfunction f) {
  CURRENT(c);
  CALL(CU_cuFuncGetAttribute, CUresult(*)(int*, int, CUfunction), v, attr, f);
}

CUresult w_func_set_attr(CUcontext c, CUfunction f, int attr, int v) {
  CURRENT(c);
  CALL(CU_cuFuncSetAttribute, CUresult(*)(CUfunction, int, int), f, attr, v);
}

CUresult w_occupancy(CUcontext c, int* blocks, CUfunction f, int block_size,
                     size_t smem) {
  CURRENT(c);
  CALL(CU_cuOccupancyMaxActiveBlocksPerMultiprocessor,
       CUresult(*)(int*, CUfunction, int, size_t), blocks, f, block_size, smem);
}

CUresult w_stream_create(CUcontext c, CUstream* s, unsigned flags) {
  CURRENT(c);
  CALL(CU_cuStreamCreate, CUresult(*)(CUstream*, unsigned), s, flags);
}

CUresult w_stream_destroy(CUcontext c, CUstream s) {
  CURRENT(c);
  CALL(CU_cuStreamDestroy, CUresult(*)(CUstream), s);
}

CUresult w_stream_query(CUcontext c, CUstream s) {
  CURRENT(c);
  CALL(CU_cuStreamQuery, CUresult(*)(CUstream), s);
}

CUresult w_event_create(CUcontext c, CUevent* e, unsigned flags) {
  CURRENT(c);
  CALL(CU_cuEventCreate, CUresult(*)(CUevent*, unsigned), e, flags);
}

CUresult w_event_destroy(CUcontext c, CUevent e) {
  CURRENT(c);
  CALL(CU_cuEventDestroy, CUresult(*)(CUevent), e);
}

CUresult w_event_record(CUcontext c, CUevent e, CUstream s) {
  CURRENT(c);
  CALL(CU_cuEventRecord, CUresult(*)(CUevent, CUstream), e, s);
}

CUresult w_event_query(CUcontext c, CUevent e) {
  CURRENT(c);
  CALL(CU_cuEventQuery, CUresult(*)(CUevent), e);
}

CUresult w_event_elapsed(CUcontext c, float* ms, CUevent a, CUevent b) {
  CURRENT(c);
  CALL(CU_cuEventElapsedTime, CUresult(*)(float*, CUevent, CUevent), ms, a, b);
}

// The CUlaunchConfig / CUlaunchAttribute layout of cuda.h (CUDA 12+).
typedef struct {
  unsigned x, y, z;
} iket_dim3;

typedef struct {
  int id;  // CUlaunchAttributeID
  char pad[4];
  union {
    char pad[64];
    unsigned long long align_;
    iket_dim3 cluster_dim;
    struct {  // CUaccessPolicyWindow
      void* base_ptr;
      size_t num_bytes;
      float hit_ratio;
      int hit_prop, miss_prop;
    } window;
  } value;
} iket_launch_attribute;

typedef struct {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned shared_mem_bytes;
  CUstream stream;
  iket_launch_attribute* attrs;
  unsigned num_attrs;
} iket_launch_config;

_Static_assert(sizeof(iket_launch_attribute) == 72, "CUlaunchAttribute size");
_Static_assert(sizeof(iket_launch_config) == 56, "CUlaunchConfig size");

#define CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW 1
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define CU_LIMIT_PERSISTING_L2_CACHE_SIZE 6
#define CU_ACCESS_PROPERTY_NORMAL 0
#define CU_ACCESS_PROPERTY_PERSISTING 2
#define IKET_MAX_PARAMS 256

CUresult w_persisting_limit(CUcontext c, size_t* v) {
  CURRENT(c);
  CALL(CU_cuCtxGetLimit, CUresult(*)(size_t*, int), v, CU_LIMIT_PERSISTING_L2_CACHE_SIZE);
}

CUresult w_set_persisting_limit(CUcontext c, size_t v) {
  CURRENT(c);
  CALL(CU_cuCtxSetLimit, CUresult(*)(int, size_t), CU_LIMIT_PERSISTING_L2_CACHE_SIZE, v);
}

CUresult w_reset_persisting(CUcontext c) {
  CURRENT(c);
  CALL(CU_cuCtxResetPersistingL2Cache, CUresult(*)(void));
}

CUresult w_launch(CUcontext c, CUfunction f, const iket_launch* l, CUstream s,
                  const unsigned char* blob, const size_t* offsets, int n) {
  CURRENT(c);
  if (n < 0 || n > IKET_MAX_PARAMS) return 1;  // CUDA_ERROR_INVALID_VALUE
  void* params[IKET_MAX_PARAMS + 1];
  for (int i = 0; i < n; ++i) params[i] = (void*)(blob + offsets[i]);
  params[n] = 0;
  iket_launch_attribute attr[2];
  for (unsigned i = 0; i < sizeof attr; ++i) ((char*)attr)[i] = 0;
  iket_launch_config cfg;
  cfg.grid_x = l->grid[0];
  cfg.grid_y = l->grid[1];
  cfg.grid_z = l->grid[2];
  cfg.block_x = l->block[0];
  cfg.block_y = l->block[1];
  cfg.block_z = l->block[2];
  cfg.shared_mem_bytes = l->shared;
  cfg.stream = s;
  cfg.attrs = attr;
  cfg.num_attrs = 0;
  if (l->cluster[0] | l->cluster[1] | l->cluster[2]) {
    iket_launch_attribute* a = &attr[cfg.num_attrs++];
    a->id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a->value.cluster_dim.x = l->cluster[0];
    a->value.cluster_dim.y = l->cluster[1];
    a->value.cluster_dim.z = l->cluster[2];
  }
  if (l->window_bytes != 0) {
    iket_launch_attribute* a = &attr[cfg.num_attrs++];
    a->id = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
    a->value.window.base_ptr = (void*)(size_t)l->window_base;
    a->value.window.num_bytes = (size_t)l->window_bytes;
    a->value.window.hit_ratio = 1.0f;
    a->value.window.hit_prop = CU_ACCESS_PROPERTY_PERSISTING;
    a->value.window.miss_prop = CU_ACCESS_PROPERTY_NORMAL;
  }
  if (cfg.num_attrs == 0) cfg.attrs = 0;
  CALL(CU_cuLaunchKernelEx,
       CUresult(*)(const iket_launch_config*, CUfunction, void**, void**), &cfg,
       f, params, (void**)0);
}

const char* w_error_name(CUresult r) {
  const char* s = 0;
  if (iket_cu[CU_cuGetErrorName] == 0) return 0;
  if (((CUresult(*)(CUresult, const char**))iket_cu[CU_cuGetErrorName])(r, &s) != 0)
    return 0;
  return s;
}

const char* w_error_string(CUresult r) {
  const char* s = 0;
  if (iket_cu[CU_cuGetErrorString] == 0) return 0;
  if (((CUresult(*)(CUresult, const char**))iket_cu[CU_cuGetErrorString])(r, &s) != 0)
    return 0;
  return s;
}

#define RTC(slot, type, ...)                          \
  do {                                                \
    if (iket_rtc[slot] == 0) return RTC_NOT_LOADED;   \
    return ((type)iket_rtc[slot])(__VA_ARGS__);       \
  } while (0)

nvrtcResult w_rtc_version(int* major, int* minor) {
  RTC(RTC_nvrtcVersion, nvrtcResult(*)(int*, int*), major, minor);
}

const char* w_rtc_error_string(nvrtcResult r) {
  if (iket_rtc[RTC_nvrtcGetErrorString] == 0) return 0;
  return ((const char* (*)(nvrtcResult))iket_rtc[RTC_nvrtcGetErrorString])(r);
}

nvrtcResult w_rtc_create(nvrtcProgram* p, const char* src, const char* name,
                         int nheaders, const char* const* headers,
                         const char* const* include_names) {
  RTC(RTC_nvrtcCreateProgram,
      nvrtcResult(*)(nvrtcProgram*, const char*, const char*, int,
                     const char* const*, const char* const*),
      p, src, name, nheaders, headers, include_names);
}

nvrtcResult w_rtc_destroy(nvrtcProgram* p) {
  RTC(RTC_nvrtcDestroyProgram, nvrtcResult(*)(nvrtcProgram*), p);
}

nvrtcResult w_rtc_compile(nvrtcProgram p, int nopts, const char* const* opts) {
  RTC(RTC_nvrtcCompileProgram,
      nvrtcResult(*)(nvrtcProgram, int, const char* const*), p, nopts, opts);
}

nvrtcResult w_rtc_log_size(nvrtcProgram p, size_t* n) {
  RTC(RTC_nvrtcGetProgramLogSize, nvrtcResult(*)(nvrtcProgram, size_t*), p, n);
}

nvrtcResult w_rtc_log(nvrtcProgram p, char* buf) {
  RTC(RTC_nvrtcGetProgramLog, nvrtcResult(*)(nvrtcProgram, char*), p, buf);
}

nvrtcResult w_rtc_ptx_size(nvrtcProgram p, size_t* n) {
  RTC(RTC_nvrtcGetPTXSize, nvrtcResult(*)(nvrtcProgram, size_t*), p, n);
}

nvrtcResult w_rtc_ptx(nvrtcProgram p, char* buf) {
  RTC(RTC_nvrtcGetPTX, nvrtcResult(*)(nvrtcProgram, char*), p, buf);
}

nvrtcResult w_rtc_cubin_size(nvrtcProgram p, size_t* n) {
  RTC(RTC_nvrtcGetCUBINSize, nvrtcResult(*)(nvrtcProgram, size_t*), p, n);
}

nvrtcResult w_rtc_cubin(nvrtcProgram p, char* buf) {
  RTC(RTC_nvrtcGetCUBIN, nvrtcResult(*)(nvrtcProgram, char*), p, buf);
}
