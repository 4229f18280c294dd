/* lloyd_max.c -- Lloyd-Max quantizers for N(0,1), the unit Laplacian and
 * the residual of N(0,1) after its own Lloyd-Max quantizer, by Lloyd's
 * iteration on the closed-form cell probabilities and means. */
#include "codec/lloyd_max.h"

#include <math.h>

static const double INV_SQRT_2PI = 0.39894228040143267794;

/* probability mass and first moment of the density on [a, b] (a < b,
 * infinities allowed) */
static void cell_moments(vq_lm_density d, double a, double b, double *mass, double *mom1)
{
    if (d == VQ_LM_GAUSSIAN) {
        double pa = isinf(a) ? 0.0 : INV_SQRT_2PI * exp(-0.5 * a * a);
        double pb = isinf(b) ? 0.0 : INV_SQRT_2PI * exp(-0.5 * b * b);
        *mass = 0.5 * (erfc(-b / sqrt(2.0)) - erfc(-a / sqrt(2.0)));
        *mom1 = pa - pb; /* integral of x phi(x) = -phi */
        return;
    }
    /* Laplacian f(x) = exp(-|x|)/2: antiderivatives on each side of 0 */
    double m = 0.0, s = 0.0;
    if (a < 0.0) { /* part on [a, min(b,0)] */
        double hi = b < 0.0 ? b : 0.0;
        /* F(x) = exp(x)/2, G(x) = integral x f = (x-1) exp(x)/2 for x<0 */
        double Fa = isinf(a) ? 0.0 : 0.5 * exp(a), Fh = 0.5 * exp(hi);
        double Ga = isinf(a) ? 0.0 : 0.5 * (a - 1.0) * exp(a), Gh = 0.5 * (hi - 1.0) * exp(hi);
        m += Fh - Fa;
        s += Gh - Ga;
    }
    if (b > 0.0) { /* part on [max(a,0), b] */
        double lo = a > 0.0 ? a : 0.0;
        /* F(x) = -exp(-x)/2, G(x) = -(x+1) exp(-x)/2 for x>0 */
        double Fl = -0.5 * exp(-lo), Fb = isinf(b) ? 0.0 : -0.5 * exp(-b);
        double Gl = -0.5 * (lo + 1.0) * exp(-lo), Gb = isinf(b) ? 0.0 : -0.5 * (b + 1.0) * exp(-b);
        m += Fb - Fl;
        s += Gb - Gl;
    }
    *mass = m;
    *mom1 = s;
}

/* second moment on [a,b], for the MSE figure */
static double cell_mom2(vq_lm_density d, double a, double b)
{
    /* numerical: Simpson on a clipped range (tails beyond 40 are nil) */
    double lo = isinf(a) ? -40.0 : a, hi = isinf(b) ? 40.0 : b;
    const int N = 2000;
    double h = (hi - lo) / N, s = 0.0;
    for (int i = 0; i <= N; i++) {
        double x = lo + i * h;
        double f = d == VQ_LM_GAUSSIAN ? INV_SQRT_2PI * exp(-0.5 * x * x) : 0.5 * exp(-fabs(x));
        double w = (i == 0 || i == N) ? 1.0 : (i % 2 ? 4.0 : 2.0);
        s += w * x * x * f;
    }
    return s * h / 3.0;
}

/* The density Lloyd's iteration runs on: an analytic one (kind), or, when
 * L1 > 0, the residual u - c1[j] of N(0,1) after the quantizer (c1, t1) of
 * L1 levels: on stage-1 cell j (t1[j] < u < t1[j+1]) the residual is
 * r = u - c1[j], so the density of r is sum_j phi(r + c1[j]) restricted to
 * t1[j] - c1[j] < r < t1[j+1] - c1[j]. */
typedef struct {
    vq_lm_density kind;
    int L1;
    double c1[VQ_LM_MAX_LEVELS], t1[VQ_LM_MAX_LEVELS + 1];
} lm_density;

/* mass, first and second moment of N(0,1) on [a, b] (a < b, infinities
 * allowed): int x^2 phi = Phi - x phi */
static void gauss_moments(double a, double b, double m[3])
{
    double pa = isinf(a) ? 0.0 : INV_SQRT_2PI * exp(-0.5 * a * a);
    double pb = isinf(b) ? 0.0 : INV_SQRT_2PI * exp(-0.5 * b * b);
    double xa = isinf(a) ? 0.0 : a * pa, xb = isinf(b) ? 0.0 : b * pb;
    m[0] = 0.5 * (erfc(-b / sqrt(2.0)) - erfc(-a / sqrt(2.0)));
    m[1] = pa - pb;
    m[2] = m[0] - (xb - xa);
}

