/* test_op_parse.c - operator names of the spec's examples (asys-stats-reports.txt 2.3.21/2.3.22)
 * parsed into type, merge key and workload by the formulas of docs/operators.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "writer_op.h"

static int parse(const char *name, const char *domain, const pa_op_merge_t *m, pa_op_info_t *o)
{
    return pa_op_parse(name, strlen(name), domain, m, o);
}

static void test_moe(void **state)
{
    (void)state;
    pa_op_info_t o;
    const char *n = "MoE:M_876_E_128_H_4096_In_384_topk_8_topkids[136,0,25,167,68,17,3,5...]_unique_102";
    assert_int_equal(parse(n, "", NULL, &o), PA_OP_MOE);
    assert_string_equal(o.type, "MoE");
    assert_string_equal(o.key, "MoE:M_876_E_128_H_4096_In_384_topk_8_topkids[*]_unique_102");
    assert_true(o.gemm[0].flops == 2.0 * 876 * 8 * 4096 * 384);
    assert_true(o.gemm[0].load_bytes == (876.0 * 4096 + 102.0 * 4096 * 384) * 2);
    assert_true(o.gemm[0].store_bytes == 876.0 * 384 * 2);
    assert_true(o.gemm[1].flops == 2.0 * 876 * 8 * 192 * 4096);
    assert_true(o.gemm[1].load_bytes == (876.0 * 192 + 102.0 * 192 * 4096) * 2);
    assert_true(o.gemm[1].store_bytes == 876.0 * 4096 * 2);
    assert_true(o.work.flops == o.gemm[0].flops + o.gemm[1].flops);
    pa_op_info_free(&o);
    pa_op_merge_t keep = {.no_merge_moe_param = 1};
    assert_int_equal(parse(n, "", &keep, &o), PA_OP_MOE);
    assert_string_equal(o.key, n);
    pa_op_info_free(&o);
    /* random routing: which experts' weights were read is unknown */
    assert_int_equal(parse("MoE:M_8_E_128_H_2048_In_384_topk_8_random", "", NULL, &o), PA_OP_MOE);
    assert_true(o.work.load_bytes < 0 && o.work.store_bytes == 8.0 * 384 * 2 + 8.0 * 2048 * 2);
    assert_true(o.work.flops == 3.0 * 8 * 8 * 2048 * 384);
    pa_op_info_free(&o);
}

static void test_fmha(void **state)
{
    (void)state;
    pa_op_info_t o;
    const char *n = "FMHA:flash_attn_v2.7.2,Forward,custom_mask:1,seqlen_q:472,is_fixed_seqs:0,head_dim:128,"
                    "head_dim_value:128,num_heads_k:1,num_heads:8,batch_size:5,seqlen_k:772,data_type:bf16,"
                    "softcap:0.0000,paged_kv:1,num_blocks:209305,page_block_size:16,cu_seqlens_q:[0, 1, 2, 3, 4, 476],"
                    "seqlens_k:[713, 772, 731, 745, 472]";
    assert_int_equal(parse(n, "", NULL, &o), PA_OP_FMHA);
    /* causal: 713 + 772 + 731 + 745 decode pairs + 472*472 - 472*471/2 prefill pairs = 114589 */
    assert_true(o.work.flops == 2.0 * 8 * 114589 * 256);
    assert_true(o.work.load_bytes == 2.0 * (476 * 8 * 128 + 3433 * 1 * 256));
    assert_true(o.work.store_bytes == 2.0 * 476 * 8 * 128);
    assert_int_equal(o.fmha_decode, 0);
    assert_non_null(strstr(o.key, "num_blocks:*,page_block_size:16,cu_seqlens_q:*,seqlens_k:*"));
    assert_non_null(strstr(o.key, "seqlen_k:772,data_type:bf16"));
    pa_op_info_free(&o);
    assert_int_equal(parse("FMHA:x,Forward,seqlen_q:2,head_dim:64,num_heads:4,batch_size:2,seqlen_k:9,"
                           "data_type:fp16,cu_seqlens_q:[0, 1, 2],seqlens_k:[9, 7]", "", NULL, &o), PA_OP_FMHA);
    assert_int_equal(o.fmha_decode, 1);
    assert_true(o.work.flops == 2.0 * 4 * 16 * 128); /* no mask: 9 + 7 pairs, head_dim_value = head_dim */
    pa_op_info_free(&o);
}

