/* codec.c -- public codec API: spec parsing, argument checks, dispatch to
 * the method's ops, and the common header of calibration state.
 *
 * Calibration state format (version 2; version 1 is still read),
 * little-endian, H = 12 (version 1: 8, no writer field):
 *   off  size  field
 *     0     4  magic "VQCS"
 *     4     4  version (2)
 *     8     4  writer (core/writer.h; version 2 only)
 *     H     4  head_dim
 *   H+4     4  role (0 key, 1 value)
 *   H+8     4  spec length L (canonical spec, without calib=)
 *  H+12     L  canonical spec bytes (no terminator)
 *  H+12+L   8  payload length P
 *  H+20+L   P  method payload (see the method's file)
 *  H+20+L+P 4  CRC-32 (IEEE) of all preceding bytes
 */
#include <stdlib.h>
#include <string.h>

#include "codec/calib_set.h"
#include "codec/codec.h"
#include "codec/tiled.h"
#include "kernels/kernels.h"
#include "core/cpu.h"
#include "core/crc32.h"
#include "core/file.h"
#include "core/io.h"
#include "core/writer.h"

const char *vq_codec_method(int index, const char **default_spec)
{
    if (index < 0)
        return NULL;
    for (int i = 0; vq_codec_registry[i]; i++)
        if (i == index) {
            if (default_spec)
                *default_spec = vq_codec_registry[i]->default_spec;
            return vq_codec_registry[i]->name;
        }
    return NULL;
}

static const vq_codec_ops *find_method(const char *name)
{
    for (int i = 0; vq_codec_registry[i]; i++)
        if (strcmp(vq_codec_registry[i]->name, name) == 0)
            return vq_codec_registry[i];
    return NULL;
}

static vq_status load_calib_file(vq_codec *c, const char *path)
{
    if (vq_calib_set_sniff(path)) /* whole-model file: layers resolve it in the cache */
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "%s: calib=%s is a whole-model calibration file; use it in a cache config "
                       "(keys=%s:...,calib=FILE), where each layer takes its own state",
                       c->ops->name, path, c->ops->name);
    uint8_t *buf = NULL;
    size_t len = 0;
    vq_status st = vq_file_read_all(path, 1u << 30, &buf, &len, c->err);
    if (st != VQ_OK)
        return st;
    st = vq_codec_state_read(c, buf, len);
    free(buf);
    return st;
}

/* the common part of vq_codec_create and vq_codec_create_ops: argument
 * checks, the generic fields, ops->init, the tile and calib= */
static vq_status create(const vq_codec_ops *ops, vq_spec *sp, int head_dim, vq_role role, uint64_t seed,
                        const void *ctx, vq_codec **out)
{
    const char *calib = NULL;
    vq_spec_str(sp, "calib", NULL, &calib, NULL);

    vq_codec *c = malloc(sizeof *c);
    if (!c)
        return vq_fail(NULL, VQ_ERR_NOMEM, "vq_codec_create: out of memory");
    *c = (vq_codec){ .ops = ops, .head_dim = head_dim, .role = role, .seed = seed, .ctx = ctx,
                     .ready = !ops->needs_calibration };
    vq_status st = ops->init(c, sp);
    if (st == VQ_OK)
        st = vq_spec_check_unused(sp, c->err);
    if (st == VQ_OK && (c->block_tokens == 0 || c->block_bytes == 0 ||
                        c->block_bytes % c->block_tokens != 0))
        st = vq_fail(c->err, VQ_ERR_UNSUPPORTED, "%s: block of %zu tokens in %zu bytes is not a whole number of bytes per token",
                     ops->name, c->block_tokens, c->block_bytes);
    if (st == VQ_OK && ops->values) {
        c->tile_tokens = vq_tile_tokens(c->block_tokens, c->accum_size);
        c->tile = malloc(c->tile_tokens * c->accum_size * sizeof(float));
        if (!c->tile)
            st = vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory (tile)", ops->name);
    }
    if (st == VQ_OK && calib) {
        if (!ops->state_read)
            st = vq_fail(c->err, VQ_ERR_INVALID_ARG, "%s: takes no calibration (calib=%s)", ops->name, calib);
        else
            st = load_calib_file(c, calib);
    }
    if (st != VQ_OK) {
        vq_fail(NULL, st, "%s", c->err); /* keep the message for the thread */
        vq_codec_free(c);
        return st;
    }
    *out = c;
    return VQ_OK;
}

