/* A decode step's product by an int8 weight on an AVX-512 CPU: out = x * (values * scales)^T.
 *
 * x: [rows, k] float32 (rows 1..8, k a multiple of 16); values: [n, k] int8; scales: [n]
 * bfloat16 (one per output row); out: [rows, n] float32. Built and loaded by int8_gemv.py.
 *
 * Two output rows at a time for all the rows of x: their 16 int8 weights are widened to float32
 * once and multiplied into 2 * rows accumulators held in registers, so the weight is read once
 * whatever the rows. Each output is one float32 dot product in a fixed order (16 lanes, then
 * their sum, then the scale): a row's result does not depend on the rows beside it or on the
 * threads. The weight is prefetched PREFETCH bytes ahead: without it, rows of 640 values read
 * from memory at half the bandwidth. OpenMP splits the output rows between `threads` threads of
 * the process's pool (torch's own libgomp, already loaded). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <immintrin.h>

#ifndef __AVX512F__
#error "int8_gemv needs AVX-512"
#endif

#define PREFETCH 8192
#define MAX_ROWS 8
#define WIDEN(p) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p))))

int sa_int8_gemv_max_rows(void) { return MAX_ROWS; }

static inline float bf16(uint16_t value) {
    uint32_t bits = (uint32_t)value << 16;
    float out;
    memcpy(&out, &bits, sizeof out);
    return out;
}

static inline __attribute__((always_inline)) void pair(int rows, const float *x, int64_t k, const int8_t *w0,
                                                       const uint16_t *scales, float *out, int64_t n,
                                                       int64_t first) {
    __m512 acc[MAX_ROWS][2];
    const int8_t *w1 = w0 + k;
    for (int r = 0; r < rows; r++) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t c = 0; c < k; c += 16) {
        if ((c & 63) == 0) {
            _mm_prefetch((const char *)(w0 + c + PREFETCH), _MM_HINT_T0);
            _mm_prefetch((const char *)(w1 + c + PREFETCH), _MM_HINT_T0);
        }
        __m512 v0 = WIDEN(w0 + c), v1 = WIDEN(w1 + c);
        for (int r = 0; r < rows; r++) {
            __m512 xv = _mm512_loadu_ps(x + r * k + c);
            acc[r][0] = _mm512_fmadd_ps(v0, xv, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(v1, xv, acc[r][1]);
        }
    }
    float s0 = bf16(scales[first]), s1 = bf16(scales[first + 1]);
    for (int r = 0; r < rows; r++) {
        out[r * n + first] = _mm512_reduce_add_ps(acc[r][0]) * s0;
        out[r * n + first + 1] = _mm512_reduce_add_ps(acc[r][1]) * s1;
    }
}

/* The last output row of an odd n, in the same order as pair's. */
static void single(int64_t rows, const float *x, int64_t k, const int8_t *w, const uint16_t *scales, float *out,
                   int64_t n, int64_t j) {
    for (int64_t r = 0; r < rows; r++) {
        __m512 acc = _mm512_setzero_ps();
        for (int64_t c = 0; c < k; c += 16) acc = _mm512_fmadd_ps(WIDEN(w + j * k + c), _mm512_loadu_ps(x + r * k + c), acc);
        out[r * n + j] = _mm512_reduce_add_ps(acc) * bf16(scales[j]);
    }
}

/* Returns 0, or -1 (nothing written) where rows or k are out of range. */
int sa_int8_gemv(const float *x, int64_t rows, int64_t k, const int8_t *values, const uint16_t *scales,
                 float *out, int64_t n, int threads) {
    if (rows < 1 || rows > MAX_ROWS || k < 16 || k % 16 != 0 || n < 1) return -1;
    int64_t pairs = n / 2;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t p = 0; p < pairs; p++) {
        const int8_t *w0 = values + 2 * p * k;
        switch (rows) {  /* constant rows: the accumulators stay in registers */
        case 1: pair(1, x, k, w0, scales, out, n, 2 * p); break;
        case 2: pair(2, x, k, w0, scales, out, n, 2 * p); break;
        case 3: pair(3, x, k, w0, scales, out, n, 2 * p); break;
        case 4: pair(4, x, k, w0, scales, out, n, 2 * p); break;
        case 5: pair(5, x, k, w0, scales, out, n, 2 * p); break;
        case 6: pair(6, x, k, w0, scales, out, n, 2 * p); break;
        case 7: pair(7, x, k, w0, scales, out, n, 2 * p); break;
        default: pair(8, x, k, w0, scales, out, n, 2 * p); break;
        }
    }
    if (n % 2) single(rows, x, k, values, scales, out, n, n - 1);
    return 0;
}

