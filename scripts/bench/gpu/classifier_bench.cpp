// The fused softmax cross-entropy and its gradient (kernels/classifier.cu) over B·T rows of the
// padded vocabulary, fp32 and bf16 logits, against the CPU twin.
#include "scripts/bench/gpu/op_bench.h"

using namespace opbench;

int main(int argc, char** argv) {
  return run(argc, argv, [](const Args& a) {
    const int B = a.B, T = a.T, Vp = a.Vp, V = Vp - Vp / 64;  // some padded columns
    const size_t rows = size_t(B) * T, n = rows * Vp;
    const float dloss = 1.0f / float(rows);
    struct Data {
      std::vector<float> logits, dlogits, losses;
      std::vector<int> targets;
      std::unique_ptr<Dev<float>> d_logits, d_dlogits, d_losses;
      std::unique_ptr<Dev<bf16>> d_logits_h, d_dlogits_h;
      std::unique_ptr<Dev<int>> d_targets;
    };
    auto d = std::make_shared<Data>();
    d->logits = rounded(randn(n, 31, 3.0f));  // bf16-exact: both paths see the same logits
    d->targets = randint(rows, V, 32);
    d->dlogits.resize(n);
    d->losses.resize(rows);
    d->d_logits = std::make_unique<Dev<float>>(d->logits);
    d->d_dlogits = std::make_unique<Dev<float>>(n);
    d->d_losses = std::make_unique<Dev<float>>(rows);
    d->d_logits_h = std::make_unique<Dev<bf16>>(to_bf16(d->logits));
    d->d_dlogits_h = std::make_unique<Dev<bf16>>(n);
    d->d_targets = std::make_unique<Dev<int>>(d->targets);
    std::vector<OpBench> v;
    v.push_back(
        {"classifier (fp32 logits)",
         8.0 * n,
         0,
         [d, B, T, V, Vp, dloss] {
           cpu::fused_classifier(d->dlogits.data(), d->losses.data(), d->logits.data(),
                                 d->targets.data(), dloss, B, T, V, Vp);
         },
         nullptr,
         [d, B, T, V, Vp, dloss] {
           cu::fused_classifier(*d->d_dlogits, *d->d_losses, *d->d_logits, *d->d_targets, dloss, B,
                                T, V, Vp);
         },
         {{"losses", [d] { return d->d_losses->download(); }, [d] { return d->losses; }, kF32},
          {"dlogits", [d] { return d->d_dlogits->download(); }, [d] { return d->dlogits; },
           kF32}}});
    v.push_back(
        {"classifier (bf16 logits)",
         4.0 * n,
         0,
         [] {},
         nullptr,
         [d, rows, V, Vp, dloss] {
           cu::fused_classifier_bf16(*d->d_dlogits_h, *d->d_losses, *d->d_logits_h, *d->d_targets,
                                     dloss, int(rows), V, Vp);
         },
         {{"losses", [d] { return d->d_losses->download(); }, [d] { return d->losses; }, 1e-4},
          {"dlogits", [d] { return to_float(d->d_dlogits_h->download()); },
           [d] { return d->dlogits; }, kBF16}}});
    return v;
  });
}
