/* iket_cuda.h: the few CUDA driver and CUPTI declarations that iket's
 * injection library uses, written from the documented ABI so that it builds
 * with no CUDA toolkit. Entry points are resolved at run time with dlsym;
 * nothing here is linked. Values are those of cuda.h and cupti_*.h, which
 * NVIDIA does not renumber. */
#ifndef IKET_CUDA_H
#define IKET_CUDA_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUkern_st *CUkernel;
typedef struct CUlib_st *CUlibrary;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct { char bytes[16]; } CUuuid;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
};

enum {
  CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE = 108,
  CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE = 109,
};

/* The L2's persisting lines: a context's set-aside (a limit) and a
 * stream's (or a launch's) access-policy window. */
enum { CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 6 };
enum { CU_ACCESS_PROPERTY_NORMAL = 0, CU_ACCESS_PROPERTY_STREAMING = 1, CU_ACCESS_PROPERTY_PERSISTING = 2 };
enum { CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1 };
typedef struct {
  void *base_ptr;
  size_t num_bytes;
  float hitRatio;
  int hitProp, missProp; /* CU_ACCESS_PROPERTY_* */
} CUaccessPolicyWindow;
typedef union {
  char pad[64];
  CUaccessPolicyWindow accessPolicyWindow;
} CUstreamAttrValue;

enum {
  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH = 11,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT = 12,
  CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH = 13,
};

enum { CU_STREAM_CAPTURE_STATUS_NONE = 0 };
enum {
  CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
  CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
  CU_STREAM_CAPTURE_MODE_RELAXED = 2,
};
#define CU_STREAM_PER_THREAD ((CUstream)0x2)
enum { CU_STREAM_NON_BLOCKING = 1 };
enum { CU_EVENT_DEFAULT = 0 };
enum { CU_MEMHOSTALLOC_PORTABLE = 1, CU_MEMHOSTALLOC_DEVICEMAP = 2 };
enum { CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4 };

typedef struct {
  int id;
  char pad[4];
  union {
    char pad[64];
    struct {
      unsigned x, y, z;
    } clusterDim;
    CUaccessPolicyWindow accessPolicyWindow;
  } value;
} CUlaunchAttribute;

typedef struct {
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  CUlaunchAttribute *attrs;
  unsigned numAttrs;
} CUlaunchConfig;

/* Parameters of the launch entry points, as CUPTI passes them. */
typedef struct {
  CUfunction f;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  void **kernelParams;
  void **extra; /* absent in cuLaunchCooperativeKernel's */
} cuLaunchKernel_params;

typedef struct {
  const CUlaunchConfig *config;
  CUfunction f;
  void **kernelParams;
  void **extra;
} cuLaunchKernelEx_params;

typedef struct {
  CUgraphExec hGraph;
  CUstream hStream;
} cuGraphLaunch_params;

/* The module loads whose image iket may replace (iket_jit.h): the image is
 * the second parameter of each. */
typedef struct {
  CUmodule *module;
  const void *image;
} cuModuleLoadData_params;
typedef struct {
  CUmodule *module;
  const void *image;
  unsigned numOptions;
  int *options;
  void **optionValues;
} cuModuleLoadDataEx_params;
typedef struct {
  CUmodule *module;
  const void *fatCubin;
} cuModuleLoadFatBinary_params;
typedef struct {
  CUlibrary *library;
  const void *code;
  int *jitOptions;
  void **jitOptionsValues;
  unsigned numJitOptions;
  int *libraryOptions;
  void **libraryOptionValues;
  unsigned numLibraryOptions;
} cuLibraryLoadData_params;

/* CUPTI. */
typedef int CUptiResult;
typedef uint32_t CUpti_CallbackId;
typedef struct CUpti_Subscriber_st *CUpti_SubscriberHandle;

enum {
  CUPTI_SUCCESS = 0,
  CUPTI_ERROR_NOT_INITIALIZED = 15,
  CUPTI_ERROR_INSUFFICIENT_PRIVILEGES = 35,
  CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED = 39,
};

typedef enum {
  CUPTI_CB_DOMAIN_INVALID = 0,
  CUPTI_CB_DOMAIN_DRIVER_API = 1,
  CUPTI_CB_DOMAIN_RUNTIME_API = 2,
  CUPTI_CB_DOMAIN_RESOURCE = 3,
} CUpti_CallbackDomain;

typedef enum { CUPTI_API_ENTER = 0, CUPTI_API_EXIT = 1 } CUpti_ApiCallbackSite;

typedef struct {
  CUpti_ApiCallbackSite callbackSite;
  const char *functionName;
  const void *functionParams;
  void *functionReturnValue;
  const char *symbolName;
  CUcontext context;
  uint32_t contextUid;
  uint64_t *correlationData;
  uint32_t correlationId;
} CUpti_CallbackData;

/* Resource domain. */
enum {
  CUPTI_CBID_RESOURCE_CONTEXT_CREATED = 1,
  CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING = 2,
  CUPTI_CBID_RESOURCE_STREAM_CREATED = 3,
  CUPTI_CBID_RESOURCE_STREAM_DESTROY_STARTING = 4,
  CUPTI_CBID_RESOURCE_CU_INIT_FINISHED = 5,
  CUPTI_CBID_RESOURCE_MODULE_LOADED = 6,
  CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING = 7,
};

typedef struct {
  CUcontext context;
  union {
    CUstream stream;
  } resourceHandle;
  void *resourceDescriptor;
} CUpti_ResourceData;

typedef struct {
  uint32_t moduleId;
  size_t cubinSize;
  const char *pCubin;
} CUpti_ModuleResourceData;

typedef void (*CUpti_CallbackFunc)(void *userdata, CUpti_CallbackDomain domain,
                                   CUpti_CallbackId cbid, const void *cbdata);

/* Callback ids (cupti_driver_cbid.h, cupti_runtime_cbid.h), used when
 * cuptiGetCallbackName is missing; otherwise ids are found by name. */
enum {
  IKET_CBID_cuLaunchKernel = 307,
  IKET_CBID_cuLaunchKernel_ptsz = 442,
  IKET_CBID_cuLaunchCooperativeKernel = 477,
  IKET_CBID_cuLaunchCooperativeKernel_ptsz = 478,
  IKET_CBID_cuGraphLaunch = 514,
  IKET_CBID_cuGraphLaunch_ptsz = 515,
  IKET_CBID_cuLaunchKernelEx = 652,
  IKET_CBID_cuLaunchKernelEx_ptsz = 653,
  IKET_CBID_cuModuleLoadData = 19,
  IKET_CBID_cuModuleLoadDataEx = 20,
  IKET_CBID_cuModuleLoadFatBinary = 21,
  IKET_CBID_cuLibraryLoadData = 678,
  IKET_CBID_cuModuleUnload = 22,
  IKET_CBID_cuLibraryUnload = 680,
  IKET_CBID_cudaLaunchKernel_v7000 = 211,
  IKET_CBID_cudaLaunchKernel_ptsz_v7000 = 214,
  IKET_CBID_cudaLaunchCooperativeKernel_v9000 = 269,
  IKET_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 = 270,
  IKET_CBID_cudaGraphLaunch_v10000 = 311,
  IKET_CBID_cudaGraphLaunch_ptsz_v10000 = 312,
  IKET_CBID_cudaLaunchKernelExC_v11060 = 430,
  IKET_CBID_cudaLaunchKernelExC_ptsz_v11060 = 431,
};

#endif
