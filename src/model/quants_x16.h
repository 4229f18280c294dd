/* quants_x16.h -- Q4_0 / Q4_1 / Q5_0 / Q8_0 weight matrices interleaved by
 * 16 rows, and their matrix-vector kernels: what decode's matrix products
 * read when the CPU has AVX-512 VNNI or AVX2.
 *
 * Why: in the file's row layout every weight block carries its own fp16
 * scale(s), so a vector kernel spends more instructions spreading scales
 * and unpacking one block than multiplying it (decode's Q4 products ran at
 * 38% of the read bandwidth on one core; the Q8_0 output head of
 * smollm2-135m, 29% of its weight bytes, took 19% of a decode step at 4k
 * in the row layout). Interleaved, one 512-bit lane holds one row: the 16
 * rows' scales of a block are one load and one conversion, and a code
 * register holds the same four code bytes of 16 rows, multiplied against
 * one broadcast activation word.
 *
 * Layout. A matrix of R rows (R a multiple of 16) and n columns (n a
 * multiple of 32, nb = n / 32 blocks) keeps its size, R * row_bytes: rows
 * 16g..16g+15 occupy the same 16 * row_bytes bytes as in the file, at
 * g * 16 * row_bytes, holding block b of the 16 rows at offset b * 16 * bb
 * (bb = 18 for Q4_0, 20 for Q4_1, 22 for Q5_0, 34 for Q8_0):
 *     fp16 d[16]                (row r's scale at 2r)
 *     fp16 m[16]                (Q4_1 only: row r's min)
 *     uint32 h[16]              (Q5_0 only: row r's fifth bits, the file's qh
 *                                with its bits moved: byte i's bit 2k holds
 *                                element 4k + i's, bit 2k + 1 element
 *                                16 + 4k + i's, k, i < 4)
 *     uint8 codes[NQ/4][16][4]  (codes[k][r][i] = the row's code byte 4k + i;
 *                                NQ = 16 for Q4_0 / Q4_1 / Q5_0, 32 for Q8_0)
 * so a code byte j of row r (Q4: low nibble element j, high 16 + j; Q8_0:
 * element j, signed; the file's order) sits at codes + (j / 4) * 64 + 4r +
 * j % 4. vq_x16_dequantize_row reads a row back (the tied embedding table).
 *
 * Arithmetic (every kernel here, the reference included, so they agree to
 * the bit): per row, blocks b = 0.. in order, with the activation block's
 * d_a and s_a (quants_impl.h vq_act32) and I = sum_j q_j a_j (exact; Q4,
 * Q5_0: q the unsigned codes (Q5_0: 0..31); Q8_0: the signed ones):
 *     Q4_1: f = (float)I * d_a;             acc = fmaf(d, f, acc);
 *           accm = fmaf(m, s_a, accm);      result acc + accm
 *     Q4_0: f = fmaf((float)I, d_a, -8 s_a); acc = fmaf(d, f, acc); result acc
 *     Q5_0: f = fmaf((float)I, d_a, -16 s_a); acc = fmaf(d, f, acc); result acc
 *     Q8_0: f = (float)I * d_a;             acc = fmaf(d, f, acc); result acc
 * (from 0). It differs from the row-layout kernels' rounding (the file's
 * arithmetic is the same in exact terms: d q a d_a + m a d_a summed). */
#ifndef VQ_MODEL_QUANTS_X16_H
#define VQ_MODEL_QUANTS_X16_H

#include <stddef.h>
#include <stdint.h>

#include "model/quants.h"

#define VQ_X16_ROWS 16

/* 1 when the interleaved kernels serve type t on this CPU (Q4_0, Q4_1,
 * Q5_0, Q8_0 with AVX-512 VNNI or AVX2; VQ_FORCE_ISA respected), else 0:
 * then matrices keep the file's layout. */
int vq_x16_available(vq_wtype t);

