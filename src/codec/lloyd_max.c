/* lloyd_max.c -- Lloyd-Max quantizers for N(0,1) and the unit Laplacian,
 * by Lloyd's iteration on the closed-form cell probabilities and means. */
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

int vq_lloyd_max(vq_lm_density density, int bits, vq_lloyd_max_q *q)
{
    if (!q || bits < 1 || bits > VQ_LM_MAX_BITS || (density != VQ_LM_GAUSSIAN && density != VQ_LM_LAPLACIAN))
        return -1;
    const int L = 1 << bits;
    double c[VQ_LM_MAX_LEVELS], t[VQ_LM_MAX_LEVELS + 1];
    double spread = density == VQ_LM_GAUSSIAN ? 2.0 : 3.0;
    for (int i = 0; i < L; i++)
        c[i] = spread * (2.0 * i + 1.0 - L) / L;
    for (int it = 0; it < 20000; it++) {
        t[0] = -INFINITY;
        t[L] = INFINITY;
        for (int i = 1; i < L; i++)
            t[i] = 0.5 * (c[i - 1] + c[i]);
        double move = 0.0;
        for (int i = 0; i < L; i++) {
            double mass, mom1;
            cell_moments(density, t[i], t[i + 1], &mass, &mom1);
            double nc = mass > 0.0 ? mom1 / mass : c[i];
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
        double mass, mom1;
        cell_moments(density, t[i], t[i + 1], &mass, &mom1);
        mse += cell_mom2(density, t[i], t[i + 1]) - 2.0 * c[i] * mom1 + c[i] * c[i] * mass;
        q->centroid[i] = (float)c[i];
        q->threshold[i] = i < L - 1 ? (float)t[i + 1] : INFINITY;
    }
    q->mse = mse;
    return 0;
}