/* mass, first and second moment of the density on [a, b]; the second only
 * when want2 (it is numerical, and slow, for the analytic densities) */
static void moments(const lm_density *d, double a, double b, int want2, double m[3])
{
    if (d->L1 == 0) {
        cell_moments(d->kind, a, b, &m[0], &m[1]);
        m[2] = want2 ? cell_mom2(d->kind, a, b) : 0.0;
        return;
    }
    m[0] = m[1] = m[2] = 0.0;
    for (int j = 0; j < d->L1; j++) { /* u = r + c on [a + c, b + c] within cell j */
        const double c = d->c1[j];
        double lo = fmax(a + c, d->t1[j]), hi = fmin(b + c, d->t1[j + 1]);
        if (!(lo < hi))
            continue;
        double g[3];
        gauss_moments(lo, hi, g);
        m[0] += g[0];
        m[1] += g[1] - c * g[0];
        m[2] += g[2] - 2.0 * c * g[1] + c * c * g[0];
    }
}

/* Lloyd's iteration from L evenly spread levels in [-spread, spread] */
static void lloyd(const lm_density *d, int bits, double spread, vq_lloyd_max_q *q)
{
    const int L = 1 << bits;
    double c[VQ_LM_MAX_LEVELS], t[VQ_LM_MAX_LEVELS + 1];
    for (int i = 0; i < L; i++)
        c[i] = spread * (2.0 * i + 1.0 - L) / L;
    for (int it = 0; it < 20000; it++) {
        t[0] = -INFINITY;
        t[L] = INFINITY;
        for (int i = 1; i < L; i++)
            t[i] = 0.5 * (c[i - 1] + c[i]);
        double move = 0.0;
        for (int i = 0; i < L; i++) {
            double m[3];
            moments(d, t[i], t[i + 1], 0, m);
            double nc = m[0] > 0.0 ? m[1] / m[0] : c[i];
            move = fmax(move, fabs(nc - c[i]));
            c[i] = nc;
        }
        /* enforce exact symmetry against rounding drift */
        for (int i = 0; i < L / 2; i++) {
            double s = 0.5 * (c[L - 1 - i] - c[i]);
            c[i] = -s;
            c[L - 1 - i] = s;
        }
        if (move < 1e-12)
            break;
    }
    q->levels = L;
    double mse = 0.0;
    t[0] = -INFINITY;
    t[L] = INFINITY;
    for (int i = 1; i < L; i++)
        t[i] = 0.5 * (c[i - 1] + c[i]);
    for (int i = 0; i < L; i++) {
        double m[3];
        moments(d, t[i], t[i + 1], 1, m);
        mse += m[2] - 2.0 * c[i] * m[1] + c[i] * c[i] * m[0];
        q->centroid[i] = (float)c[i];
        q->threshold[i] = i < L - 1 ? (float)t[i + 1] : INFINITY;
    }
    q->mse = mse;
}

int vq_lloyd_max(vq_lm_density density, int bits, vq_lloyd_max_q *q)
{
    if (!q || bits < 1 || bits > VQ_LM_MAX_BITS || (density != VQ_LM_GAUSSIAN && density != VQ_LM_LAPLACIAN))
        return -1;
    const lm_density d = { .kind = density };
    lloyd(&d, bits, density == VQ_LM_GAUSSIAN ? 2.0 : 3.0, q);
    return 0;
}

int vq_lloyd_max_residual(int bits1, int bits, vq_lloyd_max_q *q)
{
    vq_lloyd_max_q q1;
    if (!q || bits < 1 || bits > VQ_LM_MAX_BITS || vq_lloyd_max(VQ_LM_GAUSSIAN, bits1, &q1) != 0)
        return -1;
    /* the float table the codecs quantize with, so that their residual is
     * the one fitted */
    lm_density d = { .kind = VQ_LM_GAUSSIAN, .L1 = q1.levels };
    d.t1[0] = -INFINITY;
    for (int j = 0; j < q1.levels; j++) {
        d.c1[j] = q1.centroid[j];
        d.t1[j + 1] = j < q1.levels - 1 ? q1.threshold[j] : INFINITY;
    }
    lloyd(&d, bits, 2.0 * sqrt(q1.mse), q);
    return 0;
}
