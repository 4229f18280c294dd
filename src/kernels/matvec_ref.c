/* matvec_ref.c -- the scalar reference of vq_ordered_matvec
 * (kernels/matvec.h). */
#include "kernels/matvec.h"

void vq_ordered_matvec_ref(const float *mt, size_t rows, size_t n, const float *x, float *y)
{
    enum { R = 8 }; /* eight rows' sums side by side: contiguous reads of each column */
    size_t i0 = 0;
    for (; i0 < rows; i0 += R) {
        const size_t nr = rows - i0 < R ? rows - i0 : R;
        float s[R] = { 0.0f };
        for (size_t j = 0; j < n; j++) {
            const float *col = mt + j * rows + i0;
            for (size_t r = 0; r < nr; r++) {
                const float p = col[r] * x[j]; /* two statements: never contracted into an FMA */
                s[r] += p;
            }
        }
        for (size_t r = 0; r < nr; r++)
            y[i0 + r] = s[r];
    }
}