static vq_status check_args(const char *spec, int head_dim, vq_role role, vq_codec **out)
{
    if (out)
        *out = NULL;
    if (!out || !spec)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_create: %s is NULL", out ? "spec" : "out");
    if (head_dim < 32 || head_dim > VQ_CODEC_MAX_HEAD_DIM || head_dim % 32 != 0)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG,
                       "vq_codec_create: head_dim %d unsupported (need a multiple of 32 in 32..256)", head_dim);
    if (role != VQ_ROLE_KEY && role != VQ_ROLE_VALUE)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_create: role %d is neither key nor value", (int)role);
    return VQ_OK;
}

vq_status vq_codec_create(const char *spec, int head_dim, vq_role role,
                          uint64_t seed, vq_codec **out)
{
    VQ_TRY(check_args(spec, head_dim, role, out));
    vq_spec sp;
    VQ_TRY(vq_spec_parse(spec, &sp, NULL));
    const vq_codec_ops *ops = find_method(sp.name);
    if (!ops)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "unknown codec method '%s' (try `veloxquant codecs`)", sp.name);
    return create(ops, &sp, head_dim, role, seed, NULL, out);
}

vq_status vq_codec_create_ops(const vq_codec_ops *ops, const char *spec, int head_dim, vq_role role,
                              uint64_t seed, const void *ctx, vq_codec **out)
{
    VQ_TRY(check_args(spec, head_dim, role, out));
    if (!ops || !ops->init)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_create_ops: no ops table");
    vq_spec sp;
    VQ_TRY(vq_spec_parse(spec, &sp, NULL));
    if (strcmp(sp.name, ops->name) != 0)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_create_ops: spec '%s' is not for method '%s'", spec,
                       ops->name);
    return create(ops, &sp, head_dim, role, seed, ctx, out);
}

/* dst takes src's calibration state (through the state format) */
static vq_status copy_state(const vq_codec *src, vq_codec *dst)
{
    size_t len = 0;
    vq_status st = vq_codec_state_write(src, NULL, 0, &len);
    uint8_t *buf = st == VQ_OK ? malloc(len) : NULL;
    if (st == VQ_OK && !buf)
        st = vq_fail(NULL, VQ_ERR_NOMEM, "out of memory");
    if (st == VQ_OK)
        st = vq_codec_state_write(src, buf, len, &len);
    if (st == VQ_OK)
        st = vq_codec_state_read(dst, buf, len);
    free(buf);
    return st;
}

