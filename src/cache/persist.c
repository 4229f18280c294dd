/* persist.c -- vq_cache_save / vq_cache_load (format: docs/cache-format.md,
 * versions 3 and 4; versions 1 and 2 are still read). All fields
 * little-endian.
 *
 *   "VQKC" | u32 version=3 (4: prerope) | u32 writer (core/writer.h) | u64 fingerprint
 *   | u64 seed
 *   u32 C | C bytes canonical config text
 *   u32 n_layers | n_layers x (u32 n_kv_heads, n_q_heads, head_dim, window,
 *                              f32 softcap)
 *   (cross=xkv only) u32 n_groups | per group: u32 fitted |
 *     if fitted: u32 rank | head_dim x f32 mean | head_dim x rank f32 basis
 *   per layer:
 *     i32 last_pos | i32 app_pos0 | u32 app_n
 *     2 x (u32 S | S bytes codec calibration state, 0 = none)   keys, values
 *     per KV head:
 *       u64 n_packed | u64 n_res | u64 n_dead
 *       n_packed x i32 position | n_packed x u8 alive | n_packed x f32 score
 *       n_packed x key bytes/token (packed codes, slot order)
 *       n_packed x value bytes/token
 *       n_res x i32 position | n_res x f32 score
 *       n_res x 2*head_dim fp16 keys | n_res x 2*head_dim fp16 values
 *       (MiniCache anchor layers only) (n_packed + n_res) x
 *         (u16 key ratio fp16 | u16 value ratio fp16 | u8 merged)
 *   (version 4, prerope=1/2 configs only) the prerope section
 *     (cache/prerope.h): per layer the RoPE and the key centres
 *   u32 CRC-32 (IEEE) of every preceding byte
 *
 * The file is written through vq_file_write_atomic (temporary + fsync +
 * rename). Versions 1 and 2 had no writer field; 1 had no xkv section and
 * 2 always one (cross=xkv). Loading reads the whole file (bounded), checks
 * magic, version and CRC first, then the writer field, then every count against the bytes left and every value
 * against the cache built from the stored config and shape; every stored
 * vector is decoded once and must be finite. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_internal.h"
#include "cache/prerope.h"
#include "cache/sinks.h"
#include "core/crc32.h"
#include "core/file.h"
#include "core/fp16.h"
#include "core/io.h"
#include "core/writer.h"

#define CACHE_MAGIC "VQKC"
#define CACHE_VERSION 4u        /* written for prerope configs: version 3 + the prerope section */
#define CACHE_VERSION_WRITER 3u /* the writer field; the xkv section where the config has cross=xkv */
#define CACHE_VERSION_PLAIN 1u  /* read only: no writer field, no xkv section */
#define CACHE_VERSION_XKV 2u    /* read only: no writer field, the xkv section */
#define CACHE_MAX_FILE ((size_t)1 << 40)

/* ---- save ---------------------------------------------------------------- */

typedef struct {
    vq_file_writer *w;
    uint32_t crc;
    const vq_cache *c;
} save_ctx;

static vq_status put(save_ctx *s, const void *p, size_t n)
{
    s->crc = vq_crc32(s->crc, p, n);
    return vq_file_put(s->w, p, n);
}

static vq_status put_u32(save_ctx *s, uint32_t v)
{
    uint8_t b[4];
    vq_put_u32(b, v);
    return put(s, b, 4);
}

static vq_status put_u64(save_ctx *s, uint64_t v)
{
    uint8_t b[8];
    vq_put_u64(b, v);
    return put(s, b, 8);
}

static vq_status put_f32s(save_ctx *s, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t b[4];
        vq_put_f32(b, x[i]);
        VQ_TRY(put(s, b, 4));
    }
    return VQ_OK;
}

static vq_status put_i32s(save_ctx *s, const int32_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        VQ_TRY(put_u32(s, (uint32_t)x[i]));
    return VQ_OK;
}

