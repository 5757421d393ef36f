/* xmx_mad.cl - OpenCL C kernel on the matrix path: a loop of intel_sub_group_i8_i8_matrix_mad_k32
 * (cl_intel_subgroup_matrix_multiply_accumulate; the device maps the imported builtin to its XMX
 * pipe). For the utilization samples and tests. */
int8 intel_sub_group_i8_i8_matrix_mad_k32(short8 a, int8 b, int8 acc);
__kernel void xmx_mad(__global const short8 *a, __global const int8 *b, __global int8 *c, uint iters)
{
    size_t i = get_global_id(0);
    int8 acc = 0;
    short8 av = a[i & 63];
    int8 bv = b[i & 63];
    for (uint k = 0; k < iters; k++)
        acc = intel_sub_group_i8_i8_matrix_mad_k32(av, bv, acc);
    c[i] = acc;
}
