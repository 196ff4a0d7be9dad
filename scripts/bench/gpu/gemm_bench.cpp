// The linear layers' products (kernels/matmul.cu): the fp32 forward and backward of the MLP's
// first layer [B·T, C] x [4C, C]ᵀ, and the --bf16 path's forward (cuBLASLt or, on Hopper, the
// GEMM of kernels/sm90/) with its bias and GELU epilogues, against the CPU twin.
#include "scripts/bench/gpu/op_bench.h"

using namespace opbench;

int main(int argc, char** argv) {
  return run(argc, argv, [](const Args& a) {
    const int B = a.B, T = a.T, C = a.C, OC = 4 * a.C;
    const size_t N = size_t(B) * T;
    const double flops = 2.0 * double(N) * C * OC;
    struct Data {
      std::vector<float> inp, w, bias, dout, out, gelu, dinp, dw, db;
      std::unique_ptr<Dev<float>> d_inp, d_w, d_bias, d_dout, d_out, d_dinp, d_dw, d_db;
      std::unique_ptr<Dev<bf16>> h_inp, h_w, h_bias, h_out, h_pre;
    };
    auto d = std::make_shared<Data>();
    // bf16-exact operands, so that the bf16 products see the CPU twin's inputs.
    d->inp = rounded(randn(N * C, 41));
    d->w = rounded(randn(size_t(OC) * C, 42, 0.02f));
    d->bias = rounded(randn(OC, 43, 0.1f));
    d->dout = randn(N * OC, 44);
    d->out.resize(N * OC);
    d->gelu.resize(N * OC);
    d->dinp.assign(N * C, 0.0f);
    d->dw.assign(size_t(OC) * C, 0.0f);
    d->db.assign(OC, 0.0f);
    d->d_inp = std::make_unique<Dev<float>>(d->inp);
    d->d_w = std::make_unique<Dev<float>>(d->w);
    d->d_bias = std::make_unique<Dev<float>>(d->bias);
    d->d_dout = std::make_unique<Dev<float>>(d->dout);
    d->d_out = std::make_unique<Dev<float>>(N * OC);
    d->d_dinp = std::make_unique<Dev<float>>(N * C);
    d->d_dw = std::make_unique<Dev<float>>(size_t(OC) * C);
    d->d_db = std::make_unique<Dev<float>>(OC);
    d->h_inp = std::make_unique<Dev<bf16>>(to_bf16(d->inp));
    d->h_w = std::make_unique<Dev<bf16>>(to_bf16(d->w));
    d->h_bias = std::make_unique<Dev<bf16>>(to_bf16(d->bias));
    d->h_out = std::make_unique<Dev<bf16>>(N * OC);
    d->h_pre = std::make_unique<Dev<bf16>>(N * OC);
    std::vector<OpBench> v;
    v.push_back({"matmul forward (fp32)",
                 0,
                 flops,
                 [d, B, T, C, OC] {
                   cpu::matmul_forward(d->out.data(), d->inp.data(), d->w.data(), d->bias.data(), B,
                                       T, C, OC);
                 },
                 nullptr,
                 [d, B, T, C, OC] {
                   cu::matmul_forward(*d->d_out, *d->d_inp, *d->d_w, *d->d_bias, B, T, C, OC);
                 },
                 {{"out", [d] { return d->d_out->download(); }, [d] { return d->out; }, kF32}}});
    v.push_back({"matmul backward (fp32)",
                 0,
                 2 * flops,
                 [d, B, T, C, OC] {
                   cpu::matmul_backward(d->dinp.data(), d->dw.data(), d->db.data(), d->dout.data(),
                                        d->inp.data(), d->w.data(), B, T, C, OC);
                 },
                 [d, N, C, OC] {
                   d->d_dinp->upload(std::vector<float>(N * C, 0.0f));
                   d->d_dw->upload(std::vector<float>(size_t(OC) * C, 0.0f));
                   d->d_db->upload(std::vector<float>(OC, 0.0f));
                 },
                 [d, B, T, C, OC] {
                   cu::matmul_backward(*d->d_dinp, *d->d_dw, *d->d_db, *d->d_dout, *d->d_inp,
                                       *d->d_w, B, T, C, OC);
                 },
                 {{"dinp", [d] { return d->d_dinp->download(); }, [d] { return d->dinp; }, kF32},
                  {"dweight", [d] { return d->d_dw->download(); }, [d] { return d->dw; }, kF32},
                  {"dbias", [d] { return d->d_db->download(); }, [d] { return d->db; }, kF32}}});
    v.push_back(
        {"matmul forward (bf16 out, bias)",
         0,
         flops,
         [] {},
         nullptr,
         [d, N, C, OC] {
           cu::matmul_forward_bf16_out(*d->h_out, *d->h_inp, *d->h_w, *d->h_bias, int(N), C, OC);
         },
         {{"out", [d] { return to_float(d->h_out->download()); }, [d] { return d->out; }, kBF16}}});
    v.push_back(
        {"matmul forward (bf16, bias + GELU)",
         0,
         flops,
         [d, N] { cpu::gelu_forward(d->gelu.data(), d->out.data(), int(d->out.size())); },
         nullptr,
         [d, N, C, OC] {
           cu::matmul_forward_bf16_gelu(*d->h_out, *d->h_pre, *d->h_inp, *d->h_w, *d->h_bias,
                                        int(N), C, OC);
         },
         {{"GELU", [d] { return to_float(d->h_out->download()); }, [d] { return d->gelu; }, kBF16},
          {"pre-activation", [d] { return to_float(d->h_pre->download()); }, [d] { return d->out; },
           kBF16}}});
    return v;
  });
}
