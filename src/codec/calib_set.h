/* calib_set.h -- the whole-model calibration file: the calibration states
 * (vq_codec_state_write blobs) of every layer's key and value codecs, in
 * one file, so that a cache config's calib=FILE serves all layers.
 *
 * Format "VQCM" version 2 (docs/FORMATS.md "Model calibration file"),
 * little-endian; version 1 (still read) has no writer field, so its
 * fields from the fingerprint on sit 4 bytes earlier (H = 24, not 28):
 *   off  size
 *     0     4  magic "VQCM"
 *     4     4  version (2)
 *     8     4  writer (core/writer.h)
 *    12     8  fingerprint of the model (vq_model_fingerprint) / cache shape
 *    20     4  n_layers of the model (1..4096)
 *    24     4  E, number of entries (1..2*n_layers)
 *     H  28*E  entries (H = 28): u32 layer | u32 role (0 key, 1 value) |
 *              u64 offset (from file start) | u64 length | u32 CRC-32 of
 *              the blob
 *   H+28E   4  CRC-32 (IEEE) of bytes [0, H+28E)
 *  then the blobs (each a codec calibration state, "VQCS", itself
 *  CRC-checked), at the offsets given.
 * A reader reads the header and index, checks their CRC, then reads only
 * the blob it needs and checks its CRC; every offset/length is checked
 * against the file size. Written atomically (temporary + rename). */
#ifndef VQ_CODEC_CALIB_SET_H
#define VQ_CODEC_CALIB_SET_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

#define VQ_CALIB_SET_MAGIC "VQCM"

/* 1 if path starts with the whole-model magic (0 if not, or unreadable). */
int vq_calib_set_sniff(const char *path);

/* Write codecs[l*2 + role] (NULL or uncalibrated entries skipped) for
 * l < n_layers. VQ_ERR_NEEDS_CALIBRATION if none is calibrated. */
vq_status vq_calib_set_write(const char *path, uint64_t fingerprint, int n_layers, vq_codec *const *codecs,
                             char *err);

/* Load the state of (layer, role) from the file into codec c (via
 * vq_codec_state_read). The file's n_layers and fingerprint must equal
 * the caller's (another model's file is refused, VQ_ERR_FORMAT). */
vq_status vq_calib_set_apply(const char *path, int layer, int n_layers, uint64_t fingerprint, vq_codec *c,
                             char *err);

/* If spec has calib=FILE and FILE is a whole-model calibration file, copy
 * FILE into path and return 1 (the cache then strips calib= from the spec
 * and applies the layer's entry); else 0 (single-codec files stay with
 * vq_codec_create). */
int vq_calib_set_in_spec(const char *spec, char *path, size_t cap);

#endif
