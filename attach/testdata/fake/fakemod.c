/* fakemod.c: the fake driver's modules (a text descriptor instead of a
 * cubin: README.md), their functions and globals, and the "device": a
 * kernel writes its warp buffers as kernels/include/iket.cuh would
 * (docs/FORMAT.md, format version 2). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_internal.h"

static struct CUmod_st *g_mods;
static struct CUmod_st *g_spare; /* the last freed module's memory: the next load's handle, as a driver may reuse one */
static uint32_t g_mod_id;
uint64_t fk_busy_ns;
static uint64_t g_gt_end, g_ns0;

static void *global_alloc(size_t n, size_t align) {
  void *p = aligned_alloc(align, (n + align - 1) / align * align);
  if (p && fk_add_alloc((uintptr_t)p, n, FK_ALLOC_GLOBAL, NULL, 0)) {
    free(p);
    p = NULL;
  }
  if (p) memset(p, 0, n);
  return p;
}

void fk_module_free(struct CUmod_st *m) {
  for (struct CUfunc_st *f = m->funcs, *next; f; f = next) {
    next = f->next;
    f->magic = 0;
    free(f->name);
    free(f);
  }
  if (m->state) fk_remove_alloc((uintptr_t)m->state);
  if (m->names) fk_remove_alloc((uintptr_t)m->names);
  if (m->jit) fk_remove_alloc((uintptr_t)m->jit);
  m->magic = 0;
  free(m->image);
  free(m->cubin);
  if (g_spare == NULL) {
    memset(m, 0, sizeof *m);
    g_spare = m;
  } else {
    free(m);
  }
}

/* unescape decodes \n \t \\ \xHH in place; -1 on a bad escape. */
static int unescape(char *s, size_t *len) {
  char *w = s;
  for (char *r = s; *r; r++) {
    if (*r != '\\') {
      *w++ = *r;
      continue;
    }
    r++;
    if (*r == 'n') *w++ = '\n';
    else if (*r == 't') *w++ = '\t';
    else if (*r == '\\') *w++ = '\\';
    else if (*r == 'x' && r[1] && r[2]) {
      char hex[3] = {r[1], r[2], 0}, *end;
      long v = strtol(hex, &end, 16);
      if (*end) return -1;
      *w++ = (char)v;
      r += 2;
    } else return -1;
  }
  *w = 0;
  *len = (size_t)(w - s);
  return 0;
}

/* name_id returns the id of the table line "KIND name" (line k after the
 * first is id k), or 0. */
static uint16_t name_id(const char *table, const char *entry) {
  const char *p = strchr(table, '\n');
  size_t n = strlen(entry);
  for (uint16_t id = 1; p && p[1]; id++) {
    p++;
    if (strncmp(p, entry, n) == 0 && (p[n] == '\n' || p[n] == 0)) return id;
    p = strchr(p, '\n');
  }
  return 0;
}

static int behaviour(const char *s) {
  static const char *const names[] = {"plain", "pc", "unpaired", "hang", "fault"};
  for (int i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) return i;
  return -1;
}

static CUresult bad_image(struct CUmod_st *m, int line, const char *why) {
  fprintf(stderr, "fakecuda: cuModuleLoadData: descriptor line %d: %s\n", line, why);
  fk_module_free(m);
  return CUDA_ERROR_INVALID_IMAGE;
}

