/* eustall_hot.cl - OpenCL C kernel whose time goes to one instruction: the global load in the loop
 * (line 9). Built with -g (OpLine per instruction) for the EU-stall sampling sample and tests. */
__kernel void eustall_hot(__global const float *src, __global float *dst, uint iters)
{
    size_t i = get_global_id(0);
    float acc = 0.0f;
    for (uint k = 0; k < iters; k++)
    {
        acc += src[(i + k * 64) & 1023];
    }
    dst[i] = acc;
}
