// entry.cu: the example kernel alone, for a cubin that driver_app.cpp loads
// through the driver API:
//   nvcc -cubin -arch=sm_90a -I kernels/include -DIKET_ENABLE=1 -o pipeline.cubin examples/app/entry.cu
#include "pipeline.cuh"

template __global__ void app::pipeline<4, 2>(const float*, float*, int);
