/* test_outlier_families.c -- every method family at >= 4 bits per element
 * on a model with strong key outlier channels (a tiny random qwen2 whose
 * key biases put +-40 on every 8th channel, tests/util/tiny_model.h).
 *
 * Prints KL(p_fp16 || p_config) and top-1 agreement per config from
 * vq_cache_check_kl (the measurement behind check=strict; committed as
 * figures/quality/outlier-families.txt). These are benchmark numbers, not
 * thresholds; what is tested is what holds by construction of the data:
 * per-channel keys (kivix, 4 bits, sparse outliers) measure a lower KL
 * than per-token 4-bit blocks without rotation (q4_0), whose block scale
 * the outlier channels set, and fp16 measures 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/cache_check.h"
#include "model/quants.h"
#include "test.h"
#include "tiny_model.h"
#include "veloxquant.h"

static void test_families(void)
{
    vq_tiny_spec s = vq_tiny_outlier_spec();
    char path[600];
    snprintf(path, sizeof path, "%s/outlier_families.gguf", vq_test_tmpdir());
    vq_model *m = NULL;
    CHECK(vq_tiny_write_outliers(&s, 40.0f, path) == 0);
    CHECKF(vq_model_load(path, &m) == VQ_OK, "load: %s", vq_last_error());
    remove(path);
    if (!m)
        return;
    static const char *const cfgs[] = {
        "keys=fp16 values=fp16",
        "keys=q8_0 values=q8_0",
        "keys=q4_0 values=q4_0",
        "keys=q4_0:rot=1 values=q4_0:rot=1",
        "keys=kivi:bits=4,group=32 values=kivi:bits=4,group=32 residual=0",
        "keys=kivix:bits=4,group=32,outliers=16 values=kivix:bits=4,group=64 residual=0",
        "keys=kivix:bits=4,group=32,outliers=16 values=kivix:bits=4,group=64 residual=0 sinks=4 prerope=1",
        "keys=turboquant_mse:bits=4 values=turboquant_mse:bits=4",
        "keys=turboquant_rvq:bits=2 values=turboquant_rvq:bits=2",
        "keys=rabitq:bits=4 values=rabitq:bits=4",
        "keys=rabitq:bits=1 values=kivix:bits=4,group=64 residual=0 sinks=4",
        "keys=qjl values=q8_0",
    };
    double kl[sizeof cfgs / sizeof *cfgs];
    printf("  KL(fp16 || config) on a tiny qwen2 with key outlier channels (+-40 every 8th channel):\n");
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        double top1 = 0;
        int n = 0;
        kl[i] = -1;
        vq_status st = vq_cache_check_kl(m, cfgs[i], &kl[i], &top1, &n);
        CHECKF(st == VQ_OK, "%s: %s", cfgs[i], vq_last_error());
        printf("  %-96s KL %8.4f  top-1 %.3f  (%d tokens)%s\n", cfgs[i], kl[i], top1, n,
               kl[i] >= VQ_CHECK_BREAKS_KL ? "  BREAKS" : "");
    }
    CHECK(kl[0] < 1e-6);
    CHECKF(kl[5] < kl[2], "per-channel kivix %g vs per-token q4_0 %g", kl[5], kl[2]);
    vq_model_free(m);
}

int main(void)
{
    RUN(test_families);
    return vq_test_summary("outlier_families");
}
