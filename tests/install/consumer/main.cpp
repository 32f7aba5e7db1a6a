// A program built against an installed weft (find_package(weft CONFIG) -> weft::weft).
#include <weft/weft.h>
#include <cstdio>

int main() {
    using namespace weft;
    Var x("x"), y("y");
    Func f("f");
    f(x, y) = x * 10 + y;
    Func g("g");
    g(x, y) = f(x, y) * 2 + 1;
    g.vectorize(x, 4);
    Buffer<int> out = g.realize({9, 5});
    int bad = 0;
    for (int j = 0; j < 5; j++)
        for (int i = 0; i < 9; i++)
            if (out(i, j) != (i * 10 + j) * 2 + 1) bad++;
    if (bad) {
        std::printf("weft consumer: %d wrong values\n", bad);
        return 1;
    }
    std::printf("weft consumer: OK (out(8, 4) = %d)\n", out(8, 4));
    return 0;
}
