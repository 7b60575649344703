/* iket_jit.h: the module images of dormant builds, compiled again with their
 * events on (included by iket_inject.c; no state of its own but the libzstd
 * handle, opened once: callers on several threads need no lock).
 *
 * iket.cuh puts every event of an nvcc build behind a gate, the PTX
 * instruction "mov.b32 iket_gate, 0;" (a register of that name), which
 * ptxas folds: the SASS that nvcc builds runs the plain code. The same
 * module's PTX still holds the events. jit_image finds that PTX in the
 * image a load call was given (a
 * fatbin, the wrapper cudart passes, or PTX text), sets every gate to 1 and
 * the marker global iket_jit to 1, and returns the text, which the driver
 * then compiles in place of the image.
 *
 * A fatbin (what nvcc embeds: a 16-byte header, magic 0xBA55ED50, then
 * entries) holds an entry per PTX and per cubin. The entry's header, as
 * nvcc 13 writes it: kind (u16 at 0: 1 PTX, 2 ELF), header size (u32 at 4),
 * payload size (u64 at 8), the payload's compressed size (u32 at 16), the
 * architecture (u32 at 28, 90 for sm_90), flags (u64 at 40) and the
 * uncompressed size (u64 at 56). nvcc 13 compresses the PTX payload with
 * zstd by default (a zstd frame, flag 0x8000: iket decompresses it with the
 * system's libzstd); nvcc 12 compresses large payloads as an LZ4 block
 * (flag 0x2000: iket decodes it itself); nvcc --no-compress leaves plain
 * text. */
#ifndef IKET_JIT_H
#define IKET_JIT_H

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JIT_FATBIN_MAGIC 0xBA55ED50u
#define JIT_WRAPPER_MAGIC 0x466243b1u
#define JIT_GATE "iket_gate,"
#define JIT_MARKER "iket_jit"
#define JIT_ZSTD_MAGIC 0xFD2FB528u
#define JIT_FLAG_LZ4 0x2000u

/* The reasons jit_image gives, compared by address. */
static const char jit_why_other_gpu[] = "its PTX targets another GPU than this one";
static const char jit_why_too_new[] =
    "its PTX is of a later CUDA than this driver compiles: update the driver, or build with -DIKET_LIVE=1";
static const char jit_why_no_ptx[] =
    "its fatbin holds no PTX (built for real GPUs alone, as -gencode arch=compute_90a,code=sm_90a, CMake's 90a-real or "
    "TORCH_CUDA_ARCH_LIST without +PTX do): build with -arch=sm_90a (your GPU's), which embeds PTX, add "
    "code=compute_90a to -gencode, or build with -DIKET_LIVE=1";

static uint32_t jit_u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static uint64_t jit_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* libzstd.so.1 and the three functions jit_zstd calls, opened by
 * jit_zstd_open on first use. */
static struct {
  void *h;
  unsigned long long (*size_of)(const void *, size_t);
  size_t (*decompress)(void *, size_t, const void *, size_t);
  unsigned (*is_error)(size_t);
} jit_zstd_lib;
static pthread_once_t jit_zstd_once = PTHREAD_ONCE_INIT;

static void jit_zstd_open(void) {
  jit_zstd_lib.h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
  if (jit_zstd_lib.h == NULL) return;
  *(void **)&jit_zstd_lib.size_of = dlsym(jit_zstd_lib.h, "ZSTD_getFrameContentSize");
  *(void **)&jit_zstd_lib.decompress = dlsym(jit_zstd_lib.h, "ZSTD_decompress");
  *(void **)&jit_zstd_lib.is_error = dlsym(jit_zstd_lib.h, "ZSTD_isError");
}

/* jit_zstd decompresses a zstd frame of n bytes with libzstd.so.1, or
 * returns NULL with *why set. */