CUresult fk_module_load(struct CUmod_st **out, const char *image) {
  struct CUmod_st *m = g_spare != NULL ? g_spare : calloc(1, sizeof *m);
  g_spare = NULL;
  if (!m || !(m->image = strdup(image))) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  m->magic = FK_MAGIC_MOD;
  m->gate = 1;
  char *text = strdup(image), *save = NULL;
  if (!text) return bad_image(m, 0, "out of memory");
  uint32_t build = 0, version = 3;
  int line = 0, have_names = 0, need_pc = 0;
  CUresult rc = CUDA_SUCCESS;
  for (char *l = strtok_r(text, "\n", &save); l && rc == CUDA_SUCCESS; l = strtok_r(NULL, "\n", &save)) {
    line++;
    char word[16] = "", name[256] = "", beh[16] = "";
    int off = 0;
    if (line == 1) {
      if (strcmp(l, "FAKEMOD 1") != 0) rc = bad_image(m, line, "want \"FAKEMOD 1\"");
    } else if (l[0] == '#' || l[0] == 0) {
    } else if (l[0] == '.') {
      /* PTX-like lines (a dormant build's, iket_jit.h): ".global .align 4
       * .u32 iket_jit;" (or "= N;") declares iket_jit; others are skipped */
      const char *j = strstr(l, " iket_jit");
      unsigned v = 0;
      if (strstr(l, ".global") != NULL && j != NULL && m->jit == NULL) {
        if (!(m->jit = global_alloc(4, 4))) {
          rc = bad_image(m, line, "out of memory");
          break;
        }
        sscanf(j, " iket_jit = %u", &v);
        memcpy(m->jit, &v, 4);
      }
    } else if (sscanf(l, "mov.b32 iket_gate, %d;", &m->gate) == 1) {
      /* FAKE_JIT_FAIL=1: a module with its gates set does not compile */
      if (m->gate != 0 && getenv("FAKE_JIT_FAIL") != NULL) rc = bad_image(m, line, "FAKE_JIT_FAIL: the PTX does not compile");
    } else if (sscanf(l, "%15s %n", word, &off) != 1) {
      rc = bad_image(m, line, "empty");
    } else if (strcmp(word, "names") == 0 && !have_names) {
      have_names = 1;
      if (strcmp(l + off, "-") == 0) continue;
      m->instrumented = 1;
      m->names_size = strlen(l + off) + 1;
      if (!(m->names = global_alloc(m->names_size, 256))) {
        rc = bad_image(m, line, "out of memory");
        break;
      }
      strcpy(m->names, l + off);
      size_t len = 0;
      if (unescape(m->names, &len)) {
        rc = bad_image(m, line, "bad escape in names");
        break;
      }
      m->names_size = len + 1;
    } else if (strcmp(word, "cubin") == 0 && m->cubin == NULL) {
      FILE *cf = fopen(l + off, "rb");
      long sz = -1;
      if (cf && fseek(cf, 0, SEEK_END) == 0 && (sz = ftell(cf)) > 0 && fseek(cf, 0, SEEK_SET) == 0 &&
          (m->cubin = malloc((size_t)sz)) && fread(m->cubin, 1, (size_t)sz, cf) == (size_t)sz) {
        m->cubin_size = (size_t)sz;
      } else {
        rc = bad_image(m, line, "cannot read the cubin");
      }
      if (cf) fclose(cf);
    } else if (strcmp(word, "build") == 0 && sscanf(l + off, "%u", &build) == 1) {
    } else if (strcmp(word, "version") == 0 && sscanf(l + off, "%u", &version) == 1) {
    } else if (strcmp(word, "kernel") == 0 && sscanf(l + off, "%255s %15s", name, beh) == 2 &&
               behaviour(beh) >= 0) {
      struct CUfunc_st *f = calloc(1, sizeof *f);
      if (!f || !(f->name = strdup(name))) {
        free(f);
        rc = bad_image(m, line, "out of memory");
        break;
      }
      f->magic = FK_MAGIC_FUNC;
      f->mod = m;
      f->behaviour = behaviour(beh);
      need_pc |= f->behaviour != FK_PLAIN;
      f->next = m->funcs;
      m->funcs = f;
    } else {
      rc = bad_image(m, line, "want names TABLE|-, build N, version N or kernel NAME pc|unpaired|hang|fault|plain");
    }
  }
  free(text);
  if (rc != CUDA_SUCCESS) return rc;
  if (!have_names || !m->funcs) return bad_image(m, line, "a module needs a names line and a kernel");
  if (m->instrumented) {
    m->id_producer = name_id(m->names, "ROLE producer");
    m->id_consumer = name_id(m->names, "ROLE consumer");
    m->id_load = name_id(m->names, "RANGE load");
    m->id_compute = name_id(m->names, "RANGE compute");
    if (need_pc && !(m->id_producer && m->id_consumer && m->id_load && m->id_compute))
      return bad_image(m, line, "the kernels' events need names ROLE producer, ROLE consumer, RANGE load, RANGE compute");
    m->state = global_alloc(32, 256);
    if (!m->state) return bad_image(m, line, "out of memory");
    uint32_t st[6] = {0xffffffffu, 1, version, build, 0, 0}; /* wrap_mask .. reserved */
    memcpy(m->state + 12, st, 20);
  }
  m->id = ++g_mod_id;
  m->next = g_mods;
  g_mods = m;
  *out = m;
  return CUDA_SUCCESS;
}

static struct CUmod_st *module(CUmodule h) {
  for (struct CUmod_st *m = g_mods; m; m = m->next)
    if (m == h) return m;
  return NULL;
}

