// API.md "Errors": every user error throws weft::Error naming what is involved; nothing crashes
// and no output is written.
#include "lang_test_util.h"

using namespace weft;
using weft_test::error_of;

namespace {

TEST(Errors, ErrorIsRuntimeError) {
    Error e("boom");
    const std::runtime_error &r = e;
    EXPECT_STREQ(r.what(), "boom");
}

TEST(Errors, RepeatedVarInPureDefinition) {
    Var x("x");
    Func f("dup_args");
    std::string m = error_of([&] {
        f(x, x) = x * 2;
        f.realize({4, 4});
    });
    EXPECT_CONTAINS(m, "dup_args");
}

TEST(Errors, PureDefinitionUsesFreeVar) {
    Var x("x"), y("free_y");
    Func f("free_var_f");
    std::string m = error_of([&] {
        f(x) = x + y;
        f.realize({4});
    });
    EXPECT_CONTAINS(m, "free_var_f");
    EXPECT_CONTAINS(m, "free_y");
}

TEST(Errors, PureDefinitionWithNonVarArgs) {
    Var x("x");
    Func f("nonvar_pure");
    std::string m = error_of([&] {
        f(x + 1) = x;
        f.realize({4});
    });
    EXPECT_CONTAINS(m, "nonvar_pure");
}

TEST(Errors, UpdateBeforePureDefinition) {
    // f(x) += e on an undefined Func starts at 0 (Halide's meaning, tests/lang/test_suite_features);
    // reading f in its own first definition is an error.
    Var x("x");
    Func f("update_first");
    std::string m = error_of([&] {
        f(x) = f(x) + 1;
        f.realize({4});
    });
    EXPECT_CONTAINS(m, "update_first");
    Func g("update_first_ok");
    g(x) += 1;
    Buffer<int32_t> out = g.realize({4});
    EXPECT_EQ(out(3), 1);
}

TEST(Errors, UpdateOfOtherType) {
    Var x("x");
    Func f("update_type");
    f(x) = x;
    std::string m = error_of([&] {
        f(x) = cast<float>(x) * 0.5f;
        f.realize({4});
    });
    EXPECT_CONTAINS(m, "update_type");
}

TEST(Errors, CallingUndefinedFunc) {
    Var x("x");
    Func undefined_f("never_defined"), g("calls_undefined");
    std::string m = error_of([&] {
        g(x) = undefined_f(x) + 1;
        g.realize({4});
    });
    EXPECT_CONTAINS(m, "never_defined");
}

TEST(Errors, WrongArityCall) {
    Var x("x"), y("y");
    Func f("arity2"), g("arity_caller");
    f(x, y) = x + y;
    std::string m = error_of([&] {
        g(x) = f(x) + 1;
        g.realize({4});
    });
    EXPECT_CONTAINS(m, "arity2");
    Func h("arity_update");
    h(x, y) = x;
    m = error_of([&] {
        h(x) += 1;
        h.realize({2, 2});
    });
    EXPECT_CONTAINS(m, "arity_update");
}

TEST(Errors, RealizeWithWrongNumberOfSizes) {
    Var x("x"), y("y");
    Func f("realize_dims");
    f(x, y) = x + y;
    std::string m = error_of([&] { f.realize({4}); });
    EXPECT_CONTAINS(m, "realize_dims");
    Buffer<int> three(2, 2, 2);
    EXPECT_THROW(f.realize(three), Error);
}

TEST(Errors, ScheduleNamesMissingVariable) {
    Var x("x"), y("y"), z("missing_z"), zo("zo"), zi("zi");
    {
        Func f("sched_missing");
        f(x, y) = x + y;
        std::string m = error_of([&] {
            f.split(z, zo, zi, 4);
            f.realize({4, 4});
        });
        EXPECT_CONTAINS(m, "missing_z");
        EXPECT_CONTAINS(m, "sched_missing");
    }
    {
        Func f("sched_missing_vec");
        f(x) = x;
        std::string m = error_of([&] {
            f.vectorize(z, 4);
            f.realize({8});
        });
        EXPECT_CONTAINS(m, "missing_z");
    }
    {
        Func f("sched_missing_reorder");
        f(x, y) = x;
        std::string m = error_of([&] {
            f.reorder(z, x);
            f.realize({4, 4});
        });
        EXPECT_CONTAINS(m, "missing_z");
    }
    {
        Func f("sched_missing_update");
        f(x) = x;
        f(x) += 1;
        std::string m = error_of([&] {
            f.update(0).parallel(z);
            f.realize({4});
        });
        EXPECT_CONTAINS(m, "missing_z");
    }
    {
        // A split name consumed by an earlier split is gone.
        Func f("sched_consumed");
        f(x) = x;
        Var xo("xo"), xi("xi");
        std::string m = error_of([&] {
            f.split(x, xo, xi, 4).vectorize(x);
            f.realize({8});
        });
        EXPECT_CONTAINS(m, "sched_consumed");
    }
    {
        // compute_at a loop the consumer does not have.
        Func p("at_missing_p"), c("at_missing_c");
        p(x) = x;
        c(x) = p(x) + 1;
        std::string m = error_of([&] {
            p.compute_at(c, z);
            c.realize({4});
        });
        EXPECT_CONTAINS(m, "missing_z");
    }
}

TEST(Errors, ComputeAtNonConsumer) {
    Var x("x");
    Func p("nc_producer"), other("nc_other"), out("nc_out");
    p(x) = x * 2;
    other(x) = x + 1;
    out(x) = p(x) + 1;
    Pipeline both({out, other});
    std::string m = error_of([&] {
        p.compute_at(other, x);  // other never calls p
        both.realize(std::vector<int>{4});
    });
    EXPECT_CONTAINS(m, "nc_producer");
}

TEST(Errors, ComputeAtInlinedConsumer) {
    Var x("x");
    Func p("inl_producer"), mid("inl_mid"), out("inl_out");
    p(x) = x * 2;
    mid(x) = p(x) + 1;  // inlined (the default)
    out(x) = mid(x) * 3;
    std::string m = error_of([&] {
        p.compute_at(mid, x);
        out.realize({4});
    });
    EXPECT_CONTAINS(m, "inl_producer");
    EXPECT_CONTAINS(m, "inl_mid");
}

TEST(Errors, StoreInsideCompute) {
    // Storage must be at or outside the compute level.
    Var x("x"), y("y");
    Func p("sic_p"), c("sic_c");
    p(x, y) = x + y;
    c(x, y) = p(x, y) + p(x, y + 1);
    std::string m = error_of([&] {
        p.store_at(c, x).compute_at(c, y);
        c.realize({4, 4});
    });
    EXPECT_CONTAINS(m, "sic_p");
}

struct CallableSetup {
    ImageParam in{Float(32), 2, "in"};
    Param<float> k{"k"};
    Var x{"x"}, y{"y"};
    Func f{"callable_err"};
    Callable fn;
    CallableSetup() {
        f(x, y) = in(x, y) * k;
        fn = Pipeline(f).compile_to_callable({in, k});
    }
};

TEST(Errors, CallableWrongArgumentCount) {
    CallableSetup s;
    Buffer<float> ib(4, 4), ob(4, 4);
    EXPECT_THROW(s.fn(ib, ob), Error);
    EXPECT_THROW(s.fn(ib, 1.0f), Error);
    EXPECT_THROW(s.fn(ib, 1.0f, ob, ob), Error);
    EXPECT_THROW(s.fn(), Error);
}

TEST(Errors, CallableWrongArgumentType) {
    CallableSetup s;
    Buffer<float> ib(4, 4), ob(4, 4);
    ob.fill(-1.0f);
    std::string m = error_of([&] { s.fn(ib, 2, ob); });  // int for a float Param
    EXPECT_CONTAINS(m, "k");
    Buffer<int> wrong_in(4, 4);
    m = error_of([&] { s.fn(wrong_in, 2.0f, ob); });  // int buffer for a float ImageParam
    EXPECT_CONTAINS(m, "in");
    Buffer<float> wrong_dims(4);
    m = error_of([&] { s.fn(wrong_dims, 2.0f, ob); });  // 1-D buffer for a 2-D ImageParam
    EXPECT_CONTAINS(m, "in");
    Buffer<double> wrong_out(4, 4);
    EXPECT_THROW(s.fn(ib, 2.0f, wrong_out), Error);
    EXPECT_THROW(s.fn(2.0f, ib, ob), Error);  // scalar where a buffer goes
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) EXPECT_EQ(ob(i, j), -1.0f) << "nothing written on error";
}