static vq_status put_state(save_ctx *s, const vq_codec *cd)
{
    if (!cd->ops->state_write || !vq_codec_is_ready(cd))
        return put_u32(s, 0);
    size_t len = 0;
    VQ_TRY(vq_codec_state_write(cd, NULL, 0, &len));
    if (len > UINT32_MAX)
        return vq_fail(NULL, VQ_ERR_UNSUPPORTED, "cache save: codec state of %zu bytes too large", len);
    uint8_t *buf = malloc(len);
    if (!buf)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache save: out of memory");
    vq_status st = vq_codec_state_write(cd, buf, len, &len);
    if (st == VQ_OK)
        st = put_u32(s, (uint32_t)len);
    if (st == VQ_OK)
        st = put(s, buf, len);
    free(buf);
    return st;
}

static vq_status put_pages(save_ctx *s, const vq_cache_layer *L, uint8_t *const *pages, size_t n, size_t bpt)
{
    for (size_t s0 = 0; s0 < n; s0 += L->page_tokens) {
        size_t m = n - s0 < L->page_tokens ? n - s0 : L->page_tokens;
        VQ_TRY(put(s, pages[s0 / L->page_tokens], m * bpt));
    }
    return VQ_OK;
}

/* the cross method's section (vq_cross_ops.save) */
static vq_status put_cross(save_ctx *s)
{
    const vq_cache *c = s->c;
    size_t len = 0;
    VQ_TRY(c->cross->save(c, NULL, 0, &len));
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return vq_fail(NULL, VQ_ERR_NOMEM, "cache save: out of memory");
    vq_status st = c->cross->save(c, buf, len, &len);
    if (st == VQ_OK)
        st = put(s, buf, len);
    free(buf);
    return st;
}

static vq_status fill(vq_file_writer *w, void *user)
{
    save_ctx *s = user;
    s->w = w;
    const vq_cache *c = s->c;
    VQ_TRY(put(s, CACHE_MAGIC, 4));
    VQ_TRY(put_u32(s, c->cfg->prerope ? CACHE_VERSION : CACHE_VERSION_WRITER));
    VQ_TRY(put_u32(s, VQ_FILE_WRITER));
    VQ_TRY(put_u64(s, c->fingerprint));
    VQ_TRY(put_u64(s, c->seed));
    const char *txt = vq_cache_config_str(c->cfg);
    VQ_TRY(put_u32(s, (uint32_t)strlen(txt)));
    VQ_TRY(put(s, txt, strlen(txt)));
    VQ_TRY(put_u32(s, (uint32_t)c->n_layers));
    for (int l = 0; l < c->n_layers; l++) {
        const vq_layer_shape *ls = &c->layers[l].shape;
        VQ_TRY(put_u32(s, (uint32_t)ls->n_kv_heads));
        VQ_TRY(put_u32(s, (uint32_t)ls->n_q_heads));
        VQ_TRY(put_u32(s, (uint32_t)ls->head_dim));
        VQ_TRY(put_u32(s, (uint32_t)ls->window));
        uint8_t b[4];
        vq_put_f32(b, ls->softcap);
        VQ_TRY(put(s, b, 4));
    }
    if (vq_cross_has_section(c)) /* xkv's shared bases before the layers: their codes need them */
        VQ_TRY(put_cross(s));
    for (int l = 0; l < c->n_layers; l++) {
        const vq_cache_layer *L = &c->layers[l];
        const size_t D2 = 2 * (size_t)L->shape.head_dim;
        VQ_TRY(put_u32(s, (uint32_t)L->last_pos));
        VQ_TRY(put_u32(s, (uint32_t)L->app_pos0));
        VQ_TRY(put_u32(s, (uint32_t)L->app_n));
        VQ_TRY(put_state(s, L->kc));
        VQ_TRY(put_state(s, L->vc));
        for (int h = 0; h < L->shape.n_kv_heads; h++) {
            const vq_cache_head *H = &L->heads[h];
            VQ_TRY(put_u64(s, H->n_packed));
            VQ_TRY(put_u64(s, H->n_res));
            VQ_TRY(put_u64(s, H->n_dead));
            /* the file keeps one position, flag and score per slot whether
             * or not the cache holds those tables (cache_internal.h) */
            for (size_t i = 0; i < H->n_packed; i++)
                VQ_TRY(put_u32(s, (uint32_t)vq_head_pos(H, i)));
            for (size_t i = 0; i < H->n_packed; i++) {
                uint8_t a = (uint8_t)vq_head_alive(H, i);
                VQ_TRY(put(s, &a, 1));
            }
            for (size_t i = 0; i < H->n_packed; i++) {
                float sc = H->score ? H->score[i] : 0.0f;
                VQ_TRY(put_f32s(s, &sc, 1));
            }
            VQ_TRY(put_pages(s, L, H->kpages, H->n_packed, vq_codec_bytes_per_token(L->kc)));
            VQ_TRY(put_pages(s, L, H->vpages, H->n_packed, vq_codec_bytes_per_token(L->vc)));
            VQ_TRY(put_i32s(s, H->rpos, H->n_res));
            for (size_t i = 0; i < H->n_res; i++) {
                float sc = H->rscore ? H->rscore[i] : 0.0f;
                VQ_TRY(put_f32s(s, &sc, 1));
            }
            VQ_TRY(put(s, H->rk, H->n_res * D2));
            VQ_TRY(put(s, H->rv, H->n_res * D2));
            if (H->rx) /* slots lent to another layer (minicache): merge flags and ratios */
                for (size_t i = 0; i < H->n_packed + H->n_res; i++) {
                    const vq_xslot *x = i < H->n_packed ? &H->x[i] : &H->rx[i - H->n_packed];
                    uint8_t b[5];
                    vq_put_u16(b, x->rk);
                    vq_put_u16(b + 2, x->rv);
                    b[4] = x->merged;
                    VQ_TRY(put(s, b, 5));
                }
        }
    }
    if (c->cfg->prerope) { /* after the layers: loading sets the RoPE tables over their positions */
        const size_t len = vq_cache_prerope_section_bytes(c);
        uint8_t *buf = malloc(len ? len : 1);
        if (!buf)
            return vq_fail(NULL, VQ_ERR_NOMEM, "cache save: out of memory");
        vq_status st = vq_cache_prerope_section_write(c, buf, len);
        if (st == VQ_OK)
            st = put(s, buf, len);
        free(buf);
        VQ_TRY(st);
    }
    uint8_t b[4];
    vq_put_u32(b, s->crc);
    return vq_file_put(w, b, 4);
}