int fk_func_valid(struct CUfunc_st *f) {
  if (!f) return 0;
  for (struct CUmod_st *m = g_mods; m; m = m->next)
    for (struct CUfunc_st *p = m->funcs; p; p = p->next)
      if (p == f) return 1;
  return 0;
}

#define MOD_FLAGS (FK_NEED_INIT | FK_NEED_CTX | FK_STICKY)

static CUresult module_load_data(CUmodule *pm, const void *image, struct CUmod_st **mp);

FK_EXPORT CUresult cuModuleLoadData(CUmodule *pm, const void *image) {
  struct CUmod_st *m = NULL;
  /* CUPTI's ENTER callback may replace the image (iket does for a
   * dormant build) */
  cuModuleLoadData_params params = {pm, image};
  uint64_t corr_data = 0;
  CUresult ret = CUDA_SUCCESS;
  if (fk_initialized()) fk_api_callback(IKET_CBID_cuModuleLoadData, CUPTI_API_ENTER, "cuModuleLoadData", &params, &ret, NULL, 0, &corr_data);
  ret = module_load_data(pm, params.image, &m);
  if (fk_initialized()) fk_api_callback(IKET_CBID_cuModuleLoadData, CUPTI_API_EXIT, "cuModuleLoadData", &params, &ret, NULL, 0, &corr_data);
  return ret;
}

static CUresult module_load_data(CUmodule *pm, const void *image, struct CUmod_st **mp) {
  struct CUmod_st *m = NULL;
  {
    FK_BEGIN(MOD_FLAGS);
    if (!pm || !image) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
    rc_ = fk_module_load(&m, image);
    if (rc_ == CUDA_SUCCESS) *pm = m;
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  CUpti_ModuleResourceData d = {m->id, strlen(m->image), m->image};
  if (m->cubin != NULL) {
    d.cubinSize = m->cubin_size;
    d.pCubin = (const char *)m->cubin;
  }
  fk_resource_callback(CUPTI_CBID_RESOURCE_MODULE_LOADED, fk_current_ctx(), NULL, &d);
  *mp = m;
  return CUDA_SUCCESS;
}

static CUresult module_unload(CUmodule h);

FK_EXPORT CUresult cuModuleUnload(CUmodule h) {
  CUmodule params = h; /* cuModuleUnload_params: the handle */
  uint64_t corr_data = 0;
  CUresult ret = CUDA_SUCCESS;
  if (fk_initialized()) fk_api_callback(IKET_CBID_cuModuleUnload, CUPTI_API_ENTER, "cuModuleUnload", &params, &ret, NULL, 0, &corr_data);
  ret = module_unload(h);
  if (fk_initialized()) fk_api_callback(IKET_CBID_cuModuleUnload, CUPTI_API_EXIT, "cuModuleUnload", &params, &ret, NULL, 0, &corr_data);
  return ret;
}

static CUresult module_unload(CUmodule h) {
  struct CUmod_st *m;
  {
    FK_BEGIN(MOD_FLAGS);
    if (!(m = module(h))) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  out_:
    fk_unlock();
    if (rc_ != CUDA_SUCCESS) return rc_;
  }
  CUpti_ModuleResourceData d = {m->id, strlen(m->image), m->image};
  fk_resource_callback(CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING, fk_current_ctx(), NULL, &d);
  fk_lock();
  for (struct CUmod_st **p = &g_mods; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      fk_module_free(m);
      break;
    }
  fk_unlock();
  return CUDA_SUCCESS;
}

FK_EXPORT CUresult cuModuleGetFunction(CUfunction *pf, CUmodule h, const char *name) {
  FK_BEGIN(MOD_FLAGS);
  struct CUmod_st *m = module(h);
  if (!m) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!pf || !name) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  for (struct CUfunc_st *f = m->funcs; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *pf = f;
      FK_FAIL(CUDA_SUCCESS);
    }
  FK_FAIL(CUDA_ERROR_NOT_FOUND);
  FK_END;
}

FK_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dp, size_t *bytes, CUmodule h, const char *name) {
  FK_BEGIN(MOD_FLAGS);
  struct CUmod_st *m = module(h);
  if (!m) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!name) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  void *p = NULL;
  size_t n = 0;
  if (m->instrumented && strcmp(name, "iket_state") == 0) p = m->state, n = 32;
  if (m->instrumented && strcmp(name, "iket_name_table") == 0) p = m->names, n = m->names_size;
  if (m->jit != NULL && strcmp(name, "iket_jit") == 0) p = m->jit, n = 4;
  if (!p) FK_FAIL(CUDA_ERROR_NOT_FOUND);
  if (dp) *dp = (CUdeviceptr)(uintptr_t)p;
  if (bytes) *bytes = n;
  FK_END;
}

