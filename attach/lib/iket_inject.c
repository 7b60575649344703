/* iket_inject.c: the part of iket that lives inside a traced program.
 *
 * The CUDA driver loads this library into the program when
 * CUDA_INJECTION64_PATH names it and calls InitializeInjection during cuInit.
 * It subscribes to CUPTI's callbacks on the kernel launch entry points, and
 * for each launch of a kernel whose module carries iket's instrumentation
 * (the device globals iket_state and iket_name_table, docs/FORMAT.md) that
 * the iket process selects, it gives the launch its warp buffers, times it
 * with CUDA events on the launch's stream, waits for it, reads the buffers back
 * and hands everything to the iket process over a Unix socket (IKET_SOCKET).
 * The iket process alone writes captures. Every other launch runs untouched.
 *
 * Rules it keeps: C, libc, libdl and libpthread only; no threads of its own;
 * nothing printed to the program's stdout; the program's results, errors and
 * exit code are its own. When anything about a launch is unexpected, the
 * launch runs untraced and the reason goes to the iket process.
 *
 * Environment (set by `iket run`): IKET_SOCKET, IKET_MODE (trace or time),
 * IKET_CAPACITY, IKET_LAUNCHES (ranges of matching launches to trace, e.g.
 * "0-0,3-5"), IKET_WATCH (1: host-mapped buffers), IKET_TIMEOUT_MS,
 * IKET_BUFFER_LIMIT (the most bytes of a traced launch's buffers;
 * default and at most 4 GiB less 4 KiB),
 * IKET_FLUSH_L2 (bytes to write before each timed launch), IKET_IDLE_MS
 * (how long the GPU is left idle before the flush; default 20),
 * IKET_RECORDS_L2 (0: traced launches' records not kept in the L2),
 * IKET_CUPTI_LIB (path of libcupti, optional). The wire format is in
 * docs/RUNTIME.md ("The injection protocol"). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "iket_cuda.h"
#include "iket_jit.h"

#define IKET_PROTOCOL 1
#define STATE_SIZE 32
#define MAX_RANGES 64
#define EXPORT __attribute__((visibility("default")))

/* ---- driver and CUPTI entry points, resolved with dlsym ---- */

static struct {
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*CtxGetDevice)(CUdevice *);
  CUresult (*CtxSynchronize)(void);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);
  CUresult (*DeviceGetPCIBusId)(char *, int, CUdevice);
  CUresult (*FuncGetModule)(CUmodule *, CUfunction);
  CUresult (*FuncGetAttribute)(int *, int, CUfunction);
  CUresult (*FuncGetName)(const char **, CUfunction);        /* optional */
  CUresult (*KernelGetFunction)(CUfunction *, CUkernel);     /* optional */
  CUresult (*KernelGetLibrary)(CUlibrary *, CUkernel);       /* optional */
  CUresult (*LibraryGetGlobal)(CUdeviceptr *, size_t *, CUlibrary, const char *); /* optional */
  CUresult (*ModuleGetGlobal)(CUdeviceptr *, size_t *, CUmodule, const char *);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*MemHostAlloc)(void **, size_t, unsigned);
  CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
  CUresult (*MemFreeHost)(void *);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamQuery)(CUstream);
  CUresult (*StreamIsCapturing)(CUstream, int *);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventQuery)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*OccupancyMaxActiveBlocks)(int *, CUfunction, int, size_t);
  CUresult (*ThreadExchangeStreamCaptureMode)(int *); /* optional */
  /* optional, all five or none: the records kept in the L2 (l2_keep) */
  CUresult (*StreamGetAttribute)(CUstream, int, CUstreamAttrValue *);
  CUresult (*StreamSetAttribute)(CUstream, int, const CUstreamAttrValue *);
  CUresult (*CtxGetLimit)(size_t *, int);
  CUresult (*CtxSetLimit)(int, size_t);
  CUresult (*CtxResetPersistingL2Cache)(void);
  /* optional: a module load whose compiled PTX failed is made again with
   * the program's own image (jit_load) */
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*ModuleLoadFatBinary)(CUmodule *, const void *);
  CUresult (*LibraryLoadData)(CUlibrary *, const void *, int *, void **, unsigned, int *, void **, unsigned);
} cu;

static struct {
  CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
  CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                CUpti_CallbackId);
  CUptiResult (*GetResultString)(CUptiResult, const char **);
  CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **); /* optional */
} cupti;

/* ---- process state ---- */

enum { MODE_TRACE, MODE_TIME };

/* Recursive: a resource callback may come on a thread inside iket's own
 * calls. */
static pthread_mutex_t mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static int sock = -1;
static pid_t sock_pid;
static pid_t sock_failed; /* the process whose connection failed */
static int mode = MODE_TRACE;
static unsigned capacity = 4096;
/* IKET_BUFFER_LIMIT: the most bytes a traced launch's warp buffers take;
 * at most one 4 GiB window less its margin (docs/FORMAT.md section 3). */
static unsigned long long buffer_limit = 0xffffffffull - 4096;
static int watch;
static long timeout_ms = 10000;
static size_t flush_bytes; /* IKET_FLUSH_L2: bytes written before each timed launch */
static unsigned char flush_value;
static long idle_ms = 20; /* IKET_IDLE_MS: the GPU left idle before each traced or timed launch */
/* One flush buffer per context: each GPU's L2 is flushed with its own
 * (without a flush, the baseline's stand-in for the traced launch's zeroed
 * buffers: begin_launch). */
#define MAX_FLUSH 64
static struct {
  CUcontext ctx;
  CUdeviceptr buf;
  size_t size;
  int failed; /* an allocation failed: said once, nothing written since */
} flush_bufs[MAX_FLUSH];
static int nranges;
static unsigned long long ranges[MAX_RANGES][2];
static unsigned long long matching; /* matching launches seen (trace mode) */
static unsigned long long seen, traced, timed, skipped;
/* trace mode: module loads whose image was looked into (jit_load), those
 * given PTX with the events on, and the time taken, ns */
static unsigned long long jit_loads, jit_replaced, jit_ns;
static int started;

/* Launch families, by callback id. */
enum { F_NONE, F_KERNEL, F_COOP, F_EX, F_GRAPH, F_RUNTIME };
#define MAX_CBID 1024
static unsigned char driver_family[MAX_CBID], runtime_family[MAX_CBID];
static unsigned char driver_ptsz[MAX_CBID]; /* the entry point's NULL stream is per-thread */
/* the module loads whose image iket replaces in trace mode (iket_jit.h),
 * and the unloads that drop what it remembers of a module */
enum { L_NONE, L_MODULE, L_MODULE_EX, L_FATBIN, L_LIBRARY, L_UNLOAD };
static unsigned char load_kind[MAX_CBID];
/* Why a module's image could not be compiled again, by the module or
 * library handle its load returned (jit_load), until it is unloaded: a
 * handle may name another module later. */
typedef struct jit_why {
  struct jit_why *next;
  const void *handle;
  const char *why;
} jit_why;
#define WHY_BUCKETS 1024
static jit_why *jit_whys[WHY_BUCKETS];
static unsigned why_bucket(const void *h) { return (unsigned)(((uintptr_t)h >> 4) % WHY_BUCKETS); }

/* Per-function cache. */
typedef struct fn {
  struct fn *next;
  CUfunction f;
  CUfunction func; /* f, or the function of the CUkernel f */
  CUcontext ctx;
  int decided, instrumented, selected;
  int capacity_noted; /* the lowered capacity was named once */
  CUdeviceptr state, table, jit; /* jit: iket_jit, in a dormant build's module */
  const char *jit_why;           /* why its module was not compiled again, if known */
  size_t state_size, table_size;
  unsigned char initial[STATE_SIZE];
  /* time mode: ntimes ranges of occurrences to time, as pairs in times;
   * all when ntimes < 0 */
  long ntimes;
  unsigned long long *times;
  char *name;
} fn;
#define FN_BUCKETS 1024
static fn *fns[FN_BUCKETS];

/* A traced or timed launch between its ENTER and EXIT callbacks. */
typedef struct pending {
  fn *fn;
  int trace;
  CUstream stream;
  unsigned grid[3], block[3], cluster[3], shared;
  int cluster_from_function; /* no launch attribute: ask the function */
  unsigned long long index, occurrence;
  unsigned warps_per_cta;
  unsigned long long warps;
  unsigned capacity; /* records per warp it runs with (launch_capacity) */
  size_t size, alloc;
  CUdeviceptr dbuf, base;
  void *hbuf;        /* watch: the mapped host allocation */
  const void *hview; /* watch: the host address of base */
  CUevent ev0, ev1;
  size_t flushed; /* bytes written to flush the L2 before it */
  size_t prepared; /* bytes written before it besides: its buffers zeroed (traced), as many (baseline, no flush) */
  int own_window;  /* the launch passes an access-policy window of its own */
  size_t l2_kept;  /* the L2 set aside for its records (l2_keep; 0: none) */
  size_t l2_limit; /* the context's set-aside before */
  int l2_raised;   /* raised for the launch: l2_limit restored after */
  struct timespec rt0, mono0;
  const char *family;
} pending;

static __thread int rt_pending; /* a runtime launch whose driver launch is not yet seen */
static unsigned long long rt_unseen;

/* ---- small helpers ---- */

static const char *errname(CUresult r) {
  const char *s = NULL;
  if (cu.GetErrorName == NULL || cu.GetErrorName(r, &s) != CUDA_SUCCESS || s == NULL) return "CUDA_ERROR_UNKNOWN";
  return s;
}

static long long ns(const struct timespec *t) { return (long long)t->tv_sec * 1000000000LL + t->tv_nsec; }

/* A growable buffer for the JSON of a message. */
typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} buf;

static void bput(buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t c = b->cap ? b->cap * 2 : 1024;
    while (c < b->n + n + 1) c *= 2;
    char *p = realloc(b->p, c);
    if (p == NULL) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = c;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

/* BLIT appends a string literal. */
#define BLIT(b, lit) bput((b), "" lit, sizeof(lit) - 1)

static void bprintf(buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof tmp) n = sizeof tmp - 1;
  bput(b, tmp, (size_t)n);
}

static void bstr(buf *b, const char *s);

/* bfield appends key, the literal text before a value such as ",\"code\":",
   and val as a JSON string. */
static void bfield(buf *b, const char *key, const char *val) {
  bput(b, key, strlen(key));
  bstr(b, val);
}

