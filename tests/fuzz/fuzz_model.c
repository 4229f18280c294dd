/* fuzz_model.c -- libFuzzer target for GGUF files through the model loader:
 * header, metadata, tensor table, tensor data and tokenizer as
 * vq_model_load sees them (from a file: the bytes go to an in-memory file).
 * A file that loads is used: info, every layer's info, every tensor's
 * listing, tokenize/detokenize a short text, and a 2-token forward pass
 * (reads the tensor data). Contracts: a refusal carries a message; a loaded
 * model's shape is positive; no crash, leak or sanitizer report.
 * Corpus: tests/fuzz/corpus/model/ (tiny models of each architecture,
 * written by tests/fuzz/make_seeds.c). */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "veloxquant.h"

const char vq_fuzz_corpus[] = "model";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = vq_fuzz_memfile(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    vq_model *m = NULL;
    vq_status st = vq_model_load(path, &m);
    close(fd);
    if (st != VQ_OK) {
        FUZZ_CHECK(m == NULL && vq_last_error()[0]);
        return 0;
    }
    vq_fuzz_accepted++;
    vq_model_info info;
    FUZZ_CHECK(vq_model_info_get(m, &info) == VQ_OK);
    FUZZ_CHECK(info.n_layers > 0 && info.n_embd > 0 && info.n_vocab > 0 && info.head_dim > 0);
    for (int l = 0; l < info.n_layers; l++) {
        vq_layer_shape li;
        FUZZ_CHECK(vq_model_layer_info(m, l, &li) == VQ_OK);
        FUZZ_CHECK(li.n_q_heads > 0 && li.n_kv_heads > 0 && li.head_dim > 0);
    }
    for (int i = 0; i < vq_model_n_tensors(m); i++) {
        const char *name, *type;
        int64_t dims[4];
        int nd;
        size_t nb;
        FUZZ_CHECK(vq_model_tensor(m, i, &name, &type, dims, &nd, &nb) == VQ_OK);
    }
    int32_t *toks = NULL;
    size_t nt = 0;
    if (vq_model_tokenize(m, "Hi there", 8, 1, 1, &toks, &nt) == VQ_OK) {
        char *text = NULL;
        if (vq_model_detokenize(m, toks, nt, &text) == VQ_OK)
            free(text);
        free(toks);
    }
    /* the forward pass reads every weight; bounded so a big (valid) file
     * does not turn into a slow input */
    if (info.weight_bytes <= ((size_t)8 << 20) && info.n_layers <= 16) {
        vq_ctx *c = NULL;
        if (vq_ctx_create(m, 8, 1, &c) == VQ_OK) {
            float *logits = malloc((size_t)info.n_vocab * sizeof *logits);
            int32_t in[2] = { 0, info.n_vocab - 1 };
            if (logits && vq_ctx_forward(c, in, 2, logits, VQ_LOGITS_LAST) == VQ_OK)
                FUZZ_CHECK(vq_ctx_n_tokens(c) == 2);
            free(logits);
            vq_ctx_free(c);
        }
    }
    vq_model_free(m);
    return 0;
}
