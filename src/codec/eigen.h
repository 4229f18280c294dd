/* eigen.h -- eigen-decomposition of a real symmetric matrix.
 *
 * vq_eigen_sym: cyclic Jacobi rotations (Jacobi 1846; Golub & Van Loan,
 * "Matrix Computations", Sec. 8.5) in double precision, for the small
 * matrices of head_dim <= 256 (O(n^3) per sweep, a handful of sweeps).
 * a: n*n row-major symmetric matrix, overwritten. On return w[j] holds the
 * eigenvalues in descending order and column j of v (v[i*n + j], row-major
 * n*n) the unit eigenvector of w[j]. Deterministic. Stops when the
 * off-diagonal mass is below 1e-22 of the total squared mass, or after 64
 * sweeps. Errors: VQ_ERR_INVALID_ARG (n < 1), VQ_ERR_NOMEM. */
#ifndef VQ_CODEC_EIGEN_H
#define VQ_CODEC_EIGEN_H

#include "core/error.h"

vq_status vq_eigen_sym(double *a, int n, double *w, double *v, char *err);

#endif
