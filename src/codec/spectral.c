/* spectral.c -- calibrated eigenbasis with separate signal / noise scalar
 * codebooks (METHODS.md "spectral").
 *
 * Parameters: bits in [1, 8] (default 2) for the noise coordinates;
 * signal_bits in [bits, 8] (default bits) for the signal coordinates;
 * signal in [1, D-1] (default D/8): when signal_bits > bits, the number of
 * leading eigen-coordinates that get signal_bits-wide slots (the layout must
 * be fixed before calibration); qbits 0 or 8 (default 0; values only, bits
 * 1, 2 or 4 with S = B): the split layout's sums with int8 levels and int8
 * attention weights per 32 tokens (kernels/lut_qaxpy.h; sp_accumulate_codes),
 * the same bytes and state. Canonical spec "spectral:bits=B,
 * signal_bits=S" (plus ",signal=N" when S > B, ",qbits=8" when set).
 *
 * Calibration (n sample vectors): mean mu, covariance C = (1/n) sum (x-mu)
 * (x-mu)^T in double, eigen-decomposition C = U diag(l) U^T (cyclic Jacobi,
 * eigen.c), l descending. d_eff = (sum l)^2 / sum l^2; the signal part is the
 * first d_sig = clamp(ceil(d_eff), 1, D-1) coordinates (and at most `signal`
 * when signal_bits > bits). Per coordinate std s_i = sqrt(max(l_i,
 * 1e-6*l_1)) (a floor so that a rank-deficient calibration set cannot blow
 * up a coordinate). We centre (keys have large channel means, which would
 * otherwise eat the quantizer's range) and whiten (every coordinate then has
 * unit variance, so one codebook fits a whole group).
 *
 * Encode: z_i = (U^T (x - mu))_i / s_i; r = sqrt(mean_i z_i^2) (the
 * per-vector 32-bit scale); u_i = z_i / r; code_i = nearest level of the
 * signal codebook (2^signal_bits levels, i < d_sig) or the noise codebook
 * (2^bits levels). The codebooks are Lloyd-Max quantizers fitted to the
 * calibration samples' u values of their group (scalar_codebook.c).
 * Decode: x^ = mu + U (s * r * level(code)).
 *
 * Packed layout (block_tokens = 1): fp32 r (little-endian) at offset 0,
 * then the codes as an LSB-first bit stream, coordinate i (eigen order)
 * w_i bits wide, w_i = signal_bits for i < S_slots, bits otherwise, where
 * S_slots = signal if signal_bits > bits, else 0. Coordinates in
 * [d_sig, S_slots) use the noise codebook inside a wider slot (wasted bits
 * when the calibrated d_eff is below `signal`).
 *   bytes/token = 4 + ceil((S_slots*signal_bits + (D - S_slots)*bits)/8),
 *   = (D*bits + 32)/8 with the default signal_bits = bits.
 *
 * Query: q' = (U^T q) * s (D floats), <q, mu> (1 float), then zeros (SP_PAD - 1):
 *   score = <q, mu> + r * sum_i q'_i level(code_i).
 * Accumulate (accum_size D+16, the row padded to a multiple of 16 floats
 * for the SIMD kernels): acc_i += w r level(code_i), acc_D += w;
 *   finish: out = U (s * acc) + acc_D mu.
 * Attention takes the tiled path (codec/tiled.h) with spectral_values;
 * spectral_score / spectral_accumulate are the scalar references.
 *
 * Split layout (codes of one width up to 4 bits, D a multiple of 16, and
 * a kernel table with SIMD codes_dot and lut_axpy): the two codebooks
 * get two halves of every row, so that each half is one code-level kernel
 * over the codes. Queries, tiled rows and accumulators are 2D + SP_PAD
 * floats: [0, D) every code read with the noise levels (r level_noise in
 * a row), [D] the mean's term, zeros, then from D + SP_PAD the first
 * nsig = d_sig rounded up to 16 codes read with the signal levels, zeros
 * to the end. The query holds q'_i at i in the half of i's own codebook
 * (i >= d_sig: the first, i < d_sig: the second) and 0 at the other
 * place, so a score is the dot of the two halves: <q, mu> + r * (codes_dot
 * over the codes from s0 = d_sig rounded down to 16 to D with the noise
 * levels + codes_dot over the first nsig with the signal levels: the noise
 * half's entries below s0 are a query's zeros and accumulator entries
 * nobody reads, so their codes are skipped); accumulation is two lut_axpy
 * passes of the same extents (the noise half's entries below s0 stay 0),
 * and finish takes coordinate i from the half of its own codebook. Other
 * parameters keep rows of D + SP_PAD floats as above.
 * Keys of the split layout at 1 or 2 bits, where the kernel table's
 * ftab_score over level tables beats codes_dot (kernels.h ftab_levels),
 * are scored from level tables instead (kernels/
 * float_tables.h: coordinate i with the signal levels below d_sig, the
 * noise levels from it), which the prepared query holds after its row:
 * score = <q, mu> + r * A, one pass over the codes.
 * Shared state: U (D*D), mu, s (D each) and both codebooks, fp32. State
 * payload: docs/FORMATS.md, "spectral". The encoder projects through a
 * column-by-column copy of U (basis_t, made wherever U changes; a working
 * copy like vecinfer's cbt, not state) by the kernel table's
 * ordered_matvec: each sum in index order, so the codes do not depend on
 * the CPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "codec/vecops.h"
#include "codec/eigen.h"
#include "codec/scalar_codebook.h"
#include "core/io.h"
#include "kernels/kernels.h"

#define VQ_SPECTRAL_ITERS 100
#define SP_PAD 16 /* query and accumulator rows: D + SP_PAD floats ([D]: the mean's term, then zeros) */
#define SP_SCORE_TOK 64   /* tokens per codes_dot call (the split layout's scores) */
#define SP_SCORE_QRY 16   /* queries per codes_dot call */
#define SP_ACC_TOK 256    /* tokens per lut_axpy call (its accumulation) */
#define VQ_SPECTRAL_MAX_VALUES 262144 /* samples per codebook fit */

