/* fakeapp: a CUDA driver-API application for iket's CI, linked against the
 * fake libcuda.so.1. It loads one module (a fake descriptor, README.md) and
 * launches its kernels; see usage() for the flags. Every CUDA call is
 * checked: a failure prints "fakeapp: CALL: NAME (text)" to stderr and
 * exits 3. It writes nothing to stdout unless --print. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    CUresult r_ = (call);                                                             \
    if (r_ != CUDA_SUCCESS) {                                                         \
      const char *n_ = NULL, *s_ = NULL;                                              \
      cuGetErrorName(r_, &n_);                                                        \
      cuGetErrorString(r_, &s_);                                                      \
      fprintf(stderr, "fakeapp: %s: %s (%s), error %d\n", #call, n_ ? n_ : "?",        \
              s_ ? s_ : "?", r_);                                                     \
      exit(3);                                                                        \
    }                                                                                 \
  } while (0)

#define MAX_KERNELS 16

static struct {
  int launches, nkernels, uninstrumented, ex, coop, ptsz, graph, fork, exit_code, crash, print;
  int wrap, version, ctx_create, nonblocking, capture_mode, capture_ptsz, capture_other, l2_window, ex_window;
  long l2_limit;
  const char *cubin, *decoy, *dormant, *reload;
  unsigned grid, block;
  const char *names;
  const char *kernel[MAX_KERNELS], *behaviour[MAX_KERNELS];
} opt = {.launches = 2, .exit_code = 0, .grid = 2, .block = 128, .version = 3};

static const char default_names[] =
    "iket-names 1\\nROLE producer\\nROLE consumer\\nRANGE load\\nRANGE compute\\n";

static void usage(void) {
  fprintf(stderr,
          "usage: fakeapp [--launches N] [--kernel NAME BEHAVIOUR]... [--uninstrumented]\n"
          "  [--ex | --coop] [--ptsz] [--grid X] [--block N] [--graph] [--fork N] [--exit CODE]\n"
          "  [--crash] [--print] [--wrap] [--version V] [--names ESCAPED] [--ctx-create]\n"
          "  [--nonblocking] [--l2-window] [--l2-limit N] [--ex-window] [--capture-mode global|thread|relaxed] [--capture-ptsz] [--capture-other]\n"
          "  [--cubin PATH] [--decoy-cubin PATH] [--dormant ptx|other|sass] [--reload ptx|other|sass]\n"
          "BEHAVIOUR: pc unpaired hang fault plain\n");
  exit(2);
}

static long num(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) usage();
  char *end;
  long v = strtol(argv[++*i], &end, 0);
  if (*end || end == argv[*i]) usage();
  return v;
}

static void parse(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--launches")) opt.launches = (int)num(argc, argv, &i);
    else if (!strcmp(a, "--kernel") && i + 2 < argc && opt.nkernels < MAX_KERNELS) {
      opt.kernel[opt.nkernels] = argv[++i];
      opt.behaviour[opt.nkernels++] = argv[++i];
    } else if (!strcmp(a, "--uninstrumented")) opt.uninstrumented = 1;
    else if (!strcmp(a, "--capture-ptsz")) opt.capture_ptsz = 1;
    else if (!strcmp(a, "--capture-other")) opt.capture_other = 1;
    else if (!strcmp(a, "--cubin") && i + 1 < argc) opt.cubin = argv[++i];
    else if (!strcmp(a, "--dormant") && i + 1 < argc) opt.dormant = argv[++i];
    else if (!strcmp(a, "--reload") && i + 1 < argc) opt.reload = argv[++i];
    else if (!strcmp(a, "--decoy-cubin") && i + 1 < argc) opt.decoy = argv[++i];
    else if (!strcmp(a, "--ex")) opt.ex = 1;
    else if (!strcmp(a, "--ex-window")) opt.ex = opt.ex_window = 1;
    else if (!strcmp(a, "--coop")) opt.coop = 1;
    else if (!strcmp(a, "--ptsz")) opt.ptsz = 1;
    else if (!strcmp(a, "--grid")) opt.grid = (unsigned)num(argc, argv, &i);
    else if (!strcmp(a, "--block")) opt.block = (unsigned)num(argc, argv, &i);
    else if (!strcmp(a, "--graph")) opt.graph = 1;
    else if (!strcmp(a, "--fork")) opt.fork = (int)num(argc, argv, &i);
    else if (!strcmp(a, "--exit")) opt.exit_code = (int)num(argc, argv, &i);
    else if (!strcmp(a, "--crash")) opt.crash = 1;
    else if (!strcmp(a, "--print")) opt.print = 1;
    else if (!strcmp(a, "--wrap")) opt.wrap = 1;
    else if (!strcmp(a, "--version")) opt.version = (int)num(argc, argv, &i);
    else if (!strcmp(a, "--names") && i + 1 < argc) opt.names = argv[++i];
    else if (!strcmp(a, "--ctx-create")) opt.ctx_create = 1;
    else if (!strcmp(a, "--nonblocking")) opt.nonblocking = 1;
    else if (!strcmp(a, "--l2-window")) opt.l2_window = 1;
    else if (!strcmp(a, "--l2-limit")) opt.l2_limit = num(argc, argv, &i);
    else if (!strcmp(a, "--capture-mode") && i + 1 < argc) {
      const char *m = argv[++i];
      if (!strcmp(m, "global")) opt.capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
      else if (!strcmp(m, "thread")) opt.capture_mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
      else if (!strcmp(m, "relaxed")) opt.capture_mode = CU_STREAM_CAPTURE_MODE_RELAXED;
      else usage();
    } else usage();
  }
  if (opt.nkernels == 0) {
    opt.kernel[0] = "_Z8pipelinePfS_i";
    opt.behaviour[0] = "pc";
    opt.nkernels = 1;
  }
  if (opt.launches < 0 || opt.fork < 0 || (opt.ex && opt.coop)) usage();
}

static char *descriptor(void) {
  size_t n = 384 + strlen(opt.names ? opt.names : default_names);
  for (int k = 0; k < opt.nkernels; k++) n += strlen(opt.kernel[k]) + strlen(opt.behaviour[k]) + 16;
  char *d = malloc(n);
  if (!d) exit(3);
  if (opt.cubin) n += strlen(opt.cubin) + 16;
  int w = snprintf(d, n, "FAKEMOD 1\nnames %s\nbuild %d\nversion %d\n",
                   opt.uninstrumented ? "-" : opt.names ? opt.names : default_names, opt.wrap,
                   opt.version);
  if (opt.cubin) w += snprintf(d + w, n - (size_t)w, "cubin %s\n", opt.cubin);
  /* a dormant build (iket_jit.h): with PTX iket can compile again, or as
   * SASS alone */
  if (opt.dormant) {
    if (!strcmp(opt.dormant, "ptx")) w += snprintf(d + w, n - (size_t)w, ".version 9.0\n.target sm_90\n");
    if (!strcmp(opt.dormant, "other")) w += snprintf(d + w, n - (size_t)w, ".version 9.0\n.target sm_100a\n");
    w += snprintf(d + w, n - (size_t)w, ".global .align 4 .u32 iket_jit;\nmov.b32 iket_gate, 0;\n");
  }
  for (int k = 0; k < opt.nkernels; k++)
    w += snprintf(d + w, n - (size_t)w, "kernel %s %s\n", opt.kernel[k], opt.behaviour[k]);
  return d;
}