vq_status vq_cache_save(const vq_cache *c, const char *path)
{
    if (!c || !path)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_save: NULL argument");
    save_ctx s = { NULL, 0, c };
    char *err = (char *)c->err; /* the message buffer is not part of the cache's state */
    vq_status st = vq_file_write_atomic(path, fill, &s, err);
    if (st != VQ_OK && vq_last_error()[0])
        vq_fail(err, st, "cache save '%s': %s", path, vq_last_error());
    return st;
}

/* ---- load ---------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t len, off;
    char *err;
} rd;

static vq_status need(rd *r, size_t n, const char *what)
{
    if (n > r->len - r->off)
        return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: truncated in %s (need %zu bytes at offset %zu, %zu left)",
                       what, n, r->off, r->len - r->off);
    return VQ_OK;
}

static vq_status get_u32(rd *r, uint32_t *v, const char *what)
{
    VQ_TRY(need(r, 4, what));
    *v = vq_get_u32(r->p + r->off);
    r->off += 4;
    return VQ_OK;
}

static vq_status get_u64(rd *r, uint64_t *v, const char *what)
{
    VQ_TRY(need(r, 8, what));
    *v = vq_get_u64(r->p + r->off);
    r->off += 8;
    return VQ_OK;
}

/* Every stored vector must decode to finite numbers and every score be
 * finite: a file with NaN/Inf scales would otherwise poison attention. */