/* bstr appends s as a JSON string (NULL as null). */
static void bstr(buf *b, const char *s) {
  if (s == NULL) {
    BLIT(b, "null");
    return;
  }
  BLIT(b, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; ++c) {
    if (*c == '"' || *c == '\\') {
      char e[2] = {'\\', (char)*c};
      bput(b, e, 2);
    } else if (*c < 0x20 || *c == 0x7f) {
      bprintf(b, "\\u%04x", *c);
    } else {
      bput(b, (const char *)c, 1);
    }
  }
  BLIT(b, "\"");
}

static int write_all(const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = send(sock, c, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      /* a dead or stuck iket process: stop talking to it */
      close(sock);
      sock = -1;
      sock_failed = getpid();
      return -1;
    }
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

/* read_line reads one reply line. A reply that does not fit, a timeout or
 * an error ends the connection: a later reply must never be read as the
 * answer to another query. */
static int read_line(char *line, size_t cap) {
  size_t n = 0;
  for (;;) {
    if (n + 1 >= cap) break;
    ssize_t r = recv(sock, line + n, 1, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (line[n] == '\n') {
      line[n] = 0;
      return 0;
    }
    ++n;
  }
  close(sock);
  sock = -1;
  sock_failed = getpid();
  line[0] = 0;
  return -1;
}

static int connect_iket(void);

/* sendmsg_ sends one message: a u32 length (type byte, JSON and payload), the
 * type, a u32 JSON length, the JSON, then the payload. Called with mu held. */
static int send_msg(char type, const buf *json, const void *payload, size_t plen) {
  if (connect_iket() < 0) return -1;
  uint32_t jl = (uint32_t)json->n;
  unsigned long long total = 1ull + 4ull + jl + plen;
  if (total > 0xffffffffull) return -1;
  unsigned char h[9];
  uint32_t t = (uint32_t)total;
  memcpy(h, &t, 4); /* little-endian hosts only: x86-64, aarch64 */
  h[4] = (unsigned char)type;
  memcpy(h + 5, &jl, 4);
  if (write_all(h, sizeof h) < 0 || write_all(json->p, jl) < 0) return -1;
  if (plen > 0 && write_all(payload, plen) < 0) return -1;
  return 0;
}

/* vnote sends a warning or an error the iket process reports, about the
 * kernel named (mangled; NULL: none). */
static void vnote(const char *level, const char *code, const char *kernel, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  buf b = {0};
  bfield(&b, "{\"level\":", level);
  bfield(&b, ",\"code\":", code);
  if (kernel) bfield(&b, ",\"kernel\":", kernel);
  bfield(&b, ",\"msg\":", msg);
  BLIT(&b, "}");
  if (!b.oom && send_msg('E', &b, NULL, 0) < 0 && strcmp(level, "error") == 0)
    fprintf(stderr, "iket: %s\n", msg); /* no iket process to tell */
  free(b.p);
}

static void note(const char *level, const char *code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vnote(level, code, NULL, fmt, ap);
  va_end(ap);
}

static void kernel_note(const char *level, const char *code, const char *kernel, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vnote(level, code, kernel, fmt, ap);
  va_end(ap);
}

static void hello(void) {
  buf b = {0};
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  int drv = 0;
  if (cu.DriverGetVersion) cu.DriverGetVersion(&drv);
  bprintf(&b, "{\"protocol\":%d,\"pid\":%d,\"ppid\":%d,\"host\":", IKET_PROTOCOL, (int)getpid(), (int)getppid());
  bstr(&b, host);
  bfield(&b, ",\"exe\":", exe);
  bprintf(&b, ",\"driver_version\":%d,\"env\":{", drv);
  static const char *vars[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                               "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "SLURM_PROCID", "CUDA_VISIBLE_DEVICES"};
  int first = 1;
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; ++i) {
    const char *v = getenv(vars[i]);
    if (v == NULL) continue;
    if (!first) BLIT(&b, ",");
    first = 0;
    bstr(&b, vars[i]);
    bfield(&b, ":", v);
  }
  BLIT(&b, "}}");
  if (!b.oom) send_msg('H', &b, NULL, 0);
  free(b.p);
}

/* connect_iket connects once per process (again in a forked child). */
static int connect_iket(void) {
  if (sock >= 0 && sock_pid == getpid()) return 0;
  if (sock_failed == getpid()) return -1; /* tried once in this process */
  if (sock >= 0) close(sock); /* a forked child's copy of its parent's */
  sock = -1;
  const char *path = getenv("IKET_SOCKET");
  if (path == NULL || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) return -1;
  int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  strcpy(a.sun_path, path);
  if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
    close(s);
    sock_failed = getpid();
    return -1;
  }
  /* A reply that never comes (the iket process died) must not hang the
   * program: a query then counts as not selected. */
  struct timeval tv = {60, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sock = s;
  sock_pid = getpid();
  hello();
  return 0;
}

/* relaxed makes this thread's driver calls legal while another stream (of
 * this thread or, in global mode, any) is being captured, and returns the
 * mode to restore. */
static int relaxed(void) {
  int m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (cu.ThreadExchangeStreamCaptureMode == NULL || cu.ThreadExchangeStreamCaptureMode(&m) != CUDA_SUCCESS) return -1;
  return m;
}

static void restore(int m) {
  if (m >= 0 && cu.ThreadExchangeStreamCaptureMode != NULL) cu.ThreadExchangeStreamCaptureMode(&m);
}

static void *sym(void *h, const char *a, const char *b) {
  void *p = b ? dlsym(h, b) : NULL;
  return p ? p : dlsym(h, a);
}

static int load_driver(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) h = dlopen("libcuda.so.1", RTLD_NOW);
  if (h == NULL) return -1;
#define REQ(field, name, v2)                                  \
  if ((*(void **)&cu.field = sym(h, name, v2)) == NULL) {     \
    note("error", "driver_symbol", "the CUDA driver lacks %s", name); \
    return -1;                                                \
  }
  REQ(GetErrorName, "cuGetErrorName", NULL)
  REQ(DriverGetVersion, "cuDriverGetVersion", NULL)
  REQ(CtxGetDevice, "cuCtxGetDevice", NULL)
  REQ(CtxSynchronize, "cuCtxSynchronize", NULL)
  REQ(DeviceGetAttribute, "cuDeviceGetAttribute", NULL)
  REQ(DeviceGetName, "cuDeviceGetName", NULL)
  REQ(DeviceGetUuid, "cuDeviceGetUuid", "cuDeviceGetUuid_v2")
  REQ(DeviceGetPCIBusId, "cuDeviceGetPCIBusId", NULL)
  REQ(FuncGetModule, "cuFuncGetModule", NULL)
  REQ(FuncGetAttribute, "cuFuncGetAttribute", NULL)
  REQ(ModuleGetGlobal, "cuModuleGetGlobal", "cuModuleGetGlobal_v2")
  REQ(MemAlloc, "cuMemAlloc", "cuMemAlloc_v2")
  REQ(MemFree, "cuMemFree", "cuMemFree_v2")
  REQ(MemsetD8, "cuMemsetD8", "cuMemsetD8_v2")
  REQ(MemcpyDtoH, "cuMemcpyDtoH", "cuMemcpyDtoH_v2")
  REQ(MemcpyHtoD, "cuMemcpyHtoD", "cuMemcpyHtoD_v2")
  REQ(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", "cuMemcpyDtoHAsync_v2")
  REQ(MemHostAlloc, "cuMemHostAlloc", NULL)
  REQ(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", "cuMemHostGetDevicePointer_v2")
  REQ(MemFreeHost, "cuMemFreeHost", NULL)
  REQ(StreamCreate, "cuStreamCreate", NULL)
  REQ(StreamDestroy, "cuStreamDestroy", "cuStreamDestroy_v2")
  REQ(StreamQuery, "cuStreamQuery", NULL)
  REQ(StreamIsCapturing, "cuStreamIsCapturing", NULL)
  REQ(EventCreate, "cuEventCreate", NULL)
  REQ(EventRecord, "cuEventRecord", NULL)
  REQ(EventQuery, "cuEventQuery", NULL)
  REQ(EventElapsedTime, "cuEventElapsedTime", "cuEventElapsedTime_v2")
  REQ(EventDestroy, "cuEventDestroy", "cuEventDestroy_v2")
  REQ(OccupancyMaxActiveBlocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL)
#undef REQ
  *(void **)&cu.ThreadExchangeStreamCaptureMode = dlsym(h, "cuThreadExchangeStreamCaptureMode");
  *(void **)&cu.FuncGetName = dlsym(h, "cuFuncGetName");
  *(void **)&cu.KernelGetFunction = dlsym(h, "cuKernelGetFunction");
  *(void **)&cu.KernelGetLibrary = dlsym(h, "cuKernelGetLibrary");
  *(void **)&cu.LibraryGetGlobal = dlsym(h, "cuLibraryGetGlobal");
  *(void **)&cu.StreamGetAttribute = dlsym(h, "cuStreamGetAttribute");
  *(void **)&cu.StreamSetAttribute = dlsym(h, "cuStreamSetAttribute");
  *(void **)&cu.CtxGetLimit = dlsym(h, "cuCtxGetLimit");
  *(void **)&cu.CtxSetLimit = dlsym(h, "cuCtxSetLimit");
  *(void **)&cu.CtxResetPersistingL2Cache = dlsym(h, "cuCtxResetPersistingL2Cache");
  *(void **)&cu.ModuleLoadData = dlsym(h, "cuModuleLoadData");
  *(void **)&cu.ModuleLoadDataEx = dlsym(h, "cuModuleLoadDataEx");
  *(void **)&cu.ModuleLoadFatBinary = dlsym(h, "cuModuleLoadFatBinary");
  *(void **)&cu.LibraryLoadData = dlsym(h, "cuLibraryLoadData");
  return 0;
}

static void *open_cupti(char *tried, size_t cap) {
  const char *env = getenv("IKET_CUPTI_LIB");
  static const char *names[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8",
                                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
                                "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so",
                                "/usr/local/cuda/targets/sbsa-linux/lib/libcupti.so"};
  tried[0] = 0;
  /* A CUPTI the program already loaded is the one to share the process
   * with. */
  static const char *loaded[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so", "libcupti.so.11.8"};
  for (size_t i = 0; i < sizeof loaded / sizeof loaded[0]; ++i) {
    void *h = dlopen(loaded[i], RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) return h;
  }
  if (env != NULL && env[0] != 0) {
    void *h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) snprintf(tried, cap, "%s (%s)", env, dlerror());
    return h;
  }
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h != NULL) return h;
    size_t n = strlen(tried);
    snprintf(tried + n, cap - n, "%s%s", n ? ", " : "", names[i]);
  }
  return NULL;
}

static const char *cupti_err(CUptiResult r) {
  const char *s = NULL;
  if (cupti.GetResultString == NULL || cupti.GetResultString(r, &s) != CUPTI_SUCCESS || s == NULL)
    return "CUPTI error";
  return s;
}

/* ---- launch selection ---- */

static void parse_ranges(const char *s) {
  nranges = 0;
  while (s && *s && nranges < MAX_RANGES) {
    char *end;
    unsigned long long a = strtoull(s, &end, 10), b = a;
    if (end == s) break;
    s = end;
    if (*s == '-') {
      ++s;
      b = strtoull(s, &end, 10);
      if (end == s) b = ~0ull;
      s = end;
    }
    ranges[nranges][0] = a;
    ranges[nranges][1] = b;
    ++nranges;
    if (*s == ',') ++s;
  }
}

/* past_ranges reports whether no launch from index i on is selected. */
static int past_ranges(unsigned long long i) {
  for (int k = 0; k < nranges; ++k)
    if (i <= ranges[k][1]) return 0;
  return 1;
}

static int in_ranges(unsigned long long i) {
  for (int k = 0; k < nranges; ++k)
    if (i >= ranges[k][0] && i <= ranges[k][1]) return 1;
  return 0;
}

/* kernel_name is the launched function's mangled name. */
static const char *kernel_name(const CUpti_CallbackData *d, CUfunction f) {
  if (d->symbolName != NULL && d->symbolName[0] != 0) return d->symbolName;
  const char *n = NULL;
  if (cu.FuncGetName != NULL && cu.FuncGetName(&n, f) == CUDA_SUCCESS && n != NULL) return n;
  return "(unnamed kernel)";
}

/* module_of finds f's module and the CUfunction to ask the driver about;
 * f may be a CUkernel (cuLibrary*, and cudart's own loading), which
 * cuKernelGetFunction turns into the current context's function. */
static CUresult module_of(CUfunction f, CUmodule *m, CUfunction *func) {
  *func = f;
  int regs;
  CUfunction g;
  if (cu.KernelGetFunction != NULL && cu.FuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f) != CUDA_SUCCESS &&
      cu.KernelGetFunction(&g, (CUkernel)f) == CUDA_SUCCESS)
    *func = g;
  CUresult r = cu.FuncGetModule(m, *func);
  if (r == CUDA_SUCCESS || cu.KernelGetFunction == NULL || *func != f) return r;
  if (cu.KernelGetFunction(&g, (CUkernel)f) != CUDA_SUCCESS) return r;
  *func = g;
  return cu.FuncGetModule(m, g);
}

