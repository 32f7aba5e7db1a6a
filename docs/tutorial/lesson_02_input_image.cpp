// Halide tutorial lesson 2: Processing images
//
// Ported to weft from Halide's tutorial/lesson_02_input_image.cpp
// (https://github.com/halide/Halide, MIT License, Copyright (c) 2012-2020 MIT CSAIL,
// Google Inc. and other contributors). Changes from Halide's text: the include, the
// namespace (Halide:: -> weft::), realize({...}) as in current Halide, a synthetic input in
// place of load_image (weft has no image I/O), a check of the output against plain C++ in
// place of save_image, and this header. The comments are Halide's: where they say
// "Halide", read "weft". Built and run by the test suite (ctest -R tutorial:lesson_02).

// This lesson demonstrates how to pass in input images and manipulate
// them.

// The only weft header file you need is weft/weft.h. It includes all of weft.
#include <weft/weft.h>
#include <stdio.h>

int main(int argc, char **argv) {

    // This program defines a single-stage imaging pipeline that
    // brightens an image.

    // First we'll load the input image we wish to brighten.
    // weft: there is no load_image. In its place, a synthetic 8-bit colour image of the size
    // of Halide's images/rgb.png (768 x 1280, 3 channels), filled with a pattern that covers
    // every value 0..255.
    weft::Buffer<uint8_t> input(768, 1280, 3);
    for (int c = 0; c < input.channels(); c++) {
        for (int y = 0; y < input.height(); y++) {
            for (int x = 0; x < input.width(); x++) {
                input(x, y, c) = (uint8_t)((x * 7 + y * 3 + c * 85) & 255);
            }
        }
    }

    // See figures/lesson_02_input.jpg for a smaller version.

    // Next we define our Func object that represents our one pipeline
    // stage.
    weft::Func brighter;

    // Our Func will have three arguments, representing the position
    // in the image and the color channel. Halide treats color
    // channels as an extra dimension of the image.
    weft::Var x, y, c;

    // Normally we'd probably write the whole function definition on
    // one line. Here we'll break it apart so we can explain what
    // we're doing at every step.

    // For each pixel of the input image.
    weft::Expr value = input(x, y, c);

    // Cast it to a floating point value.
    value = weft::cast<float>(value);

    // Multiply it by 1.5 to brighten it. Halide represents real
    // numbers as floats, not doubles, so we stick an 'f' on the end
    // of our constant.
    value = value * 1.5f;

    // Clamp it to be less than 255, so we don't get overflow when we
    // cast it back to an 8-bit unsigned int.
    value = weft::min(value, 255.0f);

    // Cast it back to an 8-bit unsigned integer.
    value = weft::cast<uint8_t>(value);

    // Define the function.
    brighter(x, y, c) = value;

    // The equivalent one-liner to all of the above is:
    //
    // brighter(x, y, c) = weft::cast<uint8_t>(min(input(x, y, c) * 1.5f, 255));
    //
    // In the shorter version:
    // - I skipped the cast to float, because multiplying by 1.5f does
    //   that automatically.
    // - I also used an integer constant as the second argument in the
    //   call to min, because it gets cast to float to be compatible
    //   with the first argument.
    // - I left the weft:: off the call to min. It's unnecessary due
    //   to Koenig lookup.

    // Remember, all we've done so far is build a representation of a
    // Halide program in memory. We haven't actually processed any
    // pixels yet. We haven't even compiled that Halide program yet.

    // So now we'll realize the Func. The size of the output image
    // should match the size of the input image. If we just wanted to
    // brighten a portion of the input image we could request a
    // smaller size. If we request a larger size Halide will throw an
    // error at runtime telling us we're trying to read out of bounds
    // on the input image.
    weft::Buffer<uint8_t> output =
        brighter.realize({input.width(), input.height(), input.channels()});

    // Save the output for inspection. It should look like a bright parrot.
    // weft: there is no save_image; instead, check the output against the same arithmetic
    // in plain C++.
    // save_image(output, "brighter.png");
    for (int c = 0; c < input.channels(); c++) {
        for (int y = 0; y < input.height(); y++) {
            for (int x = 0; x < input.width(); x++) {
                float v = input(x, y, c) * 1.5f;
                uint8_t expected = (uint8_t)(v < 255.0f ? v : 255.0f);
                if (output(x, y, c) != expected) {
                    printf("output(%d, %d, %d) = %d instead of %d\n",
                           x, y, c, output(x, y, c), expected);
                    return -1;
                }
            }
        }
    }

    // See figures/lesson_02_output.jpg for a small version of the output.

    printf("Success!\n");
    return 0;
}
