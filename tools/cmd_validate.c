/* cmd_validate.c -- `veloxquant validate`: the validation harness.
 *
 * For each arm (a name and a cache config) the model generates greedily
 * from the same prompt with its K/V in that cache, and the harness records
 * bytes (accounted by the codec formulas and resident in the cache's
 * allocator), memory, speed, an output preview and quality against the
 * fp16 arm; all of it goes to <out>/<model>/results.json (format below)
 * and a table on stdout.
 *
 * Measurement protocol (docs/validation-report.md explains each number):
 *   - Every arm runs in its own child process (fork), which loads the model
 *     itself, so `rss_peak_mb` (VmHWM) is that arm's own peak: weights
 *     touched, runtime scratch and its cache. The parent never loads the
 *     model. (--no-fork runs arms in-process; peaks are then cumulative.)
 *   - Generation is greedy and runs exactly --max-tokens tokens (end-of-
 *     generation tokens do not stop it, so every arm does the same work);
 *     the preview is cut at the first end-of-generation token.
 *   - The peak is read right after generation, before the quality pass.
 *   - Quality: the fp16 arm runs first and saves its logits at every
 *     decode step (to a temporary file). Each arm then re-runs the fp16
 *     arm's token sequence teacher-forced in its own cache and compares its
 *     next-token distribution with fp16's at each generated position:
 *     kl_vs_fp16 = mean KL(p_fp16 || p_arm) (nats), top1_agreement_vs_fp16 =
 *     share of positions with the same argmax. greedy_matches_fp16: the
 *     arm's own greedy continuation equals fp16's token for token. The fp16
 *     arm's own figures (teacher-forced batch vs step-by-step decode) show
 *     the noise floor of the runtime.
 *
 * results.json, schema "veloxquant.validate/1": validate_report.c. The
 * parts, one file each, are listed in validate.h; this file holds the
 * options, the default arms and the run over all arms. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_opts.h"
#include "util/clock.h"
#include "util/file_write.h"
#include "util/git.h"
#include "util/sysinfo.h"
#include "validate.h"

static const char DEFAULT_PROMPT[] =
    "Explain what the key-value cache of a transformer language model stores, why it grows "
    "with the length of the conversation, and how quantization makes it smaller.";

/* --arm "name=NAME CONFIG": one more arm (dst: the options) */
static const char *store_arm(void *dst, const char *v)
{
    validate_opts *o = dst;
    static char want[96];
    snprintf(want, sizeof want, "name=NAME CONFIG, NAME at most 63 bytes; at most %d arms", VALIDATE_MAX_ARMS);
    if (o->n_arms >= VALIDATE_MAX_ARMS || strncmp(v, "name=", 5) != 0)
        return want;
    size_t k = strcspn(v + 5, " ");
    validate_arm *ad = &o->arms[o->n_arms];
    if (k == 0 || k >= sizeof ad->name || strlen(v + 5 + k) >= sizeof ad->cache)
        return want;
    memcpy(ad->name, v + 5, k);
    ad->name[k] = 0;
    const char *c = v + 5 + k;
    while (*c == ' ')
        c++;
    snprintf(ad->cache, sizeof ad->cache, "%s", *c ? c : "keys=fp16 values=fp16");
    o->n_arms++;
    return NULL;
}

static int default_arms(validate_opts *o, const char *only)
{
    static const char *const defs[][2] = {
        { "fp16", "keys=fp16 values=fp16" },
        { "RVQ-1bit", "keys=turboquant_rvq:bits=1 values=fp16" },
        { "VecInfer-1bit", "keys=vecinfer:sub_dim=8,bits=8,calib=%s values=fp16" },
        { "KIVI-2", "keys=kivi:bits=2,group=32 values=kivi:bits=2,group=32 residual=32" },
        { "q4_0-rot", "keys=q4_0:rot=1 values=q4_0:rot=1" },
        { "RaBitQ-1bit", "keys=rabitq:bits=1 values=q4_0:rot=1" },
    };
    for (size_t i = 0; i < sizeof defs / sizeof *defs; i++) {
        if (only) {
            /* comma-separated names, exact match */
            size_t nl = strlen(defs[i][0]);
            const char *p = only;
            int found = 0;
            while (*p) {
                size_t k = strcspn(p, ",");
                if (k == nl && strncmp(p, defs[i][0], k) == 0)
                    found = 1;
                p += k + (p[k] == ',');
            }
            if (!found)
                continue;
        }
        validate_arm *a = &o->arms[o->n_arms++];
        snprintf(a->name, sizeof a->name, "%s", defs[i][0]);
        snprintf(a->cache, sizeof a->cache, defs[i][1], "@CALIB@");
    }
    return o->n_arms;
}

