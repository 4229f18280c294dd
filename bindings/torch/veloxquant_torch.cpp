// veloxquant_torch.cpp -- PyTorch custom ops over veloxquant_cuda.h (built on
// the GPU machine by bindings/torch/build.py with torch.utils.cpp_extension,
// linked with build/cuda/libveloxquant_cuda.a and build/libveloxquant.a).
//
//   torch.ops.veloxquant.make_format(spec, head_dim, role, seed) -> uint8 tensor
//       the vq_cuda_format of a codec (role 0 keys, 1 values) as bytes (CPU)
//   torch.ops.veloxquant.page_bytes(fmt, page_tokens) -> int
//   torch.ops.veloxquant.quantize(fmt, x, offsets, pool) -> ()
//       x [n_blocks * block_tokens, D] float32 (cuda), offsets int64 [n_blocks]
//       (byte offsets into pool), pool uint8 (cuda, written in place)
//   torch.ops.veloxquant.decode_attention(kfmt, vfmt, q, k_pages, v_pages,
//       page_table, seq_lens, page_tokens, max_seq_len, scale) -> out
//       q [B, n_q, D] (float32/float16/bfloat16, cuda), k_pages/v_pages uint8
//       [n_pages, page_bytes], page_table int32 [B, n_kv, max_pages], seq_lens
//       int32 [B]; out like q
//   torch.ops.veloxquant.decode(spec, head_dim, role, seed, packed, n) -> float32 [n, D]
//       the CPU codec's vq_codec_decode of n tokens of packed bytes (CPU tensor)
#include <ATen/cuda/CUDAContext.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cstring>

#include "veloxquant.h"
#include "veloxquant_cuda.h"

namespace {

vq_cuda_format fmt_of(const at::Tensor &t)
{
    TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kByte && t.numel() == (int64_t)sizeof(vq_cuda_format),
                "veloxquant: expected a format tensor from make_format");
    vq_cuda_format f;
    std::memcpy(&f, t.contiguous().data_ptr(), sizeof f);
    return f;
}

at::Tensor make_format(const std::string &spec, int64_t head_dim, int64_t role, int64_t seed)
{
    vq_codec *c = nullptr;
    vq_status st = vq_codec_create(spec.c_str(), (int)head_dim, role ? VQ_ROLE_VALUE : VQ_ROLE_KEY, (uint64_t)seed, &c);
    TORCH_CHECK(st == VQ_OK, "veloxquant: ", vq_last_error());
    vq_cuda_format f;
    st = vq_cuda_format_from_codec(c, &f);
    vq_codec_free(c);
    TORCH_CHECK(st == VQ_OK, "veloxquant: ", vq_cuda_last_error());
    at::Tensor t = at::empty({(int64_t)sizeof f}, at::kByte);
    std::memcpy(t.data_ptr(), &f, sizeof f);
    return t;
}

int64_t page_bytes(const at::Tensor &fmt, int64_t page_tokens)
{
    vq_cuda_format f = fmt_of(fmt);
    return (int64_t)vq_cuda_page_bytes(&f, (int)page_tokens);
}

void quantize(const at::Tensor &fmt, const at::Tensor &x, const at::Tensor &offsets, at::Tensor pool)
{
    vq_cuda_format f = fmt_of(fmt);
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous() && x.dim() == 2 &&
                    x.size(1) == f.head_dim,
                "veloxquant.quantize: x must be contiguous float32 [n, head_dim] on the GPU");
    TORCH_CHECK(offsets.is_cuda() && offsets.scalar_type() == at::kLong && offsets.is_contiguous(),
                "veloxquant.quantize: offsets must be int64 on the GPU");
    TORCH_CHECK(pool.is_cuda() && pool.scalar_type() == at::kByte && pool.is_contiguous(),
                "veloxquant.quantize: pool must be contiguous uint8 on the GPU");
    TORCH_CHECK(x.size(0) == offsets.numel() * f.block_tokens, "veloxquant.quantize: x has ", x.size(0),
                " rows, expected ", offsets.numel() * f.block_tokens);
    vq_status st = vq_cuda_quantize(&f, x.data_ptr<float>(), offsets.numel(), offsets.data_ptr<int64_t>(),
                                    pool.data_ptr(), at::cuda::getCurrentCUDAStream());
    TORCH_CHECK(st == VQ_OK, "veloxquant.quantize: ", vq_cuda_last_error());
}

