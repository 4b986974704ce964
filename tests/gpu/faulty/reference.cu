// Reference for the failure-injection kernel: Y = 2 * X.
extern "C" __global__ void faulty_reference(const float* X, float* Y, int N) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < N; i += gridDim.x * blockDim.x) {
    Y[i] = 2.0f * X[i];
  }
}
