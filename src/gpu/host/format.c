/* format.c -- vq_cuda_format from a CPU codec (veloxquant_cuda.h).
 *
 * The GPU kernels need a codec's parameters, its rotation sign diagonal and
 * (turboquant_rvq) its centroid and threshold tables. They are rebuilt here
 * with the very functions and expressions the CPU codecs use (vq_rot_init
 * with the codec's seed, vq_lloyd_max, turboquant.c's scales), so one
 * format definition serves both sides. Plain C, host only; compiled by
 * src/gpu/gpu.mk (this folder is outside the glob of library sources, src/LAYER/NAME.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "codec/lloyd_max.h"
#include "codec/rotation.h"
#include "codec/tq_stage2.h"
#include "core/io.h"
#include "core/rng.h"
#include "core/spec.h"
#include "veloxquant_cuda.h"

vq_status vq_cuda_fail(vq_status st, const char *fmt, ...);

static vq_status set_rotation(const vq_codec *c, vq_cuda_format *f)
{
    vq_rotation r;
    if (vq_rot_init(&r, c->head_dim, c->seed) != 0 || r.m != 1)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: %s: head_dim %d has no GPU rotation (powers of two only)",
                            c->canon, c->head_dim);
    memcpy(f->sign, r.sign, sizeof f->sign);
    f->rot = 1;
    return VQ_OK;
}

/* turboquant_rvq tables, as turboquant.c's tq_init computes them */
static void set_rvq_tables(const vq_codec *c, int fit, vq_cuda_format *f)
{
    const int D = c->head_dim;
    vq_lloyd_max_q q1, q2;
    vq_lloyd_max(VQ_LM_GAUSSIAN, f->bits, &q1);
    f->s1 = 1.0f / sqrtf((float)D);
    f->s2 = vq_tq_stage2(D, f->bits, fit, &q2);
    f->levels1 = q1.levels;
    f->levels2 = q2.levels;
    for (int i = 0; i < q1.levels; i++) {
        f->c1[i] = f->s1 * q1.centroid[i];
        f->t1[i] = q1.threshold[i];
    }
    for (int i = 0; i < q2.levels; i++) {
        f->c2[i] = f->s2 * q2.centroid[i];
        f->t2[i] = q2.threshold[i];
    }
}

/* vecinfer: the codec's own calibration payload (docs/FORMATS.md: u32 D,
 * sub_dim, bits, smooth; u64 rotation seed; f32 lambda[D]; f32 codebooks
 * [M][K][sub_dim]) into *buf (malloc'd, the caller frees) */
static vq_status vecinfer_payload(const vq_codec *c, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    if (!c->ready)
        return vq_cuda_fail(VQ_ERR_NEEDS_CALIBRATION, "cuda: %s: codec not calibrated", c->canon);
    VQ_TRY(c->ops->state_write(c, NULL, 0, len));
    *buf = malloc(*len);
    if (!*buf)
        return vq_cuda_fail(VQ_ERR_NOMEM, "cuda: %s: out of memory", c->canon);
    vq_status st = c->ops->state_write(c, *buf, *len, len);
    if (st != VQ_OK || *len < 24 + 4 * (size_t)c->head_dim) {
        free(*buf);
        *buf = NULL;
        return vq_cuda_fail(VQ_ERR_STATE, "cuda: %s: cannot read the calibration state", c->canon);
    }
    return VQ_OK;
}

/* the randomized Hadamard rotation of vecinfer (seeded from its state):
 * sign bit i set where the codec's +-1 diagonal is -1, as vq_rot_init
 * draws it */
static vq_status set_vecinfer(const vq_codec *c, vq_cuda_format *f)
{
    uint8_t *pl;
    size_t len;
    VQ_TRY(vecinfer_payload(c, &pl, &len));
    f->sub_dim = (int)vq_get_u32(pl + 4);
    f->bits = (int)vq_get_u32(pl + 8);
    vq_rng r;
    vq_rng_seed(&r, vq_get_u64(pl + 16));
    free(pl);
    for (int i = 0; i < c->head_dim; i++)
        if (vq_rng_sign(&r) < 0)
            f->sign[i >> 3] |= (uint8_t)(1u << (i & 7));
    f->rot = 1;
    if (f->bits != 1 && f->bits != 2 && f->bits != 4 && f->bits != 8)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: %s: bits=%d has no GPU kernel (1, 2, 4 or 8)", c->canon,
                            f->bits);
    return VQ_OK;
}

size_t vq_cuda_tables_bytes(const vq_codec *c)
{
    if (!c || strcmp(c->ops->name, "vecinfer"))
        return 0;
    size_t len = 0;
    if (c->ops->state_write(c, NULL, 0, &len) != VQ_OK || len < 24)
        return 0;
    size_t extra = 0; /* values: the fp16 codebook [K][D] and its 16-byte header */
    if (c->role == VQ_ROLE_VALUE) {
        uint8_t *pl;
        size_t n;
        if (vecinfer_payload(c, &pl, &n) != VQ_OK)
            return 0;
        extra = 16 + ((size_t)2 * c->head_dim << vq_get_u32(pl + 8));
        free(pl);
    }
    return len - 24 + extra; /* lambda and codebooks, floats */
}

