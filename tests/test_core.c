/* test_core.c -- core utilities: fp16/bf16, CRC-32, spec grammar, FWHT, RNG,
 * atomic file writes, bit packing, status strings. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/bitstream.h"
#include "core/crc32.h"
#include "core/error.h"
#include "core/file.h"
#include "core/fp16.h"
#include "core/hadamard.h"
#include "core/rng.h"
#include "core/spec.h"
#include "test.h"

static void test_fp16_exhaustive_roundtrip(void)
{
    /* every finite half converts to float and back to itself */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
            continue; /* NaN payloads are not preserved bit-exactly */
        float f = vq_fp16_to_fp32((vq_fp16)h);
        if (vq_fp32_to_fp16(f) != h)
            bad++;
    }
    CHECKF(bad == 0, "%d halves do not round-trip", bad);
    CHECK(vq_fp16_to_fp32(0x3c00) == 1.0f);
    CHECK(vq_fp16_to_fp32(0xc000) == -2.0f);
    CHECK(vq_fp16_to_fp32(0x0001) == 5.9604644775390625e-08f);
    CHECK(vq_fp32_to_fp16(65504.0f) == 0x7bff);
    CHECK(vq_fp32_to_fp16(70000.0f) == 0x7c00);
    CHECK(vq_fp32_to_fp16(1.0f + 1.0f / 2048.0f) == 0x3c00); /* tie to even */
    CHECK(vq_fp32_to_fp16(1.0f + 3.0f / 2048.0f) == 0x3c02);
    CHECK(vq_bf16_to_fp32(vq_fp32_to_bf16(3.0f)) == 3.0f);
}

static void test_crc32_vector(void)
{
    CHECK(vq_crc32(0, "123456789", 9) == 0xCBF43926u);
    uint32_t a = vq_crc32(0, "1234", 4);
    CHECK(vq_crc32(a, "56789", 5) == 0xCBF43926u);
    /* the sliced loop against a bitwise CRC: every length to 40 and some
     * long ones, every start offset mod 8, chained at a random split */
    uint8_t buf[4104];
    vq_rng r;
    vq_rng_seed(&r, 77);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)(vq_rng_next(&r) >> 56);
    int bad = 0;
    for (size_t n = 0; n <= 4096; n += n < 40 ? 1 : 509)
        for (size_t off = 0; off < 8; off++) {
            uint32_t c = 0xFFFFFFFFu;
            for (size_t i = 0; i < n; i++) {
                c ^= buf[off + i];
                for (int k = 0; k < 8; k++)
                    c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            }
            const uint32_t want = ~c;
            const size_t cut = n ? (size_t)(vq_rng_next(&r) % n) : 0;
            bad += vq_crc32(0, buf + off, n) != want;
            bad += vq_crc32(vq_crc32(0, buf + off, cut), buf + off + cut, n - cut) != want;
        }
    CHECKF(bad == 0, "crc32: %d results differ from the bitwise CRC", bad);
}

static void test_spec_grammar(void)
{
    vq_spec s;
    char err[VQ_ERRLEN];
    long v;
    CHECK_OK(vq_spec_parse("kivi:bits=2,group=32", &s, err));
    CHECK(strcmp(s.name, "kivi") == 0 && s.n == 2);
    CHECK_OK(vq_spec_int(&s, "bits", 4, 2, 4, &v, err));
    CHECK(v == 2);
    CHECK(vq_spec_check_unused(&s, err) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(err, "group") != NULL);
    CHECK(vq_spec_int(&s, "group", 32, 64, 128, &v, err) == VQ_ERR_INVALID_ARG);
    CHECK(strstr(err, "group") && strstr(err, "range"));
    CHECK_OK(vq_spec_parse("fp16", &s, err));
    CHECK(s.n == 0);
    const char *bad[] = { "", ":bits=1", "kivi:", "kivi:bits", "kivi:bits=", "kivi:bits=1,",
                          "kivi:bits=1,bits=2", "Kivi", "kivi bits=1", "kivi:=3" };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        CHECKF(vq_spec_parse(bad[i], &s, err) == VQ_ERR_INVALID_ARG, "'%s' accepted", bad[i]);
    CHECK_OK(vq_spec_parse("kivi:bits=x", &s, err));
    CHECK(vq_spec_int(&s, "bits", 2, 2, 4, &v, err) == VQ_ERR_INVALID_ARG);
    CHECK(vq_spec_parse(NULL, &s, err) == VQ_ERR_INVALID_ARG);
}

