/* calib_set.c -- the whole-model calibration file (format: calib_set.h). */
#include "codec/calib_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crc32.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/file.h"
#include "core/io.h"
#include "core/spec.h"
#include "core/writer.h"

#define CS_VERSION 2u /* version 1 (read only): no writer field */
#define CS_HDR_MAX 28
#define CS_HDR(ver) ((ver) == 1 ? 24u : 28u) /* header bytes before the index */
#define CS_ENTRY 28
#define CS_MAX_BLOB ((uint64_t)1 << 30)

int vq_calib_set_sniff(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char m[4];
    int ok = fread(m, 1, 4, f) == 4 && memcmp(m, VQ_CALIB_SET_MAGIC, 4) == 0;
    fclose(f);
    return ok;
}

typedef struct {
    uint64_t fingerprint;
    int n_layers;
    vq_codec *const *codecs;
    uint8_t *hdr;
    size_t hdr_len;
} write_ctx;

static vq_status fill(vq_file_writer *w, void *user)
{
    write_ctx *x = user;
    VQ_TRY(vq_file_put(w, x->hdr, x->hdr_len));
    for (int i = 0; i < 2 * x->n_layers; i++) {
        vq_codec *c = x->codecs[i];
        if (!c || !vq_codec_needs_calibration(c) || !vq_codec_is_ready(c))
            continue;
        size_t len = 0;
        VQ_TRY(vq_codec_state_write(c, NULL, 0, &len));
        uint8_t *b = malloc(len);
        if (!b)
            return vq_fail(NULL, VQ_ERR_NOMEM, "calibration file: out of memory");
        vq_status st = vq_codec_state_write(c, b, len, &len);
        if (st == VQ_OK)
            st = vq_file_put(w, b, len);
        free(b);
        VQ_TRY(st);
    }
    return VQ_OK;
}

vq_status vq_calib_set_write(const char *path, uint64_t fingerprint, int n_layers, vq_codec *const *codecs,
                             char *err)
{
    if (!path || !codecs || n_layers < 1 || n_layers > VQ_MAX_LAYERS)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "calibration file: bad arguments");
    size_t E = 0;
    for (int i = 0; i < 2 * n_layers; i++)
        if (codecs[i] && vq_codec_needs_calibration(codecs[i]) && vq_codec_is_ready(codecs[i]))
            E++;
    if (E == 0)
        return vq_fail(err, VQ_ERR_NEEDS_CALIBRATION, "calibration file: no calibrated codec to save");
    const size_t hdr = CS_HDR(CS_VERSION);
    size_t hlen = hdr + CS_ENTRY * E + 4;
    uint8_t *h = calloc(1, hlen);
    if (!h)
        return vq_fail(err, VQ_ERR_NOMEM, "calibration file: out of memory");
    memcpy(h, VQ_CALIB_SET_MAGIC, 4);
    vq_put_u32(h + 4, CS_VERSION);
    vq_put_u32(h + 8, VQ_FILE_WRITER);
    vq_put_u64(h + hdr - 16, fingerprint);
    vq_put_u32(h + hdr - 8, (uint32_t)n_layers);
    vq_put_u32(h + hdr - 4, (uint32_t)E);
    uint64_t off = hlen;
    size_t e = 0;
    vq_status st = VQ_OK;
    for (int i = 0; i < 2 * n_layers && st == VQ_OK; i++) {
        vq_codec *c = codecs[i];
        if (!c || !vq_codec_needs_calibration(c) || !vq_codec_is_ready(c))
            continue;
        size_t len = 0;
        st = vq_codec_state_write(c, NULL, 0, &len);
        uint8_t *b = st == VQ_OK ? malloc(len) : NULL;
        if (st == VQ_OK && !b)
            st = vq_fail(err, VQ_ERR_NOMEM, "calibration file: out of memory");
        if (st == VQ_OK)
            st = vq_codec_state_write(c, b, len, &len);
        if (st == VQ_OK) {
            uint8_t *en = h + hdr + CS_ENTRY * e++;
            vq_put_u32(en, (uint32_t)(i / 2));
            vq_put_u32(en + 4, (uint32_t)(i % 2));
            vq_put_u64(en + 8, off);
            vq_put_u64(en + 16, len);
            vq_put_u32(en + 24, vq_crc32(0, b, len));
            off += len;
        }
        free(b);
    }
    if (st == VQ_OK) {
        vq_put_u32(h + hlen - 4, vq_crc32(0, h, hlen - 4));
        write_ctx x = { fingerprint, n_layers, codecs, h, hlen };
        st = vq_file_write_atomic(path, fill, &x, err);
    }
    free(h);
    return st;
}

