/* validate.h -- the parts of `veloxquant validate` (the validation harness;
 * what it measures and how: cmd_validate.c). One file per job:
 *   cmd_validate.c      options, default arms, the run over all arms
 *   validate_arm.c      one arm in this process: generate, bytes, speed, memory
 *   validate_quality.c  the teacher-forced KL / top-1 comparison with fp16
 *   validate_calib.c    the VecInfer calibration file when none is given
 *   validate_fork.c     an arm (or the calibration) in a child process
 *   validate_report.c   results.json and the table on stdout
 * Public API only (veloxquant.h) and tools/util. */
#ifndef VQ_TOOLS_VALIDATE_H
#define VQ_TOOLS_VALIDATE_H

#include <stddef.h>
#include <stdint.h>

#include "veloxquant.h"

#define VALIDATE_MAX_ARMS 16
#define VALIDATE_PREVIEW_CHARS 200 /* bytes of output kept, cut at a UTF-8 boundary */
#define VALIDATE_MB (1024.0 * 1024.0)

typedef struct {
    char name[64];
    char cache[768]; /* config text as given */
} validate_arm;

/* Everything one arm measured; sent from the child as raw bytes, followed
 * by n_generated int32 token ids. */
typedef struct {
    int ok;
    char error[512];
    char cache_canon[768];
    /* model */
    char arch[32];
    char model_name[96];
    int n_layers, n_kv_heads, n_q_heads, head_dim, n_vocab;
    /* run */
    int n_prompt, n_generated, tokens_in_cache_max;
    int have_stats;
    uint64_t fp16_key_bytes, compressed_key_bytes, fp16_value_bytes, compressed_value_bytes;
    uint64_t resident_key_bytes, resident_value_bytes, residual_bytes, index_bytes, shared_bytes;
    uint64_t total_cache_bytes; /* vq_cache_usage.total_bytes (0 for float arms) */
    uint64_t resident_bound_bytes, tokens_held;
    double prefill_s, decode_s, prefill_tok_s, decode_tok_s, throughput_tok_s;
    double rss_model_mb, rss_peak_mb;
    /* quality */
    int quality_positions;
    double kl_mean, kl_max, top1;
    int greedy_match, greedy_prefix;
    char preview[VALIDATE_PREVIEW_CHARS * 4 + 1];
} validate_result;

/* The reference (fp16) arm's generated tokens and logits file, set in the
 * parent before later arms fork (the children inherit them). */
typedef struct {
    int32_t *tokens;
    int n;
    char logits_path[1400];
} validate_ref;

typedef struct {
    const char *model;
    int max_tokens, prompt_repeat, threads, chat, no_fork, no_quality;
    const char *prompt, *out_dir, *calib, *calib_text;
    char *prompt_text; /* prompt repeated */
    validate_arm arms[VALIDATE_MAX_ARMS];
    int n_arms;
    int argc;
    char **argv;
    validate_ref *ref;
} validate_opts;

/* Mark r failed with "what: msg"; returns 1. */
int validate_fail(validate_result *r, const char *what, const char *msg);

/* Run arm a in this process; fills r and *gen (malloc'd, r->n_generated
 * ids). is_ref: write the reference logits file (o->ref) while decoding. */
int validate_run_arm(const validate_opts *o, const validate_arm *a, int is_ref, validate_result *r, int32_t **gen);

/* Teacher-forced pass over prompt + the reference tokens in ctx, compared
 * with the reference logits file: fills r's quality fields; 1 on failure. */
int validate_quality_pass(const validate_opts *o, vq_ctx *ctx, const int32_t *prompt, int n_prompt,
                          validate_result *r, float *logits, int n_vocab);

/* Calibrate the codecs of cfg_text on the model's keys/values and write the
 * whole-model calibration file path; 1 with a message in err on failure. */
int validate_make_calibration(const validate_opts *o, const char *cfg_text, const char *path, char *err, size_t cap);

/* The same two in a child process (in this one with --no-fork or when fork
 * fails); the child's memory is not the parent's. */
void validate_run_arm_isolated(const validate_opts *o, const validate_arm *a, int is_ref, validate_result *r,
                               int32_t **gen);
int validate_calibration_isolated(const validate_opts *o, const char *cfg_text, const char *path, char *err,
                                  size_t cap);

/* results.json (schema "veloxquant.validate/1") for the first n_done arms,
 * written atomically; 0, or -1 with a message in err. */
int validate_write_results(const validate_opts *o, const char *path, const validate_result *res, int n_done,
                           const char *date, const char *commit, char *err, size_t cap);
/* The table of all arms on stdout. */
void validate_print_table(const validate_opts *o, const validate_result *res);

#endif