static vq_status check_finite(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, char *err, int l, int h)
{
    const size_t D = (size_t)L->shape.head_dim, G = L->group;
    for (size_t i = 0; H->score && i < H->n_packed; i++)
        if (!isfinite(H->score[i]))
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: layer %d head %d: non-finite score", l, h);
    for (size_t i = 0; H->rscore && i < H->n_res; i++)
        if (!isfinite(H->rscore[i]))
            return vq_fail(err, VQ_ERR_FORMAT, "cache file: layer %d head %d: non-finite score", l, h);
    vq_codec *cd[2] = { L->kc, L->vc };
    uint8_t **pages[2] = { H->kpages, H->vpages };
    for (int r = 0; r < 2; r++) {
        if (!vq_codec_is_ready(cd[r]))
            continue; /* no calibration state: it cannot decode (append refuses too) */
        size_t bpt = vq_codec_bytes_per_token(cd[r]);
        for (size_t s0 = 0; s0 < H->n_packed; s0 += G) {
            const uint8_t *src = pages[r][s0 / L->page_tokens] + (s0 % L->page_tokens) * bpt;
            VQ_TRY(vq_cross_bind(c, L, (size_t)h, s0, L->kc, L->vc));
            VQ_TRY(vq_codec_decode(cd[r], src, G, c->tmp));
            for (size_t x = 0; x < G * D; x++)
                if (!isfinite(c->tmp[x]))
                    return vq_fail(err, VQ_ERR_FORMAT, "cache file: layer %d head %d %s slot %zu: non-finite value", l,
                                   h, r ? "value" : "key", s0);
        }
    }
    const uint8_t *res[2] = { H->rk, H->rv };
    for (int r = 0; r < 2; r++)
        for (size_t x = 0; x < H->n_res * D; x++) {
            uint16_t hv = vq_get_u16(res[r] + 2 * x);
            if ((hv & 0x7c00u) == 0x7c00u)
                return vq_fail(err, VQ_ERR_FORMAT, "cache file: layer %d head %d: non-finite residual value", l, h);
        }
    return VQ_OK;
}