vq_status vq_codec_clone(const vq_codec *src, vq_codec **out)
{
    if (!src || !out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_clone: NULL argument");
    *out = NULL;
    if (!src->ops->clone) {
        /* the same method and parameters (calib= dropped: the state is
         * copied from src, which may have been calibrated since) */
        vq_spec sp;
        vq_status st = vq_spec_parse(src->canon, &sp, NULL);
        for (int i = 0; st == VQ_OK && i < sp.n; i++)
            if (strcmp(sp.kv[i].key, "calib") == 0)
                sp.kv[i] = sp.kv[--sp.n];
        if (st == VQ_OK)
            st = create(src->ops, &sp, src->head_dim, src->role, src->seed, src->ctx, out);
        if (st == VQ_OK && src->ops->state_write && src->ready && src->ops->needs_calibration)
            st = copy_state(src, *out);
        if (st != VQ_OK) {
            vq_fail(NULL, st, "vq_codec_clone: cannot clone '%s': %s", src->canon, vq_last_error());
            vq_codec_free(*out);
            *out = NULL;
        }
        return st;
    }
    vq_codec *c = malloc(sizeof *c);
    if (!c)
        return vq_fail(NULL, VQ_ERR_NOMEM, "vq_codec_clone: out of memory");
    *c = *src;
    c->impl = NULL;
    c->tile = NULL;
    vq_status st = VQ_OK;
    if (src->tile) {
        c->tile = malloc(c->tile_tokens * c->accum_size * sizeof(float));
        if (!c->tile)
            st = vq_fail(c->err, VQ_ERR_NOMEM, "%s: out of memory (tile)", c->ops->name);
    }
    if (st == VQ_OK)
        st = src->ops->clone(src, c);
    if (st != VQ_OK) {
        vq_fail(NULL, st, "%s", c->err);
        vq_codec_free(c);
        return st;
    }
    *out = c;
    return VQ_OK;
}

void vq_codec_free(vq_codec *c)
{
    if (!c)
        return;
    if (c->ops && c->ops->destroy)
        c->ops->destroy(c);
    free(c->tile);
    free(c);
}

const char *vq_codec_error(const vq_codec *c) { return c ? c->err : "codec is NULL"; }
const char *vq_codec_name(const vq_codec *c) { return c ? c->ops->name : ""; }
const char *vq_codec_spec(const vq_codec *c) { return c ? c->canon : ""; }
int vq_codec_head_dim(const vq_codec *c) { return c ? c->head_dim : 0; }
vq_role vq_codec_role(const vq_codec *c) { return c ? c->role : VQ_ROLE_KEY; }
size_t vq_codec_block_tokens(const vq_codec *c) { return c ? c->block_tokens : 0; }
size_t vq_codec_block_bytes(const vq_codec *c) { return c ? c->block_bytes : 0; }
size_t vq_codec_bytes_per_token(const vq_codec *c) { return c ? c->block_bytes / c->block_tokens : 0; }
size_t vq_codec_shared_bytes(const vq_codec *c) { return c ? c->shared_bytes : 0; }
double vq_codec_bits_per_element(const vq_codec *c)
{
    return c ? 8.0 * (double)vq_codec_bytes_per_token(c) / c->head_dim : 0.0;
}
int vq_codec_needs_calibration(const vq_codec *c) { return c ? c->ops->needs_calibration : 0; }
int vq_codec_is_ready(const vq_codec *c) { return c ? c->ready : 0; }
size_t vq_codec_query_bytes(const vq_codec *c) { return c ? c->query_bytes : 0; }
size_t vq_codec_accum_size(const vq_codec *c) { return c ? c->accum_size : 0; }

/* common checks for the data-path wrappers */
static vq_status check_io(vq_codec *c, const char *fn, const void *a, const void *b, size_t n)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "%s: codec is NULL", fn);
    if ((!a || !b) && n > 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "%s: NULL buffer", fn);
    if (n % c->block_tokens != 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "%s: %zu tokens is not a multiple of the %s block of %zu",
                       fn, n, c->ops->name, c->block_tokens);
    if (!c->ready)
        return vq_fail(c->err, VQ_ERR_NEEDS_CALIBRATION,
                       "%s: %s needs calibration (run `veloxquant calibrate`, then pass calib=FILE)", fn, c->ops->name);
    return VQ_OK;
}

vq_status vq_codec_encode(vq_codec *c, const float *x, size_t n, void *dst)
{
    VQ_TRY(check_io(c, "vq_codec_encode", x, dst, n));
    if (n)
        c->ops->encode(c, x, n, dst);
    return VQ_OK;
}

vq_status vq_codec_decode(vq_codec *c, const void *src, size_t n, float *x)
{
    VQ_TRY(check_io(c, "vq_codec_decode", src, x, n));
    if (n)
        c->ops->decode(c, src, n, x);
    return VQ_OK;
}

vq_status vq_codec_prepare_query(vq_codec *c, const float *q, void *qbuf)
{
    VQ_TRY(check_io(c, "vq_codec_prepare_query", q, qbuf, 1 * (c ? c->block_tokens : 1)));
    c->ops->prepare_query(c, q, qbuf);
    return VQ_OK;
}

vq_status vq_codec_score(vq_codec *c, const void *qbuf, int n_q,
                         const void *codes, size_t n, float *scores)
{
    VQ_TRY(check_io(c, "vq_codec_score", qbuf, codes, n));
    if (n_q < 1 || (!scores && n))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_codec_score: n_q=%d or scores NULL", n_q);
    if (n && vq_codec_tiled_score_ok(c) && vq_kernels_get()->simd)
        vq_codec_score_tiled(c, qbuf, n_q, codes, n, scores);
    else if (n)
        c->ops->score(c, qbuf, n_q, codes, n, scores);
    return VQ_OK;
}

