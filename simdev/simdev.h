/* simdev.h - public names and constants of the software Level Zero device (no functions). */
#ifndef SIMDEV_H
#define SIMDEV_H

/*
 * Samples and tests may include this header for names and constants only; every call goes
 * through the plain Level Zero API and the loader (ZE_ENABLE_ALT_DRIVERS=<abs>/libze_simdev.so).
 * The full contract is in simdev/README.md.
 */

#define SIMDEV_VENDOR_ID 0x5344u          /* "SD"; deliberately not Intel's 0x8086 */
#define SIMDEV_DEVICE_ID 0x0d01u
#define SIMDEV_DEVICE_NAME_FMT "SimDev GPU %u" /* %u = device index 0.. */
#define SIMDEV_LIBRARY_NAME "libze_simdev.so"

/* Native module format (ZE_MODULE_FORMAT_NATIVE): first line, then one "kernel ..." line each. */
#define SIMDEV_NATIVE_MAGIC "SIMDEV-MODULE 1\n"

/* Built-in kernel names; a kernel whose (demangled base) name equals one of these runs it. */
#define SIMDEV_K_VECTOR_ADD "vector_add"       /* (const float*a, const float*b, float*c, uint32 n) */
#define SIMDEV_K_SAXPY "saxpy"                 /* (float alpha, const float*x, float*y, uint32 n) */
#define SIMDEV_K_GEMM_F32 "gemm_f32"           /* (const float*A,const float*B,float*C,uint32 M,N,K) */
#define SIMDEV_K_FILL_U32 "fill_u32"           /* (uint32*dst, uint32 value, uint32 n) */
#define SIMDEV_K_REDUCE_SUM_F32 "reduce_sum_f32" /* (const float*x, float*out, uint32 n) */
#define SIMDEV_K_BUSY_NS "busy_ns"             /* (uint64 ns) */
#define SIMDEV_K_ALLREDUCE_SUM_F32 "allreduce_sum_f32" /* (float*buf,uint32 n,rank,nranks,uint64 key) */

/* Engine layout of every device: command queue group ordinals and engine counts. */
#define SIMDEV_ORDINAL_COMPUTE 0u
#define SIMDEV_NUM_COMPUTE_ENGINES 4u
#define SIMDEV_ORDINAL_COPY 1u
#define SIMDEV_NUM_COPY_ENGINES 2u

/* Defaults of the SIMDEV_* configuration variables (see README.md). */
#define SIMDEV_DEFAULT_DEVICES 2u
#define SIMDEV_DEFAULT_TIMER_HZ 19200000ull     /* 19.2 MHz -> 52.083 ns per tick */
#define SIMDEV_DEFAULT_TIMESTAMP_BITS 36u
#define SIMDEV_DEFAULT_CLOCK_OFFSET_NS 1000000000ll
#define SIMDEV_DEFAULT_MEM_MB 8192ull
#define SIMDEV_DEFAULT_BASE_NS 2000ull
#define SIMDEV_DEFAULT_NS_PER_ITEM 1ull
#define SIMDEV_DEFAULT_COPY_GBPS 16ull           /* modelled copy/fill bandwidth, GB/s */
#define SIMDEV_DEFAULT_CORE_CLOCK_MHZ 1600u
#define SIMDEV_DEFAULT_ISA_LOOP_TRIPS 16u      /* modelled iterations of every loop (ISA model) */
#define SIMDEV_DEFAULT_EUSTALL_BUFFER_KB 8192u /* EU-stall report buffer: 512 KiB x 16 subslices */
#define SIMDEV_DEFAULT_OA_BUFFER_KB 16384u     /* ComputeBasic report buffer (16 MiB, as the OA buffer) */

/* EU-stall sampling (metric group "EuStallSampling", needs ZET_ENABLE_METRICS=1 before zeInit) */
#define SIMDEV_EUSTALL_GROUP "EuStallSampling"
#define SIMDEV_EUSTALL_REPORT_BYTES 64u
#define SIMDEV_EUSTALL_DOMAIN 100u
#define SIMDEV_EUSTALL_CLOCK_GRANULARITY 251u /* period = unit * 251 * timer tick ns, unit 1..7 */
#define SIMDEV_THREADS_PER_SUBSLICE 128u      /* 16 EUs x 8 threads */
#define SIMDEV_SUBSLICES 16u                  /* 2 slices x 8 subslices */
#define SIMDEV_HW_THREADS 2048u
#define SIMDEV_SIMD_WIDTH 8u
#define SIMDEV_EU_COUNT 256u                  /* numSlices 2 x numSubslicesPerSlice 8 x numEUsPerSubslice 16 */
/* memory peak: maxClockRate 1600 MHz x 2 (double data rate) x maxBusWidth 256 bit / 8 = 102400 MB/s */
#define SIMDEV_MEM_PEAK_MBPS 102400ull
#define SIMDEV_PCIE_PEAK_BPS 31500000000ull   /* zesDevicePciGetProperties maxBandwidth, PCIe 4 x16 */

/* ComputeBasic (time-based metric group, same activation/streamer calls as EU-stall) */
#define SIMDEV_COMPUTE_BASIC_GROUP "ComputeBasic"
#define SIMDEV_COMPUTE_BASIC_DOMAIN 1u
#define SIMDEV_OA_REPORT_BYTES 256u

#endif /* SIMDEV_H */
