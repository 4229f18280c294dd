/* fuzz_calib.c -- libFuzzer target for the calibration loaders: a codec's
 * calibration state ("VQCS", vq_codec_state_read: vecinfer, spectral) and
 * the whole-model calibration file ("VQCM", vq_calib_set_apply).
 * Input: byte 0 is a mode, byte 1 picks the codec (fuzz_seeds.h) and the
 * layer, the rest is the state or file. Mode bit 0: recompute every
 * checksum first (the state's last 4 bytes; the file's entry CRCs over
 * in-bounds blobs and its index CRC), so mutations reach the structure
 * checks; bit 1: a VQCM file (else a VQCS state); bit 2: role value.
 * Contracts: a refusal carries a message; a state that loads makes the
 * codec ready, and it then encodes/decodes/scores a vector without a
 * crash. Corpus: tests/fuzz/corpus/calib/ (make_seeds.c). */
#include <string.h>
#include <unistd.h>

#include "codec/calib_set.h"
#include "core/crc32.h"
#include "core/io.h"
#include "fuzz.h"
#include "fuzz_seeds.h"

const char vq_fuzz_corpus[] = "calib";

enum { HD = VQ_SEED_HEAD_DIM };

static void fix_state_crc(uint8_t *p, size_t len)
{
    if (len >= 8)
        vq_put_u32(p + len - 4, vq_crc32(0, p, len - 4));
}

static void fix_file_crcs(uint8_t *p, size_t len)
{
    if (len < 28)
        return;
    uint64_t E = vq_get_u32(p + 20);
    if (24 + 28 * E + 4 > len)
        return;
    for (uint64_t i = 0; i < E; i++) {
        uint8_t *en = p + 24 + 28 * i;
        uint64_t off = vq_get_u64(en + 8), n = vq_get_u64(en + 16);
        if (off <= len && n <= len - off && n > 0) {
            fix_state_crc(p + off, (size_t)n);
            vq_put_u32(en + 24, vq_crc32(0, p + off, (size_t)n));
        }
    }
    size_t h = 24 + 28 * (size_t)E;
    vq_put_u32(p + h, vq_crc32(0, p, h));
}

static void use_codec(vq_codec *c)
{
    FUZZ_CHECK(vq_codec_is_ready(c));
    size_t bt = vq_codec_block_tokens(c);
    if (bt != 1)
        return;
    float x[HD], y[HD], score, out[HD];
    uint8_t codes[4 * HD + 64];
    if (vq_codec_block_bytes(c) > sizeof codes)
        return;
    for (int i = 0; i < HD; i++)
        x[i] = (float)((i * 37) % 11) * 0.1f - 0.5f;
    FUZZ_CHECK(vq_codec_encode(c, x, 1, codes) == VQ_OK);
    FUZZ_CHECK(vq_codec_decode(c, codes, 1, y) == VQ_OK);
    void *qb = malloc(vq_codec_query_bytes(c) + 1);
    float *acc = calloc(vq_codec_accum_size(c) + 1, sizeof *acc);
    float w = 1.0f;
    if (qb && acc) {
        FUZZ_CHECK(vq_codec_prepare_query(c, x, qb) == VQ_OK);
        FUZZ_CHECK(vq_codec_score(c, qb, 1, codes, 1, &score) == VQ_OK);
        FUZZ_CHECK(vq_codec_accumulate(c, &w, 1, codes, 1, acc) == VQ_OK);
        FUZZ_CHECK(vq_codec_accum_finish(c, acc, out) == VQ_OK);
    }
    free(qb);
    free(acc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    int mode = data[0], pick = data[1];
    size_t len = size - 2;
    uint8_t *buf = malloc(len ? len : 1);
    if (!buf)
        return 0;
    if (len)
        memcpy(buf, data + 2, len);
    vq_role role = (mode & 4) ? VQ_ROLE_VALUE : VQ_ROLE_KEY;
    vq_codec *c = NULL;
    if (vq_codec_create(vq_seed_calib_specs[pick & 3], HD, role, 1, &c) != VQ_OK) {
        free(buf);
        FUZZ_CHECK(0 && "seed codec refused");
        return 0;
    }
    vq_status st;
    if (mode & 2) {
        if (mode & 1)
            fix_file_crcs(buf, len);
        char path[64], err[256] = "";
        int fd = vq_fuzz_memfile(buf, len, path, sizeof path);
        if (fd < 0) {
            free(buf);
            vq_codec_free(c);
            return 0;
        }
        st = vq_calib_set_apply(path, (pick >> 2) % VQ_SEED_LAYERS, VQ_SEED_LAYERS, VQ_SEED_FINGERPRINT, c, err);
        close(fd);
        FUZZ_CHECK(st == VQ_OK || err[0]);
    } else {
        if (mode & 1)
            fix_state_crc(buf, len);
        st = vq_codec_state_read(c, buf, len);
        FUZZ_CHECK(st == VQ_OK || vq_codec_error(c)[0]);
    }
    if (st == VQ_OK)
        vq_fuzz_accepted++, use_codec(c);
    vq_codec_free(c);
    free(buf);
    return 0;
}