vq_status vq_codec_accumulate(vq_codec *c, const float *w, int n_q,
                              const void *codes, size_t n, float *acc)
{
    VQ_TRY(check_io(c, "vq_codec_accumulate", w, codes, n));
    if (n_q < 1 || !acc)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_codec_accumulate: n_q=%d or acc NULL", n_q);
    /* a fused kernel gives the tiled path's bits; with many queries
     * decoding once into the tile may be cheaper (accum_tiled_min_q) */
    if (n && c->tile && (!c->accum_own || (c->accum_tiled_min_q && n_q >= c->accum_tiled_min_q)) &&
        vq_kernels_get()->simd)
        vq_codec_accumulate_tiled(c, w, n_q, codes, n, acc);
    else if (n)
        c->ops->accumulate(c, w, n_q, codes, n, acc);
    return VQ_OK;
}

vq_status vq_codec_accum_finish(vq_codec *c, const float *acc, float *out)
{
    VQ_TRY(check_io(c, "vq_codec_accum_finish", acc, out, c ? c->block_tokens : 1));
    c->ops->accum_finish(c, acc, out);
    return VQ_OK;
}

void vq_codec_finish_copy(vq_codec *c, const float *acc, float *out)
{
    memcpy(out, acc, (size_t)c->head_dim * sizeof *out);
}

void vq_codec_decode_each(vq_codec *c, const uint8_t *src, size_t n, float *x, vq_decode_token_fn *one)
{
    for (size_t t = 0; t < n; t++)
        one(c, src + t * c->block_bytes, x + t * (size_t)c->head_dim);
}

vq_status vq_codec_calibrate(vq_codec *c, const float *x, size_t n)
{
    if (!c)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_calibrate: codec is NULL");
    if (!c->ops->calibrate)
        return VQ_OK;
    if (!x || n == 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "vq_codec_calibrate: no samples");
    vq_status st = c->ops->calibrate(c, x, n);
    if (st == VQ_OK)
        c->ready = 1;
    return st;
}

/* ---- calibration state ------------------------------------------------- */

#define STATE_MAGIC "VQCS"
#define STATE_VERSION 2u /* version 1 (read only): no writer field */
#define STATE_HDR(ver) ((ver) == 1 ? 8u : 12u) /* offset of head_dim */

/* the n characters of spec s without its qbits= parameter and without a
 * calib= parameter and all after it (neither is part of the identity of
 * the state: the queries' arithmetic, the file's name, whose path may hold
 * ',' or ':'), as "name" or "name:k=v,k=v", into buf (cap >= 1); returns
 * the length written */
static size_t identity_of(const char *s, size_t n, char *buf, size_t cap)
{
    size_t o = 0, i = 0;
    while (i < n && s[i] != ':')
        i++;
    for (size_t k = 0; k < i && o + 1 < cap; k++)
        buf[o++] = s[k];
    int first = 1;
    while (i < n) {
        size_t b = ++i; /* past ':' or ',' */
        while (i < n && s[i] != ',')
            i++;
        const size_t len = i - b;
        if (len >= 6 && memcmp(s + b, "calib=", 6) == 0)
            break;
        if (len == 0 || (len >= 6 && memcmp(s + b, "qbits=", 6) == 0))
            continue;
        if (o + 1 < cap)
            buf[o++] = first ? ':' : ',';
        for (size_t k = 0; k < len && o + 1 < cap; k++)
            buf[o++] = s[b + k];
        first = 0;
    }
    buf[o] = '\0';
    return o;
}

/* the codec's canonical spec as the identity of its state (identity_of) */
static size_t spec_identity(const vq_codec *c, char *buf, size_t cap)
{
    return identity_of(c->canon, strlen(c->canon), buf, cap);
}

