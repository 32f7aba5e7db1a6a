// Halide tutorial lesson 3: Inspecting the generated code
//
// Ported to weft from Halide's tutorial/lesson_03_debugging_1.cpp
// (https://github.com/halide/Halide, MIT License, Copyright (c) 2012-2020 MIT CSAIL,
// Google Inc. and other contributors). Changes from Halide's text: the include, the
// namespace (Halide -> weft), realize({8, 8}) as in current Halide, Halide's build
// instructions left out, and this header. The comments are Halide's: where they say
// "Halide", read "weft", and for HL_DEBUG_CODEGEN read WEFT_DEBUG (any value but empty or
// "0" prints, on stderr, the loop nest and the IR after each lowering pass, then the LLVM
// IR; weft has no higher levels). gradient.html is written to the current directory.
// Built and run by the test suite (ctest -R tutorial:lesson_03).

// This lesson demonstrates how to inspect what the Halide compiler is producing.

#include <weft/weft.h>
#include <stdio.h>

// This time we'll just import the entire Halide namespace
using namespace weft;

int main(int argc, char **argv) {

    // We'll start by defining the simple single-stage imaging
    // pipeline from lesson 1.

    // This lesson will be about debugging, but unfortunately in C++,
    // objects don't know their own names, which makes it hard for us
    // to understand the generated code. To get around this, you can
    // pass a string to the Func and Var constructors to give them a
    // name for debugging purposes.
    Func gradient("gradient");
    Var x("x"), y("y");
    gradient(x, y) = x + y;

    // Realize the function to produce an output image. We'll keep it
    // very small for this lesson.
    Buffer<int> output = gradient.realize({8, 8});

    // That line compiled and ran the pipeline. Try running this
    // lesson with the environment variable HL_DEBUG_CODEGEN set to
    // 1. It will print out the various stages of compilation, and a
    // pseudocode representation of the final pipeline.

    // If you set HL_DEBUG_CODEGEN to a higher number, you can see
    // more and more details of how Halide compiles your pipeline.
    // Setting HL_DEBUG_CODEGEN=2 shows the Halide code at each stage
    // of compilation, and also the llvm bitcode we generate at the
    // end.

    // Halide will also output an HTML version of this output, which
    // supports syntax highlighting and code-folding, so it can be
    // nicer to read for large pipelines. Open gradient.html with your
    // browser after running this tutorial.
    gradient.compile_to_lowered_stmt("gradient.html", {}, HTML);

    // You can usually figure out what code Halide is generating using
    // this pseudocode. In the next lesson we'll see how to snoop on
    // Halide at runtime.

    printf("Success!\n");
    return 0;
}