vq_status vq_calib_set_apply(const char *path, int layer, int n_layers, uint64_t fingerprint, vq_codec *c,
                             char *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return vq_fail(err, VQ_ERR_IO, "calibration file %s: cannot open", path);
    vq_status st = VQ_OK;
    uint8_t h[CS_HDR_MAX], *idx = NULL, *blob = NULL;
    long fsz = -1;
    size_t got = 0;
    if (fseek(f, 0, SEEK_END) != 0 || (fsz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        (got = fread(h, 1, CS_HDR_MAX, f)) < 8 || memcmp(h, VQ_CALIB_SET_MAGIC, 4) != 0) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: not a model calibration file (bad magic or too short)",
                     path);
        goto done;
    }
    uint32_t ver = vq_get_u32(h + 4);
    char note[48];
    if (ver < 1 || ver > CS_VERSION) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: version %u%s, this build (%s) reads 1 to %u", path, ver,
                     vq_file_writer_note(ver > CS_VERSION ? h : NULL, got, note), VQ_VERSION_STRING, CS_VERSION);
        goto done;
    }
    const size_t hdr = CS_HDR(ver);
    if (got < hdr || fseek(f, (long)hdr, SEEK_SET) != 0) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: truncated header", path);
        goto done;
    }
    uint32_t nl = vq_get_u32(h + hdr - 8), E = vq_get_u32(h + hdr - 4);
    uint64_t file_fp = vq_get_u64(h + hdr - 16);
    if (nl < 1 || nl > VQ_MAX_LAYERS || E < 1 || E > 2 * nl ||
        (uint64_t)hdr + (uint64_t)CS_ENTRY * E + 4 > (uint64_t)fsz) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: bad header (%u layers, %u entries, %ld bytes)", path,
                     nl, E, fsz);
        goto done;
    }
    size_t ilen = (size_t)CS_ENTRY * E + 4;
    idx = malloc(ilen);
    if (!idx) {
        st = vq_fail(err, VQ_ERR_NOMEM, "calibration file: out of memory");
        goto done;
    }
    if (fread(idx, 1, ilen, f) != ilen) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: truncated index", path);
        goto done;
    }
    uint32_t crc = vq_crc32(vq_crc32(0, h, hdr), idx, ilen - 4);
    if (crc != vq_get_u32(idx + ilen - 4)) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: header checksum mismatch (corrupted)", path);
        goto done;
    }
    if (ver >= 2 && (st = vq_file_writer_check(vq_get_u32(h + 8), "calibration file", err)) != VQ_OK)
        goto done;
    if ((int)nl != n_layers || file_fp != fingerprint) {
        st = vq_fail(err, VQ_ERR_FORMAT,
                     "calibration file %s belongs to another model (%u layers, fingerprint %016llx; this one: %d "
                     "layers, %016llx)",
                     path, nl, (unsigned long long)file_fp, n_layers, (unsigned long long)fingerprint);
        goto done;
    }
    vq_role role = vq_codec_role(c);
    const uint8_t *en = NULL;
    for (uint32_t i = 0; i < E && !en; i++) {
        const uint8_t *x = idx + (size_t)CS_ENTRY * i;
        if ((int)vq_get_u32(x) == layer && vq_get_u32(x + 4) == (uint32_t)role)
            en = x;
    }
    if (!en) {
        st = vq_fail(err, VQ_ERR_NEEDS_CALIBRATION,
                     "calibration file %s has no %s state for layer %d (calibrated with another method? rerun "
                     "`veloxquant calibrate`)",
                     path, role == VQ_ROLE_KEY ? "key" : "value", layer);
        goto done;
    }
    uint64_t off = vq_get_u64(en + 8), len = vq_get_u64(en + 16);
    if (len < 1 || len > CS_MAX_BLOB || off > (uint64_t)fsz || len > (uint64_t)fsz - off) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: entry of layer %d out of bounds (truncated?)", path,
                     layer);
        goto done;
    }
    blob = malloc((size_t)len);
    if (!blob) {
        st = vq_fail(err, VQ_ERR_NOMEM, "calibration file: out of memory");
        goto done;
    }
    if (fseek(f, (long)off, SEEK_SET) != 0 || fread(blob, 1, (size_t)len, f) != (size_t)len) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: cannot read the entry of layer %d", path, layer);
        goto done;
    }
    if (vq_crc32(0, blob, (size_t)len) != vq_get_u32(en + 24)) {
        st = vq_fail(err, VQ_ERR_FORMAT, "calibration file %s: entry of layer %d corrupted (checksum)", path, layer);
        goto done;
    }
    st = vq_codec_state_read(c, blob, (size_t)len);
    if (st != VQ_OK)
        st = vq_fail(err, st, "calibration file %s, layer %d: %s", path, layer, vq_codec_error(c));
done:
    free(idx);
    free(blob);
    fclose(f);
    return st;
}

int vq_calib_set_in_spec(const char *spec, char *path, size_t cap)
{
    vq_spec sp;
    const char *file = NULL;
    if (vq_spec_parse(spec, &sp, NULL) != VQ_OK || vq_spec_str(&sp, "calib", NULL, &file, NULL) != VQ_OK || !file)
        return 0;
    if (strlen(file) >= cap || !vq_calib_set_sniff(file))
        return 0;
    memcpy(path, file, strlen(file) + 1);
    return 1;
}