typedef struct {
    int bits, sbits, slots; /* slots = S_slots (0 when sbits == bits) */
    int signal_param;
    int split; /* the split layout (rows of 2D + SP_PAD floats; see the file comment) */
    int ftab;  /* split, 1 or 2 bits: keys scored from the query's level tables (sp_score_tables) */
    int d_sig;
    float d_eff;
    float *basis; /* D*D, row j = eigenvector j */
    float *basis_t; /* the basis column by column (kernels/matvec.h; a working copy, not state) */
    float *mean, *std; /* D each */
    float *lv_sig, *lv_noise; /* 2^sbits, 2^bits */
    float *tmp;   /* D scratch */
    int w8;       /* values, qbits=8: int8 weights and levels (kernels/lut_qaxpy.h) */
    int8_t lev8_sig[16], lev8_noise[16]; /* w8: the levels / their step, rounded (sp_levels8) */
    float step_sig, step_noise;          /* w8: max |level| / 127 per codebook */
} spectral_state;

static inline int sp_width(const spectral_state *st, int i) { return i < st->slots ? st->sbits : st->bits; }
/* floats in a query, tiled row or accumulator */
static inline size_t sp_row(const spectral_state *st, int D) { return (st->split ? 2 * (size_t)D : (size_t)D) + SP_PAD; }
/* where coordinate i sits in a row (the split layout: signal coordinates in the second half) */
static inline size_t sp_at(const spectral_state *st, int D, int i)
{
    return st->split && i < st->d_sig ? (size_t)D + SP_PAD + (size_t)i : (size_t)i;
}
/* the signal half's extent: d_sig rounded up to 16 (<= D) */
static inline size_t sp_nsig(const spectral_state *st) { return ((size_t)st->d_sig + 15) / 16 * 16; }
/* where the noise half's passes start: d_sig rounded down to 16 (< D, as
 * d_sig < D). Below it every coordinate is a signal one, whose noise-half
 * query entry is 0 and whose noise-half accumulator entry finish never
 * reads, so the passes skip those codes (whole groups of 16: the byte
 * offset s0 * bits / 8 is whole for bits <= 4) */
static inline size_t sp_noise0(const spectral_state *st) { return (size_t)st->d_sig / 16 * 16; }

/* w8: the shortest extent >= need, a multiple of 16 up to D, whose code
 * bytes per row lut_qaxpy.h's VNNI variant takes (8 or a multiple of 16;
 * other extents take its reference: the same sums, slower); D when none
 * is. The passes' codes then start on a byte (bits <= 4). */
static size_t sp_w8_extent(size_t need, int bits, size_t D)
{
    for (size_t e = 16; e <= D; e += 16) {
        const size_t cb = e * (size_t)bits / 8;
        if (e >= need && (cb == 8 || cb % 16 == 0))
            return e;
    }
    return D;
}

/* w8: both codebooks' int8 levels, wherever their float levels change */
static void sp_levels8(spectral_state *st)
{
    if (!st->w8)
        return;
    vq_lut_qaxpy_levels(st->lv_sig, 1 << st->sbits, st->lev8_sig, &st->step_sig);
    vq_lut_qaxpy_levels(st->lv_noise, 1 << st->bits, st->lev8_noise, &st->step_noise);
}
static inline size_t sp_pos(const spectral_state *st, int i)
{
    return i < st->slots ? (size_t)i * st->sbits
                         : (size_t)st->slots * st->sbits + (size_t)(i - st->slots) * st->bits;
}


static void spectral_destroy(vq_codec *c)
{
    spectral_state *st = c->impl;
    if (st) {
        free(st->basis);
        free(st->basis_t);
        free(st->mean);
        free(st->std);
        free(st->lv_sig);
        free(st->lv_noise);
        free(st->tmp);
    }
    free(st);
    c->impl = NULL;
}

