/* kivix.c -- KIVI extended: asymmetric min/max integer codes at any width
 * 1..8 bits (keys per channel over a group of tokens, values per token over
 * groups of channels, as `kivi`), plus a dense-and-sparse outlier table
 * (Hooper et al., "KVQuant", 2024): per block the `outliers` entries whose
 * removal shrinks the quantization ranges most are stored exactly (fp16)
 * beside the codes, and the min/max of each range is taken without them.
 *
 * Parameters: bits 1..8 (default 3), group (keys: tokens per block, 16, 32,
 * 64, 128 or 256; values: channels per scale, 16..256 dividing head_dim;
 * default 32), outliers 0..1024 entries per block (default 0; at most the
 * block's entry count), qbits 0 or 8 (2-4 bits without nu, head_dim a
 * multiple of 64; keys: scored after RoPE against the query folded with
 * the block's scales and rounded to int8, kernels/codes_qdot.h, as kivi's
 * qbits=8 keys, each outlier then adding q_c * (x - decoded dense value);
 * values (no outliers, group a multiple of 16): the attention weights
 * rounded to int8 per block of 32 rows, summed against the codes by
 * kernels/kivi_qaxpy.h, as kivi's); 8 by default where those conditions
 * hold (since session 56; before: 0), else 0.
 * Canonical "kivix:bits=B,group=G,outliers=N" (",nu=S" when set, ",qbits=Q"
 * where 8 is the default, whatever Q is).
 *
 * Range rule: for values x of a range with min m and max M (outliers left
 * out): s = (M - m)/(2^b - 1) and m rounded to fp16, code = round((x - m)/s)
 * clamped to [0, 2^b - 1], x^ = s*code + m (as kivi).
 *
 * Outlier choice (greedy, deterministic): each range's values are ordered
 * by value, then element index;
 * N times, remove the extreme (lowest or highest remaining) value whose
 * removal most reduces n_r * (M_r - m_r)^2 summed over ranges (the squared
 * error of uniform codes is proportional to it); ties go to the lower range
 * index, then to the low side. Removed entries are stored as (u16 index,
 * fp16 value) and decode writes them back exactly (to fp16 precision);
 * their dense codes are 0.
 *
 * Role VQ_ROLE_KEY (block_tokens = G, D channels):
 *     [0, 2D)            fp16 scale of channel c at 2c
 *     [2D, 4D)           fp16 min of channel c at 2D + 2c
 *     [4D, 4D + G*D*b/8) codes, element t*D + c of the block at bit
 *                        (t*D + c)*b (bitstream.h, LSB first)
 *     then N entries     u16 index t*D + c, fp16 value
 *     then zero padding  to a multiple of G bytes
 *   block_bytes = G * ceil((4D + G*D*b/8 + 4N) / G);
 *   bytes/token = block_bytes / G (= b*D/8 + 4D/G + 4N/G when G divides).
 * Role VQ_ROLE_VALUE (block_tokens = 1, ng = D/G groups of G channels):
 *     [0, 2ng)           fp16 scale of group g at 2g
 *     [2ng, 4ng)         fp16 min of group g
 *     [4ng, 4ng + D*b/8) codes, channel c at bit c*b
 *     then N entries     u16 channel index, fp16 value
 *   bytes/token = 4D/G + b*D/8 + 4N.
 *
 * Kernels (scalar references): score and accumulate decode a block to
 * floats (scratch) and use plain dot products / sums; `values` is decode
 * (channel domain, accum_size = D, finish is a copy), which gives the
 * tiled SIMD path. Keys with uniform 2-4-bit codes are kivi's key blocks
 * plus the outlier table, so they score float queries through kernels.h
 * kivi_kdot where that is faster (kx_kdot_keys; no decoded block), each
 * outlier then adding q_c * (x - decoded dense value), as the qbits=8
 * keys. Values in kivi's row format (uniform 1-4-bit codes, no
 * outliers, group a multiple of 16) accumulate through kernels.h
 * kivi_axpy at every query count, as kivi's values do. Keys with uniform
 * levels packed before RoPE (cache/prerope.h) are scored from their codes by
 * score_rope (kernels.h rope_codes_dot: no decoded block). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bitstream.h"
#include "codec/codec.h"
#include "codec/vecops.h"
#include "core/fp16.h"
#include "core/io.h"
#include "kernels/kernels.h"
#include "kernels/prefetch.h"

#define KX_FP16_MAX 65504.0f
#define KX_QS 16 /* queries prepared at a time by the int8 key score */
#define KX_KEEP 3 /* a range's lowest and highest values one scan keeps for the greedy */

