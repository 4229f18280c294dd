/* quants_traits.c -- per-type traits of ggml's weight types: name, block
 * size in elements and bytes, and whether this runtime has kernels for it.
 *
 * The table lists every type number ggml has assigned (so the GGUF reader can
 * size and bounds-check tensors of types we do not compute with, and refuse
 * only numbers nobody knows). Layouts from ggml's ggml-common.h:
 * block_elems/block_bytes are facts of the file format. */
#include "model/quants.h"

typedef struct {
    const char *name;
    uint16_t block_elems;
    uint16_t block_bytes;
    uint8_t supported; /* dequantize + dot implemented here */
} wtype_traits;

/* Indexed by ggml type number; gaps (removed types) have name NULL. */
static const wtype_traits traits[] = {
    [VQ_W_F32] = { "F32", 1, 4, 1 },
    [VQ_W_F16] = { "F16", 1, 2, 1 },
    [VQ_W_Q4_0] = { "Q4_0", 32, 18, 1 },
    [VQ_W_Q4_1] = { "Q4_1", 32, 20, 1 },
    [VQ_W_Q5_0] = { "Q5_0", 32, 22, 1 },
    [VQ_W_Q5_1] = { "Q5_1", 32, 24, 1 },
    [VQ_W_Q8_0] = { "Q8_0", 32, 34, 1 },
    [VQ_W_Q8_1] = { "Q8_1", 32, 36, 0 },
    [VQ_W_Q2_K] = { "Q2_K", 256, 84, 1 },
    [VQ_W_Q3_K] = { "Q3_K", 256, 110, 1 },
    [VQ_W_Q4_K] = { "Q4_K", 256, 144, 1 },
    [VQ_W_Q5_K] = { "Q5_K", 256, 176, 1 },
    [VQ_W_Q6_K] = { "Q6_K", 256, 210, 1 },
    [VQ_W_Q8_K] = { "Q8_K", 256, 292, 0 },
    [16] = { "IQ2_XXS", 256, 66, 0 },
    [17] = { "IQ2_XS", 256, 74, 0 },
    [18] = { "IQ3_XXS", 256, 98, 0 },
    [19] = { "IQ1_S", 256, 50, 0 },
    [20] = { "IQ4_NL", 32, 18, 0 },
    [21] = { "IQ3_S", 256, 110, 0 },
    [22] = { "IQ2_S", 256, 82, 0 },
    [23] = { "IQ4_XS", 256, 136, 0 },
    [24] = { "I8", 1, 1, 0 },
    [25] = { "I16", 1, 2, 0 },
    [26] = { "I32", 1, 4, 0 },
    [27] = { "I64", 1, 8, 0 },
    [28] = { "F64", 1, 8, 0 },
    [29] = { "IQ1_M", 256, 56, 0 },
    [VQ_W_BF16] = { "BF16", 1, 2, 1 },
    [34] = { "TQ1_0", 256, 54, 0 },
    [35] = { "TQ2_0", 256, 66, 0 },
    [39] = { "MXFP4", 32, 17, 0 },
};

#define N_TRAITS (sizeof traits / sizeof traits[0])

static const wtype_traits *get(uint32_t t)
{
    if (t >= N_TRAITS || !traits[t].name)
        return 0;
    return &traits[t];
}

int vq_wtype_supported(uint32_t t)
{
    const wtype_traits *tr = get(t);
    return tr && tr->supported;
}

const char *vq_wtype_name(uint32_t t)
{
    const wtype_traits *tr = get(t);
    return tr ? tr->name : "?";
}

size_t vq_wtype_block_elems(uint32_t t)
{
    const wtype_traits *tr = get(t);
    return tr ? tr->block_elems : 0;
}

size_t vq_wtype_block_bytes(uint32_t t)
{
    const wtype_traits *tr = get(t);
    return tr ? tr->block_bytes : 0;
}

size_t vq_wtype_row_bytes(uint32_t t, uint64_t n)
{
    const wtype_traits *tr = get(t);
    if (!tr || n % tr->block_elems)
        return 0;
    uint64_t blocks = n / tr->block_elems;
    if (blocks > SIZE_MAX / tr->block_bytes)
        return 0;
    return (size_t)(blocks * tr->block_bytes);
}