static int make_dirs(const char *path)
{
    char tmp[1024];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return -1;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* the model's short name: basename without .gguf */
static void model_short(const char *model, char *buf, size_t cap)
{
    const char *b = strrchr(model, '/');
    b = b ? b + 1 : model;
    snprintf(buf, cap, "%s", b);
    size_t n = strlen(buf);
    if (n > 5 && strcmp(buf + n - 5, ".gguf") == 0)
        buf[n - 5] = 0;
}

int cmd_validate(int argc, char **argv)
{
    validate_opts o = { 0 };
    o.max_tokens = 128;
    o.prompt_repeat = 1;
    o.chat = 1;
    o.prompt = DEFAULT_PROMPT;
    o.out_dir = "figures/validation";
    o.argc = argc;
    o.argv = argv;
    const char *only = NULL;
    int no_chat = 0;
    validate_ref ref = { NULL, 0, "" };
    o.ref = &ref;
    const cli_opt opts[] = {
        { "model", CLI_STR, &o.model, "MODEL", "GGUF path or installed name", 0, 0, NULL, CLI_REQUIRED },
        CLI_OPT_INT("max-tokens", &o.max_tokens, "N", 1, 65536, "tokens generated per arm (default 128)"),
        CLI_OPT_STR("prompt", &o.prompt, "TEXT", "prompt (default: a question about the KV cache)"),
        CLI_OPT_INT("prompt-repeat", &o.prompt_repeat, "R", 1, 100000,
                    "repeat the prompt R times to grow the prefill (default 1)"),
        CLI_OPT_CALL("arm", store_arm, &o, "\"name=NAME CONFIG\"",
                     "an arm (repeatable; replaces the defaults);\n"
                     "CONFIG is cache config text, e.g. keys=turboquant_rvq:bits=1"),
        CLI_OPT_STR("arms", &only, "A,B,...", "run only these default arms"),
        CLI_OPT_STR("calib", &o.calib, "FILE",
                    "VecInfer calibration file, made there when missing\n"
                    "(default OUT/MODEL/calib-vecinfer.vqc)"),
        CLI_OPT_STR("calib-text", &o.calib_text, "FILE",
                    "text for that calibration (default ../shared/data/\n"
                                                "wikitext-2-test.txt or $VQ_SHARED_DATA; its first quarter)"),
        CLI_OPT_STR("out", &o.out_dir, "DIR", "results directory (default figures/validation)"),
        CLI_OPT_FLAG("no-chat", &no_chat, "use the prompt as plain text (default: chat template)"),
        CLI_OPT_INT("threads", &o.threads, "N", 1, 256, "threads per arm (default: all cores)"),
        CLI_OPT_FLAG("no-fork", &o.no_fork, "run arms in this process (peak RSS becomes cumulative)"),
        CLI_OPT_FLAG("no-quality", &o.no_quality,
                     "skip the teacher-forced comparison with fp16 (halves the\n"
                     "work at long prompts; quality fields become null)"),
        CLI_OPT_NOTE("default arms: fp16, RVQ-1bit, VecInfer-1bit, KIVI-2, q4_0-rot, RaBitQ-1bit"),
        CLI_OPT_END,
    };
    const cli_command cmd = { "validate", "--model MODEL [options]",
                              "Runs each arm (a cache config) on the same prompt, writes OUT/MODEL/results.json\n"
                              "and a table: bytes, memory, speed, quality against fp16.",
                              opts, NULL, NULL, 0, NULL };
    int prc = cli_parse(&cmd, argc, argv);
    if (prc >= 0)
        return prc;
    o.chat = !no_chat;
    if (o.n_arms == 0 && default_arms(&o, only) == 0)
        return cli_usage_error(&cmd, "--arms selects no default arm: %s", only);
    /* the fp16 arm (if any) goes first: it is the quality reference */
    for (int i = 1; i < o.n_arms; i++)
        if (strcmp(o.arms[i].name, "fp16") == 0) {
            validate_arm t = o.arms[i];
            memmove(&o.arms[1], &o.arms[0], (size_t)i * sizeof t);
            o.arms[0] = t;
        }

    char mshort[128], dir[1200], path[1400], calib_path[1400];
    model_short(o.model, mshort, sizeof mshort);
    snprintf(dir, sizeof dir, "%s/%s", o.out_dir, mshort);
    snprintf(path, sizeof path, "%s/results.json", dir);
    if (make_dirs(dir) != 0) {
        cli_error("validate", "cannot create %s: %s", dir, strerror(errno));
        return 1;
    }
    snprintf(calib_path, sizeof calib_path, "%s", o.calib ? o.calib : "");
    if (!o.calib)
        snprintf(calib_path, sizeof calib_path, "%s/calib-vecinfer.vqc", dir);
    for (int i = 0; i < o.n_arms; i++) {
        char *at = strstr(o.arms[i].cache, "@CALIB@");
        if (at) {
            char buf[sizeof o.arms[i].cache];
            if (snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - o.arms[i].cache), o.arms[i].cache,
                         calib_path, at + 7) >= (int)sizeof buf) {
                return cli_usage_error(&cmd, "calibration path too long");
            }
            snprintf(o.arms[i].cache, sizeof o.arms[i].cache, "%s", buf);
        }
    }
    /* the calibration file for arms that use the default one */
    char calib_err[512] = "";
    int calib_failed = 0;
    for (int i = 0; i < o.n_arms; i++) {
        if (strstr(o.arms[i].cache, calib_path) && access(calib_path, R_OK) != 0) {
            fprintf(stderr, "validate: calibrating vecinfer on the model's keys -> %s\n", calib_path);
            if (validate_calibration_isolated(&o, "keys=vecinfer:sub_dim=8,bits=8 values=fp16", calib_path, calib_err,
                                              sizeof calib_err)) {
                fprintf(stderr, "validate: calibration failed: %s\n", calib_err);
                calib_failed = 1;
            }
            break;
        }
    }
    (void)calib_failed;
    /* prompt, repeated */
    size_t pl = strlen(o.prompt);
    o.prompt_text = malloc((pl + 1) * (size_t)o.prompt_repeat + 1);
    if (!o.prompt_text)
        return 1;
    o.prompt_text[0] = 0;
    for (int r = 0; r < o.prompt_repeat; r++) {
        memcpy(o.prompt_text + r * (pl + 1), o.prompt, pl);
        o.prompt_text[r * (pl + 1) + pl] = r + 1 < o.prompt_repeat ? '\n' : 0;
    }
    /* temporaries of killed runs: reference logits, results.json */
    cli_remove_stale_temps(dir, ".ref-logits.", ".tmp");
    cli_remove_stale_temps(dir, "results.json.tmp.", "");
    if (snprintf(ref.logits_path, sizeof ref.logits_path, "%s/.ref-logits.%d.tmp", dir,
                 (int)getpid()) >= (int)sizeof ref.logits_path) {
        cli_error("validate", "output path too long");
        return 2;
    }

    char date[32], commit[80];
    cli_utc_now_iso8601(date, sizeof date);
    cli_git_commit(commit, sizeof commit);
    validate_result *res = calloc((size_t)o.n_arms, sizeof *res);
    if (!res) {
        free(o.prompt_text);
        return 1;
    }
    int n_failed = 0;
    double t_all = cli_now_seconds();
    for (int i = 0; i < o.n_arms; i++) {
        int is_ref = i == 0 && strcmp(o.arms[0].name, "fp16") == 0 && !o.no_quality;
        fprintf(stderr, "validate: arm %d/%d %s (%s), %.0fs so far\n", i + 1, o.n_arms, o.arms[i].name,
                o.arms[i].cache, cli_now_seconds() - t_all);
        int32_t *gen = NULL;
        validate_run_arm_isolated(&o, &o.arms[i], is_ref, &res[i], &gen);
        if (is_ref && res[i].ok && gen) {
            ref.tokens = gen;
            ref.n = res[i].n_generated;
        } else {
            if (gen == ref.tokens) { /* --no-fork: a failed reference arm */
                ref.tokens = NULL;
                ref.n = 0;
            }
            free(gen);
        }
        if (!res[i].ok) {
            n_failed++;
            fprintf(stderr, "validate: arm %s failed: %s\n", o.arms[i].name, res[i].error);
        }
        /* results so far, atomically (a later crash keeps them) */
        char werr[512];
        if (validate_write_results(&o, path, res, i + 1, date, commit, werr, sizeof werr) != 0)
            cli_error("validate", "%s", werr);
    }
    unlink(ref.logits_path);
    validate_print_table(&o, res);
    printf("results: %s (%d arms, %d failed)\n", path, o.n_arms, n_failed);
    free(ref.tokens);
    free(res);
    free(o.prompt_text);
    return n_failed == o.n_arms ? 1 : 0;
}