/* a handle with its own copy of the state (clone op, codec.h) */
static vq_status spectral_clone(const vq_codec *src, vq_codec *dst)
{
    const spectral_state *s = src->impl;
    const size_t D = (size_t)src->head_dim;
    spectral_state *st = malloc(sizeof *st);
    dst->impl = st;
    if (!st)
        return vq_fail(dst->err, VQ_ERR_NOMEM, "spectral: out of memory");
    *st = *s;
    st->basis = vq_vec_dup(s->basis, D * D);
    st->basis_t = vq_vec_dup(s->basis_t, D * D);
    st->mean = vq_vec_dup(s->mean, D);
    st->std = vq_vec_dup(s->std, D);
    st->lv_sig = vq_vec_dup(s->lv_sig, (size_t)1 << s->sbits);
    st->lv_noise = vq_vec_dup(s->lv_noise, (size_t)1 << s->bits);
    st->tmp = vq_vec_dup(s->tmp, D);
    if (!st->basis || !st->basis_t || !st->mean || !st->std || !st->lv_sig || !st->lv_noise || !st->tmp)
        return vq_fail(dst->err, VQ_ERR_NOMEM, "spectral: out of memory");
    return VQ_OK;
}

static vq_status spectral_init(vq_codec *c, vq_spec *spec)
{
    const int D = c->head_dim;
    long bits, sbits, sig, qbits;
    VQ_TRY(vq_spec_int(spec, "bits", 2, 1, 8, &bits, c->err));
    VQ_TRY(vq_spec_int(spec, "signal_bits", bits, bits, 8, &sbits, c->err));
    VQ_TRY(vq_spec_int(spec, "signal", D / 8, 1, D - 1, &sig, c->err));
    VQ_TRY(vq_spec_int(spec, "qbits", 0, 0, 8, &qbits, c->err));
    if (qbits != 0 && qbits != 8)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "spectral: qbits must be 0 (float sums) or 8, got %ld", qbits);
    if (qbits && c->role == VQ_ROLE_KEY)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "spectral: qbits=8 (int8 attention weights and levels) is for values; keys take float queries");
    if (qbits && (sbits != bits || (bits != 1 && bits != 2 && bits != 4) || D % 16 != 0))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "spectral: qbits=8 needs bits 1, 2 or 4, signal_bits equal to bits and head_dim a multiple of 16");
    spectral_state *st = calloc(1, sizeof *st);
    if (!st)
        return vq_fail(c->err, VQ_ERR_NOMEM, "spectral: out of memory");
    c->impl = st;
    st->bits = (int)bits;
    st->sbits = (int)sbits;
    st->signal_param = (int)sig;
    st->w8 = qbits == 8;
    st->slots = sbits > bits ? (int)sig : 0;
    st->basis = calloc((size_t)D * D, sizeof(float));
    st->basis_t = calloc((size_t)D * D, sizeof(float));
    st->mean = calloc((size_t)D, sizeof(float));
    st->std = calloc((size_t)D, sizeof(float));
    st->lv_sig = calloc((size_t)1 << sbits, sizeof(float));
    st->lv_noise = calloc((size_t)1 << bits, sizeof(float));
    st->tmp = calloc((size_t)D, sizeof(float));
    if (!st->basis || !st->basis_t || !st->mean || !st->std || !st->lv_sig || !st->lv_noise || !st->tmp)
        return vq_fail(c->err, VQ_ERR_NOMEM, "spectral: out of memory");
    size_t code_bits = (size_t)st->slots * st->sbits + (size_t)(D - st->slots) * st->bits;
    c->block_tokens = 1;
    c->block_bytes = 4 + (code_bits + 7) / 8;
    c->shared_bytes = sizeof(float) * ((size_t)D * D + 2 * (size_t)D + ((size_t)1 << sbits) + ((size_t)1 << bits));
    const vq_kernels *k = vq_kernels_get();
    /* (w8 values: always the split layout and its int8 sums, on every
     * instruction set) */
    st->split = st->slots == 0 && bits <= 4 && D % 16 == 0 &&
                (st->w8 || (k->codes_dot != vq_codes_dot_ref && k->lut_axpy != vq_lut_axpy_ref));
    c->query_bytes = sizeof(float) * sp_row(st, D);
    /* split keys at 1 or 2 bits: the query's level tables (kernels/float_tables.h) after its row, where
     * the kernel table's ftab_score over them beats codes_dot (kernels.h ftab_levels) */
    st->ftab = st->split && c->role == VQ_ROLE_KEY && bits <= 2 && D % 32 == 0 && k->ftab_levels;
    if (st->ftab)
        c->query_bytes += sizeof(float) * vq_float_tables_floats((size_t)D * (size_t)bits);
    c->accum_size = sp_row(st, D);
    c->score_own = c->accum_own = st->split; /* the code-level kernels, not the tile */
    if (st->w8)
        c->value_head = vq_block_lead(c->block_bytes);
    if (st->slots)
        snprintf(c->canon, sizeof c->canon, "spectral:bits=%d,signal_bits=%d,signal=%d", st->bits, st->sbits,
                 st->slots);
    else
        snprintf(c->canon, sizeof c->canon, "spectral:bits=%d,signal_bits=%d%s", st->bits, st->sbits,
                 st->w8 ? ",qbits=8" : "");
    return VQ_OK;
}

/* z = (U^T (x - mu)) / s ; returns r = rms(z). The rows' sums by the
 * kernel table's ordered_matvec over basis_t (each in index order: the
 * same codes on every CPU); D <= 256 (vq_codec_create) */
