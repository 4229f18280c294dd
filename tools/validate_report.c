/* validate_report.c -- what `veloxquant validate` reports: results.json
 * (schema "veloxquant.validate/1", every field below) and the table on
 * stdout (see validate.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/file_write.h"
#include "util/json_write.h"
#include "util/sysinfo.h"
#include "validate.h"

#define SCHEMA "veloxquant.validate/1"

static void knum_or_null(cli_json *j, const char *k, double v, int have)
{
    cli_json_key(j, k);
    if (have)
        cli_json_num(j, v);
    else
        cli_json_null(j);
}

int validate_write_results(const validate_opts *o, const char *path, const validate_result *res, int n_done,
                           const char *date, const char *commit, char *err, size_t cap)
{
    cli_json_buf b = { 0 };
    cli_json j;
    cli_json_init(&j, cli_json_sink_buf, &b, 1);
    cli_sysinfo si;
    cli_sysinfo_get(&si);
    const validate_result *shape = NULL;
    for (int i = 0; i < n_done; i++)
        if (res[i].n_layers > 0) {
            shape = &res[i];
            break;
        }
    cli_json_begin_object(&j);
    cli_json_kstr(&j, "schema", SCHEMA);
    cli_json_kstr(&j, "model", o->model);
    cli_json_kstr(&j, "model_name", shape ? shape->model_name : "");
    cli_json_kstr(&j, "arch", shape ? shape->arch : "");
    cli_json_kint(&j, "n_layers", shape ? shape->n_layers : 0);
    cli_json_kint(&j, "n_kv_heads", shape ? shape->n_kv_heads : 0);
    cli_json_kint(&j, "n_q_heads", shape ? shape->n_q_heads : 0);
    cli_json_kint(&j, "head_dim", shape ? shape->head_dim : 0);
    cli_json_kint(&j, "max_tokens", o->max_tokens);
    cli_json_kint(&j, "prompt_repeat", o->prompt_repeat);
    cli_json_kstr(&j, "prompt", o->prompt);
    cli_json_kbool(&j, "chat", o->chat);
    cli_json_kint(&j, "prompt_tokens", shape ? shape->n_prompt : 0);
    cli_json_key(&j, "hardware");
    cli_json_begin_object(&j);
    cli_json_kstr(&j, "cpu_model", si.cpu_model);
    cli_json_kint(&j, "cores", si.n_cores);
    cli_json_knum(&j, "memory_mb", (double)si.mem_total_bytes / VALIDATE_MB);
    cli_json_kstr(&j, "os", si.os);
    cli_json_kint(&j, "threads", o->threads);
    cli_json_end_object(&j);
    cli_json_kstr(&j, "git_commit", commit);
    cli_json_kstr(&j, "version", vq_version());
    cli_json_key(&j, "command_line");
    {
        char cl[2048];
        size_t off = 0;
        cl[0] = 0;
        for (int i = 0; i < o->argc && off < sizeof cl; i++) {
            int q = strpbrk(o->argv[i], " \t\"'") != NULL;
            off += (size_t)snprintf(cl + off, sizeof cl - off, "%s%s%s%s", i ? " " : "",
                                    q ? "'" : "", i == 0 ? "veloxquant validate" : o->argv[i], q ? "'" : "");
        }
        cli_json_str(&j, cl);
    }
    cli_json_kstr(&j, "date_utc", date);
    cli_json_kbool(&j, "per_arm_process", !o->no_fork);
    cli_json_kbool(&j, "quality_measured", !o->no_quality);
    cli_json_key(&j, "arms");
    cli_json_begin_array(&j);
    for (int i = 0; i < n_done; i++) {
        const validate_result *r = &res[i];
        cli_json_begin_object(&j);
        cli_json_kstr(&j, "name", o->arms[i].name);
        cli_json_kstr(&j, "cache", r->cache_canon);
        if (!r->ok)
            cli_json_kstr(&j, "error", r->error);
        if (r->ok) {
            cli_json_kint(&j, "prompt_tokens", r->n_prompt);
            cli_json_kint(&j, "generated_tokens", r->n_generated);
            cli_json_kint(&j, "tokens_in_cache_max", r->tokens_in_cache_max);
            cli_json_kuint(&j, "fp16_key_bytes", r->fp16_key_bytes);
            cli_json_knum(&j, "fp16_key_mb", r->fp16_key_bytes / VALIDATE_MB);
            cli_json_kuint(&j, "compressed_key_bytes", r->compressed_key_bytes);
            cli_json_knum(&j, "compressed_key_mb", r->compressed_key_bytes / VALIDATE_MB);
            /* ratios include the slot index, half to each role */
            double ik = (double)r->index_bytes / 2;
            cli_json_knum(&j, "key_compression", r->compressed_key_bytes ? (double)r->fp16_key_bytes / (r->compressed_key_bytes + ik) : 0);
            cli_json_kuint(&j, "fp16_value_bytes", r->fp16_value_bytes);
            cli_json_knum(&j, "fp16_value_mb", r->fp16_value_bytes / VALIDATE_MB);
            cli_json_kuint(&j, "compressed_value_bytes", r->compressed_value_bytes);
            cli_json_knum(&j, "compressed_value_mb", r->compressed_value_bytes / VALIDATE_MB);
            cli_json_knum(&j, "value_compression", r->compressed_value_bytes ? (double)r->fp16_value_bytes / (r->compressed_value_bytes + ik) : 0);
            uint64_t fa = r->fp16_key_bytes + r->fp16_value_bytes, ca = r->compressed_key_bytes + r->compressed_value_bytes;
            cli_json_knum(&j, "full_kv_compression", ca ? (double)fa / ((double)ca + 2 * ik) : 0);
            cli_json_kuint(&j, "accounted_kv_bytes", ca);
            cli_json_kuint(&j, "resident_kv_bytes", r->resident_key_bytes + r->resident_value_bytes);
            cli_json_knum(&j, "resident_kv_mb", (r->resident_key_bytes + r->resident_value_bytes) / VALIDATE_MB);
            cli_json_kuint(&j, "resident_key_bytes", r->resident_key_bytes);
            cli_json_kuint(&j, "resident_value_bytes", r->resident_value_bytes);
            cli_json_kuint(&j, "resident_bound_bytes", r->resident_bound_bytes);
            cli_json_kuint(&j, "residual_bytes", r->residual_bytes);
            cli_json_kuint(&j, "index_bytes", r->index_bytes);
            cli_json_kuint(&j, "total_cache_bytes", r->total_cache_bytes);
            cli_json_kuint(&j, "shared_state_bytes", r->shared_bytes);
            cli_json_kbool(&j, "measured_from_cache_allocator", r->have_stats);
            cli_json_knum(&j, "peak_mb", r->rss_peak_mb);
            cli_json_knum(&j, "rss_peak_mb", r->rss_peak_mb);
            cli_json_knum(&j, "rss_after_load_mb", r->rss_model_mb);
            cli_json_knum(&j, "cache_share_of_rss_peak",
                         r->rss_peak_mb > 0 ? (r->resident_key_bytes + r->resident_value_bytes + r->index_bytes) / VALIDATE_MB / r->rss_peak_mb : 0);
            cli_json_knum(&j, "prefill_s", r->prefill_s);
            cli_json_knum(&j, "decode_s", r->decode_s);
            cli_json_knum(&j, "prefill_tok_s", r->prefill_tok_s);
            cli_json_knum(&j, "decode_tok_s", r->decode_tok_s);
            cli_json_knum(&j, "throughput_tok_s", r->throughput_tok_s);
            cli_json_kstr(&j, "output_preview", r->preview);
            int q = r->quality_positions > 0;
            knum_or_null(&j, "kl_vs_fp16", r->kl_mean, q);
            knum_or_null(&j, "kl_max_vs_fp16", r->kl_max, q);
            knum_or_null(&j, "top1_agreement_vs_fp16", r->top1, q);
            cli_json_kint(&j, "quality_positions", r->quality_positions);
            cli_json_key(&j, "greedy_matches_fp16");
            if (q)
                cli_json_bool(&j, r->greedy_match);
            else
                cli_json_null(&j);
            cli_json_kint(&j, "greedy_prefix_match_tokens", r->greedy_prefix);
        }
        cli_json_end_object(&j);
    }
    cli_json_end_array(&j);
    cli_json_end_object(&j);
    int rc = -1;
    if (cli_json_finish(&j) != VQ_OK)
        snprintf(err, cap, "JSON writer failed");
    else
        rc = cli_write_file_atomic(path, b.data, b.len, err, cap);
    free(b.data);
    return rc;
}