void expect_untouched(const Buffer<float> &o, float sentinel) {
    int bad = 0;
    o.for_each_offset([&](int64_t off) {
        if (o.data()[off] != sentinel) bad++;
    });
    EXPECT_EQ(bad, 0) << "no output element may be written when the call fails";
}

TEST(Errors, InputTooSmallImageParam) {
    ImageParam in(Float(32), 1, "in");
    Var x("x");
    Func f("reads_past");
    f(x) = in(x - 1) + in(x + 1);
    Buffer<float> ib(1024);
    ib.fill(1.0f);
    in.set(ib);
    Buffer<float> ob(1024);
    ob.fill(-7.0f);
    std::string m = error_of([&] { f.realize(ob); });
    EXPECT_CONTAINS(m, "input \"in\" dimension 0");
    EXPECT_CONTAINS(m, "pipeline reads [-1, 1024]");
    EXPECT_CONTAINS(m, "[0, 1023]");
    expect_untouched(ob, -7.0f);

    // The same through a Callable.
    Callable fn = Pipeline(f).compile_to_callable({in});
    m = error_of([&] { fn(ib, ob); });
    EXPECT_CONTAINS(m, "input \"in\" dimension 0");
    EXPECT_CONTAINS(m, "[-1, 1024]");
    expect_untouched(ob, -7.0f);

    // A big enough input works.
    Buffer<float> big(1026);
    big.set_min(-1);
    big.fill(1.0f);
    fn(big, ob);
    EXPECT_EQ(ob(0), 2.0f);
    EXPECT_EQ(ob(1023), 2.0f);
}

