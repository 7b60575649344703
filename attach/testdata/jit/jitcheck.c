/* jitcheck runs iket_jit.h's jit_image on a file's image, as the injection
 * library does on a module load (attach/jit_test.go):
 *
 *   jitcheck FILE DEV DRIVER [wrap] > PTX
 *
 * DEV is the compute capability (90), DRIVER the driver's version (13000);
 * "wrap" passes the image inside a fatbin wrapper, as cudart does. It prints "gates N" and "why TEXT" on
 * stderr and the PTX to compile, if any, on stdout. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "../../lib/iket_jit.h"

int main(int argc, char **argv) {
  if (argc < 4) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) return 2;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  /* 8-byte aligned and NUL-terminated, as images in a program are */
  unsigned long long *img = calloc((size_t)n / 8 + 2, 8);
  if (img == NULL || fread(img, 1, (size_t)n, f) != (size_t)n) return 2;
  fclose(f);
  const void *image = img;
  struct {
    unsigned magic, version;
    const void *data, *filename;
  } wrapper = {JIT_WRAPPER_MAGIC, 1, img, NULL};
  if (argc > 4 && strcmp(argv[4], "wrap") == 0) image = &wrapper;
  int gates = 0;
  const char *why = NULL;
  char *ptx = jit_image(image, atoi(argv[2]), jit_max_isa(atoi(argv[3])), &gates, &why);
  fprintf(stderr, "gates %d\nwhy %s\n", gates, why ? why : "");
  if (ptx != NULL) fputs(ptx, stdout);
  return 0;
}