static vq_status load_head(vq_cache *c, vq_cache_layer *L, vq_cache_head *H, rd *r, int l, int h)
{
    const size_t D2 = 2 * (size_t)L->shape.head_dim;
    const size_t bk = vq_codec_bytes_per_token(L->kc), bv = vq_codec_bytes_per_token(L->vc);
    uint64_t np, nr, nd;
    VQ_TRY(get_u64(r, &np, "slot counts"));
    VQ_TRY(get_u64(r, &nr, "slot counts"));
    VQ_TRY(get_u64(r, &nd, "slot counts"));
    size_t per_slot = 9 + bk + bv, left = r->len - r->off;
    if (np > left / per_slot || np % L->group != 0 || nd > np)
        return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: %llu packed slots (%llu dead) invalid", l,
                       h, (unsigned long long)np, (unsigned long long)nd);
    int grown = 0;
    if (nr * (8 + 2 * D2) <= left - np * per_slot && nr >= L->res_cap) /* xkv before its basis: all fp16 */
        VQ_TRY(vq_cross_grow(c, L, (size_t)nr + 1, &grown));
    if ((nr >= L->res_cap && !grown) || nr * (8 + 2 * D2) > left - np * per_slot)
        return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: %llu residual tokens invalid", l, h,
                       (unsigned long long)nr);
    VQ_TRY(vq_cache_reserve_slots(c, L, H, (size_t)np));
    const uint8_t *p = r->p + r->off;
    size_t dead = 0;
    int64_t prev = -1;
    const size_t sinks = vq_cache_layer_sinks(c, L);
    int gaps = 0;
    for (size_t i = 0; i < np; i++) {
        int32_t pi = (int32_t)vq_get_u32(p + 4 * i);
        uint8_t a = p[4 * np + i];
        if (a > 1 || pi <= prev)
            return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d slot %zu: bad position or flag", l, h, i);
        if (!isfinite(vq_get_f32(p + 5 * np + 4 * i)))
            return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: non-finite score", l, h);
        gaps |= i > 0 && pi != prev + 1;
        prev = pi;
        dead += !a;
    }
    if (dead != nd)
        return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: dead count mismatch", l, h);
    const int64_t last_packed = prev;
    /* only the tables the cache needs (cache_internal.h) */
    H->pos_base = np ? (int32_t)vq_get_u32(p) : 0;
    if (gaps) {
        VQ_TRY(vq_cache_head_materialize_pos(c, H));
        for (size_t i = 0; i < np; i++)
            H->pos[i] = (int32_t)vq_get_u32(p + 4 * i);
    }
    if (dead) {
        H->alive = malloc(H->cap_slots ? H->cap_slots : 1);
        if (!H->alive)
            return vq_fail(r->err, VQ_ERR_NOMEM, "cache file: out of memory");
        memcpy(H->alive, p + 4 * np, np);
    }
    for (size_t i = 0; H->score && i < np; i++)
        H->score[i] = vq_get_f32(p + 5 * np + 4 * i);
    p += 9 * np;
    for (size_t s0 = 0; s0 < np; s0 += L->page_tokens) {
        size_t m = np - s0 < L->page_tokens ? np - s0 : L->page_tokens;
        memcpy(H->kpages[s0 / L->page_tokens], p, m * bk);
        p += m * bk;
    }
    for (size_t s0 = 0; s0 < np; s0 += L->page_tokens) {
        size_t m = np - s0 < L->page_tokens ? np - s0 : L->page_tokens;
        memcpy(H->vpages[s0 / L->page_tokens], p, m * bv);
        p += m * bv;
    }
    H->n_packed = np;
    H->n_dead = H->dead_floor = nd;
    for (size_t i = 0; i < nr; i++) {
        H->rpos[i] = (int32_t)vq_get_u32(p + 4 * i);
        if (!isfinite(vq_get_f32(p + 4 * nr + 4 * i)))
            return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: non-finite score", l, h);
        if (H->rscore)
            H->rscore[i] = vq_get_f32(p + 4 * nr + 4 * i);
        if (H->rpos[i] <= prev && !sinks)
            return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d residual %zu: bad position", l, h, i);
        prev = sinks && H->rpos[i] < prev ? prev : H->rpos[i];
    }
    p += 8 * nr;
    memcpy(H->rk, p, nr * D2);
    memcpy(H->rv, p + nr * D2, nr * D2);
    p += 2 * nr * D2;
    H->n_res = nr;
    if (sinks) /* cache/sinks.h: [sinks | tokens after the packed ones] */
        VQ_TRY(vq_cache_sinks_validate(c, L, H, last_packed, r->err));
    if (prev > L->last_pos)
        return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: position after the last one", l, h);
    r->off = (size_t)(p - r->p);
    if (H->rx) {
        size_t nx = (size_t)np + (size_t)nr;
        VQ_TRY(need(r, nx * 5, "minicache ratios"));
        for (size_t i = 0; i < nx; i++) {
            const uint8_t *b = r->p + r->off + 5 * i;
            vq_xslot x = { vq_get_u16(b), vq_get_u16(b + 2), b[4] };
            if (x.merged > 1 || (x.merged && (!isfinite(vq_fp16_to_fp32(x.rk)) || !isfinite(vq_fp16_to_fp32(x.rv)))))
                return vq_fail(r->err, VQ_ERR_FORMAT, "cache file: layer %d head %d: bad minicache entry %zu", l, h, i);
            if (i < np)
                H->x[i] = x;
            else
                H->rx[i - np] = x;
        }
        r->off += nx * 5;
    }
    VQ_TRY(check_finite(c, L, H, r->err, l, h));
    return VQ_OK;
}

/* A failure of a rebuilding step is the file's fault (VQ_ERR_FORMAT)
 * unless memory ran out, which stays VQ_ERR_NOMEM. */
static vq_status file_fault(vq_status st)
{
    return st == VQ_ERR_NOMEM ? VQ_ERR_NOMEM : VQ_ERR_FORMAT;
}

static vq_status load_state(vq_codec *cd, rd *r, const char *what)
{
    uint32_t S;
    VQ_TRY(get_u32(r, &S, what));
    if (S == 0)
        return VQ_OK;
    VQ_TRY(need(r, S, what));
    vq_status st = vq_codec_state_read(cd, r->p + r->off, S);
    if (st != VQ_OK)
        return vq_fail(r->err, file_fault(st), "cache file: %s: %s", what, vq_codec_error(cd));
    r->off += S;
    return VQ_OK;
}