/* ask sends a kernel query; the reply says whether it is selected and, in
 * time mode, which of its occurrences to time ("1 *" all, "1 0 3 5"). */
static void ask(fn *e, int version, int build, const char *names, size_t state_size) {
  buf b = {0};
  bfield(&b, "{\"name\":", e->name);
  bprintf(&b, ",\"instrumented\":%s,\"state_size\":%zu,\"version\":%d,\"build\":%d,\"names\":",
          e->instrumented ? "true" : "false", state_size, version, build);
  bstr(&b, names);
  BLIT(&b, "}");
  e->selected = 0;
  e->ntimes = 0;
  static char line[65536]; /* under mu */
  if (!b.oom && send_msg('K', &b, NULL, 0) == 0 && read_line(line, sizeof line) == 0 && line[0] == '1') {
    e->selected = 1;
    const char *s = line + 1;
    while (*s == ' ') ++s;
    if (*s == '*' || *s == 0) {
      e->ntimes = -1;
    } else {
      /* occurrences as A or A-B, space separated: pairs in times */
      size_t cap = 16;
      e->times = malloc(2 * cap * sizeof *e->times);
      while (e->times && *s) {
        char *end;
        unsigned long long lo = strtoull(s, &end, 10), hi = lo;
        if (end == s) break;
        s = end;
        if (*s == '-') {
          hi = strtoull(s + 1, &end, 10);
          if (end == s + 1) break;
          s = end;
        }
        if ((size_t)e->ntimes == cap) {
          unsigned long long *t = realloc(e->times, 4 * cap * sizeof *t);
          if (t == NULL) break;
          e->times = t;
          cap *= 2;
        }
        e->times[2 * e->ntimes] = lo;
        e->times[2 * e->ntimes + 1] = hi;
        ++e->ntimes;
        while (*s == ' ') ++s;
      }
    }
  }
  free(b.p);
}

/* why_of is why the module or library h was not compiled again with its
 * events on, or NULL. */
static const char *why_of(const void *h) {
  for (jit_why *w = jit_whys[why_bucket(h)]; w; w = w->next)
    if (w->handle == h) return w->why;
  return NULL;
}

/* forget_why drops what is remembered of the module or library h. Under
 * mu. */
static void forget_why(const void *h) {
  for (jit_why **pp = &jit_whys[why_bucket(h)]; *pp;) {
    jit_why *w = *pp;
    if (w->handle == h) {
      *pp = w->next;
      free(w);
    } else {
      pp = &w->next;
    }
  }
}

/* lookup finds or adds f's entry; a new one is resolved (its module and
 * globals: no copies, which a stream capture would not allow). */
static fn *lookup(const CUpti_CallbackData *d, CUfunction f) {
  unsigned h = (unsigned)(((uintptr_t)f >> 4) ^ ((uintptr_t)d->context >> 6)) % FN_BUCKETS;
  for (fn *e = fns[h]; e; e = e->next)
    if (e->f == f && e->ctx == d->context) return e;
  fn *e = calloc(1, sizeof *e);
  if (e == NULL) return NULL;
  e->f = f;
  e->ctx = d->context;
  e->name = strdup(kernel_name(d, f));
  if (e->name == NULL) {
    free(e);
    return NULL;
  }
  e->next = fns[h];
  fns[h] = e;
  CUmodule m;
  CUlibrary lib;
  if (module_of(f, &m, &e->func) == CUDA_SUCCESS && cu.ModuleGetGlobal(&e->state, &e->state_size, m, "iket_state") == CUDA_SUCCESS) {
    e->instrumented = 1;
    if (cu.ModuleGetGlobal(&e->table, &e->table_size, m, "iket_name_table") != CUDA_SUCCESS) e->table = 0;
    size_t n;
    if (cu.ModuleGetGlobal(&e->jit, &n, m, JIT_MARKER) != CUDA_SUCCESS || n != 4) e->jit = 0;
    e->jit_why = why_of(m);
    if (e->jit_why == NULL && cu.KernelGetLibrary != NULL && cu.KernelGetLibrary(&lib, (CUkernel)f) == CUDA_SUCCESS)
      e->jit_why = why_of(lib);
  } else if (cu.KernelGetLibrary != NULL && cu.LibraryGetGlobal != NULL &&
             cu.KernelGetLibrary(&lib, (CUkernel)f) == CUDA_SUCCESS &&
             cu.LibraryGetGlobal(&e->state, &e->state_size, lib, "iket_state") == CUDA_SUCCESS) {
    /* f is a CUkernel of a library (cuLibraryLoad*, or cudart's own
     * context-independent loading) */
    e->instrumented = 1;
    if (cu.LibraryGetGlobal(&e->table, &e->table_size, lib, "iket_name_table") != CUDA_SUCCESS) e->table = 0;
    size_t n;
    if (cu.LibraryGetGlobal(&e->jit, &n, lib, JIT_MARKER) != CUDA_SUCCESS || n != 4) e->jit = 0;
    e->jit_why = why_of(lib);
  }
  return e;
}

static void skip(const char *kernel, const char *code, const char *why);

/* decide reads an instrumented kernel's state and name table and asks the
 * iket process whether to trace it (trace mode asks of instrumented kernels
 * only; time mode of every kernel). */
static void decide(fn *e) {
  char *names = NULL;
  int version = 0, build = 0;
  if (e->instrumented) {
    if (e->state_size == STATE_SIZE && cu.MemcpyDtoH(e->initial, e->state, STATE_SIZE) == CUDA_SUCCESS) {
      memcpy(&version, e->initial + 20, 4);
      memcpy(&build, e->initial + 24, 4);
    }
    if (e->table != 0 && e->table_size > 0 && e->table_size <= (2u << 20)) {
      names = calloc(1, e->table_size + 1);
      if (names && cu.MemcpyDtoH(names, e->table, e->table_size) != CUDA_SUCCESS) {
        free(names);
        names = NULL;
      }
    }
  }
  unsigned on = 1;
  if (mode == MODE_TRACE && e->instrumented && e->jit != 0 && cu.MemcpyDtoH(&on, e->jit, 4) == CUDA_SUCCESS && on == 0) {
    /* A dormant build's SASS, not compiled again from its PTX: its events
     * are not in the code that runs. */
    char why[768];
    snprintf(why, sizeof why,
             "built with IKET_ENABLE=1, its events are compiled out of the code that runs, and iket could not compile "
             "its module again with them on: %s",
             e->jit_why != NULL ? e->jit_why
                             : "the module was not loaded from a fatbin or PTX iket could read (a cubin, a file, or a "
                               "device-linked -rdc=true program): build with -arch=sm_90a (your GPU's), which embeds PTX, or with "
                               "-DIKET_LIVE=1");
    skip(e->name, "dormant", why);
    e->selected = 0;
    e->decided = 1;
    free(names);
    return;
  }
  if (mode == MODE_TIME || e->instrumented) ask(e, version, build, names, e->state_size);
  /* The iket process refuses a header version it cannot read (and says
   * so); the library only guards the layout of the state it writes. */
  if (e->selected && mode == MODE_TRACE && e->state_size != STATE_SIZE) e->selected = 0;
  free(names);
  e->decided = 1;
}

/* forget drops the entries of ctx's functions (a module or the context is
 * going away); they are looked up again at their next launch. */
static void forget(CUcontext ctx) {
  for (int h = 0; h < FN_BUCKETS; ++h) {
    fn **pp = &fns[h];
    while (*pp) {
      fn *e = *pp;
      if (e->ctx == ctx) {
        *pp = e->next;
        free(e->times);
        free(e->name);
        free(e);
      } else {
        pp = &e->next;
      }
    }
  }
}

/* SASS instruction counts by kernel name, from each loaded module's cubin
 * (its .text.NAME sections, 16 bytes an instruction). CUPTI names a loaded
 * module's cubin but not its handle, so a name that two loaded cubins give
 * different counts is ambiguous: it has no count (reported as unknown)
 * rather than the last module's. */
