/* test_sampler.c -- sampler semantics: greedy, repetition penalty, top-k,
 * top-p, min-p, temperature, seeding, argument checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "test.h"
#include "veloxquant.h"

static vq_sampler *make(float temp, int top_k, float top_p, float min_p, float pen, int last_n,
                        uint64_t seed, int n_vocab)
{
    vq_sampler_params p = { temp, top_k, top_p, min_p, pen, last_n, seed };
    vq_sampler *s = NULL;
    CHECK_OK(vq_sampler_create(&p, n_vocab, &s));
    return s;
}

/* logits whose softmax is exactly probs (up to normalisation) */
static void logits_of(const double *probs, int n, float *out)
{
    for (int i = 0; i < n; i++)
        out[i] = (float)log(probs[i]);
}

static void test_greedy(void)
{
    float l[6] = { 0.1f, 3.0f, -2.0f, 3.0f, 2.9f, 0.0f };
    vq_sampler *s = make(0, 0, 1, 0, 1, 64, 1, 6);
    CHECK(vq_sampler_sample(s, l, NULL, 0) == 1); /* tie 1/3: lowest id */
    /* logits are not modified */
    CHECK(l[1] == 3.0f && l[3] == 3.0f);
    vq_sampler_free(s);
}

static void test_repetition_penalty(void)
{
    vq_sampler *s = make(0, 0, 1, 0, 1.5f, 64, 1, 3);
    float pos[3] = { 2.0f, 1.9f, -1.0f };
    int32_t h0[] = { 0 };
    CHECK(vq_sampler_sample(s, pos, NULL, 0) == 0);
    CHECK(vq_sampler_sample(s, pos, h0, 1) == 1);  /* 2.0/1.5 = 1.33 < 1.9 */
    float neg[3] = { -1.0f, -1.2f, -5.0f };
    CHECK(vq_sampler_sample(s, neg, h0, 1) == 1);  /* -1.0*1.5 = -1.5 < -1.2 */
    /* a token repeated in the window is penalised once: 1.9 vs 2.0/1.5 */
    int32_t h3[] = { 0, 0, 0 };
    float close[3] = { 2.0f, 1.2f, 0.0f };
    CHECK(vq_sampler_sample(s, close, h3, 3) == 0); /* 1.33 > 1.2 (2.0/1.5^3 = 0.59 would lose) */
    vq_sampler_free(s);
    /* only the last repeat_last_n tokens count */
    s = make(0, 0, 1, 0, 1.5f, 2, 1, 8);
    float l8[8] = { 2.0f, 1.9f, 0, 0, 0, 0, 0, 0 };
    int32_t h[] = { 0, 5, 6 };
    CHECK(vq_sampler_sample(s, l8, h, 3) == 0);
    int32_t h2[] = { 5, 0, 6 };
    CHECK(vq_sampler_sample(s, l8, h2, 3) == 1);
    vq_sampler_free(s);
}

/* draw N tokens, count them */
static void draw_counts(vq_sampler *s, const float *l, int n_vocab, int N, int *counts)
{
    memset(counts, 0, (size_t)n_vocab * sizeof *counts);
    for (int i = 0; i < N; i++) {
        int32_t t = vq_sampler_sample(s, l, NULL, 0);
        if (t >= 0 && t < n_vocab)
            counts[t]++;
    }
}