static float sp_project(const spectral_state *st, int D, const float *x, float *z)
{
    float xc[256];
    for (int i = 0; i < D; i++)
        xc[i] = x[i] - st->mean[i];
    vq_kernels_get()->ordered_matvec(st->basis_t, (size_t)D, (size_t)D, xc, z);
    double ss = 0;
    for (int j = 0; j < D; j++) {
        z[j] = z[j] / st->std[j];
        ss += (double)z[j] * z[j];
    }
    return (float)sqrt(ss / D);
}

static inline const float *sp_levels(const spectral_state *st, int i, int *k)
{
    if (i < st->d_sig) {
        *k = 1 << st->sbits;
        return st->lv_sig;
    }
    *k = 1 << st->bits;
    return st->lv_noise;
}

static void spectral_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    const size_t bb = c->block_bytes;
    memset(dst, 0, n * bb);
    for (size_t t = 0; t < n; t++) {
        uint8_t *out = dst + t * bb;
        float r = sp_project(st, D, x + t * (size_t)D, st->tmp);
        if (!isfinite(r))
            r = 0.0f; /* garbage in: store a zero vector (the mean) */
        vq_put_f32(out, r);
        float inv = r > 0.0f ? 1.0f / r : 0.0f;
        for (int i = 0; i < D; i++) {
            int k;
            const float *lv = sp_levels(st, i, &k);
            int code = vq_scalar_codebook_nearest(lv, k, st->tmp[i] * inv);
            vq_bits_put_at(out + 4, sp_pos(st, i), sp_width(st, i), (unsigned)code);
        }
    }
}

/* y_i = r * level(code_i) for one token */
static void sp_unpack(const spectral_state *st, int D, const uint8_t *in, float *y)
{
    float r = vq_get_f32(in);
    for (int i = 0; i < D; i++) {
        int k;
        const float *lv = sp_levels(st, i, &k);
        unsigned code = vq_bits_get_at(in + 4, sp_pos(st, i), sp_width(st, i));
        y[i] = r * lv[code < (unsigned)k ? code : (unsigned)k - 1];
    }
}

/* out = U (s * y) + w * mu: the rows of U weighted by the kernel table's
 * dense_axpy (its SIMD sums) */
static void sp_unproject(const spectral_state *st, int D, const float *y, float w, float *out)
{
    float a[256];
    for (int i = 0; i < D; i++) {
        out[i] = w * st->mean[i];
        a[i] = y[i] * st->std[i];
    }
    vq_kernels_get()->dense_axpy(a, (size_t)D, 1, st->basis, VQ_ELEM_F32, (size_t)D, (size_t)D, out, (size_t)D);
}

static void spectral_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    for (size_t t = 0; t < n; t++) {
        sp_unpack(st, D, src + t * c->block_bytes, st->tmp);
        sp_unproject(st, D, st->tmp, 1.0f, x + t * (size_t)D);
    }
}

static void spectral_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    float *f = (float *)(void *)qbuf;
    float qm = 0.0f;
    for (int i = 0; i < D; i++)
        qm += q[i] * st->mean[i];
    memset(f, 0, sizeof(float) * sp_row(st, D));
    float y[256]; /* U q, by the kernel table's dense_dot (row j = eigenvector j) */
    vq_kernels_get()->dense_dot(q, (size_t)D, 1, st->basis, VQ_ELEM_F32, (size_t)D, (size_t)D, y, (size_t)D);
    for (int j = 0; j < D; j++) {
        y[j] = y[j] * st->std[j];
        f[sp_at(st, D, j)] = y[j];
    }
    f[D] = qm;
    if (st->ftab) /* coordinate j read with the signal levels below d_sig */
        vq_kernels_get()->level_tables(y, (size_t)D, st->bits, st->lv_noise, st->lv_sig, (size_t)st->d_sig, f + sp_row(st, D));
}

/* the fp32 r of nt tokens (at blk + i*bb) into r */
static void sp_radii(const uint8_t *blk, size_t bb, size_t nt, float *r)
{
    for (size_t i = 0; i < nt; i++)
        r[i] = vq_get_f32(blk + i * bb);
}

/* ftab: <q, mu> + r_i A_i, A the level tables' sum over the codes
 * (kernels.h ftab_score with the tokens' fp32 r as factors) */
static void sp_score_tables(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    const spectral_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, bb = c->block_bytes, qs = c->query_bytes / sizeof(float), off = 4;
    const float *q = (const float *)(const void *)qbuf, one = 1.0f;
    const vq_kernels *k = vq_kernels_get();
    float r[SP_SCORE_TOK];
    for (size_t i0 = 0; i0 < n; i0 += SP_SCORE_TOK) {
        const size_t nt = n - i0 < SP_SCORE_TOK ? n - i0 : SP_SCORE_TOK;
        const uint8_t *blk = codes + i0 * bb;
        sp_radii(blk, bb, nt, r);
        k->ftab_score(blk, bb, nt, D * (size_t)st->bits, &off, &one, 1, r, 0, q + sp_row(st, c->head_dim), qs, n_q,
                      scores + i0, n);
        for (int j = 0; j < n_q; j++)
            for (size_t i = 0; i < nt; i++)
                scores[(size_t)j * n + i0 + i] = q[(size_t)j * qs + D] + scores[(size_t)j * n + i0 + i];
    }
}