TEST(Errors, InputTooSmallSecondDimension) {
    ImageParam in(Float(32), 2, "img");
    Var x("x"), y("y");
    Func f("reads_rows");
    f(x, y) = in(x, y) + in(x, y + 2);
    Buffer<float> ib(8, 8);
    in.set(ib);
    Buffer<float> ob(8, 8);
    ob.fill(3.0f);
    std::string m = error_of([&] { f.realize(ob); });
    EXPECT_CONTAINS(m, "\"img\"");
    EXPECT_CONTAINS(m, "dimension 1");
    EXPECT_CONTAINS(m, "[0, 9]");
    EXPECT_CONTAINS(m, "[0, 7]");
    expect_untouched(ob, 3.0f);
}

TEST(Errors, InputTooSmallBuffer) {
    Buffer<float> in({16}, "in");
    Var x("x");
    Func f("reads_buffer_past");
    f(x) = in(x * 2);
    Buffer<float> ob(10);
    ob.fill(5.0f);
    std::string m = error_of([&] { f.realize(ob); });
    EXPECT_CONTAINS(m, "\"in\"");
    EXPECT_CONTAINS(m, "dimension 0");
    EXPECT_CONTAINS(m, "[0, 18]");
    EXPECT_CONTAINS(m, "[0, 15]");
    expect_untouched(ob, 5.0f);
}

TEST(Errors, InputTooSmallThroughStages) {
    // The region read is found through an intermediate stage and a schedule.
    ImageParam in(Int(32), 1, "in");
    Var x("x");
    Func a("through_a"), b("through_b");
    a(x) = in(x + 3) * 2;
    b(x) = a(x - 1) + a(x + 1);
    a.compute_root();
    b.vectorize(x, 4);
    Buffer<int> ib(10);
    in.set(ib);
    Buffer<int> ob(10);
    ob.fill(99);
    std::string m = error_of([&] { b.realize(ob); });
    EXPECT_CONTAINS(m, "input \"in\" dimension 0");
    EXPECT_CONTAINS(m, "[2, 13]");
    EXPECT_CONTAINS(m, "[0, 9]");
    for (int i = 0; i < 10; i++) EXPECT_EQ(ob(i), 99);
}