static char *jit_zstd(const unsigned char *src, size_t n, size_t *out_n, const char **why) {
  pthread_once(&jit_zstd_once, jit_zstd_open);
  if (jit_zstd_lib.h == NULL) {
    *why = "its PTX is zstd-compressed (nvcc's default) and libzstd.so.1 could not be opened: install libzstd, or build with nvcc --no-compress";
    return NULL;
  }
  unsigned long long (*size_of)(const void *, size_t) = jit_zstd_lib.size_of;
  size_t (*decompress)(void *, size_t, const void *, size_t) = jit_zstd_lib.decompress;
  unsigned (*is_error)(size_t) = jit_zstd_lib.is_error;
  if (size_of == NULL || decompress == NULL || is_error == NULL) {
    *why = "the libzstd.so.1 found lacks ZSTD_getFrameContentSize, ZSTD_decompress or ZSTD_isError";
    return NULL;
  }
  unsigned long long want = size_of(src, n);
  if (want >= (1ull << 31)) {
    *why = "its compressed PTX does not state its size (a damaged or unknown zstd frame)";
    return NULL;
  }
  char *out = malloc((size_t)want + 1);
  if (out == NULL) {
    *why = "out of memory";
    return NULL;
  }
  size_t got = decompress(out, (size_t)want, src, n);
  if (is_error(got) || got != want) {
    free(out);
    *why = "its compressed PTX did not decompress (a damaged zstd frame)";
    return NULL;
  }
  out[got] = 0;
  *out_n = got;
  return out;
}

/* jit_lz4_more adds a length's extension bytes (each added, the last one
 * below 255) at src[*i] to *len; 0 when they run past n. */
static int jit_lz4_more(const unsigned char *src, size_t n, size_t *i, size_t *len) {
  unsigned char c;
  do {
    if (*i >= n) return 0;
    c = src[(*i)++];
    *len += c;
  } while (c == 255);
  return 1;
}

/* jit_lz4 decodes an LZ4 block (the format of lz4's block API: sequences of
 * a token, literals, a 2-byte offset and a match, the last one literals
 * only) of n bytes into want bytes, or returns NULL with *why set. Every
 * read and copy is checked against both buffers. */
static char *jit_lz4(const unsigned char *src, size_t n, uint64_t want, size_t *out_n, const char **why) {
  static const char bad[] = "its LZ4-compressed PTX did not decode (a damaged payload)";
  if (want >= (1ull << 31)) {
    *why = bad;
    return NULL;
  }
  unsigned char *out = malloc((size_t)want + 1);
  if (out == NULL) {
    *why = "out of memory";
    return NULL;
  }
  size_t i = 0, o = 0, w = (size_t)want;
  while (i < n) {
    const unsigned tok = src[i++];
    size_t lit = tok >> 4, len = (tok & 15u) + 4;
    if (lit == 15 && !jit_lz4_more(src, n, &i, &lit)) goto fail;
    if (lit > n - i || lit > w - o) goto fail;
    memcpy(out + o, src + i, lit);
    i += lit;
    o += lit;
    if (i == n) break;
    if (n - i < 2) goto fail;
    const size_t off = (size_t)src[i] | (size_t)src[i + 1] << 8;
    i += 2;
    if (off == 0 || off > o) goto fail;
    if (len == 19 && !jit_lz4_more(src, n, &i, &len)) goto fail;
    if (len > w - o) goto fail;
    for (size_t k = 0; k < len; ++k, ++o) out[o] = out[o - off];
  }
  if (o != w) goto fail;
  out[o] = 0;
  *out_n = o;
  return (char *)out;
fail:
  free(out);
  *why = bad;
  return NULL;
}

/* jit_target reads PTX text's ".target sm_XY[a|f]": the architecture
 * (XY) and its suffix, or 0. */
static int jit_target(const char *ptx, char *suffix) {
  const char *t = strstr(ptx, "\n.target sm_");
  if (t == NULL) return 0;
  t += strlen("\n.target sm_");
  int v = 0;
  while (*t >= '0' && *t <= '9') v = v * 10 + (*t++ - '0');
  *suffix = (*t == 'a' || *t == 'f') ? *t : 0;
  return v;
}

