// LayerNorm forward and backward (kernels/layernorm.cu), fp32 and with the bf16 output gradient of
// the --bf16 path, against the CPU twin.
#include "scripts/bench/gpu/op_bench.h"

using namespace opbench;

int main(int argc, char** argv) {
  return run(argc, argv, [](const Args& a) {
    const int B = a.B, T = a.T, C = a.C;
    const size_t N = size_t(B) * T, NC = N * C;
    struct Data {
      std::vector<float> inp, w, b, dout, out, mean, rstd, dinp, dw, db;
      std::unique_ptr<Dev<float>> d_inp, d_w, d_b, d_dout, d_out, d_mean, d_rstd, d_dinp, d_dw,
          d_db;
      std::unique_ptr<Dev<bf16>> d_dout_h;
    };
    auto d = std::make_shared<Data>();
    d->inp = randn(NC, 1);
    d->w = randn(C, 2, 0.5f);
    d->b = randn(C, 3, 0.1f);
    d->dout = rounded(randn(NC, 4));  // bf16-exact: the bf16 backward reads the same values
    d->out.resize(NC);
    d->mean.resize(N);
    d->rstd.resize(N);
    d->dinp.assign(NC, 0.0f);
    d->dw.assign(C, 0.0f);
    d->db.assign(C, 0.0f);
    d->d_inp = std::make_unique<Dev<float>>(d->inp);
    d->d_w = std::make_unique<Dev<float>>(d->w);
    d->d_b = std::make_unique<Dev<float>>(d->b);
    d->d_dout = std::make_unique<Dev<float>>(d->dout);
    d->d_dout_h = std::make_unique<Dev<bf16>>(to_bf16(d->dout));
    d->d_out = std::make_unique<Dev<float>>(NC);
    d->d_mean = std::make_unique<Dev<float>>(N);
    d->d_rstd = std::make_unique<Dev<float>>(N);
    d->d_dinp = std::make_unique<Dev<float>>(NC);
    d->d_dw = std::make_unique<Dev<float>>(C);
    d->d_db = std::make_unique<Dev<float>>(C);
    const double io = double(NC) * 4;
    auto zero_grads = [d, NC, C] {
      d->d_dinp->upload(std::vector<float>(NC, 0.0f));
      d->d_dw->upload(std::vector<float>(C, 0.0f));
      d->d_db->upload(std::vector<float>(C, 0.0f));
    };
    auto grads_checks = [d](double rtol) {
      return std::vector<Check>{
          {"dinp", [d] { return d->d_dinp->download(); }, [d] { return d->dinp; }, rtol},
          {"dweight", [d] { return d->d_dw->download(); }, [d] { return d->dw; }, rtol},
          {"dbias", [d] { return d->d_db->download(); }, [d] { return d->db; }, rtol}};
    };
    std::vector<OpBench> v;
    v.push_back({"layernorm forward",
                 2 * io,
                 0,
                 [d, B, T, C] {
                   cpu::layernorm_forward(d->out.data(), d->mean.data(), d->rstd.data(),
                                          d->inp.data(), d->w.data(), d->b.data(), B, T, C);
                 },
                 nullptr,
                 [d, B, T, C] {
                   cu::layernorm_forward(*d->d_out, *d->d_mean, *d->d_rstd, *d->d_inp, *d->d_w,
                                         *d->d_b, B, T, C);
                 },
                 {{"out", [d] { return d->d_out->download(); }, [d] { return d->out; }, kF32},
                  {"rstd", [d] { return d->d_rstd->download(); }, [d] { return d->rstd; }, kF32}}});
    v.push_back({"layernorm backward", 3 * io, 0,
                 [d, B, T, C] {
                   cpu::layernorm_backward(d->dinp.data(), d->dw.data(), d->db.data(),
                                           d->dout.data(), d->inp.data(), d->w.data(),
                                           d->mean.data(), d->rstd.data(), B, T, C);
                 },
                 zero_grads,
                 [d, B, T, C] {
                   cu::layernorm_backward(*d->d_dinp, *d->d_dw, *d->d_db, *d->d_dout, *d->d_inp,
                                          *d->d_w, *d->d_mean, *d->d_rstd, B, T, C);
                 },
                 grads_checks(kF32)});
    // The same gradients from the bf16 dout (the --bf16 path's LayerNorm backward); the CPU twin's
    // are those of the fp32 backward above, on the same (bf16-exact) dout.
    v.push_back({"layernorm backward (bf16 dout)", 2.5 * io, 0, [] {}, zero_grads,
                 [d, B, T, C] {
                   cu::layernorm_backward(*d->d_dinp, *d->d_dw, *d->d_db, *d->d_dout_h, *d->d_inp,
                                          *d->d_w, *d->d_mean, *d->d_rstd, B, T, C);
                 },
                 grads_checks(1e-4)});
    return v;
  });
}
