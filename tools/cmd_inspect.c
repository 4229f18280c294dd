/* cmd_inspect.c -- `veloxquant inspect --model MODEL` (or `inspect MODEL`):
 * architecture, shapes, tensor types with counts, vocabulary size, KV-cache bytes per token. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_opts.h"
#include "veloxquant.h"

int cmd_inspect(int argc, char **argv)
{
    const char *model = NULL, *pos[1] = { NULL };
    int list = 0, n_pos = 0;
    const cli_opt opts[] = {
        CLI_OPT_STR("model", &model, "MODEL", "GGUF path or installed name (or MODEL as the argument)"),
        CLI_OPT_FLAG("tensors", &list, "also list every tensor"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "inspect", "--model MODEL [--tensors]   (or: veloxquant inspect MODEL [--tensors])",
                              "Architecture, shapes, tensor types with counts, vocabulary, KV-cache bytes per token.",
                              opts, "MODEL", pos, 1, &n_pos };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    if (model && n_pos)
        return cli_usage_error(&cmd, "the model is given twice (--model %s and %s)", model, pos[0]);
    if (!model)
        model = pos[0];
    if (!model)
        return cli_usage_error(&cmd, "--model is required");
    vq_model *m = NULL;
    if (vq_model_load(model, &m) != VQ_OK) {
        cli_error("inspect", "%s", vq_last_error());
        return 1;
    }
    vq_model_info in;
    vq_model_info_get(m, &in);
    printf("model:          %s\n", in.name[0] ? in.name : "(unnamed)");
    printf("architecture:   %s\n", in.arch);
    printf("layers:         %d\n", in.n_layers);
    printf("embedding:      %d\n", in.n_embd);
    printf("heads:          %d query, %d key/value (GQA group %d), head dim %d\n", in.n_q_heads,
           in.n_kv_heads, in.n_q_heads / in.n_kv_heads, in.head_dim);
    printf("feed-forward:   %d\n", in.n_ff);
    printf("vocabulary:     %d\n", in.n_vocab);
    printf("train context:  %d\n", in.n_ctx_train);
    printf("rope base:      %g", in.rope_base);
    if (in.n_swa_layers)
        printf(" (sliding-window layers: %g)", in.rope_base_local);
    printf("\nrms epsilon:    %g\n", in.rms_eps);
    if (in.n_swa_layers) {
        printf("sliding window: %d tokens on %d of %d layers (full:", in.sliding_window,
               in.n_swa_layers, in.n_layers);
        for (int l = 0; l < in.n_layers; l++) {
            vq_layer_shape li;
            if (vq_model_layer_info(m, l, &li) == VQ_OK && li.window == 0)
                printf(" %d", l);
        }
        printf(")\n");
    }
    size_t kv16 = 0;
    for (int l = 0; l < in.n_layers; l++) {
        vq_layer_shape li;
        if (vq_model_layer_info(m, l, &li) == VQ_OK)
            kv16 += 2u * (size_t)li.n_kv_heads * (size_t)li.head_dim * 2u;
    }
    printf("KV cache:       %zu bytes per token at fp16 (K and V, all layers)\n", kv16);
    printf("parameters:     %zu (%.1f MiB of tensors)\n", in.n_params,
           (double)in.weight_bytes / (1024.0 * 1024.0));

    /* tensor types with counts */
    enum { MAXT = 32 };
    const char *tname[MAXT];
    int tcount[MAXT];
    size_t tbytes[MAXT];
    int nt = 0;
    int n = vq_model_n_tensors(m);
    for (int i = 0; i < n; i++) {
        const char *name, *type;
        int64_t dims[4];
        int nd;
        size_t nb;
        if (vq_model_tensor(m, i, &name, &type, dims, &nd, &nb) != VQ_OK)
            continue;
        if (list) {
            printf("  %-40s %-6s [", name, type);
            for (int d = 0; d < nd; d++)
                printf("%s%lld", d ? ", " : "", (long long)dims[d]);
            printf("] %zu bytes\n", nb);
        }
        int k = 0;
        while (k < nt && strcmp(tname[k], type) != 0)
            k++;
        if (k == nt && nt < MAXT) {
            tname[nt] = type;
            tcount[nt] = 0;
            tbytes[nt] = 0;
            nt++;
        }
        if (k < nt) {
            tcount[k]++;
            tbytes[k] += nb;
        }
    }
    printf("tensors:        %d\n", n);
    for (int k = 0; k < nt; k++)
        printf("  %-6s %4d tensors, %.1f MiB\n", tname[k], tcount[k],
               (double)tbytes[k] / (1024.0 * 1024.0));
    vq_model_free(m);
    return 0;
}