static void launch(CUfunction f, CUstream s, void **params) {
  unsigned g = opt.grid, b = opt.block;
  if (opt.ex) {
    CUlaunchAttribute attr[2];
    memset(attr, 0, sizeof attr);
    attr[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr[0].value.clusterDim.x = attr[0].value.clusterDim.y = attr[0].value.clusterDim.z = 1;
    /* --ex-window: the program's own access-policy window, over its parameters' first buffer */
    attr[1].id = CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW;
    attr[1].value.accessPolicyWindow.base_ptr = *(void **)params[1];
    attr[1].value.accessPolicyWindow.num_bytes = 4096;
    attr[1].value.accessPolicyWindow.hitRatio = 1.0f;
    attr[1].value.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
    CUlaunchConfig c = {g, 1, 1, b, 1, 1, 0, s, attr, opt.ex_window ? 2u : 1u};
    if (opt.ptsz) CHECK(cuLaunchKernelEx_ptsz(&c, f, params, NULL));
    else CHECK(cuLaunchKernelEx(&c, f, params, NULL));
  } else if (opt.coop) {
    if (opt.ptsz) CHECK(cuLaunchCooperativeKernel_ptsz(f, g, 1, 1, b, 1, 1, 0, s, params));
    else CHECK(cuLaunchCooperativeKernel(f, g, 1, 1, b, 1, 1, 0, s, params));
  } else {
    if (opt.ptsz) CHECK(cuLaunchKernel_ptsz(f, g, 1, 1, b, 1, 1, 0, s, params, NULL));
    else CHECK(cuLaunchKernel(f, g, 1, 1, b, 1, 1, 0, s, params, NULL));
  }
}

static void run(void) {
  CUdevice dev;
  CUcontext ctx;
  int version;
  char name[64];
  CHECK(cuInit(0));
  CHECK(cuDriverGetVersion(&version));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  if (opt.ctx_create) {
    CHECK(cuCtxCreate_v2(&ctx, 0, dev));
  } else {
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
  }
  char *image = descriptor();
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, image));
  CUfunction fn[MAX_KERNELS];
  for (int k = 0; k < opt.nkernels; k++) CHECK(cuModuleGetFunction(&fn[k], mod, opt.kernel[k]));
  /* --reload MODE: the module unloaded and another, dormant as MODE, loaded
   * in its place, which the fake driver gives the same handle */
  if (opt.reload) {
    CUmodule old = mod;
    CHECK(cuModuleUnload(mod));
    free(image);
    opt.dormant = opt.reload;
    image = descriptor();
    CHECK(cuModuleLoadData(&mod, image));
    if (mod != old) {
      fprintf(stderr, "fakeapp: the module loaded again has another handle\n");
      exit(4);
    }
    for (int k = 0; k < opt.nkernels; k++) CHECK(cuModuleGetFunction(&fn[k], mod, opt.kernel[k]));
  }
  /* --decoy-cubin: another module loaded after, uninstrumented, whose cubin
   * has kernels of the same names; its functions are never launched. */
  CUmodule decoy = NULL;
  if (opt.decoy) {
    char d[1024];
    int w = snprintf(d, sizeof d, "FAKEMOD 1\nnames -\nbuild 0\nversion %d\ncubin %s\n", opt.version, opt.decoy);
    for (int k = 0; k < opt.nkernels && w < (int)sizeof d; k++)
      w += snprintf(d + w, sizeof d - (size_t)w, "kernel %s pc\n", opt.kernel[k]);
    if (w >= (int)sizeof d) usage();
    CHECK(cuModuleLoadData(&decoy, d));
  }
  CUdeviceptr in, out;
  CHECK(cuMemAlloc_v2(&in, 4096));
  CHECK(cuMemAlloc_v2(&out, 4096));
  CHECK(cuMemsetD8_v2(out, 0, 4096));
  int count = 1024;
  void *params[] = {&in, &out, &count};
  CUstream s;
  CHECK(cuStreamCreate(&s, opt.nonblocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
  if (opt.l2_limit > 0) CHECK(cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, (size_t)opt.l2_limit));
  if (opt.l2_window) {
    /* the program keeps its output in the L2 itself */
    CUstreamAttrValue v;
    memset(&v, 0, sizeof v);
    v.accessPolicyWindow.base_ptr = (void *)(uintptr_t)out;
    v.accessPolicyWindow.num_bytes = 4096;
    v.accessPolicyWindow.hitRatio = 1.0f;
    v.accessPolicyWindow.hitProp = CU_ACCESS_PROPERTY_PERSISTING;
    CHECK(cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 4096));
    CHECK(cuStreamSetAttribute(s, CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW, &v));
  }
  if (opt.capture_ptsz) {
    /* capture the per-thread default stream, launching on it as NULL
     * through a _ptsz entry point */
    CUgraph g;
    CHECK(cuStreamBeginCapture_v2(CU_STREAM_PER_THREAD, opt.capture_mode));
    CHECK(cuLaunchKernel_ptsz(fn[0], 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CHECK(cuStreamEndCapture(CU_STREAM_PER_THREAD, &g));
    return;
  }
  if (opt.capture_other) {
    /* capture s while the same thread launches the second kernel on
     * another stream */
    CUgraph g;
    CUstream s2;
    CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK(cuStreamBeginCapture_v2(s, opt.capture_mode));
    launch(fn[0], s, params);
    launch(fn[1], s2, params);
    CHECK(cuStreamEndCapture(s, &g));
    return;
  }
  if (opt.graph) {
    CUgraph g;
    CUgraphExec ge;
    CHECK(cuStreamBeginCapture_v2(s, opt.capture_mode));
    launch(fn[0], s, params);
    CHECK(cuStreamEndCapture(s, &g));
    CHECK(cuGraphInstantiateWithFlags(&ge, g, 0));
    for (int i = 0; i < opt.launches; i++) {
      if (opt.ptsz) CHECK(cuGraphLaunch_ptsz(ge, s));
      else CHECK(cuGraphLaunch(ge, s));
    }
    CHECK(cuStreamSynchronize(s));
    CHECK(cuGraphExecDestroy(ge));
    CHECK(cuGraphDestroy(g));
  } else {
    for (int i = 0; i < opt.launches; i++) launch(fn[0], s, params);
  }
  for (int k = 1; k < opt.nkernels; k++) launch(fn[k], s, params);
  CHECK(cuStreamSynchronize(s));
  CHECK(cuCtxSynchronize());
  unsigned char result[16];
  CHECK(cuMemcpyDtoH_v2(result, out, sizeof result));
  CHECK(cuStreamDestroy_v2(s));
  CHECK(cuMemFree_v2(in));
  CHECK(cuMemFree_v2(out));
  CHECK(cuModuleUnload(mod));
  if (decoy) CHECK(cuModuleUnload(decoy));
  if (opt.ctx_create) CHECK(cuCtxDestroy_v2(ctx));
  free(image);
}

int main(int argc, char **argv) {
  parse(argc, argv);
  if (opt.print) {
    printf("fakeapp stdout line\n");
    fflush(stdout);
    fprintf(stderr, "fakeapp stderr line\n");
  }
  if (opt.fork > 0) {
    pid_t pids[64];
    int n = opt.fork > 64 ? 64 : opt.fork;
    fflush(NULL);
    for (int i = 0; i < n; i++) {
      pids[i] = fork();
      if (pids[i] < 0) {
        perror("fakeapp: fork");
        exit(3);
      }
      if (pids[i] == 0) {
        run();
        if (opt.crash) raise(SIGSEGV);
        exit(opt.exit_code);
      }
    }
    int code = 0;
    for (int i = 0; i < n; i++) {
      int st;
      if (waitpid(pids[i], &st, 0) < 0) {
        perror("fakeapp: waitpid");
        exit(3);
      }
      int c = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 3;
      if (code == 0) code = c;
    }
    return code;
  }
  run();
  if (opt.crash) raise(SIGSEGV);
  return opt.exit_code;
}
