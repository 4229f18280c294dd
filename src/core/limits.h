/* limits.h -- limits shared by every layer of the library.
 *
 * VQ_MAX_LAYERS: the most layers a model, a cache shape, a cache file or a
 * whole-model calibration file may have. 4096 because the file formats
 * (docs/cache-format.md, docs/FORMATS.md) and the public API have always
 * accepted up to 4096 (a smaller limit would refuse files that are valid
 * today), it is far above any published model (the deepest have ~130
 * layers), and what scales with it is small: per-layer tables are
 * allocated for the layers a model has, and the fixed per-layer arrays
 * of the model's KV buffers cost 8-24 bytes per possible layer (heap). */
#ifndef VQ_CORE_LIMITS_H
#define VQ_CORE_LIMITS_H

#define VQ_MAX_LAYERS 4096

#endif
