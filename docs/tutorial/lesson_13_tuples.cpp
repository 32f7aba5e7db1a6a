// Lesson 13: Funcs with several values at each point (Tuple)
//
// weft's own text for the topics of Halide's tutorial lesson 13 (not a port of Halide's file):
// the same calls, with weft's spelling, which is Halide's. Built and run by the test suite
// (ctest -R tutorial:lesson_13); it checks the values it computes and returns 0.

#include <weft/weft.h>
#include <math.h>
#include <stdio.h>

using namespace weft;

static int failures = 0;
static void check(bool ok, const char *what) {
    if (!ok) {
        printf("wrong: %s\n", what);
        failures++;
    }
}

// A complex number as a pair of Exprs, made from and turned into a Tuple.
struct Complex {
    Expr re, im;
    Complex(Expr r, Expr i) : re(r), im(i) {}
    explicit Complex(const Tuple &t) : re(t[0]), im(t[1]) {}
    explicit Complex(const FuncRef &f) : Complex(Tuple(f)) {}
    operator Tuple() const { return Tuple(re, im); }
    Complex operator+(const Complex &o) const { return {re + o.re, im + o.im}; }
    Complex operator*(const Complex &o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
    Expr magnitude_squared() const { return re * re + im * im; }
};

int main(int argc, char **argv) {
    Var x("x"), y("y");

    // A Func may compute several values at each point, each of its own type: define it with a
    // Tuple (or a brace list). Realizing it gives one buffer per value.
    {
        Func pair("pair");
        pair(x, y) = Tuple(x * y, sin(cast<float>(x + y)));
        Realization r = pair.realize({16, 8});
        Buffer<int> products = r[0];
        Buffer<float> sines = r[1];
        check(products(3, 5) == 15, "products(3, 5)");
        check(sines(3, 5) == sinf(8.0f), "sines(3, 5)");

        // A consumer reads one value with [i]. Both values come from one loop nest: scheduling
        // the Func (here at the consumer's rows, vectorized) schedules both.
        Func braces("braces"), sum_of_both("sum_of_both");
        braces(x, y) = {x + y, cast<float>(x) * 0.5f};
        sum_of_both(x, y) = cast<float>(braces(x, y)[0]) + braces(x, y)[1];
        braces.compute_at(sum_of_both, y).vectorize(x, 4);
        Buffer<float> s = sum_of_both.realize({12, 3});
        check(s(10, 2) == 12.0f + 5.0f, "sum_of_both(10, 2)");
    }

    // An update gives a Tuple of as many values. Every value of the update is computed from the
    // values the point had before it: here the position of the largest element so far and the
    // element itself, updated together.
    {
        Buffer<float> data(100);
        for (int i = 0; i < 100; i++) data(i) = (float)((i * 37) % 101);
        Func best("best");
        best() = Tuple(0, data(0));
        RDom r(1, 99);
        Expr better = data(r) > best()[1];
        best() = Tuple(select(better, r, best()[0]), select(better, data(r), best()[1]));
        Realization found = best.realize();
        Buffer<int> where = found[0];
        Buffer<float> value = found[1];
        int expect = 0;
        for (int i = 1; i < 100; i++)
            if (data(i) > data(expect)) expect = i;
        check(where() == expect && value() == data(expect), "best");

        // The same with the inline reduction argmax: Tuple(coordinates..., value).
        Func best2("best2");
        best2() = argmax(data(r));
        Realization again = best2.realize();
        check(Buffer<int>(again[0])() == expect, "argmax");
    }

    // A type of one's own: a complex number kept as a Tuple of two floats. Iterating z = z^2 + c
    // (the Mandelbrot set's recurrence), each step is an update over an RDom of steps; the
    // points chosen stay inside the set, so the values stay small.
    {
        Func escape("escape");
        Var t("t");
        Complex c(cast<float>(x) / 32.0f - 0.25f, cast<float>(y) / 32.0f - 0.25f);
        escape(x, y, t) = Complex(0.0f, 0.0f);
        RDom step(1, 12);
        Complex previous(escape(x, y, step - 1));
        escape(x, y, step) = previous * previous + c;
        Func size("size");
        size(x, y) = Complex(escape(x, y, 12)).magnitude_squared();
        Buffer<float> sizes = size.realize({16, 16});
        // The same in C++ (within rounding: the compiler may fuse a multiply and an add).
        for (int j = 0; j < 16; j++)
            for (int i = 0; i < 16; i++) {
                float cr = i / 32.0f - 0.25f, ci = j / 32.0f - 0.25f, zr = 0, zi = 0;
                for (int k = 1; k <= 12; k++) {
                    float nr = zr * zr - zi * zi + cr, ni = zr * zi + zi * zr + ci;
                    zr = nr;
                    zi = ni;
                }
                float want = zr * zr + zi * zi;
                if (fabsf(sizes(i, j) - want) > 1e-4f * (1.0f + want)) {
                    printf("size(%d, %d) = %g, C++ %g\n", i, j, sizes(i, j), want);
                    failures++;
                }
            }
    }

    if (failures) return 1;
    printf("Success!\n");
    return 0;
}