typedef struct sass {
  struct sass *next;
  unsigned long long n;
  int ambiguous;
  char name[];
} sass;
static sass *sasses[FN_BUCKETS];

static unsigned name_hash(const char *name) {
  unsigned h = 5381;
  for (const char *c = name; *c; ++c) h = h * 33u + (unsigned char)*c;
  return h % FN_BUCKETS;
}

static unsigned long long rd(const unsigned char *p, int n) {
  unsigned long long v = 0;
  for (int i = n - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

/* read_cubin records the instruction counts of an ELF64 cubin's kernels;
 * anything else (PTX, a damaged image) is left alone. */
static void read_cubin(const unsigned char *img, size_t n) {
  if (img == NULL || n < 64 || memcmp(img, "\x7f" "ELF\x02\x01", 6) != 0) return;
  unsigned long long shoff = rd(img + 0x28, 8), shentsize = rd(img + 0x3a, 2);
  unsigned long long shnum = rd(img + 0x3c, 2), shstrndx = rd(img + 0x3e, 2);
  if (shentsize < 64 || shstrndx >= shnum || shoff > n || shnum > (n - shoff) / shentsize) return;
  const unsigned char *strs = img + shoff + shstrndx * shentsize;
  unsigned long long stroff = rd(strs + 0x18, 8), strsize = rd(strs + 0x20, 8);
  if (stroff > n || strsize > n - stroff) return;
  const char *names = (const char *)img + stroff;
  for (unsigned long long i = 0; i < shnum; ++i) {
    const unsigned char *h = img + shoff + i * shentsize;
    unsigned long long off = rd(h, 4);
    if (off >= strsize || rd(h + 4, 4) == 8 /* SHT_NOBITS */) continue;
    const char *nm = names + off;
    size_t len = strnlen(nm, strsize - off);
    if (len == strsize - off || len <= 6 || strncmp(nm, ".text.", 6) != 0) continue;
    const char *k = nm + 6;
    unsigned hh = name_hash(k);
    sass *e = sasses[hh];
    while (e && strcmp(e->name, k) != 0) e = e->next;
    unsigned long long count = rd(h + 0x20, 8) / 16;
    if (e == NULL) {
      if ((e = malloc(sizeof *e + strlen(k) + 1)) == NULL) return;
      strcpy(e->name, k);
      e->ambiguous = 0;
      e->next = sasses[hh];
      sasses[hh] = e;
    } else if (e->n != count) {
      e->ambiguous = 1;
    }
    e->n = count;
  }
}

static unsigned long long sass_count(const char *name) {
  for (sass *e = sasses[name_hash(name)]; e; e = e->next)
    if (strcmp(e->name, name) == 0) return e->ambiguous ? 0 : e->n;
  return 0;
}

/* occurrence counts the process's launches of a kernel by name, so that
 * one reloaded module or several contexts keep one count. */
typedef struct name_count {
  struct name_count *next;
  unsigned long long n;
  char name[];
} name_count;
static name_count *occs[FN_BUCKETS];

static unsigned long long occurrence(const char *name) {
  unsigned h = name_hash(name);
  for (name_count *o = occs[h]; o; o = o->next)
    if (strcmp(o->name, name) == 0) return o->n++;
  name_count *o = malloc(sizeof *o + strlen(name) + 1);
  if (o == NULL) return 0;
  strcpy(o->name, name);
  o->n = 1;
  o->next = occs[h];
  occs[h] = o;
  return 0;
}

/* time_this reports whether occurrence occ is to be timed: the ranges are
 * sorted and apart (the iket process sends them so), so a binary search
 * finds the last one starting at or before occ. */
static int time_this(const fn *e, unsigned long long occ) {
  if (e->ntimes < 0) return 1;
  long lo = 0, hi = e->ntimes; /* ranges [0, lo) start at or before occ */
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (e->times[2 * mid] <= occ) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && occ <= e->times[2 * (lo - 1) + 1];
}

/* ---- a traced launch ---- */

static void skip(const char *kernel, const char *code, const char *why) {
  ++skipped;
  buf b = {0};
  bfield(&b, "{\"kernel\":", kernel);
  bfield(&b, ",\"code\":", code);
  bfield(&b, ",\"why\":", why);
  BLIT(&b, "}");
  if (!b.oom) send_msg('S', &b, NULL, 0);
  free(b.p);
}

static void free_pending(pending *p) {
  if (p->ev0) cu.EventDestroy(p->ev0);
  if (p->ev1) cu.EventDestroy(p->ev1);
  if (p->hbuf) cu.MemFreeHost(p->hbuf);
  if (p->dbuf) cu.MemFree(p->dbuf);
  free(p);
}

/* window is the first address in [d, d+n) from which need bytes do not
 * straddle a 4 GiB boundary (allocations are 256-byte aligned; base is too
 * where it can be), or 0 when there is none. */
static CUdeviceptr window(CUdeviceptr d, size_t n, size_t need) {
  CUdeviceptr base = (d + 255) & ~(CUdeviceptr)255;
  if (base + need > d + n) base = d;
  if ((base >> 32) == ((base + need - 1) >> 32)) return base;
  CUdeviceptr next = ((base >> 32) + 1) << 32;
  return next + need <= d + n ? next : 0;
}

/* slot_bytes is a warp slot's size at cap records: the 64-byte header,
 * the records and the tail word (docs/FORMAT.md section 3). */
static unsigned long long slot_bytes(unsigned cap) { return 64ull + 8ull * (cap + 1ull); }

/* launch_capacity is the records per warp a launch of warps warps runs
 * with: --capacity, or, when its buffers would then take more than the
 * buffer limit, the largest power of two that fits (a power of two for a
 * wrap build too); 0 when not even 16 do. The timed programs compute it
 * alike for the bytes they write in place of the buffers' zeroing. */
static unsigned launch_capacity(unsigned long long warps) {
  if (warps == 0) return 0;
  if (warps <= buffer_limit / slot_bytes(capacity)) return capacity;
  unsigned c = 1u << 30;
  while (c > capacity || (c >= 16u && warps > buffer_limit / slot_bytes(c))) c >>= 1;
  return c >= 16u ? c : 0;
}

/* buffers_need is what a launch's size bytes of warp buffers take with
 * their margin: a cursor saturates 32 bytes below a 4 GiB boundary. */
static size_t buffers_need(size_t size) { return size + 32; }

/* alloc_buffers takes p->size bytes that do not straddle a 4 GiB boundary
 * (docs/FORMAT.md section 3) and zeroes them: when an allocation has no
 * such window, one of twice the size holds one. */
static CUresult alloc_buffers(pending *p) {
  size_t need = buffers_need(p->size);
  for (int attempt = 0; attempt < 2; ++attempt) {
    size_t n = attempt == 0 ? need : 2 * need;
    CUresult r;
    CUdeviceptr d;
    if (watch) {
      void *h;
      r = cu.MemHostAlloc(&h, n, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
      if (r != CUDA_SUCCESS) return r;
      memset(h, 0, n);
      if ((r = cu.MemHostGetDevicePointer(&d, h, 0)) != CUDA_SUCCESS) {
        cu.MemFreeHost(h);
        return r;
      }
      p->hbuf = h;
    } else {
      if ((r = cu.MemAlloc(&d, n)) != CUDA_SUCCESS) return r;
      p->dbuf = d;
    }
    CUdeviceptr base = window(d, n, need);
    if (base == 0) {
      if (attempt == 1) return CUDA_ERROR_INVALID_VALUE;
      if (p->hbuf) cu.MemFreeHost(p->hbuf);
      if (p->dbuf) cu.MemFree(p->dbuf);
      p->hbuf = NULL;
      p->dbuf = 0;
      continue;
    }
    p->base = base;
    if (watch) p->hview = (const char *)p->hbuf + (base - d);
    if (!watch && (r = cu.MemsetD8(base, 0, need)) != CUDA_SUCCESS) return r;
    if (!watch) p->prepared = need;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

static void put_state(const fn *e, CUdeviceptr base, unsigned cap, unsigned wpc) {
  unsigned char s[STATE_SIZE];
  memcpy(s, e->initial, STATE_SIZE);
  unsigned build;
  memcpy(&build, s + 24, 4);
  unsigned mask = (build & 1u) ? cap - 1 : 0xffffffffu;
  memcpy(s + 0, &base, 8);
  memcpy(s + 8, &cap, 4);
  memcpy(s + 12, &mask, 4);
  memcpy(s + 16, &wpc, 4);
  cu.MemcpyHtoD(e->state, s, STATE_SIZE);
}

static void device_json(buf *b) {
  CUdevice dev = 0;
  cu.CtxGetDevice(&dev);
  char name[256] = "", pci[64] = "";
  cu.DeviceGetName(name, sizeof name, dev);
  cu.DeviceGetPCIBusId(pci, sizeof pci, dev);
  CUuuid u;
  memset(&u, 0, sizeof u);
  cu.DeviceGetUuid(&u, dev);
  int sms = 0, maj = 0, min = 0, clk = 0, drv = 0;
  cu.DeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  cu.DeviceGetAttribute(&maj, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
  cu.DeviceGetAttribute(&min, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
  cu.DeviceGetAttribute(&clk, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev);
  cu.DriverGetVersion(&drv);
  bprintf(b, "\"device\":{\"ordinal\":%d,\"name\":", dev);
  bstr(b, name);
  bfield(b, ",\"pci\":", pci);
  BLIT(b, ",\"uuid\":\"");
  const unsigned char *x = (const unsigned char *)u.bytes;
  bprintf(b, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\"", x[0], x[1], x[2], x[3],
          x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12], x[13], x[14], x[15]);
  bprintf(b, ",\"sms\":%d,\"cc\":\"%d.%d\",\"max_clock_khz\":%d,\"driver_version\":%d}", sms, maj, min, clk, drv);
}

static void resources_json(buf *b, const pending *p) {
  int regs = 0, ssm = 0, lmem = 0, maxt = 0, occ = 0;
  CUfunction f = p->fn->func ? p->fn->func : p->fn->f;
  cu.FuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f);
  cu.FuncGetAttribute(&ssm, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
  cu.FuncGetAttribute(&lmem, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f);
  cu.FuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
  int threads = (int)(p->block[0] * p->block[1] * p->block[2]);
  cu.OccupancyMaxActiveBlocks(&occ, f, threads, p->shared);
  bprintf(b, "\"resources\":{\"registers\":%d,\"static_shared_bytes\":%d,\"dynamic_shared_bytes\":%u,"
             "\"local_bytes\":%d,\"max_threads_per_block\":%d,\"max_active_ctas_per_sm\":%d,\"sass_instructions\":%llu}",
          regs, ssm, p->shared, lmem, maxt, occ, sass_count(p->fn->name));
}

/* report sends the launch: its description as JSON, then (trace) the buffers. */
static void report(pending *p, const char *status, CUresult err, float ms, const void *bufs, size_t n) {
  struct timespec rt1, mono1;
  clock_gettime(CLOCK_REALTIME, &rt1);
  clock_gettime(CLOCK_MONOTONIC, &mono1);
  buf b = {0};
  bfield(&b, "{\"kernel\":", p->fn->name);
  bprintf(&b, ",\"traced\":%s,\"family\":\"%s\",\"index\":%llu,\"occurrence\":%llu,\"status\":\"%s\"",
          p->trace ? "true" : "false", p->family, p->index, p->occurrence, status);
  if (err != CUDA_SUCCESS) {
    bfield(&b, ",\"error\":", errname(err));
  }
  bprintf(&b, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"cluster\":[%u,%u,%u],\"shared_bytes\":%u", p->grid[0],
          p->grid[1], p->grid[2], p->block[0], p->block[1], p->block[2], p->cluster[0], p->cluster[1], p->cluster[2],
          p->shared);
  if (ms >= 0) bprintf(&b, ",\"elapsed_ms\":%.9g", ms);
  bprintf(&b, ",\"flushed_bytes\":%zu,\"prepared_bytes\":%zu", p->flushed, p->prepared);
  bprintf(&b, ",\"host_ns\":{\"realtime_before\":%lld,\"realtime_after\":%lld,\"monotonic_before\":%lld,"
              "\"monotonic_after\":%lld}",
          ns(&p->rt0), ns(&rt1), ns(&p->mono0), ns(&mono1));
  if (p->trace) {
    unsigned version, build;
    memcpy(&version, p->fn->initial + 20, 4);
    memcpy(&build, p->fn->initial + 24, 4);
    bprintf(&b, ",\"warps_per_cta\":%u,\"warps\":%llu,\"capacity\":%u,\"version\":%u,\"build\":%u,\"watch\":%s",
            p->warps_per_cta, p->warps, p->capacity, version, build, watch ? "true" : "false");
    bprintf(&b, ",\"buffer_bytes\":%zu,\"records_l2_bytes\":%zu", n, p->l2_kept);
  }
  BLIT(&b, ",");
  resources_json(&b, p);
  BLIT(&b, ",");
  device_json(&b);
  BLIT(&b, "}");
  if (!b.oom) send_msg('L', &b, bufs, n);
  free(b.p);
}

/* any_started reports whether a warp of launch p wrote its start record:
 * the header's magic (docs/FORMAT.md section 3) in bufs, p's buffers. */
static int any_started(const pending *p, const void *bufs) {
  const unsigned long long stride = slot_bytes(p->capacity);
  for (unsigned long long w = 0; w < p->warps; ++w) {
    uint32_t magic;
    memcpy(&magic, (const char *)bufs + w * stride, 4);
    if (magic == 0x57454b49u) return 1;
  }
  return 0;
}

/* wait_for polls the end event until it completes, fails or times out. */
static CUresult wait_for(CUevent ev, int *timed_out) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long sleep_us = 10;
  *timed_out = 0;
  for (;;) {
    CUresult r = cu.EventQuery(ev);
    if (r != CUDA_ERROR_NOT_READY) return r;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((ns(&t) - ns(&t0)) / 1000000 >= timeout_ms) {
      *timed_out = 1;
      return CUDA_ERROR_NOT_READY;
    }
    struct timespec s = {0, sleep_us * 1000};
    nanosleep(&s, NULL);
    if (sleep_us < 1000) sleep_us *= 2;
  }
}

/* copy_hung reads a hung launch's device buffers on a stream of its own,
 * best effort, within 2 s. */
static void *copy_hung(pending *p) {
  /* Pinned: a copy into pageable memory may wait for the hung kernel. */
  void *h = NULL;
  CUstream s;
  if (cu.MemHostAlloc(&h, p->size, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) return NULL;
  if (cu.StreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    cu.MemFreeHost(h);
    return NULL;
  }
  if (cu.MemcpyDtoHAsync(h, p->base, p->size, s) != CUDA_SUCCESS) {
    return NULL; /* h and the stream stay: the copy may still run */
  }
  for (int i = 0; i < 2000; ++i) {
    CUresult r = cu.StreamQuery(s);
    if (r == CUDA_SUCCESS) {
      cu.StreamDestroy(s);
      return h;
    }
    if (r != CUDA_ERROR_NOT_READY) break;
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
  }
  return NULL; /* h and s stay: the copy may still write into h */
}

/* write_bytes writes n bytes of ctx's flush buffer (allocated on first use,
 * and again larger when n outgrows it) and returns n, 0 when it could not. */
static size_t write_bytes(CUcontext ctx, size_t n) {
  if (n == 0) return 0;
  int i = 0;
  while (i < MAX_FLUSH && flush_bufs[i].ctx != NULL && flush_bufs[i].ctx != ctx) ++i;
  if (i == MAX_FLUSH) return 0;
  if (flush_bufs[i].ctx == NULL) {
    flush_bufs[i].ctx = ctx;
    flush_bufs[i].buf = 0;
    flush_bufs[i].size = 0;
    flush_bufs[i].failed = 0;
  }
  if (flush_bufs[i].failed) return 0; /* said once; this context's launches run as they are */
  if (flush_bufs[i].size < n) {
    if (flush_bufs[i].buf != 0) cu.MemFree(flush_bufs[i].buf);
    flush_bufs[i].buf = 0;
    flush_bufs[i].size = 0;
    if (cu.MemAlloc(&flush_bufs[i].buf, n) != CUDA_SUCCESS) {
      flush_bufs[i].buf = 0;
      flush_bufs[i].failed = 1;
      note("warning", "flush", "could not allocate %zu bytes to write before timed launches: they run with the cache as it is", n);
      return 0;
    }
    flush_bufs[i].size = n;
  }
  return cu.MemsetD8(flush_bufs[i].buf, ++flush_value, n) == CUDA_SUCCESS ? n : 0;
}

/* flush writes flush_bytes of ctx's flush buffer and returns the bytes
 * written, 0 when it could not or no flush was asked for. */
static size_t flush(CUcontext ctx) { return write_bytes(ctx, flush_bytes); }

/* drop_flush forgets ctx's flush buffer when the context is destroyed
 * (which frees the buffer): a later context may get the same handle, and
 * its slot is free for another context. */
static void drop_flush(CUcontext ctx) {
  int n = 0;
  while (n < MAX_FLUSH && flush_bufs[n].ctx != NULL) ++n;
  for (int i = 0; i < n; ++i)
    if (flush_bufs[i].ctx == ctx) {
      flush_bufs[i] = flush_bufs[n - 1];
      flush_bufs[n - 1].ctx = NULL;
      flush_bufs[n - 1].buf = 0;
      flush_bufs[n - 1].size = 0;
      flush_bufs[n - 1].failed = 0;
      return;
    }
}

/* started_msg tells the iket process that a traced or timed launch of
 * kernel begins (it bounds how long the launch may take as a whole). */
static void started_msg(const char *kernel, unsigned long long occ) {
  buf b = {0};
  bfield(&b, "{\"kernel\":", kernel);
  bprintf(&b, ",\"occurrence\":%llu,\"timeout_ms\":%ld}", occ, timeout_ms);
  if (!b.oom) send_msg('T', &b, NULL, 0);
  free(b.p);
}

/* mapped is the host address of a watch-mode launch's buffers (taken when
 * they were allocated: after a fault no driver call answers). */
static const void *mapped(const pending *p) { return p->hview; }

/* ---- a traced launch's records kept in the L2 ---- */

/* Records are written once and read only by the copy back. Through the
 * L2 as the kernel's data, they are written back to DRAM while the kernel
 * runs, between its own loads: a 48 us ring whose producer waits on its
 * loads ran 55.6 us with buffers, 50.3 without stores, 51.8 with its
 * buffers in a persisting access-policy window (ncu, H200;
 * docs/results/format3-h200/l2-window.txt). So a traced launch gets one
 * over its buffers on its stream, and the set-aside is raised to
 * min(buffers, the device's maximum, an eighth of the L2) when smaller
 * (the H200 starts with 11.25 MiB); while the records do not fill it, the
 * kernel's lines use it too. When the launch ends the persisting lines
 * are made normal again (the program's too, if it keeps some) and the
 * stream and the set-aside are as they were. Left alone, with a warning
 * saying why (the records then go through the L2 as before): a launch
 * whose stream or launch attributes carry a window of the program's, a
 * device or driver without persisting lines, a driver that refuses the
 * set-aside or the window. Left alone without one: watch mode (host
 * memory), IKET_RECORDS_L2=0. */
static int records_l2 = 1; /* IKET_RECORDS_L2=0: never */
static int l2_said;
static void l2_note(const char *why) {
  if (l2_said) return;
  l2_said = 1;
  note("warning", "l2_window", "%s: traced launches write their records through the L2 with the kernel's data", why);
}

static void l2_keep(pending *p) {
  p->l2_kept = 0;
  if (watch || !records_l2) return;
  if (!cu.StreamGetAttribute || !cu.StreamSetAttribute || !cu.CtxGetLimit || !cu.CtxSetLimit ||
      !cu.CtxResetPersistingL2Cache) {
    l2_note("the CUDA driver lacks cuStreamSetAttribute or the persisting-L2 calls (CUDA 11.0 on)");
    return;
  }
  if (p->own_window) {
    l2_note("a traced launch passes an access-policy window of its own in its launch attributes");
    return;
  }
  CUdevice dev = 0;
  int maxp = 0, maxw = 0, l2 = 0;
  if (cu.CtxGetDevice(&dev) != CUDA_SUCCESS ||
      cu.DeviceGetAttribute(&maxp, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, dev) != CUDA_SUCCESS ||
      cu.DeviceGetAttribute(&maxw, CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, dev) != CUDA_SUCCESS ||
      cu.DeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev) != CUDA_SUCCESS || maxp <= 0 || maxw <= 0 ||
      l2 <= 0) {
    l2_note("the device keeps no persisting L2 lines (they need compute capability 8.0)");
    return;
  }
  CUstreamAttrValue was;
  memset(&was, 0, sizeof was);
  size_t limit = 0;
  if (cu.StreamGetAttribute(p->stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &was) != CUDA_SUCCESS ||
      cu.CtxGetLimit(&limit, CU_LIMIT_PERSISTING_L2_CACHE_SIZE) != CUDA_SUCCESS) {
    l2_note("the driver did not report the launch stream's access-policy window or the persisting set-aside");
    return;
  }
  if (was.accessPolicyWindow.num_bytes != 0) {
    char why[160];
    snprintf(why, sizeof why, "the launch's stream has an access-policy window of its own (%zu bytes)",
             was.accessPolicyWindow.num_bytes);
    l2_note(why);
    return;
  }
  size_t want = p->size;
  if (want > (size_t)maxp) want = (size_t)maxp;
  if (want > (size_t)l2 / 8) want = (size_t)l2 / 8;
  p->l2_limit = limit;
  p->l2_raised = limit < want;
  if (p->l2_raised && cu.CtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, want) != CUDA_SUCCESS) {
    l2_note("the driver refused a persisting set-aside");
    return;
  }
  CUstreamAttrValue v;
  memset(&v, 0, sizeof v);
  v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)p->base;
  v.accessPolicyWindow.num_bytes = p->size < (size_t)maxw ? p->size : (size_t)maxw;
  /* every record line persists (records past the set-aside compete with
   * older records there: tiled_gemm, whose records are several times the
   * set-aside, ran no slower with the window, l2-window.txt) */
  v.accessPolicyWindow.hitRatio = 1.0f;
  v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
  v.accessPolicyWindow.missProp = CU_ACCESS_PROPERTY_NORMAL;
  if (cu.StreamSetAttribute(p->stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v) != CUDA_SUCCESS) {
    if (p->l2_raised) cu.CtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, limit);
    l2_note("the driver refused an access-policy window on the launch's stream");
    return;
  }
  /* what the driver set (it may round or clamp) */
  size_t now = 0;
  p->l2_kept = cu.CtxGetLimit(&now, CU_LIMIT_PERSISTING_L2_CACHE_SIZE) == CUDA_SUCCESS ? now : (want > limit ? want : limit);
}

/* l2_release undoes l2_keep once the launch ended: the window, the
 * persisting lines (made normal) and the set-aside. */
static void l2_release(pending *p) {
  if (p->l2_kept == 0) return;
  CUstreamAttrValue none;
  memset(&none, 0, sizeof none);
  cu.StreamSetAttribute(p->stream, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &none);
  cu.CtxResetPersistingL2Cache();
  if (p->l2_raised) cu.CtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, p->l2_limit);
}

/* begin_launch prepares a traced or timed launch (in relaxed capture mode:
 * it drains the GPU, allocates and copies) and leaves it pending for the
 * launch's exit callback. */
static void begin_launch(const CUpti_CallbackData *d, fn *e, pending *tmpp, CUfunction f, int trace,
                         unsigned long long idx, unsigned long long occ, const char *famname) {
  pending tmp = *tmpp;
  if (tmp.cluster_from_function) {
    /* a kernel compiled with __cluster_dims__ runs in clusters without a
     * launch attribute (asked of traced and timed launches only) */
    int cx = 0, cy = 0, cz = 0;
    if (cu.FuncGetAttribute(&cx, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f) == CUDA_SUCCESS && cx > 0 &&
        cu.FuncGetAttribute(&cy, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, f) == CUDA_SUCCESS &&
        cu.FuncGetAttribute(&cz, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, f) == CUDA_SUCCESS) {
      tmp.cluster[0] = (unsigned)cx, tmp.cluster[1] = (unsigned)(cy > 0 ? cy : 1), tmp.cluster[2] = (unsigned)(cz > 0 ? cz : 1);
    }
  }
  pending *p = malloc(sizeof *p);
  if (p == NULL) return;
  *p = tmp;
  p->fn = e;
  p->trace = trace;
  p->index = idx;
  p->occurrence = occ;
  p->family = famname;
  unsigned long long threads = (unsigned long long)p->block[0] * p->block[1] * p->block[2];
  if (threads == 0 || threads > 1024) { /* the launch itself will fail */
    free(p);
    return;
  }
  p->warps_per_cta = (unsigned)((threads + 31) / 32);
  p->warps = (unsigned long long)p->grid[0] * p->grid[1] * p->grid[2] * p->warps_per_cta;
  /* The iket process watches the launch from here: draining the GPU, the
   * launch and the copy back must end within its bound. */
  started_msg(e->name, occ);
  /* Traced and timed launches run alone: the state is shared by every
   * launch of the module, and the time is the launch's own. */
  CUresult r = cu.CtxSynchronize();
  if (r != CUDA_SUCCESS) {
    skip(e->name, "context_error", errname(r));
    free(p);
    return;
  }
  /* The bytes a traced launch's warp buffers take, 0 when they would not
   * fit. */
  p->capacity = launch_capacity(p->warps);
  size_t buf_bytes = p->capacity > 0 ? (size_t)(p->warps * slot_bytes(p->capacity)) : 0;
  if (trace) {
    unsigned build;
    memcpy(&build, e->initial + 24, 4);
    if ((build & 1u) && (capacity & (capacity - 1u)) != 0) {
      skip(e->name, "capacity", "a wrap build (-DIKET_WRAP=1) records into a ring: --capacity must be a power of two");
      free(p);
      return;
    }
    if (buf_bytes == 0) {
      skip(e->name, "too_large", "the launch has too many warps for buffers of 16 records each within the buffer limit (4 GiB, or IKET_BUFFER_LIMIT)");
      free(p);
      return;
    }
    if (p->capacity < capacity && !e->capacity_noted) {
      e->capacity_noted = 1;
      kernel_note("warning", "capacity", e->name,
                  "%llu warps at --capacity %u would take more than %llu bytes of buffers: traced with %u records per warp (a warp's events past them are counted as dropped)",
                  p->warps, capacity, buffer_limit, p->capacity);
    }
    p->size = buf_bytes;
    if ((r = alloc_buffers(p)) != CUDA_SUCCESS) {
      skip(e->name, "alloc", errname(r));
      free_pending(p);
      return;
    }
    put_state(e, p->base, p->capacity, p->warps_per_cta);
  } else if (flush_bytes == 0 && !watch) {
    /* Without a flush a traced launch starts right after the zeroing of its
     * buffers, which evicts as much of the L2 as they are large (at the
     * default capacity more than the whole L2 for a kernel of a thousand
     * CTAs), and the baseline's launch would start with the cache its
     * program left: it follows a write of as many bytes, so that both start
     * from the same cache. */
    if (buf_bytes > 0) /* else the traced program skips it: too_large */
      p->prepared = write_bytes(e->ctx, buffers_need(buf_bytes));
  }
  /* The same idle time before every traced and timed launch, flushed or
   * not: a launch that follows milliseconds of an idle GPU (a traced one,
   * after its buffers were copied back and new ones zeroed) ran slower
   * than one right after the previous (docs/RUNTIME.md, step 4), so both
   * programs wait for their memsets and then leave the GPU idle for
   * idle_ms. */
  if (idle_ms > 0 && cu.CtxSynchronize() == CUDA_SUCCESS) {
    struct timespec t = {idle_ms / 1000, (idle_ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
  }
  /* The L2 flush: a buffer larger than the L2 written before every timed
   * launch, in both the traced and the baseline program, so that each
   * starts cold whatever iket or the program touched before it. */
  p->flushed = flush(e->ctx);
  /* Memsets run on the legacy stream, which a non-blocking stream does not
   * wait for: the buffers are zero and the flush done before the launch. */
  if ((r = cu.CtxSynchronize()) != CUDA_SUCCESS) {
    if (trace) put_state(e, 0, 0, 1);
    skip(e->name, "context_error", errname(r));
    free_pending(p);
    return;
  }
  if (trace) l2_keep(p);
  if (cu.EventCreate(&p->ev0, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
      cu.EventCreate(&p->ev1, CU_EVENT_DEFAULT) != CUDA_SUCCESS || cu.EventRecord(p->ev0, p->stream) != CUDA_SUCCESS) {
    l2_release(p);
    if (trace) put_state(e, 0, 0, 1);
    skip(e->name, "event", "could not record a CUDA event on the launch's stream");
    free_pending(p);
    return;
  }
  clock_gettime(CLOCK_REALTIME, &p->rt0);
  clock_gettime(CLOCK_MONOTONIC, &p->mono0);
  *d->correlationData = (uint64_t)(uintptr_t)p;
}

static void launch_enter(const CUpti_CallbackData *d, int family, const char *famname, int ptsz) {
  CUfunction f;
  pending tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.cluster[0] = tmp.cluster[1] = tmp.cluster[2] = 1;
  if (family == F_EX) {
    const cuLaunchKernelEx_params *q = d->functionParams;
    const CUlaunchConfig *c = q->config;
    if (c == NULL) return;
    f = q->f;
    tmp.grid[0] = c->gridDimX, tmp.grid[1] = c->gridDimY, tmp.grid[2] = c->gridDimZ;
    tmp.block[0] = c->blockDimX, tmp.block[1] = c->blockDimY, tmp.block[2] = c->blockDimZ;
    tmp.shared = c->sharedMemBytes;
    tmp.stream = c->hStream;
    for (unsigned i = 0; c->attrs != NULL && i < c->numAttrs; ++i)
      if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
        tmp.cluster[0] = c->attrs[i].value.clusterDim.x;
        tmp.cluster[1] = c->attrs[i].value.clusterDim.y;
        tmp.cluster[2] = c->attrs[i].value.clusterDim.z;
      } else if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW) {
        tmp.own_window = 1;
      }
  } else {
    const cuLaunchKernel_params *q = d->functionParams;
    f = q->f;
    tmp.cluster_from_function = 1;
    tmp.grid[0] = q->gridDimX, tmp.grid[1] = q->gridDimY, tmp.grid[2] = q->gridDimZ;
    tmp.block[0] = q->blockDimX, tmp.block[1] = q->blockDimY, tmp.block[2] = q->blockDimZ;
    tmp.shared = q->sharedMemBytes;
    tmp.stream = q->hStream;
  }
  /* A _ptsz entry point's NULL stream is the per-thread default stream. */
  if (ptsz && tmp.stream == NULL) tmp.stream = CU_STREAM_PER_THREAD;
  ++seen;
  fn *e = lookup(d, f);
  if (e == NULL || (mode == MODE_TRACE && !e->instrumented)) return;
  /* Not selected, or past the last launch to trace: nothing to look at. */
  if (e->decided && !e->selected) return;
  if (mode == MODE_TRACE && past_ranges(matching)) return;
  int cap = 0;
  CUresult cr = cu.StreamIsCapturing(tmp.stream, &cap);
  if (cr != CUDA_SUCCESS) {
    if (mode == MODE_TRACE) skip(e->name, "context_error", errname(cr));
    return;
  }
  if (cap != CU_STREAM_CAPTURE_STATUS_NONE) {
    /* Recorded into a graph, not run now: nothing may be copied or waited
     * for. Graph launches are reported when they happen. */
    if (mode == MODE_TRACE) skip(e->name, "stream_capture", "launched into a stream being captured into a CUDA graph: it runs when the graph does, untraced");
    return;
  }
  if (!e->decided) {
    int m = relaxed();
    decide(e);
    restore(m);
  }
  if (!e->selected) return;
  unsigned long long occ = occurrence(e->name);
  int trace;
  unsigned long long idx = 0;
  if (mode == MODE_TRACE) {
    idx = matching++;
    if (!in_ranges(idx)) return;
    trace = 1;
  } else {
    if (!time_this(e, occ)) return;
    trace = 0;
  }
  int m = relaxed();
  begin_launch(d, e, &tmp, f, trace, idx, occ, famname);
  restore(m);
}

static void launch_exit(const CUpti_CallbackData *d) {
  pending *p = (pending *)(uintptr_t)*d->correlationData;
  if (p == NULL) return;
  *d->correlationData = 0;
  CUresult lr = d->functionReturnValue ? *(CUresult *)d->functionReturnValue : CUDA_SUCCESS;
  if (lr != CUDA_SUCCESS) {
    l2_release(p);
    if (p->trace) put_state(p->fn, 0, 0, 1);
    report(p, "launch_error", lr, -1, NULL, 0);
    free_pending(p);
    return;
  }
  CUresult r = cu.EventRecord(p->ev1, p->stream);
  int hung = 0;
  if (r == CUDA_SUCCESS) r = wait_for(p->ev1, &hung);
  if (hung) {
    const void *bufs = watch ? mapped(p) : (p->trace ? copy_hung(p) : NULL);
    ++traced;
    report(p, "hang", CUDA_ERROR_NOT_READY, -1, bufs, bufs ? p->size : 0);
    /* The kernel may still write its buffers and the state: nothing is
     * freed. The iket process ends the program; wait for it here. */
    char line[16];
    read_line(line, sizeof line);
    return;
  }
  if (r != CUDA_SUCCESS) {
    /* A fault: CUDA is unusable in this process. Mapped buffers can still
     * be read. */
    const void *bufs = watch ? mapped(p) : NULL;
    ++traced;
    report(p, "fault", r, -1, bufs, bufs ? p->size : 0);
    return;
  }
  float ms = -1;
  cu.EventElapsedTime(&ms, p->ev0, p->ev1);
  l2_release(p);
  if (!p->trace) {
    ++timed;
    report(p, "ok", CUDA_SUCCESS, ms, NULL, 0);
    free_pending(p);
    return;
  }
  void *h = NULL;
  const void *bufs = NULL;
  if (watch) {
    bufs = mapped(p);
  } else if ((h = malloc(p->size)) != NULL && cu.MemcpyDtoH(h, p->base, p->size) == CUDA_SUCCESS) {
    bufs = h;
  }
  put_state(p->fn, 0, 0, 1);
  if (bufs != NULL && !any_started(p, bufs)) {
    /* No warp constructed an iket::Warp: the kernel only shares a module
     * with instrumented ones (an init or a reference kernel beside them).
     * It is not a traced launch: it does not count against the selection,
     * and the kernel's later launches run untouched. */
    p->fn->selected = 0;
    --matching;
    skip(p->fn->name, "no_warp",
         "no warp of its first traced launch constructed an iket::Warp (the kernel only shares a module with "
         "instrumented kernels): not counted as a launch to trace; its later launches run untouched");
    free(h);
    free_pending(p);
    return;
  }
  ++traced;
  if (bufs == NULL) {
    report(p, "copy_error", CUDA_SUCCESS, ms, NULL, 0);
  } else {
    report(p, "ok", CUDA_SUCCESS, ms, bufs, p->size);
  }
  free(h);
  free_pending(p);
}

/* ---- dormant builds compiled again with their events on (iket_jit.h) ---- */

/* The program's image between a load's ENTER and EXIT, when iket replaced
 * it. The PTX given in its place is never freed: the driver may read an
 * image after the load call returns. */
static __thread const void *jit_orig;
static __thread int jit_retry;          /* inside jit_load's own load call */
static __thread const char *jit_failed; /* why the image of the load under way was not replaced */

/* jit_for is the PTX to load in place of image, or NULL. Outside mu: it
 * may decompress for a while, and other threads' launches need not wait.
 * Not cached by address: a program may load another image from the same
 * buffer later. */
static char *jit_for(const void *image, const char **why) {
  CUdevice dev = 0;
  int major = 0, minor = 0, drv = 0;
  if (cu.CtxGetDevice(&dev) != CUDA_SUCCESS) dev = 0;
  if (cu.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
      cu.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS ||
      cu.DriverGetVersion(&drv) != CUDA_SUCCESS)
    return NULL;
  int gates = 0;
  return jit_image(image, major * 10 + minor, jit_max_isa(drv), &gates, why);
}

/* remember_why keeps why the module or library that the load d returned
 * (its first parameter points to the handle) was not compiled again. */
static void remember_why(const CUpti_CallbackData *d, const char *why) {
  void *const *out = *(void *const *const *)d->functionParams;
  jit_why *w = out != NULL ? calloc(1, sizeof *w) : NULL;
  if (w == NULL) return;
  pthread_mutex_lock(&mu);
  forget_why(*out);
  w->handle = *out;
  w->why = why;
  w->next = jit_whys[why_bucket(*out)];
  jit_whys[why_bucket(*out)] = w;
  pthread_mutex_unlock(&mu);
}

/* jit_load gives a module load the PTX of a dormant build with its events
 * on (ENTER), and makes a load whose PTX the driver did not compile again
 * with the program's own image (EXIT), so that the program runs as built. */
static void jit_load(const CUpti_CallbackData *d, int kind) {
  if (jit_retry || d->functionParams == NULL) return;
  const void **image = (const void **)((char *)(uintptr_t)d->functionParams + sizeof(void *));
  if (d->callbackSite == CUPTI_API_ENTER) {
    jit_orig = NULL;
    jit_failed = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *ptx = jit_for(*image, &jit_failed);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_mutex_lock(&mu);
    ++jit_loads;
    jit_replaced += ptx != NULL;
    jit_ns += (unsigned long long)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    pthread_mutex_unlock(&mu);
    if (ptx != NULL) {
      jit_orig = *image;
      *image = ptx;
    }
    return;
  }
  CUresult *rv = d->functionReturnValue;
  if (jit_failed != NULL) {
    if (rv != NULL && *rv == CUDA_SUCCESS) remember_why(d, jit_failed);
    jit_failed = NULL;
  }
  if (jit_orig == NULL) return;
  const void *orig = jit_orig;
  jit_orig = NULL;
  if (rv == NULL || *rv == CUDA_SUCCESS) return;
  note("warning", "jit", "the driver did not compile a module's PTX with iket's events on (%s); it runs as built", errname(*rv));
  void *p = (void *)(uintptr_t)d->functionParams;
  CUresult r = *rv;
  jit_retry = 1;
  if (kind == L_MODULE && cu.ModuleLoadData) {
    cuModuleLoadData_params *a = p;
    r = cu.ModuleLoadData(a->module, orig);
  } else if (kind == L_MODULE_EX && cu.ModuleLoadDataEx) {
    cuModuleLoadDataEx_params *a = p;
    r = cu.ModuleLoadDataEx(a->module, orig, a->numOptions, a->options, a->optionValues);
  } else if (kind == L_FATBIN && cu.ModuleLoadFatBinary) {
    cuModuleLoadFatBinary_params *a = p;
    r = cu.ModuleLoadFatBinary(a->module, orig);
  } else if (kind == L_LIBRARY && cu.LibraryLoadData) {
    cuLibraryLoadData_params *a = p;
    r = cu.LibraryLoadData(a->library, orig, a->jitOptions, a->jitOptionsValues, a->numJitOptions,
                           a->libraryOptions, a->libraryOptionValues, a->numLibraryOptions);
  }
  jit_retry = 0;
  *rv = r;
  if (r == CUDA_SUCCESS) remember_why(d, "the driver did not compile its PTX with the events on (the warning above names the error)");
}

static void callback(void *u, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
  (void)u;
  if (cbid >= MAX_CBID) return;
  const CUpti_CallbackData *d = data;
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
    /* A runtime launch must reach the driver's launch entry points, which
     * do the work; one that did not is counted, never silently lost. */
    if (runtime_family[cbid] == F_RUNTIME) {
      if (d->callbackSite == CUPTI_API_EXIT && rt_pending &&
          (d->functionReturnValue == NULL || *(const int *)d->functionReturnValue != 0))
        rt_pending = 0; /* it failed before launching */
      if (d->callbackSite == CUPTI_API_ENTER) rt_pending = 1;
      else if (rt_pending && d->functionReturnValue != NULL && *(const int *)d->functionReturnValue == 0) {
        /* a successful runtime launch that no driver launch callback saw */
        rt_pending = 0;
        pthread_mutex_lock(&mu);
        ++rt_unseen;
        pthread_mutex_unlock(&mu);
      }
    }
    return;
  }
  if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
    /* A module or context going away takes its functions' entries along: a
     * handle may be reused for another function later. */
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
      const CUpti_ModuleResourceData *m = ((const CUpti_ResourceData *)data)->resourceDescriptor;
      pthread_mutex_lock(&mu);
      if (m != NULL) read_cubin((const unsigned char *)m->pCubin, m->cubinSize);
      pthread_mutex_unlock(&mu);
    }
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING || cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
      pthread_mutex_lock(&mu);
      forget(((const CUpti_ResourceData *)data)->context);
      if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) drop_flush(((const CUpti_ResourceData *)data)->context);
      pthread_mutex_unlock(&mu);
    }
    return;
  }
  if (dom != CUPTI_CB_DOMAIN_DRIVER_API) return;
  if (load_kind[cbid] == L_UNLOAD) {
    /* cuModuleUnload and cuLibraryUnload: the handle is the first parameter */
    if (d->callbackSite == CUPTI_API_ENTER && d->functionParams != NULL) {
      pthread_mutex_lock(&mu);
      forget_why(*(void *const *)d->functionParams);
      pthread_mutex_unlock(&mu);
    }
    return;
  }
  if (load_kind[cbid] != L_NONE) {
    jit_load(d, load_kind[cbid]);
    return;
  }
  int fam = driver_family[cbid];
  if (fam == F_NONE) return;
  rt_pending = 0;
  if (d->callbackSite == CUPTI_API_EXIT) {
    /* A traced or timed launch held the lock from its ENTER: no other
     * launch may start while iket_state points at its buffers. */
    if (*d->correlationData != 0) {
      int m = relaxed();
      launch_exit(d);
      restore(m);
      pthread_mutex_unlock(&mu);
    }
    return;
  }
  *d->correlationData = 0;
  pthread_mutex_lock(&mu);
  if (fam == F_GRAPH) {
    ++seen;
    skip(NULL, "graph", "a CUDA graph launch: kernels inside graphs are not traced");
  } else {
    /* an untraced launch of a known function makes no driver call but the
     * capture check; the calls that could break a capture run relaxed */
    launch_enter(d, fam, d->functionName ? d->functionName : "launch", driver_ptsz[cbid]);
  }
  if (*d->correlationData == 0) pthread_mutex_unlock(&mu);
}

