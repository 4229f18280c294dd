/* ref_forward.c -- see ref_forward.h. Deliberately simple: every tensor is
 * dequantized to doubles, every product is a triple loop. */
#include "ref_forward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"
#include "model/quants.h"

/* whole tensor as doubles (malloc'd), NULL if absent */
static double *tensor_d(const vq_gguf *g, const char *name, size_t n)
{
    const vq_gguf_tensor *t = vq_gguf_find_tensor(g, name);
    if (!t)
        return NULL;
    float *f = malloc(n * sizeof *f);
    double *d = malloc(n * sizeof *d);
    vq_dequantize((vq_wtype)t->type, t->data, f, n);
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
    free(f);
    return d;
}

/* y[r] = sum_c W[r][c] x[c] */
static void matvec(const double *W, const double *x, int rows, int cols, double *y)
{
    for (int r = 0; r < rows; r++) {
        double s = 0;
        for (int c = 0; c < cols; c++)
            s += W[(size_t)r * cols + c] * x[c];
        y[r] = s;
    }
}

static void rmsnorm(double *y, const double *x, const double *w, int n, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * w[i];
}

static void rope(double *v, int d, int pos, double base, int neox)
{
    for (int i = 0; i < d / 2; i++) {
        double th = pos * pow(base, -2.0 * i / d);
        int a = neox ? i : 2 * i, b = neox ? i + d / 2 : 2 * i + 1;
        double x0 = v[a], x1 = v[b];
        v[a] = x0 * cos(th) - x1 * sin(th);
        v[b] = x0 * sin(th) + x1 * cos(th);
    }
}

