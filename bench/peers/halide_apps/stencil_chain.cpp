// stencil_chain in Halide 14: apps/stencil_chain's algorithm and CPU schedule. See
// apps/suite/stencil_chain.h.
#include "stencil_chain.h"

#include "halide_suite.h"

namespace suite {
namespace stencil_chain {

HalideDef build(int, bool scheduled) {
    using namespace Halide;
    ImageParam input(UInt(16), 2, "input");
    Var x("x"), y("y");

    std::vector<Func> stages;
    stages.push_back(BoundaryConditions::repeat_edge(input));
    for (int s = 0; s < kStencils; s++) {
        Func f("stage_" + std::to_string(s));
        Expr e = cast<uint16_t>(0);
        for (int i = -2; i <= 2; i++)
            for (int j = -2; j <= 2; j++) e += ((i + 3) * (j + 3)) * stages.back()(x + i, y + j);
        f(x, y) = e;
        stages.push_back(f);
    }
    Func output("output");
    output(x, y) = stages.back()(x, y);

    if (scheduled) {
        const int vec = get_jit_target_from_environment().natural_vector_size<uint16_t>();
        // How many stencils in between each compute-root.
        const int group_size = 11;
        Var yi("yi"), yo("yo"), xo("xo"), xi("xi"), t("t");
        const int last_stage_idx = (int)stages.size() - 1;
        for (int j = last_stage_idx; j > 0; j -= group_size) {
            Func out = (j == last_stage_idx) ? output : stages[j];
            const int stages_to_output = last_stage_idx - j;
            const int expansion = 4 * stages_to_output;
            const int w = 1536 + expansion;
            const int h = 2560 + expansion;
            out.compute_root().tile(x, y, xo, yo, xi, yi, w / 4, h / 4).fuse(xo, yo, t).parallel(t).vectorize(xi, vec);
            for (int i = std::max(0, j - group_size + 1); i < j; i++) {
                Func s = stages[i];
                s.store_at(out, t).compute_at(out, yi).vectorize(s.args()[0], vec);
            }
        }
    }
    return {output, {input}};
}

}  // namespace stencil_chain
}  // namespace suite

HALIDE_SUITE_APP(stencil_chain)