static void bye(void) {
  /* exit() may come from a thread while another is inside a callback:
   * wait a little for it, never for ever. */
  int locked = 0;
  for (int i = 0; i < 200 && !locked; ++i) {
    if (pthread_mutex_trylock(&mu) == 0) locked = 1;
    else {
      struct timespec t = {0, 1000000};
      nanosleep(&t, NULL);
    }
  }
  if (!locked) return;
  if (sock >= 0 && sock_pid == getpid()) {
    buf b = {0};
    bprintf(&b,
            "{\"launches\":%llu,\"matching\":%llu,\"traced\":%llu,\"timed\":%llu,\"skipped\":%llu,\"runtime_unseen\":%llu,"
            "\"jit_loads\":%llu,\"jit_replaced\":%llu,\"jit_ns\":%llu}",
            seen, matching, traced, timed, skipped, rt_unseen, jit_loads, jit_replaced, jit_ns);
    if (!b.oom) send_msg('B', &b, NULL, 0);
    free(b.p);
  }
  pthread_mutex_unlock(&mu);
}

static void family_by_name(const char *n, unsigned char *fam) {
  if (strncmp(n, "cuLaunchKernelEx", 16) == 0) *fam = F_EX;
  else if (strncmp(n, "cuLaunchKernel", 14) == 0) *fam = F_KERNEL;
  else if (strncmp(n, "cuLaunchCooperativeKernel", 25) == 0 && strstr(n, "MultiDevice") == NULL) *fam = F_COOP;
  else if (strncmp(n, "cuGraphLaunch", 13) == 0) *fam = F_GRAPH;
  else if (strncmp(n, "cudaLaunchKernel", 16) == 0 || strncmp(n, "cudaLaunchCooperativeKernel", 27) == 0)
    *fam = strstr(n, "MultiDevice") ? F_NONE : F_RUNTIME;
}

