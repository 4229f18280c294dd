/* test_codec_clone.c -- vq_codec_clone (codec.h): for every registered
 * method (default spec, calibrated where the method needs it), a clone
 * encodes to the same bytes, decodes, scores and accumulates to the same
 * numbers as the original, and stays usable after the original is freed
 * (it shares no scratch or state with it; ASan checks the latter). The
 * cache's own methods (xquant, xkv) are checked by test_cache_cross and
 * test_threads through the cache. */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/rng.h"
#include "test.h"

#define D 64
#define N 64 /* tokens: a multiple of every method's block */

static void fill(float *x, size_t n, uint64_t seed)
{
    vq_rng r;
    vq_rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = vq_rng_normal(&r) + (i % D == 3 ? 8.0f : 0.0f);
}

/* encode, decode, score and accumulate with c into the buffers */
static void run(vq_codec *c, const float *x, const float *q, uint8_t *codes, float *dec, float *sc, float *acc,
                float *out)
{
    size_t asz = vq_codec_accum_size(c);
    uint8_t *qb = malloc(vq_codec_query_bytes(c) + 1);
    float w[N];
    for (int i = 0; i < N; i++)
        w[i] = (float)(i % 7) / 7.0f;
    memset(acc, 0, asz * sizeof *acc);
    CHECK_OK(vq_codec_encode(c, x, N, codes));
    CHECK_OK(vq_codec_decode(c, codes, N, dec));
    CHECK_OK(vq_codec_prepare_query(c, q, qb));
    CHECK_OK(vq_codec_score(c, qb, 1, codes, N, sc));
    CHECK_OK(vq_codec_accumulate(c, w, 1, codes, N, acc));
    CHECK_OK(vq_codec_accum_finish(c, acc, out));
    free(qb);
}

static void check_method(const char *spec)
{
    vq_codec *a = NULL, *b = NULL;
    float *x = malloc(N * D * sizeof *x), *cal = malloc(4 * N * D * sizeof *cal), q[D];
    fill(x, N * D, 1);
    fill(cal, 4 * N * D, 2);
    fill(q, D, 3);
    CHECK_OK(vq_codec_create(spec, D, VQ_ROLE_KEY, 42, &a));
    if (!a) {
        free(x), free(cal);
        return;
    }
    if (vq_codec_needs_calibration(a))
        CHECK_OK(vq_codec_calibrate(a, cal, 4 * N));
    CHECK_OK(vq_codec_clone(a, &b));
    if (!b) {
        vq_codec_free(a);
        free(x), free(cal);
        return;
    }
    CHECKF(strcmp(vq_codec_spec(a), vq_codec_spec(b)) == 0 && vq_codec_is_ready(b), "%s: clone spec/ready", spec);
    size_t cb = N * vq_codec_bytes_per_token(a), asz = vq_codec_accum_size(a);
    uint8_t *ca = malloc(cb), *cc = malloc(cb);
    float *da = malloc(N * D * sizeof *da), *db = malloc(N * D * sizeof *db), sa[N], sb[N];
    float *aa = malloc(asz * sizeof *aa), *ab = malloc(asz * sizeof *ab), oa[D], ob[D];
    run(a, x, q, ca, da, sa, aa, oa);
    vq_codec_free(a); /* the clone must not need the original */
    run(b, x, q, cc, db, sb, ab, ob);
    CHECKF(memcmp(ca, cc, cb) == 0, "%s: clone encodes other bytes", spec);
    CHECKF(memcmp(da, db, N * D * sizeof *da) == 0, "%s: clone decodes otherwise", spec);
    CHECKF(memcmp(sa, sb, sizeof sa) == 0, "%s: clone scores otherwise", spec);
    CHECKF(memcmp(oa, ob, sizeof oa) == 0, "%s: clone accumulates otherwise", spec);
    vq_codec_free(b);
    free(ca), free(cc), free(da), free(db), free(aa), free(ab), free(x), free(cal);
}

static void test_every_method(void)
{
    int n = 0;
    for (int i = 0;; i++) {
        const char *def = NULL;
        if (!vq_codec_method(i, &def))
            break;
        check_method(def);
        n++;
    }
    CHECK(n >= 10);
}

static void test_bad_args(void)
{
    vq_codec *b = (vq_codec *)1;
    CHECK(vq_codec_clone(NULL, &b) == VQ_ERR_INVALID_ARG);
}

int main(void)
{
    RUN(test_every_method);
    RUN(test_bad_args);
    return vq_test_summary("codec_clone");
}
