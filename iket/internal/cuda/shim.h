// shim.h: the few CUDA driver and NVRTC types iket needs, declared here so the
// package builds with no CUDA toolkit, and the wrappers that call through the
// function pointers resolved with dlsym (symbols.go). Every wrapper that acts
// on a context makes it current on the calling thread first, inside the same
// C call, so a goroutine that migrates between OS threads never sees another
// thread's context.
#ifndef IKET_CUDA_SHIM_H
#define IKET_CUDA_SHIM_H

#include <stddef.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;

typedef int nvrtcResult;
typedef struct _nvrtcProgram* nvrtcProgram;

// Symbol slots. The order matches iket_cu_names / iket_rtc_names in shim.c;
// an entry "a|b" tries a first, then b.
enum {
  CU_cuInit,
  CU_cuDriverGetVersion,
  CU_cuDeviceGetCount,
  CU_cuDeviceGet,
  CU_cuDeviceGetName,
  CU_cuDeviceGetUuid,
  CU_cuDeviceGetAttribute,
  CU_cuDeviceTotalMem,
  CU_cuDevicePrimaryCtxRetain,
  CU_cuDevicePrimaryCtxRelease,
  CU_cuDevicePrimaryCtxReset,
  CU_cuCtxSetCurrent,
  CU_cuCtxSynchronize,
  CU_cuMemGetInfo,
  CU_cuMemAlloc,
  CU_cuMemFree,
  CU_cuMemsetD8,
  CU_cuMemsetD8Async,
  CU_cuMemcpyHtoD,
  CU_cuMemcpyDtoH,
  CU_cuMemcpyDtoHAsync,
  CU_cuMemHostAlloc,
  CU_cuMemFreeHost,
  CU_cuMemHostGetDevicePointer,
  CU_cuModuleLoadDataEx,
  CU_cuModuleUnload,
  CU_cuModuleGetFunction,
  CU_cuModuleGetGlobal,
  CU_cuFuncGetAttribute,
  CU_cuFuncSetAttribute,
  CU_cuOccupancyMaxActiveBlocksPerMultiprocessor,
  CU_cuStreamCreate,
  CU_cuStreamDestroy,
  CU_cuStreamQuery,
  CU_cuEventCreate,
  CU_cuEventDestroy,
  CU_cuEventRecord,
  CU_cuEventQuery,
  CU_cuEventElapsedTime,
  CU_cuLaunchKernelEx,
  CU_cuGetErrorName,
  CU_cuGetErrorString,
  CU_cuCtxGetLimit,
  CU_cuCtxSetLimit,
  CU_cuCtxResetPersistingL2Cache,
  CU_NUM
};

enum {
  RTC_nvrtcVersion,
  RTC_nvrtcGetErrorString,
  RTC_nvrtcCreateProgram,
  RTC_nvrtcDestroyProgram,
  RTC_nvrtcCompileProgram,
  RTC_nvrtcGetProgramLogSize,
  RTC_nvrtcGetProgramLog,
  RTC_nvrtcGetPTXSize,
  RTC_nvrtcGetPTX,
  RTC_nvrtcGetCUBINSize,
  RTC_nvrtcGetCUBIN,
  RTC_NUM
};

extern const char* iket_cu_names[CU_NUM];
extern void* iket_cu[CU_NUM];
extern const char* iket_rtc_names[RTC_NUM];
extern void* iket_rtc[RTC_NUM];

// Launch geometry handed to w_launch.
typedef struct {
  unsigned grid[3];
  unsigned block[3];
  unsigned cluster[3];  // all zero: no cluster attribute
  unsigned shared;
  // A persisting access-policy window of window_bytes at window_base (0
  // bytes: none).
  unsigned long long window_base, window_bytes;
} iket_launch;