vq_status vq_codec_state_write(const vq_codec *c, void *dst, size_t cap, size_t *len)
{
    if (!c || !len)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_codec_state_write: NULL argument");
    vq_codec *mc = (vq_codec *)c; /* error buffer only */
    if (!c->ops->state_write)
        return vq_fail(mc->err, VQ_ERR_UNSUPPORTED, "%s has no calibration state", c->ops->name);
    if (!c->ready)
        return vq_fail(mc->err, VQ_ERR_NEEDS_CALIBRATION, "%s is not calibrated; nothing to save", c->ops->name);
    char id[VQ_SPEC_MAX_LEN];
    size_t L = spec_identity(c, id, sizeof id);
    size_t P = 0;
    VQ_TRY(c->ops->state_write(c, NULL, 0, &P));
    const size_t H = STATE_HDR(STATE_VERSION);
    size_t total = H + 20 + L + P + 4;
    *len = total;
    if (!dst)
        return VQ_OK;
    if (cap < total)
        return vq_fail(mc->err, VQ_ERR_INVALID_ARG, "vq_codec_state_write: buffer of %zu bytes, need %zu", cap, total);
    uint8_t *p = dst;
    memcpy(p, STATE_MAGIC, 4);
    vq_put_u32(p + 4, STATE_VERSION);
    vq_put_u32(p + 8, VQ_FILE_WRITER);
    vq_put_u32(p + H, (uint32_t)c->head_dim);
    vq_put_u32(p + H + 4, (uint32_t)c->role);
    vq_put_u32(p + H + 8, (uint32_t)L);
    memcpy(p + H + 12, id, L);
    vq_put_u64(p + H + 12 + L, P);
    size_t got = 0;
    VQ_TRY(c->ops->state_write(c, p + H + 20 + L, P, &got));
    if (got != P)
        return vq_fail(mc->err, VQ_ERR_STATE, "%s: state size changed while writing", c->ops->name);
    vq_put_u32(p + H + 20 + L + P, vq_crc32(0, p, H + 20 + L + P));
    return VQ_OK;
}

vq_status vq_codec_state_read(vq_codec *c, const void *src, size_t len)
{
    if (!c || !src)
        return vq_fail(c ? c->err : NULL, VQ_ERR_INVALID_ARG, "vq_codec_state_read: NULL argument");
    if (!c->ops->state_read)
        return vq_fail(c->err, VQ_ERR_UNSUPPORTED, "%s has no calibration state", c->ops->name);
    const uint8_t *p = src;
    if (len < 32 || memcmp(p, STATE_MAGIC, 4) != 0)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: bad magic or too short (%zu bytes)", len);
    uint32_t ver = vq_get_u32(p + 4);
    char note[48];
    if (ver < 1 || ver > STATE_VERSION)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: version %u%s, this build (%s) reads 1 to %u", ver,
                       vq_file_writer_note(ver > STATE_VERSION ? p : NULL, len, note), VQ_VERSION_STRING,
                       STATE_VERSION);
    /* H + 24: the fixed fields and the CRC; every offset below is checked
     * against len before it is read */
    const size_t H = STATE_HDR(ver);
    if (len < H + 24)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: too short (%zu bytes)", len);
    uint32_t L = vq_get_u32(p + H + 8);
    if (L >= VQ_SPEC_MAX_LEN || (size_t)L > len - H - 24)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: spec length %u out of bounds", L);
    uint64_t P = vq_get_u64(p + H + 12 + L);
    if (P > len - H - 24 - L)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: payload of %llu bytes exceeds the %zu-byte input",
                       (unsigned long long)P, len);
    size_t total = H + 20 + (size_t)L + (size_t)P + 4;
    if (total != len)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: %zu bytes, header says %zu", len, total);
    if (vq_crc32(0, p, total - 4) != vq_get_u32(p + total - 4))
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state: checksum mismatch (corrupted)");
    if (ver >= 2)
        VQ_TRY(vq_file_writer_check(vq_get_u32(p + 8), "calibration state", c->err));
    if ((int)vq_get_u32(p + H) != c->head_dim || vq_get_u32(p + H + 4) != (uint32_t)c->role)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state is for head_dim %u role %u, codec has head_dim %d role %d",
                       vq_get_u32(p + H), vq_get_u32(p + H + 4), c->head_dim, (int)c->role);
    char id[VQ_SPEC_MAX_LEN], fid[VQ_SPEC_MAX_LEN];
    const size_t il = spec_identity(c, id, sizeof id);
    /* the file's identity as this build forms it (files before session 51 kept qbits= in it) */
    const size_t fl = identity_of((const char *)(p + H + 12), L, fid, sizeof fid);
    if (il != fl || memcmp(id, fid, il) != 0)
        return vq_fail(c->err, VQ_ERR_FORMAT, "calibration state is for '%.*s', codec is '%s'", (int)L,
                       (const char *)(p + H + 12), id);
    VQ_TRY(c->ops->state_read(c, p + H + 20 + L, (size_t)P));
    c->ready = 1;
    return VQ_OK;
}