static void test_fwht_orthonormal(void)
{
    size_t sizes[] = { 32, 64, 96, 128, 192, 256 };
    vq_rng r;
    vq_rng_seed(&r, 7);
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        float x[256], y[256];
        double e0 = 0, e1 = 0, err = 0;
        for (size_t i = 0; i < n; i++) {
            x[i] = y[i] = vq_rng_normal(&r);
            e0 += (double)x[i] * x[i];
        }
        CHECK(vq_fwht_supported(n));
        vq_fwht(y, n);
        for (size_t i = 0; i < n; i++)
            e1 += (double)y[i] * y[i];
        vq_fwht(y, n);
        for (size_t i = 0; i < n; i++)
            err = fmax(err, fabs(y[i] - x[i]));
        CHECK_NEAR(e1 / e0, 1.0, 1e-5);
        CHECK(err < 1e-5);
    }
    CHECK(!vq_fwht_supported(160));
}

static void test_rng_deterministic(void)
{
    vq_rng a, b, c;
    vq_rng_seed(&a, 42);
    vq_rng_seed(&b, 42);
    vq_rng_seed(&c, 43);
    int same = 1, diff = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t x = vq_rng_next(&a), y = vq_rng_next(&b), z = vq_rng_next(&c);
        same &= x == y;
        diff |= x != z;
    }
    CHECK(same && diff);
    double m = 0, v = 0;
    for (int i = 0; i < 100000; i++) {
        double g = vq_rng_normal(&a);
        m += g;
        v += g * g;
    }
    CHECK_NEAR(m / 100000, 0.0, 0.02);
    CHECK_NEAR(v / 100000, 1.0, 0.02);
}

static void test_atomic_write(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/atomic.bin", vq_test_tmpdir());
    CHECK_OK(vq_file_write_buffer(path, "hello", 5, NULL));
    uint8_t *buf;
    size_t n;
    CHECK_OK(vq_file_read_all(path, 100, &buf, &n, NULL));
    CHECK(n == 5 && memcmp(buf, "hello", 5) == 0);
    free(buf);
    CHECK(vq_file_read_all(path, 4, &buf, &n, NULL) == VQ_ERR_FORMAT);
    CHECK(vq_file_read_all("/nonexistent/x", 4, &buf, &n, NULL) == VQ_ERR_IO);
    CHECK(strstr(vq_last_error(), "/nonexistent/x") != NULL);
    /* a write into a missing directory fails cleanly */
    CHECK(vq_file_write_buffer("/nonexistent/dir/f", "x", 1, NULL) == VQ_ERR_IO);
    unlink(path);
}

/* vq_bits_pack (eight codes at a time, then one by one) writes what
 * putting each code does, drops the codes' higher bits, writes nothing
 * past its last byte, and vq_bits_unpack reads the codes back */
static void test_bits_pack(void)
{
    vq_rng g;
    vq_rng_seed(&g, 21);
    for (int bits = 1; bits <= 8; bits++)
        for (size_t n = 0; n <= 41; n++) {
            uint8_t in[41], back[41], a[48], b[48];
            for (size_t i = 0; i < n; i++)
                in[i] = (uint8_t)vq_rng_next(&g); /* higher bits set: dropped */
            const size_t bytes = (n * (size_t)bits + 7) / 8;
            memset(a, 0xA5, sizeof a);
            memset(b, 0xA5, sizeof b);
            memset(b, 0, bytes);
            for (size_t i = 0; i < n; i++)
                vq_bits_put(b, i, bits, in[i]);
            vq_bits_pack(in, n, bits, a);
            CHECKF(memcmp(a, b, sizeof a) == 0, "bits=%d n=%zu: packed bytes differ (or written past the end)", bits,
                   n);
            vq_bits_unpack(a, n, bits, back);
            int same = 1;
            for (size_t i = 0; i < n; i++)
                same &= back[i] == (in[i] & ((1u << bits) - 1u));
            CHECKF(same, "bits=%d n=%zu: unpacked codes differ", bits, n);
        }
}

static void test_status_strings(void)
{
    for (int s = VQ_OK; s <= VQ_ERR_STATE; s++)
        CHECK(strlen(vq_status_str((vq_status)s)) > 0);
    CHECK(strcmp(vq_status_str(VQ_ERR_NEEDS_CALIBRATION), "needs calibration") == 0);
}

int main(void)
{
    RUN(test_fp16_exhaustive_roundtrip);
    RUN(test_crc32_vector);
    RUN(test_spec_grammar);
    RUN(test_fwht_orthonormal);
    RUN(test_rng_deterministic);
    RUN(test_atomic_write);
    RUN(test_bits_pack);
    RUN(test_status_strings);
    return vq_test_summary("test_core");
}