CUresult w_init(void);
CUresult w_driver_version(int* v);
CUresult w_device_count(int* n);
CUresult w_device_get(CUdevice* d, int ordinal);
CUresult w_device_name(char* buf, int len, CUdevice d);
CUresult w_device_uuid(unsigned char* uuid16, CUdevice d);
CUresult w_device_attr(int* v, int attr, CUdevice d);
CUresult w_device_total_mem(size_t* n, CUdevice d);
CUresult w_primary_retain(CUcontext* c, CUdevice d);
CUresult w_primary_release(CUdevice d);
CUresult w_primary_reset(CUdevice d);
CUresult w_ctx_sync(CUcontext c);
CUresult w_mem_info(CUcontext c, size_t* free_b, size_t* total_b);
CUresult w_mem_alloc(CUcontext c, CUdeviceptr* p, size_t n);
CUresult w_mem_free(CUcontext c, CUdeviceptr p);
CUresult w_memset_d8(CUcontext c, CUdeviceptr p, unsigned char v, size_t n);
CUresult w_memset_d8_async(CUcontext c, CUdeviceptr p, unsigned char v,
                           size_t n, CUstream s);
CUresult w_htod(CUcontext c, CUdeviceptr p, const void* src, size_t n);
CUresult w_dtoh(CUcontext c, void* dst, CUdeviceptr p, size_t n);
CUresult w_dtoh_async(CUcontext c, void* dst, CUdeviceptr p, size_t n,
                      CUstream s);
CUresult w_host_alloc(CUcontext c, void** p, size_t n, unsigned flags);
CUresult w_host_free(CUcontext c, void* p);
CUresult w_host_dptr(CUcontext c, CUdeviceptr* d, void* p);
CUresult w_module_load(CUcontext c, CUmodule* m, const void* image,
                       char* errlog, unsigned errlog_size);
CUresult w_module_unload(CUcontext c, CUmodule m);
CUresult w_module_function(CUcontext c, CUfunction* f, CUmodule m,
                           const char* name);
CUresult w_module_global(CUcontext c, CUdeviceptr* p, size_t* n, CUmodule m,
                         const char* name);
CUresult w_func_get_attr(CUcontext c, int* v, int attr, CUfunction f);
CUresult w_func_set_attr(CUcontext c, CUfunction f, int attr, int v);
CUresult w_occupancy(CUcontext c, int* blocks, CUfunction f, int block_size,
                     size_t smem);
CUresult w_stream_create(CUcontext c, CUstream* s, unsigned flags);
CUresult w_stream_destroy(CUcontext c, CUstream s);
CUresult w_stream_query(CUcontext c, CUstream s);
CUresult w_event_create(CUcontext c, CUevent* e, unsigned flags);
CUresult w_event_destroy(CUcontext c, CUevent e);
CUresult w_event_record(CUcontext c, CUevent e, CUstream s);
CUresult w_event_query(CUcontext c, CUevent e);
CUresult w_event_elapsed(CUcontext c, float* ms, CUevent a, CUevent b);
CUresult w_persisting_limit(CUcontext c, size_t* v);
CUresult w_set_persisting_limit(CUcontext c, size_t v);
CUresult w_reset_persisting(CUcontext c);
CUresult w_launch(CUcontext c, CUfunction f, const iket_launch* l, CUstream s,
                  const unsigned char* blob, const size_t* offsets, int n);
// w_error_name and w_error_string return NULL when the driver does not know r.
const char* w_error_name(CUresult r);
const char* w_error_string(CUresult r);

nvrtcResult w_rtc_version(int* major, int* minor);
const char* w_rtc_error_string(nvrtcResult r);
nvrtcResult w_rtc_create(nvrtcProgram* p, const char* src, const char* name,
                         int nheaders, const char* const* headers,
                         const char* const* include_names);
nvrtcResult w_rtc_destroy(nvrtcProgram* p);
nvrtcResult w_rtc_compile(nvrtcProgram p, int nopts, const char* const* opts);
nvrtcResult w_rtc_log_size(nvrtcProgram p, size_t* n);
nvrtcResult w_rtc_log(nvrtcProgram p, char* buf);
nvrtcResult w_rtc_ptx_size(nvrtcProgram p, size_t* n);
nvrtcResult w_rtc_ptx(nvrtcProgram p, char* buf);
nvrtcResult w_rtc_cubin_size(nvrtcProgram p, size_t* n);
nvrtcResult w_rtc_cubin(nvrtcProgram p, char* buf);

#endif  // IKET_CUDA_SHIM_H