FK_EXPORT CUresult cuFuncGetModule(CUmodule *pm, CUfunction f) {
  FK_BEGIN(MOD_FLAGS);
  if (!fk_func_valid(f)) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!pm) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *pm = f->mod;
  FK_END;
}

FK_EXPORT CUresult cuFuncGetName(const char **name, CUfunction f) {
  FK_BEGIN(MOD_FLAGS);
  if (!fk_func_valid(f)) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!name) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *name = f->name;
  FK_END;
}

FK_EXPORT CUresult cuFuncGetAttribute(int *pi, CUfunction_attribute a, CUfunction f) {
  static const int attrs[] = {1024, 1024, 0, 0, 40, 90, 90, 0, 48 * 1024 - 1024};
  FK_BEGIN(MOD_FLAGS);
  if (!fk_func_valid(f)) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!pi || a < 0 || a > 8 || a == 7) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *pi = attrs[a];
  FK_END;
}

int fk_occupancy(unsigned threads, size_t dyn_smem) {
  unsigned warps = (threads + 31) / 32;
  if (warps == 0) return 0;
  int n = 32;
  int by_warps = (int)(64 / warps), by_regs = (int)(65536 / (warps * 40 * 32));
  int by_smem = (int)(233472 / (2048 + dyn_smem));
  if (by_warps < n) n = by_warps;
  if (by_regs < n) n = by_regs;
  if (by_smem < n) n = by_smem;
  return n;
}

FK_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *nb, CUfunction f, int bs, size_t dyn) {
  FK_BEGIN(MOD_FLAGS);
  if (!fk_func_valid(f)) FK_FAIL(CUDA_ERROR_INVALID_HANDLE);
  if (!nb || bs <= 0 || bs > 1024) FK_FAIL(CUDA_ERROR_INVALID_VALUE);
  *nb = fk_occupancy((unsigned)bs, dyn);
  FK_END;
}

/* The device. An SM's clock64 runs at 1.98 GHz against the globaltimer
 * (real time, in 32 ns ticks), offset per SM. */

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t sm_cycle0(uint32_t sm) { return 500000000000ull + sm * 1000003007ull; }
static uint64_t cycle_at(uint32_t sm, uint64_t gt) { return sm_cycle0(sm) + (gt - g_ns0) * 198 / 100; }
static uint64_t next_tick(uint32_t sm, uint64_t cyc) {
  uint64_t gt = g_ns0 + (cyc - sm_cycle0(sm)) * 100 / 198;
  return (gt / 32 + 1) * 32;
}

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

#define TAG(kind, name, payload) ((uint32_t)(kind) << 29 | (uint32_t)(name) << 16 | (payload))

/* warp_events lists a warp's event tags in program order. */
static int warp_events(const struct CUfunc_st *f, uint32_t warp, uint32_t *tags) {
  const struct CUmod_st *m = f->mod;
  int producer = warp == 0, n = 0;
  tags[n++] = TAG(6, producer ? m->id_producer : m->id_consumer, 0);
  for (uint32_t st = 0; st < 4; st++) {
    tags[n++] = TAG(2, producer ? m->id_load : m->id_compute, st);
    if (!(f->behaviour == FK_UNPAIRED && !producer && st == 3)) tags[n++] = TAG(3, 0, 0);
  }
  if (f->behaviour == FK_HANG || f->behaviour == FK_FAULT) n = 2;
  return n;
}

static void write_warp(unsigned char *b, const struct CUfunc_st *f, const fk_node *k, uint64_t cta,
                       uint32_t warp, uint64_t lin, uint64_t start, const uint32_t st[6]) {
  uint32_t cap = st[0], mask = st[1], version = st[3];
  uint32_t sm = (uint32_t)(cta % 4), tags[16];
  int n = warp_events(f, warp, tags);
  int finished = f->behaviour != FK_HANG && f->behaviour != FK_FAULT;
  uint64_t sgt = start + 32 * (1 + lin % 4), sclk = cycle_at(sm, sgt) + lin % 3, clk = sclk;
  uint32_t role = tags[0] >> 16 & 0x1fff;
  put32(b, 0x57454b49u);
  put32(b + 4, sm);
  put32(b + 8, (uint32_t)(cta % k->grid[0]));
  put32(b + 12, (uint32_t)(cta / k->grid[0] % k->grid[1]));
  put32(b + 16, (uint32_t)(cta / ((uint64_t)k->grid[0] * k->grid[1])));
  put32(b + 20, warp);
  put64(b + 24, sgt);
  put64(b + 32, sclk);
  put32(b + 60, 1u | role << 16);
  for (int i = 0; i < n; i++) {
    clk = sclk + 40 + 120 * (uint64_t)i + lin % 7;
    uint32_t idx = (uint32_t)i & mask;
    if ((mask == 0xffffffffu && idx >= cap) || idx > cap) continue;
    uint64_t rec = version == 1 ? (uint64_t)tags[i] << 32 | (clk & 0xffffffffu)
                                : clk + ((uint64_t)tags[i] << 32);
    put64(b + 64 + 8 * (size_t)idx, rec);
  }
  if (!finished) return;
  uint64_t egt = next_tick(sm, clk + 1);
  put64(b + 40, egt);
  put64(b + 48, cycle_at(sm, egt));
  put32(b + 56, (uint32_t)n);
  put32(b + 60, 3u | role << 16);
}

