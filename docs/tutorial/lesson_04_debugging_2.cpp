// Lesson 4: following a pipeline as it runs (tracing, print, print_when)
//
// weft's own text for the topics of Halide's tutorial lesson 4 (not a port of Halide's file):
// the same calls, with weft's spelling, which is Halide's. Built and run by the test suite
// (ctest -R tutorial:lesson_04); it checks the values it computes and returns 0.

#include <weft/weft.h>
#include <math.h>
#include <stdio.h>

using namespace weft;

int main(int argc, char **argv) {
    Var x("x"), y("y");

    // Tracing the values a Func stores. trace_stores() makes every store to the Func print a
    // line "Store gradient.0(x, y) = value" on stderr while the pipeline runs. The order of the
    // lines is the order of the loops: here x inside y.
    {
        Func gradient("gradient");
        gradient(x, y) = x + y;
        gradient.trace_stores();
        printf("Evaluating gradient\n");
        Buffer<int> output = gradient.realize({4, 4});

        // The same algorithm with its rows in parallel: the lines of different rows now come in
        // whatever order the threads run them, but each line is printed whole.
        Func parallel_gradient("parallel_gradient");
        parallel_gradient(x, y) = x + y;
        parallel_gradient.trace_stores();
        parallel_gradient.parallel(y);
        printf("\nEvaluating parallel_gradient\n");
        Buffer<int> output2 = parallel_gradient.realize({4, 4});

        for (int j = 0; j < 4; j++)
            for (int i = 0; i < 4; i++)
                if (output(i, j) != i + j || output2(i, j) != i + j) {
                    printf("gradient(%d, %d) is wrong\n", i, j);
                    return 1;
                }
    }

    // Printing one sub-expression. print(e, ...) has e's value, and prints e (and any other
    // values or strings given) each time it is computed.
    {
        Func f("f");
        f(x, y) = sin(cast<float>(x)) + print(cos(cast<float>(y)), "<- cos(y) at y =", y);
        printf("\nEvaluating sin(x) + cos(y), printing cos(y)\n");
        Buffer<float> out = f.realize({2, 2});
        if (fabsf(out(1, 1) - (sinf(1.0f) + cosf(1.0f))) > 1e-6f) {
            printf("f(1, 1) is wrong\n");
            return 1;
        }
    }

    // Printing only when something happens. print_when(condition, e, ...) prints only where the
    // condition holds: one pixel, or a value that should not occur.
    {
        Func f("f_one_pixel");
        Expr e = print_when(x == 37 && y == 42, cos(cast<float>(y)), "<- cos(y) at (37, 42)");
        f(x, y) = sin(cast<float>(x)) + e;
        printf("\nEvaluating sin(x) + cos(y), printing cos(y) at one pixel\n");
        f.realize({64, 64});

        Func g("g_negative");
        Expr c = cos(cast<float>(y));
        g(x, y) = sin(cast<float>(x)) + print_when(c < 0, c, "cos(y) < 0 at y =", y);
        printf("\nEvaluating sin(x) + cos(y), printing where cos(y) < 0\n");
        Buffer<float> out = g.realize({2, 4});
        if (fabsf(out(0, 3) - cosf(3.0f)) > 1e-6f) {
            printf("g(0, 3) is wrong\n");
            return 1;
        }
    }

    // Tracing reads and realizations too. trace_loads() prints each value read from the Func,
    // trace_realizations() each time its storage is made and released (with its region: the
    // min and extent of each dimension).
    {
        Func producer("producer"), consumer("consumer");
        producer(x, y) = x * y;
        consumer(x, y) = producer(x, y) + producer(x + 1, y);
        producer.compute_at(consumer, y).trace_loads().trace_realizations();
        printf("\nEvaluating consumer, producer computed per row\n");
        Buffer<int> out = consumer.realize({3, 2});
        for (int j = 0; j < 2; j++)
            for (int i = 0; i < 3; i++)
                if (out(i, j) != i * j + (i + 1) * j) {
                    printf("consumer(%d, %d) is wrong\n", i, j);
                    return 1;
                }
    }

    // Printing an Expr itself (what was built, not its values): to_string(e) (Halide uses
    // operator<<).
    {
        Expr e = 1;
        for (int i = 2; i < 8; i++) e = e + (i % 3 == 0 ? Expr(x) : Expr(i));
        printf("\nAn Expr: %s\n", to_string(e).c_str());
    }

    printf("Success!\n");
    return 0;
}