static void test_gemm_pccl_onednn(void **state)
{
    (void)state;
    pa_op_info_t o;
    assert_int_equal(parse("ACBLAS:GemmEx,t,n,1280,8,2048,2048,2048,1280,1,0,1,DEFAULT,BF16,"
                           "ACBLAS_GEMM_DEFAULT_TENSOR_OP,32F,EPILOGUE_DEFAULT", "", NULL, &o), PA_OP_GEMM);
    assert_true(o.work.flops == 2.0 * 1280 * 8 * 2048);
    assert_true(o.work.load_bytes == (1280.0 * 2048 + 2048.0 * 8) * 2);
    assert_true(o.work.store_bytes == 1280.0 * 8 * 2);
    pa_op_info_free(&o);
    const char *ar = "AllReduce, p:0, c:16384, d:9, r:1, w:4, h:7deeae8da5f100b6, t:1, b:0x643000000/0x643008000";
    assert_int_equal(parse(ar, "", NULL, &o), PA_OP_PCCL);
    assert_string_equal(o.type, "AllReduce");
    assert_string_equal(o.key, "AllReduce, p:0, c:16384, d:9, r:1, w:4, h:7deeae8da5f100b6, t:1, b:*");
    assert_true(o.work.flops < 0);
    pa_op_info_free(&o);
    pa_op_merge_t keep = {.no_merge_pccl_param = 1};
    assert_int_equal(parse(ar, "", &keep, &o), PA_OP_PCCL);
    assert_string_equal(o.key, ar);
    pa_op_info_free(&o);
    assert_int_equal(parse("matmul", "dnnl::primitive::execute", NULL, &o), PA_OP_ONEDNN);
    assert_string_equal(o.type, "matmul");
    pa_op_info_free(&o);
    assert_int_equal(parse("matmul", "", NULL, &o), PA_OP_NONE);
    assert_int_equal(parse("gemm_loop", "", NULL, &o), PA_OP_NONE);
    assert_int_equal(parse("step:1", "", NULL, &o), PA_OP_NONE);
    assert_int_equal(parse("Loop, x:1", "", NULL, &o), PA_OP_NONE);
    assert_int_equal(parse("ACBLAS:GemmEx,t", "", NULL, &o), PA_OP_GEMM); /* too short: workload unknown */
    assert_true(o.work.flops < 0);
    pa_op_info_free(&o);
}

/* parameters no real operator has (beyond 64 bits, inf, negative): workload unknown, so the
 * reports show '-' instead of an absurd Util % */
static void test_overflowing_params(void **state)
{
    (void)state;
    pa_op_info_t o;
    assert_int_equal(parse("ACBLAS:GemmEx,t,n,99999999999999999999,99999999999999999999,99999999999999999999,"
                           "2048,2048,1280,1,0,1,DEFAULT,BF16", "", NULL, &o), PA_OP_GEMM);
    assert_true(o.work.flops < 0 && o.work.load_bytes < 0 && o.work.store_bytes < 0);
    pa_op_info_free(&o);
    /* each parameter fits, the FLOPs (2 x 4e18 x 8 x 8) do not */
    assert_int_equal(parse("ACBLAS:GemmEx,t,n,4000000000000000000,8,8,8,8,8,1,0,1,DEFAULT,BF16", "", NULL, &o),
                     PA_OP_GEMM);
    assert_true(o.work.flops < 0 && o.work.load_bytes < 0);
    pa_op_info_free(&o);
    assert_int_equal(parse("ACBLAS:GemmEx,t,n,inf,8,8,8,8,8,1,0,1,DEFAULT,BF16", "", NULL, &o), PA_OP_GEMM);
    assert_true(o.work.flops < 0);
    pa_op_info_free(&o);
    assert_int_equal(parse("ACBLAS:GemmEx,t,n,-8,-8,8,8,8,8,1,0,1,DEFAULT,BF16", "", NULL, &o), PA_OP_GEMM);
    assert_true(o.work.flops < 0); /* two negative sizes made a positive product */
    pa_op_info_free(&o);
    assert_int_equal(parse("MoE:M_99999999999999999999_E_128_H_99999999999999_In_384_topk_8_unique_4", "", NULL, &o),
                     PA_OP_MOE);
    assert_true(o.work.flops < 0 && o.gemm[0].flops < 0 && o.gemm[1].flops < 0 && o.work.load_bytes < 0);
    pa_op_info_free(&o);
    /* a large but real one stays */
    assert_int_equal(parse("ACBLAS:GemmEx,t,n,65536,65536,65536,8,8,8,1,0,1,DEFAULT,BF16", "", NULL, &o), PA_OP_GEMM);
    assert_true(o.work.flops == 2.0 * 65536 * 65536 * 65536);
    pa_op_info_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_fmha),
        cmocka_unit_test(test_gemm_pccl_onednn),
        cmocka_unit_test(test_overflowing_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