at::Tensor decode_attention(const at::Tensor &kfmt, const at::Tensor &vfmt, const at::Tensor &q,
                            const at::Tensor &k_pages, const at::Tensor &v_pages, const at::Tensor &page_table,
                            const at::Tensor &seq_lens, int64_t page_tokens, int64_t max_seq_len, double scale)
{
    vq_cuda_format kf = fmt_of(kfmt), vf = fmt_of(vfmt);
    TORCH_CHECK(q.is_cuda() && q.dim() == 3, "veloxquant.decode_attention: q must be [B, n_q, D] on the GPU");
    TORCH_CHECK(k_pages.is_cuda() && v_pages.is_cuda() && k_pages.scalar_type() == at::kByte &&
                    v_pages.scalar_type() == at::kByte && k_pages.dim() == 2 && v_pages.dim() == 2 &&
                    k_pages.is_contiguous() && v_pages.is_contiguous(),
                "veloxquant.decode_attention: k_pages/v_pages must be contiguous uint8 [n_pages, page_bytes] on the GPU");
    TORCH_CHECK(page_table.is_cuda() && page_table.scalar_type() == at::kInt && page_table.dim() == 3 &&
                    page_table.is_contiguous(),
                "veloxquant.decode_attention: page_table must be contiguous int32 [B, n_kv, max_pages] on the GPU");
    TORCH_CHECK(seq_lens.is_cuda() && seq_lens.scalar_type() == at::kInt && seq_lens.numel() == q.size(0),
                "veloxquant.decode_attention: seq_lens must be int32 [B] on the GPU");
    at::Tensor qf = q.to(at::kFloat).contiguous();
    at::Tensor out = at::empty_like(qf);
    vq_cuda_attn_args a;
    std::memset(&a, 0, sizeof a);
    a.batch = (int)q.size(0);
    a.n_q_heads = (int)q.size(1);
    a.head_dim = (int)q.size(2);
    a.n_kv_heads = (int)page_table.size(1);
    a.max_pages = (int)page_table.size(2);
    TORCH_CHECK(page_table.size(0) == q.size(0), "veloxquant.decode_attention: page_table batch != q batch");
    a.page_tokens = (int)page_tokens;
    a.max_seq_len = (int)max_seq_len;
    a.page_table = page_table.data_ptr<int32_t>();
    a.seq_lens = seq_lens.data_ptr<int32_t>();
    a.k_pages = k_pages.data_ptr();
    a.v_pages = v_pages.data_ptr();
    a.k_page_bytes = (size_t)k_pages.size(1);
    a.v_page_bytes = (size_t)v_pages.size(1);
    a.q = qf.data_ptr<float>();
    a.out = out.data_ptr<float>();
    a.scale = (float)scale;
    size_t wsb = vq_cuda_attention_workspace(&a);
    at::Tensor ws = at::empty({(int64_t)(wsb > 0 ? wsb : 1)}, q.options().dtype(at::kByte));
    vq_status st = vq_cuda_decode_attention(&kf, &vf, &a, ws.data_ptr(), wsb, at::cuda::getCurrentCUDAStream());
    TORCH_CHECK(st == VQ_OK, "veloxquant.decode_attention: ", vq_cuda_last_error());
    return out.to(q.scalar_type());
}

at::Tensor decode(const std::string &spec, int64_t head_dim, int64_t role, int64_t seed, const at::Tensor &packed,
                  int64_t n)
{
    TORCH_CHECK(packed.device().is_cpu() && packed.scalar_type() == at::kByte, "veloxquant.decode: packed must be uint8 on the CPU");
    vq_codec *c = nullptr;
    vq_status st = vq_codec_create(spec.c_str(), (int)head_dim, role ? VQ_ROLE_VALUE : VQ_ROLE_KEY, (uint64_t)seed, &c);
    TORCH_CHECK(st == VQ_OK, "veloxquant: ", vq_last_error());
    at::Tensor p = packed.contiguous();
    size_t need = (size_t)n / vq_codec_block_tokens(c) * vq_codec_block_bytes(c);
    if ((size_t)p.numel() < need || n % (int64_t)vq_codec_block_tokens(c)) {
        vq_codec_free(c);
        TORCH_CHECK(false, "veloxquant.decode: ", n, " tokens need ", need, " bytes in whole blocks");
    }
    at::Tensor out = at::empty({n, head_dim}, at::kFloat);
    st = vq_codec_decode(c, p.data_ptr(), (size_t)n, out.data_ptr<float>());
    std::string msg = st == VQ_OK ? "" : vq_codec_error(c);
    vq_codec_free(c);
    TORCH_CHECK(st == VQ_OK, "veloxquant.decode: ", msg);
    return out;
}

} // namespace

TORCH_LIBRARY(veloxquant, m)
{
    m.def("make_format(str spec, int head_dim, int role, int seed) -> Tensor", &make_format);
    m.def("page_bytes(Tensor fmt, int page_tokens) -> int", &page_bytes);
    m.def("quantize(Tensor fmt, Tensor x, Tensor offsets, Tensor(a!) pool) -> ()", &quantize);
    m.def("decode_attention(Tensor kfmt, Tensor vfmt, Tensor q, Tensor k_pages, Tensor v_pages, Tensor page_table, "
          "Tensor seq_lens, int page_tokens, int max_seq_len, float scale) -> Tensor",
          &decode_attention);
    m.def("decode(str spec, int head_dim, int role, int seed, Tensor packed, int n) -> Tensor", &decode);
}
