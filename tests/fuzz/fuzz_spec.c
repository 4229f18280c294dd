/* fuzz_spec.c -- libFuzzer target for the spec grammar (src/core/spec.c)
 * and codec creation from a spec (every method's parameter checks).
 * Input: byte 0 picks head_dim (32..256 and a few invalid ones) and role,
 * the rest is the spec text. Contracts: vq_spec_parse and the typed
 * lookups refuse with a message; a created codec's canonical spec creates
 * an equal codec; a ready codec encodes/decodes/scores/accumulates a block
 * with finite sizes (no crash, no sanitizer report).
 * Corpus: tests/fuzz/corpus/spec/. */
#include <math.h>
#include <string.h>

#include "core/spec.h"
#include "fuzz.h"

const char vq_fuzz_corpus[] = "spec";

static const int k_dims[8] = { 32, 64, 128, 256, 96, 0, 33, 512 };

static void grammar(const char *text)
{
    vq_spec s;
    char err[256] = "";
    if (vq_spec_parse(text, &s, err) != VQ_OK) {
        FUZZ_CHECK(err[0]);
        return;
    }
    FUZZ_CHECK(s.n >= 0 && s.n <= VQ_SPEC_MAX_KV);
    static const char *const keys[] = { "bits", "group", "rot", "sub_dim", "calib", "window", "sinks" };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        long l;
        double d;
        const char *str;
        err[0] = '\0';
        if (vq_spec_int(&s, keys[i], 1, -100, 100, &l, err) != VQ_OK)
            FUZZ_CHECK(err[0]);
        err[0] = '\0';
        if (vq_spec_float(&s, keys[i], 0.5, -1e9, 1e9, &d, err) != VQ_OK)
            FUZZ_CHECK(err[0]);
        else
            FUZZ_CHECK(d >= -1e9 && d <= 1e9);
        err[0] = '\0';
        if (vq_spec_str(&s, keys[i], NULL, &str, err) != VQ_OK)
            FUZZ_CHECK(err[0]);
    }
    err[0] = '\0';
    if (vq_spec_check_unused(&s, err) != VQ_OK)
        FUZZ_CHECK(err[0]);
}

static void use_codec(vq_codec *c, int hd)
{
    FUZZ_CHECK(vq_codec_head_dim(c) == hd);
    size_t bt = vq_codec_block_tokens(c), bb = vq_codec_block_bytes(c);
    FUZZ_CHECK(bt >= 1 && bt <= 1024 && bb >= 1);
    FUZZ_CHECK(isfinite(vq_codec_bits_per_element(c)));
    /* the canonical spec is accepted again and means the same codec */
    vq_codec *again = NULL;
    FUZZ_CHECK(vq_codec_create(vq_codec_spec(c), hd, vq_codec_role(c), 3, &again) == VQ_OK);
    FUZZ_CHECK(strcmp(vq_codec_spec(again), vq_codec_spec(c)) == 0);
    vq_codec_free(again);
    if (!vq_codec_is_ready(c) || bt > 64)
        return;
    size_t n = bt;
    float *x = malloc(n * (size_t)hd * sizeof *x), *y = malloc(n * (size_t)hd * sizeof *y);
    uint8_t *codes = malloc(bb);
    void *qb = malloc(vq_codec_query_bytes(c) + 1);
    float *scores = malloc(n * sizeof *scores), *w = malloc(n * sizeof *w);
    float *acc = calloc(vq_codec_accum_size(c) + 1, sizeof *acc), *out = malloc((size_t)hd * sizeof *out);
    if (x && y && codes && qb && scores && w && acc && out) {
        uint64_t s = 5;
        for (size_t i = 0; i < n * (size_t)hd; i++)
            x[i] = (float)vq_fuzz_rand(&s) / 4294967296.0f - 0.5f;
        for (size_t i = 0; i < n; i++)
            w[i] = 1.0f / (float)n;
        if (vq_codec_encode(c, x, n, codes) == VQ_OK) {
            FUZZ_CHECK(vq_codec_decode(c, codes, n, y) == VQ_OK);
            if (vq_codec_prepare_query(c, x, qb) == VQ_OK)
                FUZZ_CHECK(vq_codec_score(c, qb, 1, codes, n, scores) == VQ_OK);
            if (vq_codec_accumulate(c, w, 1, codes, n, acc) == VQ_OK)
                FUZZ_CHECK(vq_codec_accum_finish(c, acc, out) == VQ_OK);
        }
    }
    free(x), free(y), free(codes), free(qb), free(scores), free(w), free(acc), free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int hd = k_dims[data[0] & 7];
    vq_role role = (data[0] >> 3) & 1 ? VQ_ROLE_VALUE : VQ_ROLE_KEY;
    char *text = vq_fuzz_cstr(data + 1, size - 1);
    if (!text)
        return 0;
    grammar(text);
    vq_codec *c = NULL;
    vq_status st = vq_codec_create(text, hd, role, 1, &c);
    if (st == VQ_OK)
        vq_fuzz_accepted++, use_codec(c, hd);
    else
        FUZZ_CHECK(c == NULL && vq_last_error()[0]);
    vq_codec_free(c);
    free(text);
    return 0;
}
