// Built-in variables over a 3-D grid of 3-D blocks: every thread records who it
// is.

// out[global linear thread id] = that id recomputed from threadIdx,
// blockIdx, blockDim and gridDim, plus 1 (0 = never written); dims[0..5] =
// blockDim and gridDim as thread (0,0,0) of block (0,0,0) sees them.
extern "C" __global__ void index_map(unsigned *out, unsigned *dims) {
  const unsigned block =
      blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread =
      threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned perBlock = blockDim.x * blockDim.y * blockDim.z;
  atomicAdd(&out[block * perBlock + thread], block * perBlock + thread + 1);
  if (block == 0 && thread == 0) {
    dims[0] = blockDim.x;
    dims[1] = blockDim.y;
    dims[2] = blockDim.z;
    dims[3] = gridDim.x;
    dims[4] = gridDim.y;
    dims[5] = gridDim.z;
  }
}
