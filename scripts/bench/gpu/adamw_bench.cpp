// The AdamW update (kernels/adamw.cu) over --params fp32 parameters with their gradients and
// moments, one step, against the CPU twin.
#include "scripts/bench/gpu/op_bench.h"

using namespace opbench;

int main(int argc, char** argv) {
  return run(argc, argv, [](const Args& a) {
    const size_t n = a.params;
    struct Data {
      std::vector<float> p, g, m, v, p0, m0, v0;
      std::unique_ptr<Dev<float>> d_p, d_g, d_m, d_v;
    };
    auto d = std::make_shared<Data>();
    d->p0 = randn(n, 21, 0.02f);
    d->g = randn(n, 22, 1e-3f);
    d->m0 = randn(n, 23, 1e-4f);
    d->v0.assign(n, 1e-7f);
    d->p = d->p0;
    d->m = d->m0;
    d->v = d->v0;
    d->d_p = std::make_unique<Dev<float>>(n);
    d->d_g = std::make_unique<Dev<float>>(d->g);
    d->d_m = std::make_unique<Dev<float>>(n);
    d->d_v = std::make_unique<Dev<float>>(n);
    constexpr float lr = 6e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, scale = 0.5f;
    constexpr int step = 3;
    std::vector<OpBench> v;
    v.push_back({"adamw update",
                 7.0 * 4 * n,
                 0,
                 [d, n] {
                   cpu::adamw_update(d->p.data(), d->g.data(), d->m.data(), d->v.data(), n, lr, b1,
                                     b2, eps, wd, step, scale);
                 },
                 [d] {
                   d->d_p->upload(d->p0);
                   d->d_m->upload(d->m0);
                   d->d_v->upload(d->v0);
                 },
                 [d, n] {
                   cu::adamw_update(*d->d_p, *d->d_g, *d->d_m, *d->d_v, n, lr, b1, b2, eps, wd,
                                    step, scale);
                 },
                 {{"params", [d] { return d->d_p->download(); }, [d] { return d->p; }, kF32},
                  {"m", [d] { return d->d_m->download(); }, [d] { return d->m; }, kF32},
                  {"v", [d] { return d->d_v->download(); }, [d] { return d->v; }, kF32}}});
    return v;
  });
}