/* the split layout's scores: <q, mu> + r_i * (the noise levels' sum over
 * the codes from sp_noise0 + the signal levels' sum over the first sp_nsig), the level
 * sums by kernels.h codes_dot (each query half is 0 where the other
 * codebook applies) */
static void sp_score_codes(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    const spectral_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, bb = c->block_bytes, qs = c->query_bytes / sizeof(float);
    const float *q = (const float *)(const void *)qbuf;
    const vq_kernels *k = vq_kernels_get();
    const size_t s0 = sp_noise0(st);
    float r[SP_SCORE_TOK], s2[SP_SCORE_QRY * SP_SCORE_TOK];
    for (size_t i0 = 0; i0 < n; i0 += SP_SCORE_TOK) {
        const size_t nt = n - i0 < SP_SCORE_TOK ? n - i0 : SP_SCORE_TOK;
        const uint8_t *blk = codes + i0 * bb;
        sp_radii(blk, bb, nt, r);
        for (int j0 = 0; j0 < n_q; j0 += SP_SCORE_QRY) {
            const int nj = n_q - j0 < SP_SCORE_QRY ? n_q - j0 : SP_SCORE_QRY;
            const float *qj = q + (size_t)j0 * qs;
            float *out = scores + (size_t)j0 * n + i0;
            k->codes_dot(blk + 4 + s0 * (size_t)st->bits / 8, bb, st->bits, nt, D - s0, st->lv_noise, qj + s0, qs, nj,
                         out, n);
            k->codes_dot(blk + 4, bb, st->bits, nt, sp_nsig(st), st->lv_sig, qj + D + SP_PAD, qs, nj, s2,
                         SP_SCORE_TOK);
            for (int j = 0; j < nj; j++)
                for (size_t i = 0; i < nt; i++)
                    out[(size_t)j * n + i] =
                        qj[(size_t)j * qs + D] + r[i] * (out[(size_t)j * n + i] + s2[(size_t)j * SP_SCORE_TOK + i]);
        }
    }
}

/* the split layout's accumulation: two kernels.h lut_axpy passes (the
 * noise levels from sp_noise0, the signal levels below sp_nsig), then the
 * weights' sums at [D] */
static void sp_accumulate_codes(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    const spectral_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, bb = c->block_bytes, E = c->accum_size, s0 = sp_noise0(st);
    const size_t offs[1] = { 4 }, noffs[1] = { 4 + s0 * (size_t)st->bits / 8 };
    const vq_kernels *k = vq_kernels_get();
    float r[SP_ACC_TOK];
    /* w8: the noise pass over the last qn codes, the signal pass over the
     * first qs (sp_w8_extent) */
    const size_t qn = sp_w8_extent(D - (size_t)st->d_sig, st->bits, D), q0 = D - qn;
    const size_t qs = sp_w8_extent((size_t)st->d_sig, st->bits, D);
    for (size_t i0 = 0; i0 < n; i0 += SP_ACC_TOK) {
        const size_t nt = n - i0 < SP_ACC_TOK ? n - i0 : SP_ACC_TOK;
        const uint8_t *blk = codes + i0 * bb;
        sp_radii(blk, bb, nt, r);
        if (st->w8) {
            k->lut_qaxpy(blk + 4 + q0 * (size_t)st->bits / 8, bb, nt, qn, st->bits, st->lev8_noise, st->step_noise, r,
                         NULL, 0, w + i0, n, n_q, acc + q0, E);
            k->lut_qaxpy(blk + 4, bb, nt, qs, st->bits, st->lev8_sig, st->step_sig, r, NULL, 0, w + i0, n, n_q,
                         acc + D + SP_PAD, E);
            continue;
        }
        k->lut_axpy(blk, bb, nt, D - s0, noffs, st->bits, st->lv_noise, 1, r, 0, w + i0, n, n_q, acc + s0, E);
        k->lut_axpy(blk, bb, nt, sp_nsig(st), offs, st->bits, st->lv_sig, 1, r, 0, w + i0, n, n_q, acc + D + SP_PAD,
                    E);
    }
    for (int j = 0; j < n_q; j++)
        for (size_t t = 0; t < n; t++)
            acc[(size_t)j * E + D] += w[(size_t)j * n + t];
}

static void spectral_score(vq_codec *c, const uint8_t *qbuf, int n_q,
                           const uint8_t *codes, size_t n, float *scores)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    if (st->ftab) {
        sp_score_tables(c, qbuf, n_q, codes, n, scores);
        return;
    }
    if (st->split) {
        sp_score_codes(c, qbuf, n_q, codes, n, scores);
        return;
    }
    const float *qall = (const float *)(const void *)qbuf;
    for (size_t t = 0; t < n; t++) {
        sp_unpack(st, D, codes + t * c->block_bytes, st->tmp); /* r * level */
        for (int j = 0; j < n_q; j++) {
            const float *q = qall + (size_t)j * sp_row(st, D);
            float s = 0.0f;
            for (int i = 0; i < D; i++)
                s += q[i] * st->tmp[i];
            scores[(size_t)j * n + t] = q[D] + s;
        }
    }
}