/* jit_isa reads PTX text's ".version A.B" as A * 10 + B, or 0. */
static int jit_isa(const char *ptx) {
  const char *v = strstr(ptx, ".version ");
  if (v == NULL) return 0;
  v += strlen(".version ");
  int a = 0, b = 0;
  while (*v >= '0' && *v <= '9') a = a * 10 + (*v++ - '0');
  if (*v++ != '.') return 0;
  while (*v >= '0' && *v <= '9') b = b * 10 + (*v++ - '0');
  return a * 10 + b;
}

/* jit_max_isa is the newest PTX ISA a driver of version drv
 * (cuDriverGetVersion: 13000 for CUDA 13.0) compiles: ISA 9.x came with
 * CUDA 13.x, 8.0-8.4 with 12.0-12.4, 8.5 with 12.5 and 12.6, 8.6-8.8 with
 * 12.7-12.9, 7.x with 11.x. */
static int jit_max_isa(int drv) {
  int major = drv / 1000, minor = drv % 1000 / 10;
  if (major >= 13) return (major - 4) * 10 + minor;
  if (major == 12) return minor <= 5 ? 80 + minor : minor == 6 ? 85 : 79 + minor;
  if (major == 11) return 70 + minor;
  return 0;
}

/* jit_fits ranks PTX for sm_dev: 0 when the device cannot compile it
 * (an arch-specific "a" target of another device, a later one), more the
 * better (the device's own "a" target first, then the latest). */
static int jit_fits(int target, char suffix, int dev) {
  if (target == 0 || target > dev) return 0;
  if (suffix == 'a' && target != dev) return 0;
  if (suffix == 'f' && target / 10 != dev / 10) return 0;
  return target * 4 + (suffix == 'a' ? 3 : suffix == 'f' ? 2 : 1);
}

/* jit_patch copies PTX text with every gate ("mov.b32 iket_gate, 0;") set
 * to 1 and the marker global initialized to 1 (".global .align 4 .u32
 * iket_jit;"), counting the gates; NULL when it has none. The PTX that nvcc
 * embeds has its comments and most of its spaces taken out. */