typedef struct {
    int bits, group, outliers;
    int nu;                   /* 0 uniform levels, else 100 x sigma of the level density */
    int qbits;                /* 8: keys against int8 queries (kernels/codes_qdot.h), values summed with
                               * int8 weights (kernels/kivi_qaxpy.h); 0: float */
    uint8_t *qprep;           /* keys with qbits=8: KX_QS prepared int8 queries */
    float lev[256];           /* nu > 0: levels in [0, 1], lev[0] = 0, lev[maxc] = 1 */
    float thr[255];           /* nu > 0: thresholds between levels */
    float lv[256];            /* decode level of each code: code, or maxc * lev */
    size_t ranges, range_len; /* ranges per block, values per range */
    float *dec;               /* block_tokens * D decoded floats */
    uint8_t *c8;              /* block_tokens * D codes, one per byte */
    float *sv;                /* values of a block [ranges][range_len] (clamped) */
    uint32_t *si;             /* their element indices */
    size_t *left;             /* per range: values left (not outliers) */
    uint16_t *kept;           /* per range: KX_KEEP lowest values left, in order, then KX_KEEP highest */
    uint8_t *n_kept;          /* per range: how many of each the lists hold */
    double *gain;             /* per range: the greedy's gains, low side and high side */
    uint8_t *gone;            /* per position: taken out as an outlier */
} kx_state;

/* float-query keys scored through kivi_kdot (kx_score_kdot): uniform
 * levels at 2-4 bits (its fused widths); else the tile */
static inline int kx_kdot_keys(const vq_codec *c, const kx_state *st)
{
    return c->role == VQ_ROLE_KEY && !st->qbits && !st->nu && c->head_dim % 16 == 0 && st->bits >= 2 && st->bits <= 4;
}

static inline float ld16(const uint8_t *p) { return vq_fp16_to_fp32(vq_get_u16(p)); }
/* the element index of outlier entry k of the table at tab (u16, LE) */
static inline size_t outlier_at(const uint8_t *tab, int k) { return (size_t)vq_get_u16(tab + 4 * (size_t)k); }
static inline void st16(uint8_t *p, float f) { vq_put_u16(p, vq_fp32_to_fp16(f)); }
static inline float clamp16(float f)
{
    if (!(f == f))
        return 0.0f;
    return f > KX_FP16_MAX ? KX_FP16_MAX : (f < -KX_FP16_MAX ? -KX_FP16_MAX : f);
}

static void kx_destroy(vq_codec *c)
{
    kx_state *st = c->impl;
    if (st) {
        free(st->dec);
        free(st->c8);
        free(st->sv);
        free(st->si);
        free(st->left);
        free(st->kept);
        free(st->n_kept);
        free(st->gone);
        free(st->gain);
        free(st->qprep);
    }
    free(st);
    c->impl = NULL;
}

/* Non-uniform levels (nu = 100 sigma > 0): the range [min, max] normalised
 * to [0, 1] and the 2^b levels put at equal steps of the CDF of a normal
 * N(1/2, sigma^2) truncated to [0, 1] (so lev[0] = 0 and lev[max] = 1: the
 * range's extremes stay exact). By the Panter-Dite rule the MSE-optimal
 * level density of a density p goes as p^(1/3): for values normal within
 * their range with sd sigma0, sigma = sqrt(3) sigma0. Codes are the nearest
 * level (thresholds at midpoints). */
static void kx_levels(kx_state *st)
{
    const unsigned maxc = (1u << st->bits) - 1;
    const double sig = st->nu / 100.0, c0 = 0.5 * erfc(0.5 / (sig * sqrt(2.0))), c1 = 1.0 - c0;
    st->lev[0] = 0.0f;
    st->lev[maxc] = 1.0f;
    for (unsigned i = 1; i < maxc; i++) {
        double target = c0 + (c1 - c0) * (double)i / (double)maxc, lo = 0.0, hi = 1.0;
        for (int it = 0; it < 60; it++) { /* bisection on the normal CDF */
            double mid = 0.5 * (lo + hi), cdf = 0.5 * erfc(-(mid - 0.5) / (sig * sqrt(2.0)));
            if (cdf < target)
                lo = mid;
            else
                hi = mid;
        }
        st->lev[i] = (float)(0.5 * (lo + hi));
    }
    for (unsigned i = 0; i < maxc; i++)
        st->thr[i] = 0.5f * (st->lev[i] + st->lev[i + 1]);
}