void validate_print_table(const validate_opts *o, const validate_result *res)
{
    printf("\n%-14s %8s %8s %11s %15s %7s %11s %9s %6s %6s\n", "Arm", "tok/s", "Peak MB", "Keys fp16",
           "Keys compressed", "Claim", "Resident KV", "KL", "top-1", "greedy");
    for (int i = 0; i < o->n_arms; i++) {
        const validate_result *r = &res[i];
        if (!r->ok) {
            printf("%-14s failed: %s\n", o->arms[i].name, r->error);
            continue;
        }
        char kl[32] = "-", t1[32] = "-";
        if (r->quality_positions > 0) {
            snprintf(kl, sizeof kl, "%.2e", r->kl_mean);
            snprintf(t1, sizeof t1, "%.3f", r->top1);
        }
        printf("%-14s %8.1f %8.0f %8.3f MB %12.3f MB %6.2fx %8.3f MB %9s %6s %6s\n", o->arms[i].name,
               r->throughput_tok_s, r->rss_peak_mb, r->fp16_key_bytes / VALIDATE_MB, r->compressed_key_bytes / VALIDATE_MB,
               r->compressed_key_bytes ? (double)r->fp16_key_bytes / (r->compressed_key_bytes + r->index_bytes / 2.0) : 0,
               (r->resident_key_bytes + r->resident_value_bytes) / VALIDATE_MB, kl, t1,
               r->quality_positions > 0 ? (r->greedy_match ? "same" : "diff") : "-");
    }
    printf("claim = fp16_key_bytes / (compressed_key_bytes + index_bytes / 2); tok/s = generated tokens / (prefill + decode) "
           "seconds; Peak MB = the arm process's VmHWM; KL = mean KL(fp16 || arm) in nats per generated "
           "position\n");
}