/* dst (rows * row_bytes bytes, not overlapping src) = the interleaved
 * layout of the rows * row_bytes bytes at src. rows must be a multiple of
 * 16, t Q4_0, Q4_1, Q5_0 or Q8_0 and row_bytes whole blocks (else nothing is
 * written and 0 returned; 1 on success). */
int vq_x16_repack(vq_wtype t, const void *src, size_t rows, size_t row_bytes, void *dst);

/* dst[0..n) = row r of the interleaved matrix at w (row_bytes, n columns),
 * the same floats as vq_dequantize of the file's row. Returns 1, or 0 (and
 * writes nothing) when t is not an interleaved type or row_bytes is not n
 * columns' bytes. */
int vq_x16_dequantize_row(vq_wtype t, const void *w, size_t row_bytes, size_t r, size_t n, float *dst);

/* out[r] = row r's dot with the prepared activation act (vq_act_prepare),
 * r < nrows (a multiple of 16), rows interleaved from w (w + g*16*row_bytes
 * holds rows 16g..); n columns. */
void vq_x16_rows(vq_wtype t, const void *w, size_t row_bytes, size_t nrows, const void *act, size_t n, float *out);

/* out[j*ostride + r] for r < nrows (a multiple of 16) and j < m vectors at
 * act + j*astride: every (row, vector) the bits of vq_x16_rows. */
void vq_x16_tile(vq_wtype t, const void *w, size_t row_bytes, size_t nrows, const void *act, size_t astride,
                 size_t m, size_t n, float *out, size_t ostride);

/* the reference: the 16 rows of one group (at w) against one vector */
void vq_x16_rows16_ref(vq_wtype t, const void *w, const void *act, size_t n, float out[16]);

/* the kernels' name for an interleaved type (vq_x16_kind) */
enum { VQ_X16_Q4_0, VQ_X16_Q4_1, VQ_X16_Q5_0, VQ_X16_Q8_0 };

/* t's VQ_X16_* kind, or -1 when t has no interleaved layout */
int vq_x16_kind(vq_wtype t);

/* AVX-512 VNNI (quants_x16_avx512x.c; call only where vq_x16_available):
 * the 16 rows of one group against m (1..4) vectors at act + j*astride,
 * out[j*ostride + r]; kind: vq_x16_kind of the matrix's type */
void vq_x16_tile16_avx512x(int kind, const void *w, const void *act, size_t astride, int m, size_t n, float *out,
                           size_t ostride);
/* AVX2 (quants_x16_avx2.c; call only where the CPU has AVX2, FMA and F16C):
 * the same contract */
void vq_x16_tile16_avx2(int kind, const void *w, const void *act, size_t astride, int m, size_t n, float *out,
                        size_t ostride);

/* The body of a vq_x16_tile16_* function (its arguments in scope):
 * TILE(KIND, M, w, act, astride, n, out, ostride) with KIND (kind: a
 * VQ_X16_* value) and M (m: 1..4) constants, so that each instantiation's
 * loops unroll */
#define VQ_X16_TILE16_CASE(TILE, K, M) \
    case 4 * (M) + (K): TILE(K, M, w, act, astride, n, out, ostride); break
#define VQ_X16_TILE16_CASES(TILE, M)                                                                  \
    VQ_X16_TILE16_CASE(TILE, 0, M); VQ_X16_TILE16_CASE(TILE, 1, M); VQ_X16_TILE16_CASE(TILE, 2, M); \
    VQ_X16_TILE16_CASE(TILE, 3, M)
#define VQ_X16_TILE16_BODY(TILE)                                                                    \
    do {                                                                                            \
        switch (m * 4 + kind) {                                                                     \
            VQ_X16_TILE16_CASES(TILE, 1); VQ_X16_TILE16_CASES(TILE, 2);                             \
            VQ_X16_TILE16_CASES(TILE, 3); VQ_X16_TILE16_CASES(TILE, 4);                             \
        default: break;                                                                             \
        }                                                                                           \
    } while (0)

#endif