TEST(Errors, UnboundImageParam) {
    ImageParam in(Float(32), 1, "never_bound");
    Var x("x");
    Func f("uses_unbound");
    f(x) = in(x);
    std::string m = error_of([&] { f.realize({4}); });
    EXPECT_CONTAINS(m, "never_bound");
}

TEST(Errors, RealizationWrongElementType) {
    Var x("x");
    Func f("int_func");
    f(x) = x;
    std::string m = error_of([&] { Buffer<float> b = f.realize({4}); });
    EXPECT_CONTAINS(m, "int32");
    EXPECT_THROW(Buffer<uint32_t> b2 = f.realize({4}), Error);
    // Two outputs cannot become one Buffer.
    Func g("int_func2");
    g(x) = x + 1;
    EXPECT_THROW(Buffer<int> b3 = Pipeline({f, g}).realize(std::vector<int>{4}), Error);
}

TEST(Errors, RealizeIntoWrongTypeBuffer) {
    Var x("x");
    Func f("wrong_out_type");
    f(x) = x;
    Buffer<float> o(4);
    o.fill(1.0f);
    EXPECT_THROW(f.realize(o), Error);
    expect_untouched(o, 1.0f);
}

TEST(Errors, BufferAccessOutOfRange) {
    Buffer<int> b(3, 3);
    std::string m = error_of([&] { b(3, 0) = 1; });
    EXPECT_CONTAINS(m, "dimension 0");
    EXPECT_THROW(b(0, 0, 0), Error);
    EXPECT_THROW(b.dim(5), Error);
}

// An intermediate Func whose storage needs 2^31 elements or more (65536 x 65537 here: its
// 32-bit element count wraps to 65536, and it was allocated that small, then written far past
// its end): an error naming it, when compiling where the shapes fix the size, when called
// (before anything is allocated or written) where a Param does; smaller sizes still run.
TEST(Errors, IntermediateStorageTooLargeFor32BitIndices) {
    Var x("x"), y("y");
    Func g("huge_intermediate"), f("reads_huge");
    g(x, y) = x + y;
    f(x, y) = g(x * 65535, y * 65536);
    g.compute_root();
    std::string m = error_of([&] { f.realize({2, 2}); });
    EXPECT_CONTAINS(m, "huge_intermediate");
    EXPECT_CONTAINS(m, "4295032832 elements");

    Param<int> p("p", 3);
    Func g2("huge_at_run_time"), f2("reads_huge_at_run_time");
    g2(x, y) = x + y;
    f2(x, y) = g2(clamp(x * p, 0, 70000), clamp(y * (p + 1), 0, 70000));
    g2.compute_root();
    Buffer<int> out(2, 2);
    f2.realize(out);
    EXPECT_EQ(out(1, 1), 3 + 4);
    p.set(65535);
    out(1, 1) = -1;
    m = error_of([&] { f2.realize(out); });
    EXPECT_CONTAINS(m, "huge_at_run_time");
    EXPECT_CONTAINS(m, "4295032832 elements");
    EXPECT_EQ(out(1, 1), -1);  // nothing written
}

// Coordinates are 32-bit and so are the ends of loops over them: a buffer or an RDom whose
// min + extent is past INT32_MAX is an error (such an output was written past its end, such an
// RDom's loop never ended); up to INT32_MAX runs.
TEST(Errors, CoordinatesPastInt32) {
    Var x("x");
    Buffer<int> out(10);
    std::string m = error_of([&] { out.set_min(INT32_MAX - 5); });
    EXPECT_CONTAINS(m, "2147483652");
    EXPECT_EQ(out.dim(0).min(), 0);  // unchanged
    out.set_min(INT32_MAX - 10);
    Func f("near_the_top");
    f(x) = x - (INT32_MAX - 10);
    f.realize(out);
    EXPECT_EQ(out(INT32_MAX - 1), 9);

    m = error_of([&] { RDom r(INT32_MAX - 5, 6); });
    EXPECT_CONTAINS(m, "min + extent = 2147483648");
    RDom r(INT32_MAX - 5, 5, "near_top");
    Func g("sums_near_the_top");
    g(x) = 0;
    g(x) = g(x) + (r - (INT32_MAX - 5));
    Buffer<int> o = g.realize({1});
    EXPECT_EQ(o(0), 0 + 1 + 2 + 3 + 4);
}