/* the cross method's section (version 2, xkv): installed before the
 * layers' codes are read */
static vq_status load_cross(vq_cache *c, rd *r)
{
    size_t used = 0;
    VQ_TRY(c->cross->load(c, r->p + r->off, r->len - r->off, &used, r->err));
    r->off += used;
    return VQ_OK;
}

static vq_status parse(const uint8_t *buf, size_t len, const vq_cache_shape *expect, vq_cache **out, char *err)
{
    if (len < 32 || memcmp(buf, CACHE_MAGIC, 4) != 0)
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: bad magic or too short (%zu bytes)", len);
    uint32_t ver = vq_get_u32(buf + 4);
    char note[48];
    if (ver < CACHE_VERSION_PLAIN || ver > CACHE_VERSION)
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: version %u%s, this build (%s) reads 1 to %u", ver,
                       vq_file_writer_note(ver > CACHE_VERSION ? buf : NULL, len, note), VQ_VERSION_STRING,
                       CACHE_VERSION);
    if (vq_crc32(0, buf, len - 4) != vq_get_u32(buf + len - 4))
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: checksum mismatch (truncated or corrupted)");
    rd r = { buf, len - 4, 8, err };
    if (ver >= CACHE_VERSION_WRITER) {
        uint32_t writer = 0;
        VQ_TRY(get_u32(&r, &writer, "header"));
        VQ_TRY(vq_file_writer_check(writer, "cache file", err));
    }
    uint64_t fp, seed;
    uint32_t C = 0, nl = 0;
    VQ_TRY(get_u64(&r, &fp, "header"));
    VQ_TRY(get_u64(&r, &seed, "header"));
    VQ_TRY(get_u32(&r, &C, "config"));
    VQ_TRY(need(&r, C, "config"));
    if (C > 1u << 20)
        return vq_fail(err, VQ_ERR_FORMAT, "cache file: config of %u bytes", C);
    char *txt = malloc((size_t)C + 1);
    if (!txt)
        return vq_fail(err, VQ_ERR_NOMEM, "cache load: out of memory");
    memcpy(txt, r.p + r.off, C);
    txt[C] = '\0';
    r.off += C;
    vq_cache_config *cfg = NULL;
    vq_status st = vq_cache_config_parse(txt, &cfg);
    free(txt);
    if (st != VQ_OK)
        return vq_fail(err, file_fault(st), "cache file: stored config: %s", vq_last_error());
    st = get_u32(&r, &nl, "shape");
    if (st == VQ_OK && (nl < 1 || nl > VQ_MAX_LAYERS || (size_t)nl * 20 > r.len - r.off))
        st = vq_fail(err, VQ_ERR_FORMAT, "cache file: %u layers", nl);
    vq_layer_shape *ls = st == VQ_OK ? calloc(nl, sizeof *ls) : NULL;
    if (st == VQ_OK && !ls)
        st = vq_fail(err, VQ_ERR_NOMEM, "cache load: out of memory");
    for (uint32_t l = 0; st == VQ_OK && l < nl; l++) {
        uint32_t f[5] = { 0 };
        for (int i = 0; st == VQ_OK && i < 5; i++)
            st = get_u32(&r, &f[i], "shape");
        for (int i = 0; i < 4; i++)
            if (f[i] > 1u << 20)
                st = vq_fail(err, VQ_ERR_FORMAT, "cache file: layer %u shape field out of range", l);
        float cap;
        memcpy(&cap, &f[4], 4);
        ls[l] = (vq_layer_shape){ (int)f[0], (int)f[1], (int)f[2], (int)f[3], cap };
    }
    vq_cache_shape sh = { (int)nl, ls, fp };
    if (st == VQ_OK && expect) {
        int same = expect->fingerprint == fp && expect->n_layers == (int)nl && expect->layers;
        for (uint32_t l = 0; same && l < nl; l++)
            same = expect->layers[l].n_kv_heads == ls[l].n_kv_heads && expect->layers[l].n_q_heads == ls[l].n_q_heads &&
                   expect->layers[l].head_dim == ls[l].head_dim && expect->layers[l].window == ls[l].window &&
                   expect->layers[l].softcap == ls[l].softcap;
        if (!same)
            st = vq_fail(err, VQ_ERR_FORMAT,
                         "cache file belongs to another model (fingerprint %016llx, %u layers; expected %016llx, %d layers)",
                         (unsigned long long)fp, nl, (unsigned long long)expect->fingerprint, expect->n_layers);
    }
    vq_cache *c = NULL;
    if (st == VQ_OK) {
        st = vq_cache_create_ex(cfg, &sh, seed, 1, &c);
        if (st != VQ_OK)
            st = vq_fail(err, file_fault(st), "cache file: cannot rebuild the cache: %s", vq_last_error());
    }
    free(ls);
    vq_cache_config_free(cfg);
    if (st == VQ_OK && ver < CACHE_VERSION_WRITER && (ver == CACHE_VERSION_XKV) != vq_cross_has_section(c))
        st = vq_fail(err, VQ_ERR_FORMAT, "cache file: version %u does not match its cross=%s config", ver,
                     c->cfg->cross);
    if (st == VQ_OK && (ver == CACHE_VERSION) != (c->cfg->prerope != 0))
        st = vq_fail(err, VQ_ERR_FORMAT, "cache file: version %u does not match its prerope=%d config", ver,
                     (int)c->cfg->prerope);
    if (st == VQ_OK && vq_cross_has_section(c))
        st = load_cross(c, &r);
    for (int l = 0; st == VQ_OK && l < (int)nl; l++) {
        vq_cache_layer *L = &c->layers[l];
        uint32_t lp, a0, an;
        st = get_u32(&r, &lp, "layer header");
        if (st == VQ_OK)
            st = get_u32(&r, &a0, "layer header");
        if (st == VQ_OK)
            st = get_u32(&r, &an, "layer header");
        if (st != VQ_OK)
            break;
        L->last_pos = (int32_t)lp;
        L->app_pos0 = (int32_t)a0;
        L->app_n = an;
        if (L->last_pos < -1 || (an > 0 && (L->app_pos0 < 0 || (int64_t)L->app_pos0 + an - 1 != L->last_pos))) {
            st = vq_fail(err, VQ_ERR_FORMAT, "cache file: layer %d: inconsistent positions", l);
            break;
        }
        st = load_state(L->kc, &r, "key codec state");
        if (st == VQ_OK)
            st = load_state(L->vc, &r, "value codec state");
        for (int h = 0; st == VQ_OK && h < L->shape.n_kv_heads; h++)
            st = load_head(c, L, &L->heads[h], &r, l, h);
    }
    if (st == VQ_OK && ver == CACHE_VERSION) {
        size_t used = 0;
        st = vq_cache_prerope_section_read(c, r.p + r.off, r.len - r.off, &used, err);
        r.off += used;
    }
    if (st == VQ_OK && r.off != r.len)
        st = vq_fail(err, VQ_ERR_FORMAT, "cache file: %zu unexpected bytes after the data", r.len - r.off);
    if (st != VQ_OK) {
        vq_cache_free(c);
        return st;
    }
    *out = c;
    return VQ_OK;
}

vq_status vq_cache_load(const char *path, const vq_cache_shape *expect, vq_cache **out)
{
    if (!out)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_load: out is NULL");
    *out = NULL;
    if (!path)
        return vq_fail(NULL, VQ_ERR_INVALID_ARG, "vq_cache_load: path is NULL");
    char err[VQ_ERRLEN] = "";
    uint8_t *buf = NULL;
    size_t len = 0;
    VQ_TRY(vq_file_read_all(path, CACHE_MAX_FILE, &buf, &len, err));
    vq_status st = parse(buf, len, expect, out, err);
    free(buf);
    if (st != VQ_OK)
        vq_fail(NULL, st, "%s: %s", path, err);
    return st;
}
