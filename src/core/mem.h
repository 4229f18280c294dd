/* mem.h -- growing an array without losing it when memory runs out. */
#ifndef VQ_CORE_MEM_H
#define VQ_CORE_MEM_H

#include <stdlib.h>
#include <string.h>

/* Resize the block whose pointer is stored at pp (any object pointer
 * type; NULL allowed) to `bytes`: 1 and the new pointer stored there, or
 * 0 with the old block (and pointer) kept. */
static inline int vq_resize(void *pp, size_t bytes)
{
    void *old, *p;
    memcpy(&old, pp, sizeof old);
    p = realloc(old, bytes ? bytes : 1);
    if (!p)
        return 0;
    memcpy(pp, &p, sizeof p);
    return 1;
}

#endif