#ifdef __AVX512VNNI__
/* One output row i of sa_int4_gemv for `rows` rows of quantized x. */
static inline __attribute__((always_inline)) void nibbles(int rows, int8_t (*xq)[8192], const float *xs,
                                                          __m512i (*zero8)[128], int64_t k, const uint8_t *row,
                                                          const float *scale, float *out, int64_t n, int64_t i) {
    const __m256i low = _mm256_set1_epi8(0x0F);
    __m512 acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t g = 0; g < k / 64; g++) {
        if ((g & 1) == 0) _mm_prefetch((const char *)(row + g * 32 + PREFETCH), _MM_HINT_T0);
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(row + g * 32));
        __m512i values = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(bytes, low)),
                                            _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low), 1);
        __m512 s = _mm512_set1_ps(scale[g]);
        for (int r = 0; r < rows; r++) {
            __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), values,
                                              _mm512_load_si512((const void *)(xq[r] + g * 64)));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dot, zero8[r][g])), s, acc[r]);
        }
    }
    for (int r = 0; r < rows; r++) out[r * n + i] = _mm512_reduce_add_ps(acc[r]) * xs[r];
}
#endif

/* The LM head's estimate: out = x * (4-bit weight)^T, for rows 1..8 of x ([rows, k] float32, k a
 * multiple of 64). packed: [n, k / 2] bytes; the 64 values of group g of row i are 32 bytes at
 * i * k / 2 + g * 32, value j in the low nibble of byte j and value 32 + j in its high nibble,
 * each the weight over its group's scale plus 8 (0..15). scales: [n, k / 64] float32.
 * x is quantized per row to int8 (its largest magnitude to 127), so each group's product is
 * exact integer arithmetic (VNNI's vpdpbusd: the 4-bit values unsigned, x signed), less 8 times
 * the group's sum of x, then scaled. Returns 0, or -1 (nothing written) for sizes out of range. */
int sa_int4_gemv(const float *x, int64_t rows, int64_t k, const uint8_t *packed, const float *scales,
                 float *out, int64_t n, int threads) {
    if (rows < 1 || rows > MAX_ROWS || k < 64 || k % 64 != 0 || k > 8192 || n < 1) return -1;
#ifndef __AVX512VNNI__
    return -1;
#else
    int64_t groups = k / 64;
    /* On the heap: a thread's stack may be small (musl gives 128 KiB). */
    int8_t (*xq)[8192] = aligned_alloc(64, sizeof(int8_t[MAX_ROWS][8192]));
    __m512i (*zero8)[128] = aligned_alloc(64, sizeof(__m512i[MAX_ROWS][128]));  /* 8 x each group's sum of x */
    float xs[MAX_ROWS];
    if (!xq || !zero8) {
        free(xq);
        free(zero8);
        return -1;
    }
    for (int64_t r = 0; r < rows; r++) {
        float most = 0.0f;
        for (int64_t c = 0; c < k; c++) {
            float a = x[r * k + c] < 0 ? -x[r * k + c] : x[r * k + c];
            most = a > most ? a : most;
        }
        float scale = most > 0 ? most / 127.0f : 1.0f;
        xs[r] = scale;
        for (int64_t c = 0; c < k; c++) {
            float v = x[r * k + c] / scale;
            xq[r][c] = (int8_t)(v < 0 ? -(int)(0.5f - v) : (int)(v + 0.5f));
        }
        for (int64_t g = 0; g < groups; g++)
            zero8[r][g] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8),
                                              _mm512_load_si512((const void *)(xq[r] + g * 64)));
    }
    int64_t stride = k / 2;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        switch (rows) {  /* constant rows: the accumulators stay in registers */
        case 1: nibbles(1, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        case 2: nibbles(2, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        case 3: nibbles(3, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        case 4: nibbles(4, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        case 5: nibbles(5, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        case 6: nibbles(6, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        case 7: nibbles(7, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        default: nibbles(8, xq, xs, zero8, k, packed + i * stride, scales + i * groups, out, n, i); break;
        }
    }
    free(xq);
    free(zero8);
    return 0;
#endif
}

/* The 4-bit groups of sa_int4_gemv from an int8 weight ([n, k] values, one bfloat16 scale per
 * row): each group of 64 values scaled by its largest magnitude to 7, rounded half away from
 * zero. packed: [n, k / 2] bytes, scales: [n, k / 64] float32. Returns 0, or -1 (nothing written). */
int sa_int4_pack(const int8_t *values, const uint16_t *row_scales, int64_t n, int64_t k, uint8_t *packed,
                 float *scales, int threads) {
    if (k < 64 || k % 64 != 0 || n < 1) return -1;
    int64_t groups = k / 64;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; i++) {
        float row_scale = bf16(row_scales[i]);
        for (int64_t g = 0; g < groups; g++) {
            const int8_t *v = values + i * k + g * 64;
            int most = 0;
            for (int j = 0; j < 64; j++) {
                int a = v[j] < 0 ? -v[j] : v[j];
                most = a > most ? a : most;
            }
            scales[i * groups + g] = row_scale * (float)most / 7.0f;
            uint8_t q[64];
            for (int j = 0; j < 64; j++) {
                int scaled = most ? (14 * v[j] + (v[j] < 0 ? -most : most)) / (2 * most) : 0;  /* round(7 v / most) */
                q[j] = (uint8_t)((scaled < -8 ? -8 : scaled > 7 ? 7 : scaled) + 8);
            }
            uint8_t *out = packed + i * (k / 2) + g * 32;
            for (int j = 0; j < 32; j++) out[j] = (uint8_t)(q[j] | (q[32 + j] << 4));
        }
    }
    return 0;
}
