// Causal self-attention: the fp32 attention that keeps att [B,NH,T,T] (kernels/attention.cu) and
// the flash kernels (kernels/flash_attention.cuh: --bf16's, on Hopper kernels/sm90/ at head sizes
// 64, 96 and 128, and --fp16's), forward and backward, against the CPU twin; the bf16 flash
// kernels also with attention dropout 0.1, against the CPU twin's mask under the same key.
//   build/bench/attention_bench --batch 4 --seq 2048 --hidden 2048 --heads 16   (GPT-3 XL 1.3B)
#include "scripts/bench/gpu/op_bench.h"

using namespace opbench;

int main(int argc, char** argv) {
  return run(argc, argv, [](const Args& a) {
    const int B = a.B, T = a.T, C = a.C, NH = a.NH;
    const size_t BTC = size_t(B) * T * C, att = size_t(B) * NH * T * T;
    // Causal FLOPs: the two products over the lower triangle; the backward's four, 2.5x.
    const double fwd = 2.0 * 2.0 * B * NH * double(T) * T * (C / NH) / 2.0;
    struct Data {
      std::vector<float> qkv, dout, out, att, dqkv, out_drop, att_drop, dqkv_drop;
      std::unique_ptr<Dev<float>> d_qkv, d_dout, d_out, d_att, d_dqkv, d_lse;
      std::unique_ptr<Dev<bf16>> h_qkv, h_dout, h_out, h_dqkv;
      std::unique_ptr<Dev<cu::fp16>> f_qkv, f_dout, f_out, f_dqkv;
    };
    auto d = std::make_shared<Data>();
    d->qkv = rounded(randn(3 * BTC, 51));  // bf16-exact: the flash kernels read the same values
    d->dout = rounded(randn(BTC, 52));
    d->out.resize(BTC);
    d->att.resize(att);
    d->dqkv.assign(3 * BTC, 0.0f);
    d->d_qkv = std::make_unique<Dev<float>>(d->qkv);
    d->d_dout = std::make_unique<Dev<float>>(d->dout);
    d->d_out = std::make_unique<Dev<float>>(BTC);
    d->d_att = std::make_unique<Dev<float>>(att);
    d->d_dqkv = std::make_unique<Dev<float>>(3 * BTC);
    d->d_lse = std::make_unique<Dev<float>>(size_t(B) * NH * T);
    d->h_qkv = std::make_unique<Dev<bf16>>(to_bf16(d->qkv));
    d->h_dout = std::make_unique<Dev<bf16>>(to_bf16(d->dout));
    d->h_out = std::make_unique<Dev<bf16>>(BTC);
    d->h_dqkv = std::make_unique<Dev<bf16>>(3 * BTC);
    d->f_qkv = std::make_unique<Dev<cu::fp16>>(to_fp16(d->qkv));
    d->f_dout = std::make_unique<Dev<cu::fp16>>(to_fp16(d->dout));
    d->f_out = std::make_unique<Dev<cu::fp16>>(BTC);
    d->f_dqkv = std::make_unique<Dev<cu::fp16>>(3 * BTC);
    std::vector<OpBench> v;
    v.push_back(
        {"attention forward (fp32, att kept)",
         0,
         fwd,
         [d, B, T, C, NH] {
           cpu::attention_forward(d->out.data(), d->att.data(), d->qkv.data(), B, T, C, NH);
         },
         nullptr,
         [d, B, T, C, NH] { cu::attention_forward(*d->d_out, *d->d_att, *d->d_qkv, B, T, C, NH); },
         {{"out", [d] { return d->d_out->download(); }, [d] { return d->out; }, kF32}}});
    v.push_back({"attention backward (fp32)",
                 0,
                 2.5 * fwd,
                 [d, B, T, C, NH] {
                   cpu::attention_backward(d->dqkv.data(), d->dout.data(), d->qkv.data(),
                                           d->att.data(), B, T, C, NH);
                 },
                 [d, BTC] { d->d_dqkv->upload(std::vector<float>(3 * BTC, 0.0f)); },
                 [d, B, T, C, NH] {
                   cu::attention_backward(*d->d_dqkv, *d->d_dout, *d->d_qkv, *d->d_att, B, T, C,
                                          NH);
                 },
                 {{"dqkv", [d] { return d->d_dqkv->download(); }, [d] { return d->dqkv; }, kF32}}});
    if (!cu::flash_attention_supported(C, NH)) return v;
    v.push_back(
        {"flash attention forward (bf16)",
         0,
         fwd,
         [] {},
         nullptr,
         [d, B, T, C, NH] {
           cu::flash_attention_forward(*d->h_out, *d->d_lse, *d->h_qkv, B, T, C, NH);
         },
         {{"out", [d] { return to_float(d->h_out->download()); }, [d] { return d->out; }, kBF16}}});
    v.push_back({"flash attention backward (bf16)",
                 0,
                 2.5 * fwd,
                 [] {},
                 nullptr,
                 [d, B, T, C, NH] {
                   cu::flash_attention_backward(*d->h_dqkv, *d->h_dout, *d->h_qkv, *d->h_out,
                                                *d->d_lse, B, T, C, NH);
                 },
                 {{"dqkv", [d] { return to_float(d->h_dqkv->download()); }, [d] { return d->dqkv; },
                   kBF16}}});
    // Attention dropout inside the bf16 kernels: the CPU twin draws the same mask from the key.
    constexpr float kDrop = 0.1f;
    constexpr uint64_t kKey = 0x5eed5eedULL;
    v.push_back({"flash attention fwd (bf16, p 0.1)",
                 0,
                 fwd,
                 [d, B, T, C, NH] {
                   d->out_drop.resize(d->out.size());
                   d->att_drop.resize(d->att.size());
                   cpu::attention_forward(d->out_drop.data(), d->att_drop.data(), d->qkv.data(), B,
                                          T, C, NH, kDrop, kKey);
                 },
                 nullptr,
                 [d, B, T, C, NH] {
                   cu::flash_attention_forward(*d->h_out, *d->d_lse, *d->h_qkv, B, T, C, NH, kDrop,
                                               kKey);
                 },
                 {{"out", [d] { return to_float(d->h_out->download()); },
                   [d] { return d->out_drop; }, kBF16}}});
    v.push_back({"flash attention bwd (bf16, p 0.1)",
                 0,
                 2.5 * fwd,
                 [d, B, T, C, NH] {
                   d->dqkv_drop.assign(d->dqkv.size(), 0.0f);
                   cpu::attention_backward(d->dqkv_drop.data(), d->dout.data(), d->qkv.data(),
                                           d->att_drop.data(), B, T, C, NH, kDrop, kKey);
                 },
                 nullptr,
                 [d, B, T, C, NH] {
                   cu::flash_attention_backward(*d->h_dqkv, *d->h_dout, *d->h_qkv, *d->h_out,
                                                *d->d_lse, B, T, C, NH, nullptr, kDrop, kKey);
                 },
                 {{"dqkv", [d] { return to_float(d->h_dqkv->download()); },
                   [d] { return d->dqkv_drop; }, kBF16}}});
    v.push_back(
        {"flash attention forward (fp16)",
         0,
         fwd,
         [] {},
         nullptr,
         [d, B, T, C, NH] {
           cu::flash_attention_forward(d->f_out->get(), *d->d_lse, d->f_qkv->get(), B, T, C, NH);
         },
         {{"out", [d] { return to_float(d->f_out->download()); }, [d] { return d->out; }, kBF16}}});
    v.push_back({"flash attention backward (fp16)",
                 0,
                 2.5 * fwd,
                 [] {},
                 nullptr,
                 [d, B, T, C, NH] {
                   cu::flash_attention_backward(d->f_dqkv->get(), d->f_dout->get(),
                                                d->f_qkv->get(), d->f_out->get(), *d->d_lse, B, T,
                                                C, NH);
                 },
                 {{"dqkv", [d] { return to_float(d->f_dqkv->download()); }, [d] { return d->dqkv; },
                   kBF16}}});
    return v;
  });
}