int vq_ref_forward(const vq_tiny_spec *s, const char *path, const int32_t *tokens, int n,
                   double *logits)
{
    vq_gguf *g = NULL;
    char err[256];
    if (vq_gguf_open(path, &g, err) != VQ_OK)
        return -1;
    int llama = strcmp(s->arch, "llama") == 0, qwen2 = strcmp(s->arch, "qwen2") == 0;
    int qwen3 = strcmp(s->arch, "qwen3") == 0, gemma = strcmp(s->arch, "gemma3") == 0;
    int E = s->n_embd, F = s->n_ff, V = s->n_vocab, hd = s->head_dim;
    int nq = s->n_q_heads, nkv = s->n_kv_heads, QD = nq * hd, KD = nkv * hd;
    double eps = s->rms_eps;
    int rc = -1;
    double *x = calloc((size_t)n * E, sizeof *x);           /* residual */
    double *K = calloc((size_t)n * KD, sizeof *K), *Vv = calloc((size_t)n * KD, sizeof *Vv);
    double *Q = calloc((size_t)n * QD, sizeof *Q);
    double *h = malloc((size_t)(E > F ? E : F) * 3 * sizeof *h);
    double *att = malloc((size_t)QD * sizeof *att), *sc = malloc((size_t)n * sizeof *sc);
    double *emb = tensor_d(g, "token_embd.weight", (size_t)V * E);
    if (!emb)
        goto out;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < E; i++)
            x[(size_t)t * E + i] = emb[(size_t)tokens[t] * E + i] * (gemma ? sqrt((double)E) : 1.0);
    for (int il = 0; il < s->n_layers; il++) {
        char nm[96];
#define T(name, cnt) (snprintf(nm, sizeof nm, "blk.%d." name, il), tensor_d(g, nm, (size_t)(cnt)))
        double *an = T("attn_norm.weight", E), *fnw = T("ffn_norm.weight", E);
        double *wq = T("attn_q.weight", QD * E), *wk = T("attn_k.weight", KD * E);
        double *wv = T("attn_v.weight", KD * E), *wo = T("attn_output.weight", E * QD);
        double *wg = T("ffn_gate.weight", F * E), *wu = T("ffn_up.weight", F * E);
        double *wd = T("ffn_down.weight", E * F);
        /* qwen2: Q/K/V biases; llama: each when present (NULL otherwise) */
        int biased = qwen2 || llama;
        double *bq = biased ? T("attn_q.bias", QD) : NULL, *bk = biased ? T("attn_k.bias", KD) : NULL;
        double *bv = biased ? T("attn_v.bias", KD) : NULL;
        double *qn = (qwen3 || gemma) ? T("attn_q_norm.weight", hd) : NULL;
        double *kn = (qwen3 || gemma) ? T("attn_k_norm.weight", hd) : NULL;
        double *pan = gemma ? T("post_attention_norm.weight", E) : NULL;
        double *pfn = gemma ? T("post_ffw_norm.weight", E) : NULL;
#undef T
        int swa = gemma && s->window > 0 && il % 6 < 5;
        double base = swa ? 10000.0 : s->rope_base;
        int window = swa ? s->window : 0;
        /* projections of every token */
        for (int t = 0; t < n; t++) {
            rmsnorm(h, x + (size_t)t * E, an, E, eps);
            double *q = Q + (size_t)t * QD, *k = K + (size_t)t * KD, *v = Vv + (size_t)t * KD;
            matvec(wq, h, QD, E, q);
            matvec(wk, h, KD, E, k);
            matvec(wv, h, KD, E, v);
            for (int i = 0; bq && i < QD; i++)
                q[i] += bq[i];
            for (int i = 0; bk && i < KD; i++)
                k[i] += bk[i];
            for (int i = 0; bv && i < KD; i++)
                v[i] += bv[i];
            for (int hh = 0; hh < nq; hh++) {
                if (qn)
                    rmsnorm(q + hh * hd, q + hh * hd, qn, hd, eps);
                rope(q + hh * hd, hd, t, base, !llama);
            }
            for (int hh = 0; hh < nkv; hh++) {
                if (kn)
                    rmsnorm(k + hh * hd, k + hh * hd, kn, hd, eps);
                rope(k + hh * hd, hd, t, base, !llama);
            }
        }
        /* attention + FFN per token (keys of all earlier tokens are ready) */
        double *newx = malloc((size_t)n * E * sizeof *newx);
        for (int t = 0; t < n; t++) {
            for (int hh = 0; hh < nq; hh++) {
                int gk = hh / (nq / nkv);
                const double *q = Q + (size_t)t * QD + hh * hd;
                int lo = window ? (t - window + 1 > 0 ? t - window + 1 : 0) : 0;
                double mx = -1e300, sum = 0;
                for (int j = lo; j <= t; j++) {
                    double d = 0;
                    for (int i = 0; i < hd; i++)
                        d += q[i] * K[(size_t)j * KD + gk * hd + i];
                    sc[j] = d / sqrt((double)hd);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = lo; j <= t; j++)
                    sum += sc[j] = exp(sc[j] - mx);
                for (int i = 0; i < hd; i++) {
                    double a = 0;
                    for (int j = lo; j <= t; j++)
                        a += sc[j] * Vv[(size_t)j * KD + gk * hd + i];
                    att[hh * hd + i] = a / sum;
                }
            }
            double *xt = newx + (size_t)t * E;
            memcpy(xt, x + (size_t)t * E, (size_t)E * sizeof *xt);
            matvec(wo, att, E, QD, h);
            if (pan)
                rmsnorm(h, h, pan, E, eps);
            for (int i = 0; i < E; i++)
                xt[i] += h[i];
            double *hn = h, *g1 = h + (E > F ? E : F), *u1 = g1 + (E > F ? E : F);
            rmsnorm(hn, xt, fnw, E, eps);
            matvec(wg, hn, F, E, g1);
            matvec(wu, hn, F, E, u1);
            for (int i = 0; i < F; i++) {
                double a = g1[i];
                a = gemma ? 0.5 * a * (1 + tanh(sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)))
                          : a / (1 + exp(-a));
                g1[i] = a * u1[i];
            }
            matvec(wd, g1, E, F, hn);
            if (pfn)
                rmsnorm(hn, hn, pfn, E, eps);
            for (int i = 0; i < E; i++)
                xt[i] += hn[i];
        }
        memcpy(x, newx, (size_t)n * E * sizeof *x);
        free(newx);
        free(an); free(fnw); free(wq); free(wk); free(wv); free(wo); free(wg); free(wu); free(wd);
        free(bq); free(bk); free(bv); free(qn); free(kn); free(pan); free(pfn);
    }
    {
        double *on = tensor_d(g, "output_norm.weight", (size_t)E);
        double *out = tensor_d(g, "output.weight", (size_t)V * E);
        if (!on)
            goto out;
        for (int t = 0; t < n; t++) {
            rmsnorm(h, x + (size_t)t * E, on, E, eps);
            matvec(out ? out : emb, h, V, E, logits + (size_t)t * V);
        }
        free(on);
        free(out);
    }
    rc = 0;
out:
    free(emb);
    free(x); free(K); free(Vv); free(Q); free(h); free(att); free(sc);
    vq_gguf_close(g);
    return rc;
}
