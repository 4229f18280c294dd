/* eigen.c -- cyclic Jacobi eigen-solver for symmetric matrices (eigen.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/eigen.h"

/* apply the rotation that zeroes a[p][q] to a (both sides) and to v */
static void jacobi_rotate(double *a, double *v, int n, int p, int q)
{
    double apq = a[(size_t)p * n + q];
    double theta = (a[(size_t)q * n + q] - a[(size_t)p * n + p]) / (2.0 * apq);
    double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
    double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
    for (int k = 0; k < n; k++) { /* columns p, q: A <- A J */
        double akp = a[(size_t)k * n + p], akq = a[(size_t)k * n + q];
        a[(size_t)k * n + p] = c * akp - s * akq;
        a[(size_t)k * n + q] = s * akp + c * akq;
    }
    for (int k = 0; k < n; k++) { /* rows p, q: A <- J^T A */
        double apk = a[(size_t)p * n + k], aqk = a[(size_t)q * n + k];
        a[(size_t)p * n + k] = c * apk - s * aqk;
        a[(size_t)q * n + k] = s * apk + c * aqk;
    }
    a[(size_t)p * n + q] = a[(size_t)q * n + p] = 0.0;
    for (int k = 0; k < n; k++) {
        double vkp = v[(size_t)k * n + p], vkq = v[(size_t)k * n + q];
        v[(size_t)k * n + p] = c * vkp - s * vkq;
        v[(size_t)k * n + q] = s * vkp + c * vkq;
    }
}

vq_status vq_eigen_sym(double *a, int n, double *w, double *v, char *err)
{
    if (n < 1)
        return vq_fail(err, VQ_ERR_INVALID_ARG, "eigen: matrix size %d", n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            v[(size_t)i * n + j] = i == j ? 1.0 : 0.0;
    double total = 0;
    for (size_t i = 0; i < (size_t)n * n; i++)
        total += a[i] * a[i];
    for (int sweep = 0; sweep < 64; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                off += 2 * a[(size_t)p * n + q] * a[(size_t)p * n + q];
        if (!(off > 1e-22 * total))
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                if (a[(size_t)p * n + q] != 0.0)
                    jacobi_rotate(a, v, n, p, q);
    }
    /* sort descending (selection sort on n <= 256: cheap), permuting v */
    for (int i = 0; i < n; i++)
        w[i] = a[(size_t)i * n + i];
    for (int i = 0; i < n; i++) {
        int m = i;
        for (int j = i + 1; j < n; j++)
            if (w[j] > w[m])
                m = j;
        if (m == i)
            continue;
        double t = w[i];
        w[i] = w[m];
        w[m] = t;
        for (int k = 0; k < n; k++) {
            double tv = v[(size_t)k * n + i];
            v[(size_t)k * n + i] = v[(size_t)k * n + m];
            v[(size_t)k * n + m] = tv;
        }
    }
    return VQ_OK;
}
