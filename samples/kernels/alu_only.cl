/* alu_only.cl - OpenCL C kernel whose work is arithmetic: a loop of float multiply-adds on private
 * values, one 4-byte store per work item at the end. For the utilization samples and tests. */
__kernel void alu_only(__global float *out, uint iters)
{
    size_t i = get_global_id(0);
    float x = (float)i, y = 1.0f;
    for (uint k = 0; k < iters; k++)
    {
        x = x * 1.0001f + y;
        y = y * 0.9999f - x * 0.5f;
    }
    out[i] = x + y;
}