static void spectral_accumulate(vq_codec *c, const float *w, int n_q,
                                const uint8_t *codes, size_t n, float *acc)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    if (st->split) {
        sp_accumulate_codes(c, w, n_q, codes, n, acc);
        return;
    }
    for (size_t t = 0; t < n; t++) {
        sp_unpack(st, D, codes + t * c->block_bytes, st->tmp);
        for (int j = 0; j < n_q; j++) {
            float wt = w[(size_t)j * n + t];
            float *a = acc + (size_t)j * sp_row(st, D);
            for (int i = 0; i < D; i++)
                a[i] += wt * st->tmp[i];
            a[D] += wt;
        }
    }
}

/* the tiled path's vectors (codec.h values): [r level(code_i) for i < D,
 * 1, 0...] per token (accum_size D+16), whose dot with the query [q',
 * <q, mu>, 0...] is
 * the score and whose weighted sum is the accumulator (the split layout:
 * its two halves, see the file comment). Codes of one width up to 4 bits
 * (no wide signal slots) by kernels.h lut_row: the noise levels over all
 * D, then the signal levels over the first d_sig (rounded up to 16, the
 * extra values dropped); else sp_unpack */
static void spectral_values(vq_codec *c, const uint8_t *codes, size_t n, float *out)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    const size_t row = sp_row(st, D);
    const int fast = st->slots == 0 && st->bits <= 4 && D % 16 == 0;
    const vq_kernels *k = vq_kernels_get();
    float sig[256 + 16];
    const size_t nsig = sp_nsig(st);
    for (size_t t = 0; t < n; t++) {
        const uint8_t *in = codes + t * c->block_bytes;
        float *o = out + t * row;
        memset(o + D, 0, sizeof(float) * (row - (size_t)D));
        o[D] = 1.0f;
        if (fast) { /* (split implies fast) the signal levels into their half, or over the first d_sig */
            const float r = vq_get_f32(in);
            k->lut_row(in + 4, st->bits, (size_t)D, st->lv_noise, r, 0, o);
            k->lut_row(in + 4, st->bits, nsig, st->lv_sig, r, 0, st->split ? o + D + SP_PAD : sig);
            if (!st->split)
                memcpy(o, sig, sizeof(float) * (size_t)st->d_sig);
        } else {
            sp_unpack(st, D, in, o);
        }
    }
}

static void spectral_finish(vq_codec *c, const float *acc, float *out)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    const float wsum = acc[D];
    if (st->split) { /* the coordinates from their halves */
        for (int i = 0; i < D; i++)
            st->tmp[i] = acc[sp_at(st, D, i)];
        acc = st->tmp;
    }
    sp_unproject(st, D, acc, wsum, out);
}

/* ---- calibration -------------------------------------------------------- */

/* gather u values of coordinates [i0, i1) of the projected samples z (n x D,
 * already divided by their r) into out, at most cap values, even stride */
static size_t sp_gather(const float *z, size_t n, int D, int i0, int i1, float *out, size_t cap)
{
    size_t total = n * (size_t)(i1 - i0), m = total < cap ? total : cap;
    for (size_t k = 0; k < m; k++) {
        size_t idx = (size_t)((double)k * (double)total / (double)m);
        size_t t = idx / (size_t)(i1 - i0), i = (size_t)i0 + idx % (size_t)(i1 - i0);
        out[k] = z[t * (size_t)D + i];
    }
    return m;
}