// A Func that is an output and also used by another output: its buffer holds all of it there
// is, so reading past it is an error naming it (the consumer read past the end of the output
// buffer); within it, both are computed.
TEST(Errors, OutputReadPastItsBufferByAnotherOutput) {
    Var x("x");
    Func f("shared_output"), g("reads_shared_output");
    f(x) = x;
    g(x) = f(x + 1) + 1;
    Buffer<int> a(4), b(4);
    b(3) = -1;
    std::string m = error_of([&] { Pipeline({f, g}).realize({a, b}); });
    EXPECT_CONTAINS(m, "output \"shared_output\" dimension 0: pipeline reads [1, 4], buffer holds [0, 3]");
    EXPECT_EQ(b(3), -1);  // nothing written
    Buffer<int> c(3);
    Pipeline({f, g}).realize({a, c});
    EXPECT_EQ(c(2), 4);
    EXPECT_EQ(a(3), 3);
}

// Element types weft does not compute with (16-bit floats come later; odd integer widths) are
// refused where they are given, and wrapping a null pointer is an error (it allocated instead).
TEST(Errors, UnsupportedTypesAndNullData) {
    Var x("x");
    EXPECT_CONTAINS(error_of([&] { cast(Float(8), Expr(3)); }), "float8 is not a supported type");
    EXPECT_CONTAINS(error_of([&] { cast(BFloat(32), Expr(3)); }), "bfloat32 is not a supported type");
    EXPECT_CONTAINS(error_of([&] { cast(Int(7), x); }), "int7 is not a supported type");
    EXPECT_CONTAINS(error_of([&] { reinterpret(Float(8), cast<int8_t>(x)); }), "float8");
    EXPECT_CONTAINS(error_of([&] { Buffer<void> b(BFloat(8), {4}, "bfloat_buffer"); }), "bfloat_buffer");
    EXPECT_CONTAINS(error_of([&] { ImageParam p(UInt(12), 2, "odd_param"); }), "odd_param");
    EXPECT_CONTAINS(error_of([&] { Buffer<int> b((int *)nullptr, {4, 4}, "null_wrap"); }), "null pointer");
    Func f("supported_types");
    f(x) = cast<uint8_t>(x) + cast(UInt(8), 1);
    Buffer<uint8_t> o = f.realize({3});
    EXPECT_EQ(o(2), 3);
}

// Errors found deep in a deep expression, or in one whose tree is exponentially larger than its
// graph, are weft::Errors like any other (thrown where the walk over it ran on a thread of its own
// with a large stack, and handed back).
TEST(Errors, DeepAndSharedExpressionsReportErrors) {
    Var x("x"), y("y");
#if defined(__SANITIZE_ADDRESS__)
    const int depth = 30000;
#else
    const int depth = 120000;
#endif
    Expr deep = cast<float>(y);  // y is not an argument of the Func below
    for (int i = 0; i < depth; i++) deep = deep * 0.5f + 1.0f;
    Func f("deep_bad");
    EXPECT_CONTAINS(error_of([&] { f(x) = deep; }), "uses Var \"y\"");
    Expr shared = cast<float>(y);
    for (int i = 0; i < 40; i++) shared = (shared + shared) * 0.5f;
    Func g("shared_bad");
    EXPECT_CONTAINS(error_of([&] { g(x) = shared; }), "uses Var \"y\"");
    Func h("shared_in_sum");
    EXPECT_CONTAINS(error_of([&] { h(x) = sum(shared); }), "uses no RDom");
}

TEST(Errors, LibraryStillWorksAfterErrors) {
    Var x("x");
    Func f("after_errors");
    f(x) = x * 5;
    Buffer<int> o = f.realize({6});
    EXPECT_EQ(o(5), 25);
}

}  // namespace
