// GELU forward and backward (kernels/gelu.cu), fp32 and the bf16 forward, on the MLP's hidden
// activations [B·T, 4C], against the CPU twin.
#include "scripts/bench/gpu/op_bench.h"

using namespace opbench;

int main(int argc, char** argv) {
  return run(argc, argv, [](const Args& a) {
    const size_t n = size_t(a.B) * a.T * 4 * a.C;
    const int N = int(n);
    struct Data {
      std::vector<float> inp, dout, out, dinp;
      std::unique_ptr<Dev<float>> d_inp, d_dout, d_out, d_dinp;
      std::unique_ptr<Dev<bf16>> d_out_h;
    };
    auto d = std::make_shared<Data>();
    d->inp = randn(n, 11, 2.0f);
    d->dout = randn(n, 12);
    d->out.resize(n);
    d->dinp.assign(n, 0.0f);
    d->d_inp = std::make_unique<Dev<float>>(d->inp);
    d->d_dout = std::make_unique<Dev<float>>(d->dout);
    d->d_out = std::make_unique<Dev<float>>(n);
    d->d_dinp = std::make_unique<Dev<float>>(n);
    d->d_out_h = std::make_unique<Dev<bf16>>(n);
    std::vector<OpBench> v;
    v.push_back({"gelu forward",
                 8.0 * n,
                 0,
                 [d, N] { cpu::gelu_forward(d->out.data(), d->inp.data(), N); },
                 nullptr,
                 [d, N] { cu::gelu_forward(*d->d_out, *d->d_inp, N); },
                 {{"out", [d] { return d->d_out->download(); }, [d] { return d->out; }, kF32}}});
    v.push_back({"gelu backward",
                 16.0 * n,
                 0,
                 [d, N] { cpu::gelu_backward(d->dinp.data(), d->inp.data(), d->dout.data(), N); },
                 [d, n] { d->d_dinp->upload(std::vector<float>(n, 0.0f)); },
                 [d, N] { cu::gelu_backward(*d->d_dinp, *d->d_inp, *d->d_dout, N); },
                 {{"dinp", [d] { return d->d_dinp->download(); }, [d] { return d->dinp; }, kF32}}});
    v.push_back({"gelu forward (bf16 out)",
                 6.0 * n,
                 0,
                 [] {},
                 nullptr,
                 [d, N] { cu::gelu_forward_bf16(*d->d_out_h, *d->d_inp, N); },
                 {{"out", [d] { return to_float(d->d_out_h->download()); }, [d] { return d->out; },
                   kBF16}}});
    return v;
  });
}
