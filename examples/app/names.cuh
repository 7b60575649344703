// names.cuh: the application's iket names, one list for every translation
// unit (a program built with -rdc=true links them into one module, which
// holds one name table).
#pragma once
#include "iket.cuh"

#define APP_NAMES(X)                                                   \
  X(ROLE, producer) X(ROLE, consumer)                                  \
  X(RANGE, wait_free) X(RANGE, load) X(RANGE, wait_full) X(RANGE, compute) \
  X(RANGE, scale) X(MARK, done)
IKET_NAMES(APP_NAMES)