static char *jit_patch(const char *ptx, size_t n, int *gates) {
  *gates = 0;
  if (memmem(ptx, n, JIT_GATE, strlen(JIT_GATE)) == NULL) return NULL;
  char *out = malloc(n + 64);
  if (out == NULL) return NULL;
  size_t o = 0;
  int marked = 0;
  const char *s = ptx, *end = ptx + n;
  while (s < end) {
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    size_t len = nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);
    memcpy(out + o, s, len);
    char *line = out + o;
    o += len;
    s += len;
    for (char *g = line; (g = memmem(g, len - (size_t)(g - line), JIT_GATE, strlen(JIT_GATE))) != NULL;) {
      g += strlen(JIT_GATE);
      char *z = g;
      while (z < line + len && (*z == ' ' || *z == '\t')) ++z;
      char *semi = z + 1;
      while (semi < line + len && (*semi == ' ' || *semi == '\t')) ++semi;
      if (z < line + len && *z == '0' && semi < line + len && *semi == ';') {
        *z = '1';
        ++*gates;
      }
    }
    if (!marked && memmem(line, len, ".global", 7) != NULL) {
      char *m = memmem(line, len, " " JIT_MARKER, strlen(JIT_MARKER) + 1);
      if (m != NULL) {
        char *after = m + 1 + strlen(JIT_MARKER);
        char *a = after;
        while (a < line + len && *a == ' ') ++a;
        if (a < line + len && (*a == ';' || (*a == '=' && a[1] == ' ' && a[2] == '0' && a[3] == ';') ||
                               (*a == '=' && a[1] == '0' && a[2] == ';'))) {
          o = (size_t)(after - out);
          static const char one[] = " = 1;\n";
          memcpy(out + o, one, sizeof one - 1);
          o += sizeof one - 1;
          marked = 1;
        }
      }
    }
  }
  out[o] = 0;
  if (*gates == 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* jit_entry is one fatbin entry: its kind (1 PTX, 2 ELF), architecture,
 * payload, the payload's compressed size (0 when it states none), flags
 * and uncompressed size. */
typedef struct {
  unsigned kind;
  int arch;
  const unsigned char *pl;
  uint64_t size;
  uint32_t csize;
  uint64_t flags, usize;
} jit_entry;

/* jit_next reads the entry at *e into x and moves *e past it; 0 at end or
 * at a header that does not fit before end. */
static int jit_next(const unsigned char **e, const unsigned char *end, jit_entry *x) {
  const unsigned char *p = *e;
  if (end - p < 64) return 0;
  uint64_t room = (uint64_t)(end - p);
  uint32_t ehs = jit_u32(p + 4);
  uint64_t size = jit_u64(p + 8);
  if (ehs < 64 || ehs > room || size > room - ehs) return 0;
  x->kind = (unsigned)(p[0] | p[1] << 8);
  x->arch = (int)jit_u32(p + 28);
  x->pl = p + ehs;
  x->size = size;
  x->csize = jit_u32(p + 16);
  x->flags = jit_u64(p + 40);
  x->usize = jit_u64(p + 56);
  *e = x->pl + size;
  return 1;
}

/* jit_unpack is x's payload and its length: decompressed into *copy (the
 * caller frees it) when it is a zstd frame or an LZ4 block, else the
 * entry's own bytes (*copy NULL); NULL with *why set when it does not
 * decompress. */
static const unsigned char *jit_unpack(const jit_entry *x, size_t *n, char **copy, const char **why) {
  *copy = NULL;
  const size_t packed = x->csize != 0 && x->csize <= x->size ? x->csize : (size_t)x->size;
  if (x->size >= 4 && jit_u32(x->pl) == JIT_ZSTD_MAGIC) {
    *copy = jit_zstd(x->pl, packed, n, why);
    return (const unsigned char *)*copy;
  }
  if ((x->flags & JIT_FLAG_LZ4) != 0 && x->usize != 0) {
    *copy = jit_lz4(x->pl, packed, x->usize, n, why);
    return (const unsigned char *)*copy;
  }
  *n = (size_t)x->size;
  return x->pl;
}

/* jit_marked reports whether a cubin of architecture arch (any when arch
 * is 0) in the entries [first, end) defines the marker global; -1 when
 * there is no such cubin. */
static int jit_marked(const unsigned char *first, const unsigned char *end, int arch) {
  int found = -1;
  jit_entry x;
  for (const unsigned char *e = first; found < 1 && jit_next(&e, end, &x);) {
    if (x.kind != 2 || (arch != 0 && x.arch != arch)) continue;
    size_t n = 0;
    char *copy;
    const char *w = NULL;
    const unsigned char *d = jit_unpack(&x, &n, &copy, &w);
    found = d != NULL && memmem(d, n, JIT_MARKER, strlen(JIT_MARKER) + 1) != NULL;
    free(copy);
  }
  return found;
}

/* jit_candidate is NUL-terminated PTX text of n bytes patched (jit_patch),
 * with its rank for the device (jit_fits, > 0), or NULL: no gates, or
 * gates it cannot use here, and then *why says why. */
static char *jit_candidate(const char *text, size_t n, int dev, int max_isa, int *gates, int *rank,
                           const char **why) {
  *rank = 0;
  char *out = jit_patch(text, n, gates);
  if (out == NULL) return NULL;
  char suffix = 0;
  int t = jit_target(text, &suffix);
  if (jit_fits(t, suffix, dev) == 0) {
    *why = jit_why_other_gpu;
  } else if (jit_isa(text) > max_isa) {
    *why = jit_why_too_new;
  } else {
    *rank = jit_fits(t, suffix, dev);
    return out;
  }
  free(out);
  *gates = 0;
  return NULL;
}

/* jit_image is the PTX text for the driver to compile in place of image,
 * with the events on, for a device of compute capability dev (90 for 9.0)
 * and a driver that compiles PTX ISA up to max_isa (jit_max_isa);
 * NULL when the image holds no gated PTX, and then *why says why when it
 * held gates that could not be used, or when a fatbin has no PTX this
 * device could compile (said from the entries' headers alone, for any
 * fatbin: the caller reads it only for a dormant build's module). */
static char *jit_image(const void *image, int dev, int max_isa, int *gates, const char **why) {
  *why = NULL;
  *gates = 0;
  if (image == NULL) return NULL;
  const unsigned char *p = image;
  if (jit_u32(p) == JIT_WRAPPER_MAGIC) {
    const void *data;
    memcpy(&data, p + 8, sizeof data);
    p = data;
    if (p == NULL) return NULL;
  }
  if (jit_u32(p) != JIT_FATBIN_MAGIC) {
    /* PTX text: a NUL-terminated string that declares its version */
    if (p[0] == 0x7f && p[1] == 'E') return NULL; /* a cubin */
    const char *s = (const char *)p;
    if (strstr(s, ".version") == NULL) return NULL;
    int rank;
    return jit_candidate(s, strnlen(s, (size_t)1 << 30), dev, max_isa, gates, &rank, why);
  }
  uint64_t fat = jit_u64(p + 8);
  unsigned version = (unsigned)(p[4] | p[5] << 8), hs = (unsigned)(p[6] | p[7] << 8);
  /* the driver reads the image by the same header, which states its size;
   * one of another version or header size than nvcc writes (1 and 16) is
   * left alone */
  if (version != 1 || hs != 16 || fat > (1ull << 31)) return NULL;
  const unsigned char *first = p + hs, *end = p + hs + fat;
  /* Without PTX for this device or an earlier one nothing can be compiled
   * again, whatever the module: its cubin is not decompressed to tell. */
  int ptx = 0, usable = 0;
  jit_entry x;
  for (const unsigned char *e = first; jit_next(&e, end, &x);)
    if (x.kind == 1) {
      ++ptx;
      usable += x.arch <= dev;
    }
  if (usable == 0) {
    *why = ptx != 0 ? jit_why_other_gpu : jit_why_no_ptx;
    return NULL;
  }
  /* Only a module whose cubin for this GPU (any cubin when none is for
   * it) defines the marker is examined further: a program's other fatbins
   * (a library's thousands of kernels) cost the walk over their headers. */
  int marked = jit_marked(first, end, dev);
  if (marked < 0) marked = jit_marked(first, end, 0);
  if (marked == 0) return NULL;
  char *best = NULL;
  int best_rank = 0, best_gates = 0;
  const char *reason = NULL, *fail = NULL;
  for (const unsigned char *e = first; jit_next(&e, end, &x);) {
    if (x.kind != 1) continue;
    size_t n = 0;
    char *text;
    const char *w = NULL;
    const unsigned char *d = jit_unpack(&x, &n, &text, &w);
    if (d != NULL && text == NULL) {
      /* plain text (nvcc --no-compress), copied to end in a NUL */
      if (n > 0 && (d[0] == '/' || d[0] == '.' || d[0] == '\n' || d[0] == '\t')) {
        n = strnlen((const char *)d, n);
        if ((text = malloc(n + 1)) != NULL) {
          memcpy(text, d, n);
          text[n] = 0;
        }
      } else {
        w = "its PTX is compressed in a form iket does not read: build with nvcc --no-compress";
      }
    }
    if (text == NULL) {
      if (w != NULL) fail = w;
      continue;
    }
    int g = 0, r = 0;
    const char *cw = NULL;
    char *out = jit_candidate(text, n, dev, max_isa, &g, &r, &cw);
    free(text);
    /* a driver too old says more than another GPU's PTX */
    if (cw != NULL && (reason == NULL || cw == jit_why_too_new)) reason = cw;
    if (out != NULL && r > best_rank) {
      free(best);
      best = out;
      best_rank = r;
      best_gates = g;
    } else {
      free(out);
    }
  }
  if (best != NULL) {
    *gates = best_gates;
    return best;
  }
  if (reason != NULL) *why = reason;
  else if (fail != NULL) *why = fail;
  else if (marked == 1) *why = "its PTX holds no gate that iket sets (a header of another version?): build with -DIKET_LIVE=1";
  return NULL;
}

#endif /* IKET_JIT_H */