/* nearest level of u = (x - m) / range */
static inline unsigned kx_nearest(const kx_state *st, float u, unsigned maxc)
{
    unsigned lo = 0, hi = maxc; /* first threshold >= u: binary search */
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (st->thr[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static vq_status kx_init(vq_codec *c, vq_spec *spec)
{
    long bits, group, outl, nu, qbits;
    const vq_spec_int_field params[] = {
        { "bits", 3, 1, 8, &bits }, { "group", 32, 16, 256, &group }, { "outliers", 0, 0, VQ_OUTLIERS_MAX, &outl },
        { "nu", 0, 0, 200, &nu },
    };
    VQ_TRY(vq_spec_ints(spec, params, sizeof params / sizeof *params, c->err));
    /* qbits=8 by default (since session 56) wherever it is accepted below */
    const int int8_ok = bits >= 2 && bits <= 4 && !nu && c->head_dim % 64 == 0 &&
                        (c->role == VQ_ROLE_KEY || (!outl && group % 16 == 0));
    VQ_TRY(vq_spec_int(spec, "qbits", int8_ok ? 8 : 0, 0, 8, &qbits, c->err));
    if (qbits != 0 && qbits != 8)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivix: qbits must be 0 (float attention weights) or 8, got %ld", qbits);
    if (qbits && (bits < 2 || bits > 4 || nu || c->head_dim % 64 || (c->role == VQ_ROLE_VALUE && outl)))
        return vq_fail(c->err, VQ_ERR_INVALID_ARG,
                       "kivix: qbits=8 (int8 queries for keys, int8 attention weights for values) is for 2-4 bits "
                       "without nu (values also without outliers), head_dim a multiple of 64");
    const size_t D = (size_t)c->head_dim, G = (size_t)group;
    if (c->role == VQ_ROLE_KEY && (G & (G - 1)) != 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivix: parameter group=%ld unsupported for keys (16, 32, 64, 128 or 256)",
                       group);
    if (c->role == VQ_ROLE_VALUE && D % G != 0)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivix: parameter group=%ld does not divide head_dim %zu (value groups are channels)",
                       group, D);
    size_t entries = c->role == VQ_ROLE_KEY ? G * D : D;
    if ((size_t)outl > entries)
        return vq_fail(c->err, VQ_ERR_INVALID_ARG, "kivix: parameter outliers=%ld exceeds the %zu entries of a block", outl,
                       entries);
    kx_state *st = calloc(1, sizeof *st);
    if (!st)
        return vq_fail(c->err, VQ_ERR_NOMEM, "kivix: out of memory");
    c->impl = st;
    st->bits = (int)bits;
    st->group = (int)group;
    st->outliers = (int)outl;
    st->nu = (int)nu;
    st->qbits = (int)qbits;
    if (nu > 0)
        kx_levels(st);
    for (unsigned q = 0; q < (1u << st->bits); q++)
        st->lv[q] = st->nu ? st->lev[q] : (float)q;
    const size_t codes = (c->role == VQ_ROLE_KEY ? G * D : D) * (size_t)bits / 8;
    if (c->role == VQ_ROLE_KEY) {
        c->block_tokens = G;
        size_t raw = 4 * D + codes + 4 * (size_t)outl;
        c->block_bytes = (raw + G - 1) / G * G;
        st->ranges = D;
        st->range_len = G;
    } else {
        c->block_tokens = 1;
        c->block_bytes = 4 * D / G + codes + 4 * (size_t)outl;
        st->ranges = D / G;
        st->range_len = G;
    }
    st->dec = malloc(c->block_tokens * D * sizeof *st->dec);
    st->c8 = malloc(c->block_tokens * D);
    st->sv = malloc(entries * sizeof *st->sv);
    st->si = malloc(entries * sizeof *st->si);
    st->left = malloc(st->ranges * sizeof *st->left);
    st->kept = malloc(2 * KX_KEEP * st->ranges * sizeof *st->kept);
    st->n_kept = malloc(2 * st->ranges);
    st->gone = malloc(entries);
    st->gain = malloc(2 * st->ranges * sizeof *st->gain);
    if (st->qbits && c->role == VQ_ROLE_KEY)
        st->qprep = malloc(KX_QS * vq_codes_query_bytes(D));
    if (!st->dec || !st->c8 || !st->sv || !st->si || !st->left || !st->kept || !st->n_kept || !st->gone || !st->gain ||
        (st->qbits && c->role == VQ_ROLE_KEY && !st->qprep))
        return vq_fail(c->err, VQ_ERR_NOMEM, "kivix: out of memory"); /* destroy frees */
    c->shared_bytes = 0;
    c->query_bytes = sizeof(float) * D;
    c->accum_size = D;
    /* values in kivi's row format (uniform codes of 1-4 bits, no outlier
     * table): summed from the codes by kivi_axpy, never the tile */
    c->accum_own = c->role == VQ_ROLE_VALUE && !st->nu && !st->outliers && st->bits <= 4 &&
                   D % 16 == 0 && G % 16 == 0;
    c->value_head = c->accum_own && st->qbits ? vq_block_lead(c->block_bytes) : 0;
    c->score_own = c->role == VQ_ROLE_KEY && (st->qbits || kx_kdot_keys(c, st)); /* never the tile */
    size_t o = (size_t)snprintf(c->canon, sizeof c->canon, "kivix:bits=%d,group=%d,outliers=%d", st->bits, st->group,
                                st->outliers);
    if (st->nu && o < sizeof c->canon)
        o += (size_t)snprintf(c->canon + o, sizeof c->canon - o, ",nu=%d", st->nu);
    if ((int8_ok || st->qbits) && o < sizeof c->canon) /* named either way where its default is 8 */
        snprintf(c->canon + o, sizeof c->canon - o, ",qbits=%d", st->qbits);
    return VQ_OK;
}

/* element e of range r in a block (keys: channel r, token e; values:
 * channels r*G + e) -> element index in the block's t*D + c order */
static inline size_t kx_elem(const vq_codec *c, const kx_state *st, size_t r, size_t e)
{
    return c->role == VQ_ROLE_KEY ? e * (size_t)c->head_dim + r : r * st->range_len + e;
}

/* The outlier choice needs, per range, only its two lowest and two highest
 * values left, in the order (value, element index) (the same as a sorted
 * range's two ends), and it only ever takes a range's lowest or highest
 * value: one scan keeps each range's KX_KEEP lowest and KX_KEEP highest
 * values in order, a value taken leaves both lists, and the range is
 * scanned again only when a list it still needs runs below two.
 * kx_before(v, ix, a, b): position a precedes b. */
static inline int kx_before(const float *v, const uint32_t *ix, size_t a, size_t b)
{
    return v[a] < v[b] || (v[a] == v[b] && ix[a] < ix[b]);
}

/* range r's lists from its values left (gone[i] == 0) */
static void kx_scan(kx_state *st, size_t r, size_t n)
{
    const float *v = st->sv + r * n;
    const uint32_t *ix = st->si + r * n;
    const uint8_t *gone = st->gone + r * n;
    uint16_t *lo = st->kept + 2 * KX_KEEP * r, *hi = lo + KX_KEEP;
    size_t nl = 0, nh = 0;
    for (size_t i = 0; i < n; i++) {
        if (gone[i])
            continue;
        if (nl < KX_KEEP || kx_before(v, ix, i, lo[nl - 1])) {
            size_t p = nl < KX_KEEP ? nl++ : KX_KEEP - 1;
            for (; p > 0 && kx_before(v, ix, i, lo[p - 1]); p--)
                lo[p] = lo[p - 1];
            lo[p] = (uint16_t)i;
        }
        if (nh < KX_KEEP || kx_before(v, ix, hi[nh - 1], i)) {
            size_t p = nh < KX_KEEP ? nh++ : KX_KEEP - 1;
            for (; p > 0 && kx_before(v, ix, hi[p - 1], i); p--)
                hi[p] = hi[p - 1];
            hi[p] = (uint16_t)i;
        }
    }
    st->n_kept[2 * r] = (uint8_t)nl, st->n_kept[2 * r + 1] = (uint8_t)nh;
}

/* position `slot` of range r taken out of its lists */
static void kx_unkeep(kx_state *st, size_t r, uint16_t slot)
{
    for (int side = 0; side < 2; side++) {
        uint16_t *l = st->kept + 2 * KX_KEEP * r + (size_t)side * KX_KEEP;
        uint8_t *nk = st->n_kept + 2 * r + side;
        size_t i = 0;
        while (i < *nk && l[i] != slot)
            i++;
        if (i == *nk)
            continue;
        memmove(l + i, l + i + 1, (*nk - i - 1) * sizeof *l);
        (*nk)--;
    }
}

/* the greedy's cost of a range whose lowest and highest values left are
 * lo and hi, with `left` values */
static inline double kx_cost(float lo, float hi, size_t left)
{
    double r = (double)hi - (double)lo;
    return (double)left * r * r;
}

/* the position of range r's lowest (side 0) or highest (side 1) value left
 * (its list's first; valid while the range holds a value and kx_gains ran
 * after its last change) */
static inline size_t kx_end(const kx_state *st, size_t r, int side)
{
    return st->kept[2 * KX_KEEP * r + (size_t)side * KX_KEEP];
}

/* range r's lists brought to two of each (as many as it holds) and its
 * gains g[0] (its lowest value out) and g[1] (its highest out), the
 * reduction of n_r (M_r - m_r)^2: with one value left,
 * 0 for the low side only (taking it gains nothing: chosen only when
 * nothing else gains); a side that cannot be chosen reads -2 (below any
 * gain and the greedy's starting -1) */
static void kx_gains(kx_state *st, size_t r, size_t n, double g[2])
{
    const float *v = st->sv + r * n;
    const size_t left = st->left[r];
    const size_t want = left < 2 ? left : 2;
    if (st->n_kept[2 * r] < want || st->n_kept[2 * r + 1] < want)
        kx_scan(st, r, n);
    g[0] = left == 1 ? 0.0 : -2.0, g[1] = -2.0;
    if (left < 2)
        return;
    const uint16_t *lo = st->kept + 2 * KX_KEEP * r, *hi = lo + KX_KEEP; /* two each now */
    const double now = kx_cost(v[lo[0]], v[hi[0]], left);
    g[0] = now - kx_cost(v[lo[1]], v[hi[0]], left - 1), g[1] = now - kx_cost(v[lo[0]], v[hi[1]], left - 1);
}

/* one block: x holds block_tokens * D floats (t*D + c); writes dst */
static void kx_encode_block(vq_codec *c, kx_state *st, const float *x, uint8_t *dst)
{
    const size_t D = (size_t)c->head_dim, R = st->ranges, n = st->range_len;
    const int b = st->bits;
    const unsigned maxc = (1u << b) - 1;
    const size_t entries = c->block_tokens * D;
    uint8_t *codes = dst + 4 * R;
    uint8_t *tab = codes + entries * (size_t)b / 8;
    /* every range's values (NaN read as 0, values clamped to fp16) */
    memset(st->gone, 0, entries);
    for (size_t r = 0; r < R; r++) {
        float *v = st->sv + r * n;
        uint32_t *ix = st->si + r * n;
        for (size_t e = 0; e < n; e++) {
            size_t el = kx_elem(c, st, r, e);
            v[e] = clamp16(x[el]);
            ix[e] = (uint32_t)el;
        }
        st->left[r] = n;
    }
    /* greedy outlier removal: each range's two gains (low side, high side)
     * change only when that range loses a value, so they are kept and only
     * the chosen range's are computed again */
    memset(st->n_kept, 0, 2 * R);
    for (size_t r = 0; r < R && st->outliers; r++)
        kx_gains(st, r, n, st->gain + 2 * r);
    for (int k = 0; k < st->outliers; k++) {
        double best = -1;
        size_t br = 0;
        int bside = 0;
        for (size_t r = 0; r < R; r++) {
            if (st->gain[2 * r] > best)
                best = st->gain[2 * r], br = r, bside = 0;
            if (st->gain[2 * r + 1] > best)
                best = st->gain[2 * r + 1], br = r, bside = 1;
        }
        if (best < 0)
            break; /* every range empty (cannot happen while outliers <= entries) */
        const float *v = st->sv + br * n;
        const uint32_t *ix = st->si + br * n;
        const uint16_t slot = (uint16_t)kx_end(st, br, bside);
        uint8_t *e = tab + 4 * (size_t)k;
        e[0] = (uint8_t)ix[slot];
        e[1] = (uint8_t)(ix[slot] >> 8);
        st16(e + 2, v[slot]);
        st->gone[br * n + slot] = 1;
        st->left[br]--;
        kx_unkeep(st, br, slot);
        kx_gains(st, br, n, st->gain + 2 * br);
    }
    /* ranges and codes (one per byte in c8, element order; an outlier's 0)
     * of the remaining values */
    uint8_t *c8 = st->c8;
    memset(c8, 0, entries);
    for (size_t r = 0; r < R; r++) {
        const float *v = st->sv + r * n;
        const uint32_t *ix = st->si + r * n;
        const uint8_t *gone = st->gone + r * n;
        float s = 0.0f, m = 0.0f;
        if (st->left[r] > 0) { /* the lowest and highest left: the greedy's lists, or all of the range's */
            float lo = v[0], hi = v[0];
            if (st->outliers)
                lo = v[kx_end(st, r, 0)], hi = v[kx_end(st, r, 1)];
            else
                for (size_t i = 1; i < n; i++)
                    lo = v[i] < lo ? v[i] : lo, hi = v[i] > hi ? v[i] : hi;
            m = vq_fp16_to_fp32(vq_fp32_to_fp16(lo));
            float scale = (hi - m) / (float)maxc;
            s = scale > 0.0f ? vq_fp16_to_fp32(vq_fp32_to_fp16(clamp16(scale))) : 0.0f;
        }
        st16(dst + 2 * r, s);
        st16(dst + 2 * R + 2 * r, m);
        for (size_t i = 0; i < n; i++) {
            if (gone[i])
                continue;
            unsigned q = 0;
            if (s > 0.0f && st->nu)
                q = kx_nearest(st, (v[i] - m) / (s * (float)maxc), maxc);
            else if (s > 0.0f) {
                float t = (v[i] - m) / s + 0.5f;
                q = t >= (float)maxc ? maxc : (t > 0.0f ? (unsigned)t : 0u);
            }
            c8[ix[i]] = (uint8_t)q;
        }
    }
    vq_bits_pack(c8, entries, b, codes);
}

static void kx_encode(vq_codec *c, const float *x, size_t n, uint8_t *dst)
{
    kx_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, B = c->block_tokens;
    memset(dst, 0, n / B * c->block_bytes);
    for (size_t blk = 0; blk < n / B; blk++)
        kx_encode_block(c, st, x + blk * B * D, dst + blk * c->block_bytes);
}

static void kx_decode_block(const vq_codec *c, const kx_state *st, const uint8_t *src, float *out)
{
    const size_t D = (size_t)c->head_dim, R = st->ranges;
    const int b = st->bits;
    const size_t entries = c->block_tokens * D;
    const uint8_t *codes = src + 4 * R;
    const uint8_t *tab = codes + entries * (size_t)b / 8;
    float sc[256], mn[256];
    const vq_kernels *kern = vq_kernels_get();
    kern->fp16_row(src, sc, R); /* exact conversions */
    kern->fp16_row(src + 2 * R, mn, R);
    if (!st->nu && b <= 4 && D % 16 == 0 && st->range_len % 16 == 0) {
        /* kivi's layouts: its SIMD row kernels (the same multiply, then add) */
        if (c->role == VQ_ROLE_KEY)
            for (size_t t = 0; t < c->block_tokens; t++)
                kern->kivi_row(codes + t * D * (size_t)b / 8, b, D, sc, mn, out + t * D);
        else
            kern->kivi_group_row(codes, b, D, st->range_len, src, src + 2 * R, out);
    } else {
        /* the codes unpacked once (whole bytes at a time), then x = s' *
         * lv[code] + m per entry with lv[c] = c, s' = s (uniform) or lv =
         * the levels, s' = s * maxc (non-uniform: s * maxc * lev is
         * evaluated as (s * maxc) * lev, as before; lv: kx_init) */
        uint8_t *c8 = st->c8;
        kern->bits_unpack(codes, entries, b, c8);
        const float span = (float)((1u << b) - 1);
        const float *lv = st->nu ? st->lv : NULL; /* NULL: the code itself (kernels.h lut8_row) */
        float s2[256], m2[256];
        if (c->role == VQ_ROLE_KEY) { /* range = channel */
            for (size_t ch = 0; ch < D; ch++)
                s2[ch] = st->nu ? sc[ch] * span : sc[ch];
            for (size_t t = 0; t < c->block_tokens; t++)
                kern->lut8_row(c8 + t * D, D, lv, s2, mn, out + t * D);
        } else { /* range = group of range_len channels */
            const size_t G = st->range_len;
            for (size_t r = 0; r < R; r++) {
                const float sr = st->nu ? sc[r] * span : sc[r], mr = mn[r];
                size_t ch = r * G;
                for (; ch + 8 <= (r + 1) * G; ch += 8) /* eight adjacent stores: vector stores */
                    _Pragma("GCC unroll 8") for (int u = 0; u < 8; u++) s2[ch + u] = sr, m2[ch + u] = mr;
                for (; ch < (r + 1) * G; ch++)
                    s2[ch] = sr, m2[ch] = mr;
            }
            kern->lut8_row(c8, D, lv, s2, m2, out);
        }
    }
    for (int k = 0; k < st->outliers; k++) {
        const uint8_t *e = tab + 4 * (size_t)k;
        size_t el = outlier_at(tab, k);
        if (el < entries)
            out[el] = ld16(e + 2);
    }
}

static void kx_decode(vq_codec *c, const uint8_t *src, size_t n, float *x)
{
    const kx_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, B = c->block_tokens;
    for (size_t blk = 0; blk < n / B; blk++)
        kx_decode_block(c, st, src + blk * c->block_bytes, x + blk * B * D);
}

static void kx_prepare_query(vq_codec *c, const float *q, uint8_t *qbuf)
{
    memcpy(qbuf, q, (size_t)c->head_dim * sizeof(float));
}

/* the outlier entries of a key block (at `in`, its scores at sc, n
 * floats apart per query, from token 0 of the block): kernels.h
 * outlier_adds over the table, with the block's scales and mins converted
 * by the kernel table's fp16_row. For blocks that encode wrote (distinct
 * elements) each entry's correction turns the decoded value into the exact one. */
static void kx_add_outliers(const vq_codec *c, const kx_state *st, const uint8_t *in, const float *qall, size_t qstride,
                            int n_q, float *sc, size_t n)
{
    const size_t D = (size_t)c->head_dim, entries = c->block_tokens * D;
    const uint8_t *dense = in + 4 * D, *tab = dense + entries * (size_t)st->bits / 8;
    const vq_kernels *k = vq_kernels_get();
    float sm[1024]; /* D scales then D mins (D <= 512) */
    k->fp16_row(in, sm, 2 * D);
    k->outlier_adds(tab, st->outliers, dense, st->bits, sm, D, entries, qall, qstride, n_q, sc, n);
}

/* keys with qbits=8: per block, the dense codes against up to KX_QS
 * queries prepared with its scales and mins (codes_qdot.h; kivi's key
 * layout), then the outlier entries (kx_add_outliers) */
static void kx_score_q8(vq_codec *c, kx_state *st, const float *qall, int n_q, const uint8_t *codes, size_t n,
                        float *scores)
{
    const size_t D = (size_t)c->head_dim, B = c->block_tokens, row = D * (size_t)st->bits / 8;
    const size_t qb = vq_codes_query_bytes(D), qstride = c->query_bytes / sizeof(float);
    const vq_kernels *k = vq_kernels_get();
    for (size_t blk = 0; blk < n / B; blk++) {
        const uint8_t *in = codes + blk * c->block_bytes, *dense = in + 4 * D;
        for (int j0 = 0; j0 < n_q; j0 += KX_QS) {
            const int nj = n_q - j0 < KX_QS ? n_q - j0 : KX_QS;
            k->codes_qprep(qall + (size_t)j0 * qstride, qstride, nj, in, D, st->bits, st->qprep, qb);
            k->codes_qdot(dense, row, st->bits, B, D, st->qprep, qb, nj, scores + (size_t)j0 * n + blk * B, n);
        }
        if (st->outliers)
            kx_add_outliers(c, st, in, qall, qstride, n_q, scores + blk * B, n);
    }
}

/* keys with uniform 2-4-bit codes against float queries (kx_kdot_keys): kivi's key
 * blocks (kernels.h kivi_kdot: the query folded with each block's scales,
 * codes_dot over the codes, <q, m> added), then the outlier entries */
static void kx_score_kdot(vq_codec *c, kx_state *st, const float *qall, int n_q, const uint8_t *codes, size_t n,
                          float *scores)
{
    const size_t D = (size_t)c->head_dim, B = c->block_tokens, qstride = c->query_bytes / sizeof(float);
    vq_kernels_get()->kivi_kdot(codes, c->block_bytes, n / B, st->bits, B, D, qall, qstride, n_q, scores, n);
    if (st->outliers)
        for (size_t blk = 0; blk < n / B; blk++)
            kx_add_outliers(c, st, codes + blk * c->block_bytes, qall, qstride, n_q, scores + blk * B, n);
}

static void kx_score(vq_codec *c, const uint8_t *qbuf, int n_q, const uint8_t *codes, size_t n, float *scores)
{
    kx_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, B = c->block_tokens, qb = c->query_bytes;
    if (st->qbits && c->role == VQ_ROLE_KEY) {
        kx_score_q8(c, st, (const float *)(const void *)qbuf, n_q, codes, n, scores);
        return;
    }
    if (kx_kdot_keys(c, st)) {
        kx_score_kdot(c, st, (const float *)(const void *)qbuf, n_q, codes, n, scores);
        return;
    }
    const vq_kernels *kern = vq_kernels_get();
    for (size_t blk = 0; blk < n / B; blk++) { /* the decoded block, scored by the table's dense_dot */
        kx_decode_block(c, st, codes + blk * c->block_bytes, st->dec);
        kern->dense_dot((const float *)(const void *)qbuf, qb / sizeof(float), n_q, st->dec, VQ_ELEM_F32, B, D,
                        scores + blk * B, n);
    }
}

static void kx_accumulate(vq_codec *c, const float *w, int n_q, const uint8_t *codes, size_t n, float *acc)
{
    kx_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, B = c->block_tokens;
    if (c->accum_own) { /* kivi's value rows (kx_init) */
        const vq_kernels *k = vq_kernels_get();
        (st->qbits ? k->kivi_qaxpy : k->kivi_axpy)(codes, c->block_bytes, st->bits, n, D, st->range_len, w, n, n_q, acc,
                                                    D);
        return;
    }
    for (size_t blk = 0; blk < n / B; blk++) {
        kx_decode_block(c, st, codes + blk * c->block_bytes, st->dec);
        for (int j = 0; j < n_q; j++)
            for (size_t t = 0; t < B; t++) {
                float wt = w[(size_t)j * n + blk * B + t];
                if (wt == 0.0f)
                    continue;
                vq_vec_axpy(wt, st->dec + t * D, D, acc + (size_t)j * D);
            }
    }
}

static void kx_values(vq_codec *c, const uint8_t *codes, size_t n, float *out) { kx_decode(c, codes, n, out); }

/* codec.h score_rope for keys with uniform levels: the block's scales and
 * mins as kx_decode_block converts them, its outliers in [t0, t0 + n) as
 * per-token patches in table order (a later entry for the same element
 * wins, as in decode), then kernels.h rope_codes_dot over the codes */
static int kx_score_rope(vq_codec *c, const uint8_t *src, size_t t0, size_t n, const float *tab, const int32_t *rows,
                         int neox, const float *q, size_t qstride, int n_q, float *s, size_t sstride)
{
    const kx_state *st = c->impl;
    const size_t D = (size_t)c->head_dim, B = c->block_tokens, entries = B * D;
    const int b = st->bits;
    if (c->role != VQ_ROLE_KEY || st->nu || D % 32 || D > 512 || B > 256 || t0 + n > B || n == 0)
        return 0;
    const vq_kernels *kern = vq_kernels_get();
    float sc[512], mn[512], pval[1024];
    uint32_t pstart[257];
    uint16_t pch[1024];
    kern->fp16_row(src, sc, D);
    kern->fp16_row(src + 2 * D, mn, D);
    const uint8_t *codes = src + 4 * D, *tab_o = codes + entries * (size_t)b / 8;
    if (t0 == 0) { /* the next block's scales, mins and outlier table (read first by its call; past the page: harmless) */
        vq_prefetch_span(src, c->block_bytes, 4 * D);
        vq_prefetch_span(tab_o, c->block_bytes, 4 * (size_t)st->outliers);
    }
    /* the entries of tokens [t0, t0 + n): elements [e0, e1) (entries >= e1) */
    const size_t e0 = t0 * D, e1 = (t0 + n) * D;
    const int pow2 = (D & (D - 1)) == 0, lg = __builtin_ctzll(D); /* token = (el - e0) >> lg */
    size_t np = 0;
    memset(pstart, 0, (n + 1) * sizeof *pstart);
    for (int k = 0; k < st->outliers; k++) { /* counts per token, at pstart[t + 1] */
        const size_t el = outlier_at(tab_o, k);
        if (el >= e0 && el < e1)
            pstart[(pow2 ? (el - e0) >> lg : (el - e0) / D) + 1]++, np++;
    }
    if (np) {
        uint32_t fill[256], run = 0; /* the counts' running sum in a register */
        for (size_t t = 0; t < n; t++) {
            fill[t] = run;
            run += pstart[t + 1];
            pstart[t + 1] = run;
        }
        for (int k = 0; k < st->outliers; k++) {
            const uint8_t *e = tab_o + 4 * (size_t)k;
            const size_t el = outlier_at(tab_o, k);
            if (el >= e0 && el < e1) {
                const size_t t = pow2 ? (el - e0) >> lg : (el - e0) / D;
                const uint32_t p = fill[t]++;
                pch[p] = (uint16_t)(el - e0 - t * D), pval[p] = ld16(e + 2);
            }
        }
    }
    const vq_rope_keys keys = { .codes = codes + t0 * D * (size_t)b / 8,
                                .bits = b,
                                .D = D,
                                .n = n,
                                .s = sc,
                                .m = mn,
                                .pstart = np ? pstart : NULL,
                                .pch = pch,
                                .pval = pval,
                                .tab = tab,
                                .rows = rows,
                                .neox = neox };
    kern->rope_codes_dot(&keys, q, qstride, n_q, s, sstride);
    return 1;
}

const vq_codec_ops vq_codec_kivix_ops = {
    .name = "kivix",
    .default_spec = "kivix:bits=3,group=32,outliers=0",
    .init = kx_init,
    .destroy = kx_destroy,
    .encode = kx_encode,
    .decode = kx_decode,
    .prepare_query = kx_prepare_query,
    .score = kx_score,
    .accumulate = kx_accumulate,
    .accum_finish = vq_codec_finish_copy,
    .values = kx_values,
    .dot_query = 1,
    .score_rope = kx_score_rope,
};