static vq_status spectral_calibrate(vq_codec *c, const float *x, size_t n)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    if (n < 2)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "spectral: calibration needs at least 2 samples, got %zu", n);
    for (size_t i = 0; i < n * (size_t)D; i++)
        if (!isfinite(x[i]))
            return vq_fail(c->err, VQ_ERR_INVALID_ARG, "spectral: calibration sample %zu has a non-finite value",
                           i / (size_t)D);
    double *mu = calloc((size_t)D, sizeof(double));
    double *cov = calloc((size_t)D * D, sizeof(double));
    double *w = malloc((size_t)D * sizeof(double));
    double *v = malloc((size_t)D * D * sizeof(double));
    double *dx = malloc((size_t)D * sizeof(double));
    float *z = malloc(n * (size_t)D * sizeof(float));
    float *vals = malloc((size_t)VQ_SPECTRAL_MAX_VALUES * sizeof(float));
    spectral_state nw = *st; /* new state, committed on success */
    nw.basis = malloc((size_t)D * D * sizeof(float));
    nw.basis_t = malloc((size_t)D * D * sizeof(float));
    nw.mean = malloc((size_t)D * sizeof(float));
    nw.std = malloc((size_t)D * sizeof(float));
    nw.lv_sig = malloc(((size_t)1 << st->sbits) * sizeof(float));
    nw.lv_noise = malloc(((size_t)1 << st->bits) * sizeof(float));
    vq_status s = VQ_OK;
    if (!mu || !cov || !w || !v || !dx || !z || !vals || !nw.basis || !nw.basis_t || !nw.mean || !nw.std || !nw.lv_sig ||
        !nw.lv_noise) {
        s = vq_fail(c->err, VQ_ERR_NOMEM, "spectral: out of memory for %zu calibration samples", n);
        goto done;
    }
    for (size_t t = 0; t < n; t++)
        for (int i = 0; i < D; i++)
            mu[i] += x[t * (size_t)D + i];
    for (int i = 0; i < D; i++)
        mu[i] /= (double)n;
    for (size_t t = 0; t < n; t++) {
        for (int i = 0; i < D; i++)
            dx[i] = x[t * (size_t)D + i] - mu[i];
        for (int i = 0; i < D; i++)
            for (int j = i; j < D; j++)
                cov[(size_t)i * D + j] += dx[i] * dx[j];
    }
    for (int i = 0; i < D; i++)
        for (int j = i; j < D; j++)
            cov[(size_t)j * D + i] = cov[(size_t)i * D + j] /= (double)n;
    if ((s = vq_eigen_sym(cov, D, w, v, c->err)) != VQ_OK)
        goto done;
    double sum = 0, sum2 = 0;
    for (int j = 0; j < D; j++) {
        double l = w[j] > 0 ? w[j] : 0;
        sum += l;
        sum2 += l * l;
    }
    if (!(sum > 0)) {
        s = vq_fail(c->err, VQ_ERR_INVALID_ARG, "spectral: calibration samples have zero variance");
        goto done;
    }
    double deff = sum * sum / sum2;
    int dsig = (int)ceil(deff - 1e-9);
    dsig = dsig < 1 ? 1 : dsig > D - 1 ? D - 1 : dsig;
    if (st->slots && dsig > st->slots)
        dsig = st->slots;
    nw.d_sig = dsig;
    nw.d_eff = (float)deff;
    double floor_l = 1e-6 * (w[0] > 0 ? w[0] : 0) + 1e-30;
    for (int i = 0; i < D; i++) {
        nw.mean[i] = (float)mu[i];
        nw.std[i] = (float)sqrt(w[i] > floor_l ? w[i] : floor_l);
        for (int j = 0; j < D; j++)
            nw.basis[(size_t)i * D + j] = (float)v[(size_t)j * D + i]; /* row i = eigenvector i */
    }
    vq_transpose(nw.basis, (size_t)D, (size_t)D, nw.basis_t);
    for (size_t t = 0; t < n; t++) {
        float *zt = z + t * (size_t)D;
        float r = sp_project(&nw, D, x + t * (size_t)D, zt);
        float inv = r > 0.0f ? 1.0f / r : 0.0f;
        for (int i = 0; i < D; i++)
            zt[i] *= inv;
    }
    size_t m = sp_gather(z, n, D, 0, dsig, vals, VQ_SPECTRAL_MAX_VALUES);
    if ((s = vq_scalar_codebook_fit(vals, m, 1 << st->sbits, VQ_SPECTRAL_ITERS, nw.lv_sig, c->err)) != VQ_OK)
        goto done;
    m = sp_gather(z, n, D, dsig, D, vals, VQ_SPECTRAL_MAX_VALUES);
    if ((s = vq_scalar_codebook_fit(vals, m, 1 << st->bits, VQ_SPECTRAL_ITERS, nw.lv_noise, c->err)) != VQ_OK)
        goto done;
    /* commit: swap the arrays so the old ones are freed below */
    {
        spectral_state old = *st;
        *st = nw;
        st->tmp = old.tmp;
        nw = old;
        sp_levels8(st);
    }
done:
    free(nw.basis); free(nw.basis_t); free(nw.mean); free(nw.std); free(nw.lv_sig); free(nw.lv_noise);
    free(mu); free(cov); free(w); free(v); free(dx); free(z); free(vals);
    return s;
}

/* payload v1 (docs/FORMATS.md): u32 D, u32 bits, u32 signal_bits,
 * u32 slots, u32 d_sig, f32 d_eff, f32 mean[D], f32 std[D],
 * f32 basis[D][D] (row j = eigenvector j), f32 signal levels[2^signal_bits],
 * f32 noise levels[2^bits] */
#define SP_HDR 24

static size_t sp_payload_size(const vq_codec *c)
{
    const spectral_state *st = c->impl;
    const size_t D = (size_t)c->head_dim;
    return SP_HDR + 4 * (2 * D + D * D + ((size_t)1 << st->sbits) + ((size_t)1 << st->bits));
}