static void test_filters(void)
{
    const double probs[6] = { 0.4, 0.25, 0.15, 0.1, 0.06, 0.04 };
    float l[6];
    int cnt[6];
    logits_of(probs, 6, l);
    const int N = 4000;
    /* top-k = 3: only the three largest, each of them drawn */
    vq_sampler *s = make(1, 3, 1, 0, 1, 0, 7, 6);
    draw_counts(s, l, 6, N, cnt);
    CHECK(cnt[0] > 0 && cnt[1] > 0 && cnt[2] > 0 && cnt[3] + cnt[4] + cnt[5] == 0);
    vq_sampler_free(s);
    /* top-p = 0.6: 0.4 + 0.25 = 0.65 >= 0.6 -> tokens {0, 1} */
    s = make(1, 0, 0.6f, 0, 1, 0, 7, 6);
    draw_counts(s, l, 6, N, cnt);
    CHECK(cnt[0] > 0 && cnt[1] > 0 && cnt[2] + cnt[3] + cnt[4] + cnt[5] == 0);
    vq_sampler_free(s);
    /* top-p = 0.85: 0.4+0.25+0.15+0.1 = 0.9 -> {0..3} */
    s = make(1, 0, 0.85f, 0, 1, 0, 7, 6);
    draw_counts(s, l, 6, N, cnt);
    CHECK(cnt[3] > 0 && cnt[4] + cnt[5] == 0);
    vq_sampler_free(s);
    /* min-p = 0.3: keep p >= 0.12 -> {0, 1, 2} */
    s = make(1, 0, 1, 0.3f, 1, 0, 7, 6);
    draw_counts(s, l, 6, N, cnt);
    CHECK(cnt[2] > 0 && cnt[3] + cnt[4] + cnt[5] == 0);
    vq_sampler_free(s);
    /* min-p = 0.7: 0.25 < 0.28 -> only token 0 */
    s = make(1, 0, 1, 0.7f, 1, 0, 7, 6);
    draw_counts(s, l, 6, N, cnt);
    CHECK(cnt[0] == N);
    vq_sampler_free(s);
}

static void test_temperature_distribution(void)
{
    /* Frequencies match softmax(l / T). N = 40000 draws: the standard error
     * of a frequency is at most 0.0025, so 0.015 is 6 sigma. */
    const double probs[5] = { 0.4, 0.3, 0.15, 0.1, 0.05 };
    const double tol = 0.015;
    float l[5];
    int cnt[5];
    logits_of(probs, 5, l);
    const int N = vq_test_quick() ? 10000 : 40000;
    double t_list[2] = { 1.0, 0.5 };
    for (int ti = 0; ti < 2; ti++) {
        vq_sampler *s = make((float)t_list[ti], 0, 1, 0, 1, 0, 99, 5);
        draw_counts(s, l, 5, N, cnt);
        double z = 0, want[5];
        for (int i = 0; i < 5; i++)
            z += want[i] = pow(probs[i], 1.0 / t_list[ti]);
        for (int i = 0; i < 5; i++)
            CHECK_NEAR((double)cnt[i] / N, want[i] / z, vq_test_quick() ? 2 * tol : tol);
        vq_sampler_free(s);
    }
}

static void test_seed_determinism(void)
{
    enum { V = 100, N = 64 };
    float l[V];
    for (int i = 0; i < V; i++)
        l[i] = 0.01f * (float)(i % 7);
    int32_t a[N], b[N], c[N];
    vq_sampler *s1 = make(1, 0, 1, 0, 1, 0, 1234, V);
    vq_sampler *s2 = make(1, 0, 1, 0, 1, 0, 1234, V);
    vq_sampler *s3 = make(1, 0, 1, 0, 1, 0, 4321, V);
    int diff = 0, same = 1;
    for (int i = 0; i < N; i++) {
        a[i] = vq_sampler_sample(s1, l, NULL, 0);
        b[i] = vq_sampler_sample(s2, l, NULL, 0);
        c[i] = vq_sampler_sample(s3, l, NULL, 0);
        same &= a[i] == b[i];
        diff += a[i] != c[i];
    }
    CHECK(same);
    CHECK(diff > N / 2); /* near-uniform over 100 tokens: matches are rare */
    vq_sampler_reseed(s1, 1234);
    int again = 1;
    for (int i = 0; i < N; i++)
        again &= vq_sampler_sample(s1, l, NULL, 0) == a[i];
    CHECK(again);
    vq_sampler_free(s1);
    vq_sampler_free(s2);
    vq_sampler_free(s3);
}