static void set_families(void) {
  int named = 0;
  if (cupti.GetCallbackName != NULL) {
    for (uint32_t id = 1; id < MAX_CBID; ++id) {
      const char *n = NULL;
      if (cupti.GetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &n) == CUPTI_SUCCESS && n) {
        family_by_name(n, &driver_family[id]);
        if (strcmp(n, "cuModuleLoadData") == 0) load_kind[id] = L_MODULE;
        else if (strcmp(n, "cuModuleLoadDataEx") == 0) load_kind[id] = L_MODULE_EX;
        else if (strcmp(n, "cuModuleLoadFatBinary") == 0) load_kind[id] = L_FATBIN;
        else if (strcmp(n, "cuLibraryLoadData") == 0) load_kind[id] = L_LIBRARY;
        else if (strcmp(n, "cuModuleUnload") == 0 || strcmp(n, "cuLibraryUnload") == 0) load_kind[id] = L_UNLOAD;
        driver_ptsz[id] = strstr(n, "_ptsz") != NULL;
        named = 1;
      }
      n = NULL;
      if (cupti.GetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &n) == CUPTI_SUCCESS && n)
        family_by_name(n, &runtime_family[id]);
    }
  }
  if (!named) {
    driver_family[IKET_CBID_cuLaunchKernel] = F_KERNEL;
    driver_family[IKET_CBID_cuLaunchKernel_ptsz] = F_KERNEL;
    driver_family[IKET_CBID_cuLaunchCooperativeKernel] = F_COOP;
    driver_family[IKET_CBID_cuLaunchCooperativeKernel_ptsz] = F_COOP;
    driver_family[IKET_CBID_cuLaunchKernelEx] = F_EX;
    driver_family[IKET_CBID_cuLaunchKernelEx_ptsz] = F_EX;
    driver_family[IKET_CBID_cuGraphLaunch] = F_GRAPH;
    driver_family[IKET_CBID_cuGraphLaunch_ptsz] = F_GRAPH;
    driver_ptsz[IKET_CBID_cuLaunchKernel_ptsz] = driver_ptsz[IKET_CBID_cuLaunchCooperativeKernel_ptsz] =
        driver_ptsz[IKET_CBID_cuLaunchKernelEx_ptsz] = driver_ptsz[IKET_CBID_cuGraphLaunch_ptsz] = 1;
    runtime_family[IKET_CBID_cudaLaunchKernel_v7000] = F_RUNTIME;
    runtime_family[IKET_CBID_cudaLaunchKernel_ptsz_v7000] = F_RUNTIME;
    runtime_family[IKET_CBID_cudaLaunchCooperativeKernel_v9000] = F_RUNTIME;
    runtime_family[IKET_CBID_cudaLaunchCooperativeKernel_ptsz_v9000] = F_RUNTIME;
    runtime_family[IKET_CBID_cudaLaunchKernelExC_v11060] = F_RUNTIME;
    runtime_family[IKET_CBID_cudaLaunchKernelExC_ptsz_v11060] = F_RUNTIME;
    load_kind[IKET_CBID_cuModuleLoadData] = L_MODULE;
    load_kind[IKET_CBID_cuModuleLoadDataEx] = L_MODULE_EX;
    load_kind[IKET_CBID_cuModuleLoadFatBinary] = L_FATBIN;
    load_kind[IKET_CBID_cuLibraryLoadData] = L_LIBRARY;
    load_kind[IKET_CBID_cuModuleUnload] = load_kind[IKET_CBID_cuLibraryUnload] = L_UNLOAD;
  }
}