static vq_status spectral_state_write(const vq_codec *c, uint8_t *dst, size_t cap, size_t *len)
{
    const spectral_state *st = c->impl;
    const size_t D = (size_t)c->head_dim;
    size_t need = sp_payload_size(c);
    *len = need;
    if (!dst)
        return VQ_OK;
    if (cap < need)
        return vq_fail(((vq_codec *)c)->err, VQ_ERR_INVALID_ARG, "spectral: state buffer %zu < %zu bytes", cap, need);
    vq_put_u32(dst, (uint32_t)D);
    vq_put_u32(dst + 4, (uint32_t)st->bits);
    vq_put_u32(dst + 8, (uint32_t)st->sbits);
    vq_put_u32(dst + 12, (uint32_t)st->slots);
    vq_put_u32(dst + 16, (uint32_t)st->d_sig);
    vq_put_f32(dst + 20, st->d_eff);
    uint8_t *p = dst + SP_HDR;
    for (size_t i = 0; i < D; i++, p += 4)
        vq_put_f32(p, st->mean[i]);
    for (size_t i = 0; i < D; i++, p += 4)
        vq_put_f32(p, st->std[i]);
    for (size_t i = 0; i < D * D; i++, p += 4)
        vq_put_f32(p, st->basis[i]);
    for (size_t i = 0; i < ((size_t)1 << st->sbits); i++, p += 4)
        vq_put_f32(p, st->lv_sig[i]);
    for (size_t i = 0; i < ((size_t)1 << st->bits); i++, p += 4)
        vq_put_f32(p, st->lv_noise[i]);
    return VQ_OK;
}

static vq_status spectral_state_read(vq_codec *c, const uint8_t *src, size_t len)
{
    spectral_state *st = c->impl;
    const int D = c->head_dim;
    if (len < SP_HDR)
        return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: %zu bytes, shorter than its %d-byte header", len, SP_HDR);
    uint32_t d = vq_get_u32(src), b = vq_get_u32(src + 4), sb = vq_get_u32(src + 8), sl = vq_get_u32(src + 12);
    uint32_t dsig = vq_get_u32(src + 16);
    float deff = vq_get_f32(src + 20);
    if (d != (uint32_t)D || b != (uint32_t)st->bits || sb != (uint32_t)st->sbits || sl != (uint32_t)st->slots)
        return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: head_dim %u bits %u signal_bits %u slots %u, codec has %d %d %d %d",
                       d, b, sb, sl, D, st->bits, st->sbits, st->slots);
    if (dsig < 1 || dsig > (uint32_t)(D - 1) || (st->slots && dsig > (uint32_t)st->slots))
        return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: %u signal coordinates out of range", dsig);
    if (!isfinite(deff) || deff < 0.0f || deff > (float)D + 0.5f)
        return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: effective dimension %g out of range", (double)deff);
    size_t need = sp_payload_size(c);
    if (len != need)
        return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: payload of %zu bytes, expected %zu", len, need);
    size_t nf = (len - SP_HDR) / 4;
    const uint8_t *p = src + SP_HDR;
    for (size_t i = 0; i < nf; i++)
        if (!isfinite(vq_get_f32(p + 4 * i)))
            return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: value %zu is not finite", i);
    for (int i = 0; i < D; i++)
        if (!(vq_get_f32(p + 4 * ((size_t)D + i)) > 0.0f))
            return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: coordinate scale %d is not positive", i);
    const uint8_t *ls = p + 4 * (2 * (size_t)D + (size_t)D * D);
    const uint8_t *ln = ls + 4 * ((size_t)1 << st->sbits);
    for (size_t i = 1; i < ((size_t)1 << st->sbits); i++)
        if (vq_get_f32(ls + 4 * i) < vq_get_f32(ls + 4 * (i - 1)))
            return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: signal levels not sorted");
    for (size_t i = 1; i < ((size_t)1 << st->bits); i++)
        if (vq_get_f32(ln + 4 * i) < vq_get_f32(ln + 4 * (i - 1)))
            return vq_fail(c->err, VQ_ERR_FORMAT, "spectral state: noise levels not sorted");
    /* all checked: commit */
    st->d_sig = (int)dsig;
    st->d_eff = deff;
    for (int i = 0; i < D; i++, p += 4)
        st->mean[i] = vq_get_f32(p);
    for (int i = 0; i < D; i++, p += 4)
        st->std[i] = vq_get_f32(p);
    for (size_t i = 0; i < (size_t)D * D; i++, p += 4)
        st->basis[i] = vq_get_f32(p);
    vq_transpose(st->basis, (size_t)D, (size_t)D, st->basis_t);
    for (size_t i = 0; i < ((size_t)1 << st->sbits); i++, p += 4)
        st->lv_sig[i] = vq_get_f32(p);
    for (size_t i = 0; i < ((size_t)1 << st->bits); i++, p += 4)
        st->lv_noise[i] = vq_get_f32(p);
    sp_levels8(st);
    return VQ_OK;
}

const vq_codec_ops vq_codec_spectral_ops = {
    .name = "spectral",
    .default_spec = "spectral:bits=2,signal_bits=2",
    .needs_calibration = 1,
    .clone = spectral_clone,
    .init = spectral_init,
    .destroy = spectral_destroy,
    .encode = spectral_encode,
    .decode = spectral_decode,
    .prepare_query = spectral_prepare_query,
    .score = spectral_score,
    .accumulate = spectral_accumulate,
    .accum_finish = spectral_finish,
    .values = spectral_values,
    .dot_query = 1, /* the prepared query is [q', <q, mu>, 0...] (split: the layout's halves) */
    .calibrate = spectral_calibrate,
    .state_write = spectral_state_write,
    .state_read = spectral_state_read,
};