static void write_buffers(const struct CUfunc_st *f, const fk_node *k, uint64_t start) {
  uint64_t base;
  uint32_t st[6]; /* capacity, wrap_mask, warps_per_cta, version, build, reserved */
  memcpy(&base, f->mod->state, 8);
  memcpy(st, f->mod->state + 8, 24);
  if (base == 0) return; /* no buffers: nothing stored */
  uint64_t ctas = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2];
  uint32_t wpc = (k->block[0] * k->block[1] * k->block[2] + 31) / 32;
  if (st[2] != wpc)
    fprintf(stderr, "fakecuda: %s: iket_state.warps_per_cta %u, the launch has %u\n", f->name, st[2], wpc);
  uint64_t stride = 64 + 8 * ((uint64_t)st[0] + 1);
  uint64_t need = ((ctas - 1) * st[2] + wpc) * stride;
  char why[256];
  fk_alloc *a = fk_find_alloc((uintptr_t)base, need);
  if (base % 8 || !a || (base >> 32) != ((base + need + 31) >> 32)) {
    snprintf(why, sizeof why, "%s: warp buffers [%#llx, +%llu) %s", f->name, (unsigned long long)base,
             (unsigned long long)need,
             base % 8 ? "are not 8-byte aligned" : !a ? "are not inside one allocation"
                                                : "cross or end within 32 bytes of a 4 GiB boundary");
    fk_set_fault(1, why);
    return;
  }
  if (f->behaviour == FK_FAULT && a->kind != FK_ALLOC_HOST) return;
  for (uint64_t cta = 0; cta < ctas; cta++)
    for (uint32_t w = 0; w < wpc; w++)
      write_warp((unsigned char *)(uintptr_t)base + (cta * st[2] + w) * stride, f, k, cta, w,
                 cta * wpc + w, start, st);
}

void fk_run_kernel(struct CUstream_st *s, const fk_node *k) {
  const struct CUfunc_st *f = k->f;
  if (!fk_func_valid(k->f)) {
    if (fk_debug()) fprintf(stderr, "fakecuda: a graph's kernel was unloaded\n");
    return;
  }
  uint64_t warps = (uint64_t)k->grid[0] * k->grid[1] * k->grid[2] *
                   ((k->block[0] * k->block[1] * k->block[2] + 31) / 32);
  uint64_t start = now_ns();
  if (g_ns0 == 0) g_ns0 = start - 1000000;
  if (start < g_gt_end) start = g_gt_end;
  start = (start + 31) / 32 * 32;
  uint64_t dur = 10000 + warps;
  fk_l2_log("run %s window %#llx %zu limit %zu", f->name, (unsigned long long)(uintptr_t)s->window.base_ptr,
            s->window.num_bytes, fk_l2_limit);
  if (f->mod->instrumented && f->mod->gate != 0 && f->behaviour != FK_PLAIN) write_buffers(f, k, start);
  if (fk_debug())
    fprintf(stderr, "fakecuda: run %s (%s) grid %ux%ux%u block %ux%ux%u\n", f->name,
            f->behaviour == FK_HANG ? "hangs" : f->behaviour == FK_FAULT ? "faults" : "runs",
            k->grid[0], k->grid[1], k->grid[2], k->block[0], k->block[1], k->block[2]);
  if (f->behaviour == FK_HANG) {
    s->hung = 1;
  } else if (f->behaviour == FK_FAULT) {
    char why[300];
    snprintf(why, sizeof why, "kernel %s faults (behaviour fault)", f->name);
    fk_set_fault(0, why);
  } else {
    fk_busy_ns += dur;
    g_gt_end = start + dur;
  }
}
