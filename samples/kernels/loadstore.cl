/* loadstore.cl - OpenCL C kernel whose work is memory traffic: a loop moving 64-byte float16
 * values from src to dst (one global load and one store per trip). For the utilization sample. */
__kernel void loadstore(__global const float16 *src, __global float16 *dst, uint iters)
{
    size_t i = get_global_id(0);
    for (uint k = 0; k < iters; k++)
        dst[(i + k) & 4095] = src[(i + k) & 4095];
}
