/* kv_iface.c -- the one attention entry point (see kv_iface.h). */
#include "model/kv_iface.h"

vq_status vq_attn_layer(vq_kv *kv, int layer, const float *q, const float *k, const float *v,
                        int n, int pos0, float *out)
{
    if (layer < 0 || layer >= kv->shape.n_layers)
        return vq_fail(kv->err, VQ_ERR_INVALID_ARG, "kv %s: layer %d out of range [0,%d)",
                       kv->ops->name, layer, kv->shape.n_layers);
    VQ_TRY(kv->ops->append(kv, layer, k, v, n, pos0));
    return kv->ops->attend(kv, layer, q, n, pos0, out);
}

void vq_kv_free(vq_kv *kv)
{
    if (kv)
        kv->ops->destroy(kv);
}