static int cmp_desc(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return a < b ? 1 : a > b ? -1 : 0;
}

static void test_topk_large_vocab(void)
{
    /* top-k selection on a large vocabulary keeps exactly the k largest:
     * at a huge temperature every kept token is about equally likely, so
     * all k are drawn and nothing else is. */
    enum { V = 5000, K = 50 };
    static float l[V], sorted[V];
    vq_rng r;
    vq_rng_seed(&r, 5);
    for (int i = 0; i < V; i++)
        sorted[i] = l[i] = vq_rng_normal(&r);
    qsort(sorted, V, sizeof(float), cmp_desc);
    float kth = sorted[K - 1];
    vq_sampler *s = make(1e6f, K, 1, 0, 1, 0, 3, V);
    static int cnt[V];
    draw_counts(s, l, V, 5000, cnt);
    int outside = 0, inside_seen = 0;
    for (int i = 0; i < V; i++) {
        if (l[i] >= kth)
            inside_seen += cnt[i] > 0;
        else
            outside += cnt[i];
    }
    CHECK(outside == 0);
    CHECK(inside_seen == K);
    vq_sampler_free(s);
}

static void test_topk_ties_and_small_k(void)
{
    /* Regression: top-k selection once looped forever on real logits
     * (k = 40 over 49152 candidates). Exercise k = 1..64 over vocabularies
     * with many exact ties (logits rounded to a coarse grid) and sorted
     * runs; with top_k = 1 the draw must be the argmax (lowest id on ties). */
    enum { V = 4099 };
    static float l[V];
    vq_rng r;
    vq_rng_seed(&r, 11);
    for (int trial = 0; trial < 6; trial++) {
        for (int i = 0; i < V; i++) {
            float g = vq_rng_normal(&r);
            l[i] = trial % 3 == 0 ? floorf(g * 2.0f) : trial % 3 == 1 ? (float)(i % 7) : g;
        }
        int best = 0;
        for (int i = 1; i < V; i++)
            if (l[i] > l[best])
                best = i;
        for (int k = 1; k <= 64; k *= 2) {
            vq_sampler *s = make(1.0f, k, 1, 0, 1, 0, (uint64_t)(trial * 100 + k), V);
            int32_t t = vq_sampler_sample(s, l, NULL, 0);
            CHECKF(t >= 0 && t < V, "trial %d k %d: token %d", trial, k, (int)t);
            if (k == 1)
                CHECKF(t == best, "trial %d: top_k=1 drew %d, argmax %d", trial, (int)t, best);
            vq_sampler_free(s);
        }
    }
}

static void test_bad_params(void)
{
    vq_sampler *s = NULL;
    vq_sampler_params p = vq_sampler_defaults();
    p.top_p = 0;
    CHECK(vq_sampler_create(&p, 10, &s) == VQ_ERR_INVALID_ARG && !s);
    p = vq_sampler_defaults();
    p.min_p = 1.5f;
    CHECK(vq_sampler_create(&p, 10, &s) == VQ_ERR_INVALID_ARG);
    p = vq_sampler_defaults();
    p.repeat_penalty = 0;
    CHECK(vq_sampler_create(&p, 10, &s) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(vq_last_error(), "repeat_penalty") != NULL);
    p = vq_sampler_defaults();
    p.top_k = -1;
    CHECK(vq_sampler_create(&p, 10, &s) == VQ_ERR_INVALID_ARG);
    p = vq_sampler_defaults();
    CHECK(vq_sampler_create(&p, 0, &s) == VQ_ERR_INVALID_ARG);
    vq_sampler_free(NULL);
}

int main(void)
{
    RUN(test_greedy);
    RUN(test_repetition_penalty);
    RUN(test_filters);
    RUN(test_temperature_distribution);
    RUN(test_seed_determinism);
    RUN(test_topk_large_vocab);
    RUN(test_topk_ties_and_small_k);
    RUN(test_bad_params);
    return vq_test_summary("sampler");
}