static void atfork_child(void) {
  /* The child's CUDA is not its parent's; it counts and connects anew. */
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&mu, &a);
  pthread_mutexattr_destroy(&a);
  seen = matching = traced = timed = skipped = rt_unseen = 0;
}

EXPORT int InitializeInjection(void) {
  pthread_mutex_lock(&mu);
  if (started) {
    pthread_mutex_unlock(&mu);
    return 1;
  }
  started = 1;
  const char *m = getenv("IKET_MODE");
  mode = (m && strcmp(m, "time") == 0) ? MODE_TIME : MODE_TRACE;
  const char *c = getenv("IKET_CAPACITY");
  if (c && atol(c) > 0) capacity = (unsigned)atol(c);
  const char *w = getenv("IKET_WATCH");
  watch = w && strcmp(w, "1") == 0;
  const char *t = getenv("IKET_TIMEOUT_MS");
  if (t && atol(t) > 0) timeout_ms = atol(t);
  const char *bl = getenv("IKET_BUFFER_LIMIT");
  unsigned long long blv = bl ? strtoull(bl, NULL, 10) : 0;
  if (blv > 0 && blv < buffer_limit) buffer_limit = blv;
  const char *il = getenv("IKET_IDLE_MS");
  if (il && *il) idle_ms = atol(il);
  const char *rl = getenv("IKET_RECORDS_L2");
  if (rl && strcmp(rl, "0") == 0) records_l2 = 0;
  const char *fl = getenv("IKET_FLUSH_L2");
  if (fl && atoll(fl) > 0) flush_bytes = (size_t)atoll(fl);
  const char *l = getenv("IKET_LAUNCHES");
  parse_ranges(l ? l : "0");
  int drv = load_driver();
  connect_iket();
  if (drv < 0) {
    note("error", "driver", "iket could not resolve the CUDA driver's entry points in this process");
    pthread_mutex_unlock(&mu);
    return 1;
  }
  char tried[2048];
  void *h = open_cupti(tried, sizeof tried);
  if (h == NULL) {
    note("error", "cupti_missing", "CUPTI not found (tried %s); set IKET_CUPTI_LIB or install CUPTI", tried);
    pthread_mutex_unlock(&mu);
    return 1;
  }
  *(void **)&cupti.Subscribe = dlsym(h, "cuptiSubscribe");
  *(void **)&cupti.EnableCallback = dlsym(h, "cuptiEnableCallback");
  *(void **)&cupti.GetResultString = dlsym(h, "cuptiGetResultString");
  *(void **)&cupti.GetCallbackName = dlsym(h, "cuptiGetCallbackName");
  if (cupti.Subscribe == NULL || cupti.EnableCallback == NULL) {
    note("error", "cupti_symbol", "the CUPTI library found lacks cuptiSubscribe or cuptiEnableCallback");
    pthread_mutex_unlock(&mu);
    return 1;
  }
  static CUpti_SubscriberHandle sub;
  CUptiResult r = cupti.Subscribe(&sub, callback, NULL);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    note("error", "cupti_taken", "CUPTI is already in use by another tool in this process (Nsight Systems, Nsight Compute, a profiler): iket cannot attach beside it");
    pthread_mutex_unlock(&mu);
    return 1;
  }
  if (r != CUPTI_SUCCESS) {
    note("error", "cupti_error", "cuptiSubscribe: %s", cupti_err(r));
    pthread_mutex_unlock(&mu);
    return 1;
  }
  set_families();
  int enabled = 0;
  for (uint32_t id = 1; id < MAX_CBID; ++id) {
    if (driver_family[id] != F_NONE &&
        cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id) == CUPTI_SUCCESS)
      ++enabled;
    if (runtime_family[id] != F_NONE) cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
    /* trace mode compiles dormant builds again; time mode times them as
     * built */
    if (load_kind[id] != L_NONE && (mode != MODE_TRACE || cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, id) != CUPTI_SUCCESS))
      load_kind[id] = L_NONE;
  }
  if (enabled == 0) note("error", "cupti_error", "no launch callback could be enabled");
  cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING);
  cupti.EnableCallback(1, sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  pthread_atfork(NULL, NULL, atfork_child);
  atexit(bye);
  pthread_mutex_unlock(&mu);
  return 1;
}