/* host copy of the tables (vq_cuda_tables_upload in attention_vecinfer.cu
 * sends it to the device): lambda[D] then the codebooks, *n floats */
vq_status vq_cuda_tables_host(const vq_codec *c, float **out, size_t *n);
vq_status vq_cuda_tables_host(const vq_codec *c, float **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (!c || strcmp(c->ops->name, "vecinfer"))
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: tables: not a vecinfer codec");
    uint8_t *pl;
    size_t len;
    VQ_TRY(vecinfer_payload(c, &pl, &len));
    *n = (len - 24) / 4;
    *out = malloc(*n * sizeof(float));
    if (!*out) {
        free(pl);
        return vq_cuda_fail(VQ_ERR_NOMEM, "cuda: tables: out of memory");
    }
    for (size_t i = 0; i < *n; i++)
        (*out)[i] = vq_get_f32(pl + 24 + 4 * i);
    free(pl);
    return VQ_OK;
}

vq_status vq_cuda_format_from_codec(const vq_codec *c, vq_cuda_format *out)
{
    if (!c || !out)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: format_from_codec: NULL argument");
    vq_cuda_format f;
    memset(&f, 0, sizeof f);
    f.role = (int)c->role;
    f.head_dim = c->head_dim;
    f.block_tokens = (int)c->block_tokens;
    f.block_bytes = (int)c->block_bytes;
    if (c->head_dim != 64 && c->head_dim != 128)
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: %s: head_dim %d unsupported (64 or 128)", c->canon,
                            c->head_dim);
    vq_spec sp;
    char err[VQ_ERRLEN];
    if (vq_spec_parse(c->canon, &sp, err) != VQ_OK)
        return vq_cuda_fail(VQ_ERR_INVALID_ARG, "cuda: %s: %s", c->canon, err);
    long bits = 0, group = 0, rot = 0, qbits = 0;
    const char *m = c->ops->name;
    if (!strcmp(m, "fp16")) {
        f.method = VQ_CUDA_FP16;
    } else if (!strcmp(m, "q8_0") || !strcmp(m, "q4_0")) {
        f.method = m[1] == '8' ? VQ_CUDA_Q8_0 : VQ_CUDA_Q4_0;
        vq_spec_int(&sp, "rot", 0, 0, 1, &rot, err);
        /* keys: the query rounded to int8 per block where the codec says
         * qbits=8 (the canonical spec names it; 8, the keys' default in
         * quant_blocks.c, where it does not); values: float weights on the
         * GPU whatever their qbits, so theirs is not read */
        if (c->role == VQ_ROLE_KEY) {
            vq_spec_int(&sp, "qbits", 8, 0, 8, &qbits, err);
            f.qbits = qbits == 8 ? 8 : 0;
        }
        if (rot)
            VQ_TRY(set_rotation(c, &f));
    } else if (!strcmp(m, "kivi")) {
        f.method = VQ_CUDA_KIVI;
        vq_spec_int(&sp, "bits", 2, 2, 4, &bits, err);
        vq_spec_int(&sp, "group", 32, 16, 128, &group, err);
        f.bits = (int)bits;
        f.group = (int)group;
    } else if (!strcmp(m, "turboquant_rvq")) {
        f.method = VQ_CUDA_TQ_RVQ;
        long fit = 0;
        vq_spec_int(&sp, "bits", 1, 1, 4, &bits, err);
        vq_spec_int(&sp, "fit", 0, 0, 1, &fit, err);
        if (bits == 3)
            return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: %s: bits=3 has no GPU kernel (1, 2 or 4)", c->canon);
        f.bits = (int)bits;
        VQ_TRY(set_rotation(c, &f));
        set_rvq_tables(c, (int)fit, &f);
    } else if (!strcmp(m, "rabitq")) {
        f.method = VQ_CUDA_RABITQ;
        vq_spec_int(&sp, "bits", 1, 1, 4, &bits, err);
        vq_spec_int(&sp, "qbits", 4, 0, 8, &qbits, err);
        long mse = 0;
        vq_spec_int(&sp, "mse", 0, 0, 1, &mse, err);
        if (bits != 1)
            return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: %s: only bits=1 has a GPU kernel", c->canon);
        if (mse) /* the GPU quantizer writes the unbiased norm, not norm * corr^2 */
            return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: %s: mse=1 has no GPU quantizer", c->canon);
        f.bits = 1;
        VQ_TRY(set_rotation(c, &f));
    } else if (!strcmp(m, "vecinfer")) {
        f.method = VQ_CUDA_VECINFER;
        VQ_TRY(set_vecinfer(c, &f));
    } else {
        return vq_cuda_fail(VQ_ERR_UNSUPPORTED, "cuda: method %s has no GPU kernel", m);
    }
    *out = f;
    return VQ_OK;
}
