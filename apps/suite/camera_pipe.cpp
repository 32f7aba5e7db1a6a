// camera_pipe in weft: Halide's apps/camera_pipe (camera_pipe_generator.cpp, its Demosaic and
// CameraPipe generators) and its CPU schedule, directive for directive. See camera_pipe.h.
#include "camera_pipe.h"

#include "weft_suite.h"

namespace suite {
namespace camera_pipe {

namespace {

using namespace weft;

Expr u8_sat(Expr e) { return saturating_cast<uint8_t>(e); }

// Average two positive values rounding up.
Expr avg(Expr a, Expr b) {
    Type wider = a.type().with_bits(a.type().bits() * 2);
    return cast(a.type(), (cast(wider, a) + b + 1) / 2);
}

Expr blur121(Expr a, Expr b, Expr c) { return avg(avg(a, c), b); }

struct Pipe {
    Var x{"x"}, y{"y"}, c{"c"}, yi{"yi"}, yo{"yo"}, yii{"yii"}, xi{"xi"};
    ImageParam input{UInt(16), 2, "input"};
    ImageParam matrix_3200{Float(32), 2, "matrix_3200"};
    ImageParam matrix_7000{Float(32), 2, "matrix_7000"};
    // The generator's inputs, as constants with the app's defaults.
    Expr color_temp = kColorTemp, gamma = kGamma, contrast = kContrast, sharpen_strength = kSharpen;
    Expr blackLevel = kBlackLevel, whiteLevel = kWhiteLevel;
    std::vector<Func> intermediates;  // the demosaic's stencil stages (g_r, g_b)
    Func curve, matrix, sharpen_strength_x32;

    Func interleave_x(Func a, Func b) {
        Func out;
        out(x, y) = select((x % 2) == 0, a(x / 2, y), b(x / 2, y));
        return out;
    }

    Func interleave_y(Func a, Func b) {
        Func out;
        out(x, y) = select((y % 2) == 0, a(x, y / 2), b(x, y / 2));
        return out;
    }

    // The Demosaic generator.
    Func demosaic(Func deinterleaved) {
        Func r_r, g_gr, g_gb, b_b;
        g_gr(x, y) = deinterleaved(x, y, 0);
        r_r(x, y) = deinterleaved(x, y, 1);
        b_b(x, y) = deinterleaved(x, y, 2);
        g_gb(x, y) = deinterleaved(x, y, 3);

        Func b_r, g_r("g_r"), b_gr, r_gr, b_gb, r_gb, r_b, g_b("g_b");

        Expr gv_r = avg(g_gb(x, y - 1), g_gb(x, y));
        Expr gvd_r = absd(g_gb(x, y - 1), g_gb(x, y));
        Expr gh_r = avg(g_gr(x + 1, y), g_gr(x, y));
        Expr ghd_r = absd(g_gr(x + 1, y), g_gr(x, y));
        g_r(x, y) = select(ghd_r < gvd_r, gh_r, gv_r);

        Expr gv_b = avg(g_gr(x, y + 1), g_gr(x, y));
        Expr gvd_b = absd(g_gr(x, y + 1), g_gr(x, y));
        Expr gh_b = avg(g_gb(x - 1, y), g_gb(x, y));
        Expr ghd_b = absd(g_gb(x - 1, y), g_gb(x, y));
        g_b(x, y) = select(ghd_b < gvd_b, gh_b, gv_b);

        Expr correction;
        correction = g_gr(x, y) - avg(g_r(x, y), g_r(x - 1, y));
        r_gr(x, y) = correction + avg(r_r(x - 1, y), r_r(x, y));

        correction = g_gr(x, y) - avg(g_b(x, y), g_b(x, y - 1));
        b_gr(x, y) = correction + avg(b_b(x, y), b_b(x, y - 1));

        correction = g_gb(x, y) - avg(g_r(x, y), g_r(x, y + 1));
        r_gb(x, y) = correction + avg(r_r(x, y), r_r(x, y + 1));

        correction = g_gb(x, y) - avg(g_b(x, y), g_b(x + 1, y));
        b_gb(x, y) = correction + avg(b_b(x, y), b_b(x + 1, y));

        correction = g_b(x, y) - avg(g_r(x, y), g_r(x - 1, y + 1));
        Expr rp_b = correction + avg(r_r(x, y), r_r(x - 1, y + 1));
        Expr rpd_b = absd(r_r(x, y), r_r(x - 1, y + 1));

        correction = g_b(x, y) - avg(g_r(x - 1, y), g_r(x, y + 1));
        Expr rn_b = correction + avg(r_r(x - 1, y), r_r(x, y + 1));
        Expr rnd_b = absd(r_r(x - 1, y), r_r(x, y + 1));

        r_b(x, y) = select(rpd_b < rnd_b, rp_b, rn_b);

        correction = g_r(x, y) - avg(g_b(x, y), g_b(x + 1, y - 1));
        Expr bp_r = correction + avg(b_b(x, y), b_b(x + 1, y - 1));
        Expr bpd_r = absd(b_b(x, y), b_b(x + 1, y - 1));

        correction = g_r(x, y) - avg(g_b(x + 1, y), g_b(x, y - 1));
        Expr bn_r = correction + avg(b_b(x + 1, y), b_b(x, y - 1));
        Expr bnd_r = absd(b_b(x + 1, y), b_b(x, y - 1));

        b_r(x, y) = select(bpd_r < bnd_r, bp_r, bn_r);

        Func r = interleave_y(interleave_x(r_gr, r_r), interleave_x(r_b, r_gb));
        Func g = interleave_y(interleave_x(g_gr, g_r), interleave_x(g_b, g_gb));
        Func b = interleave_y(interleave_x(b_gr, b_r), interleave_x(b_b, b_gb));

        // Corrections may have wrapped below 0: read the result as signed.
        Func output("demosaiced");
        output(x, y, c) = cast<int16_t>(mux(c, {r(x, y), g(x, y), b(x, y)}));

        intermediates.push_back(g_r);
        intermediates.push_back(g_b);
        return output;
    }

    Func hot_pixel_suppression(Func input) {
        Expr a = max(input(x - 2, y), input(x + 2, y), input(x, y - 2), input(x, y + 2));
        Func denoised("denoised");
        denoised(x, y) = clamp(input(x, y), 0, a);
        return denoised;
    }

    Func deinterleave(Func raw) {
        Func deinterleaved("deinterleaved");
        deinterleaved(x, y, c) = mux(c, {raw(2 * x, 2 * y), raw(2 * x + 1, 2 * y), raw(2 * x, 2 * y + 1), raw(2 * x + 1, 2 * y + 1)});
        return deinterleaved;
    }

    Func color_correct(Func input, bool scheduled) {
        Expr kelvin = color_temp;
        matrix = Func("matrix");
        Expr alpha = (1.0f / kelvin - 1.0f / 3200) / (1.0f / 7000 - 1.0f / 3200);
        Expr val = (matrix_3200(x, y) * alpha + matrix_7000(x, y) * (1 - alpha));
        matrix(x, y) = cast<int16_t>(val * 256.0f);  // Q8.8 fixed point
        if (scheduled) matrix.compute_root();

        Func corrected("corrected");
        Expr ir = cast<int32_t>(input(x, y, 0));
        Expr ig = cast<int32_t>(input(x, y, 1));
        Expr ib = cast<int32_t>(input(x, y, 2));

        Expr r = matrix(3, 0) + matrix(0, 0) * ir + matrix(1, 0) * ig + matrix(2, 0) * ib;
        Expr g = matrix(3, 1) + matrix(0, 1) * ir + matrix(1, 1) * ig + matrix(2, 1) * ib;
        Expr b = matrix(3, 2) + matrix(0, 2) * ir + matrix(1, 2) * ig + matrix(2, 2) * ib;

        r = cast<int16_t>(r / 256);
        g = cast<int16_t>(g / 256);
        b = cast<int16_t>(b / 256);
        corrected(x, y, c) = mux(c, {r, g, b});
        return corrected;
    }

    Func apply_curve(Func input, bool scheduled) {
        curve = Func("curve");
        Expr minRaw = 0 + blackLevel;
        Expr maxRaw = whiteLevel;
        const int lutResample = 1;  // 8 on HVX only
        minRaw /= lutResample;
        maxRaw /= lutResample;

        Expr invRange = 1.0f / (maxRaw - minRaw);
        Expr b = 2.0f - pow(2.0f, contrast / 100.0f);
        Expr a = 2.0f - 2.0f * b;

        Expr xf = clamp(cast<float>(x - minRaw) * invRange, 0.0f, 1.0f);
        Expr g = pow(xf, 1.0f / gamma);
        Expr z = select(g > 0.5f, 1.0f - (a * (1.0f - g) * (1.0f - g) + b * (1.0f - g)), a * g * g + b * g);

        Expr val = cast(UInt(8), clamp(z * 255.0f + 0.5f, 0.0f, 255.0f));
        curve(x) = select(x <= minRaw, 0, select(x > maxRaw, 255, val));
        if (scheduled) curve.compute_root();  // a LUT, computed once ahead of time

        Func curved("curved");
        curved(x, y, c) = curve(clamp(input(x, y, c), 0, 1023));
        return curved;
    }

    Func sharpen(Func input, bool scheduled) {
        // The strength in 2.5 fixed point: sharpening in [0, 4].
        sharpen_strength_x32 = Func("sharpen_strength_x32");
        sharpen_strength_x32() = u8_sat(sharpen_strength * 32);
        if (scheduled) sharpen_strength_x32.compute_root();

        Func unsharp_y("unsharp_y");
        unsharp_y(x, y, c) = blur121(input(x, y - 1, c), input(x, y, c), input(x, y + 1, c));

        Func unsharp("unsharp");
        unsharp(x, y, c) = blur121(unsharp_y(x - 1, y, c), unsharp_y(x, y, c), unsharp_y(x + 1, y, c));

        Func mask("mask");
        mask(x, y, c) = cast<int16_t>(input(x, y, c)) - cast<int16_t>(unsharp(x, y, c));

        Func sharpened("sharpened");
        // weft refuses int16 with uint8 (Halide widens the uint8 to int16): the casts are Halide's.
        sharpened(x, y, c) =
            u8_sat(cast<int16_t>(input(x, y, c)) + (mask(x, y, c) * cast<int16_t>(sharpen_strength_x32())) / 32);
        return sharpened;
    }

    Func build(int size, bool scheduled) {
        // The output's (x, y) is the raw input's (x + 16, y + 12): padding for the stencils.
        Func shifted("shifted");
        shifted(x, y) = input(x + 16, y + 12);

        Func denoised = hot_pixel_suppression(shifted);
        Func deinterleaved = deinterleave(denoised);
        Func demosaiced = demosaic(deinterleaved);
        Func corrected = color_correct(demosaiced, scheduled);
        Func curved = apply_curve(corrected, scheduled);

        Func processed("processed");
        processed(x, y, c) = sharpen(curved, scheduled)(x, y, c);

        if (!scheduled) return processed;

        // The CPU schedule (not HVX).
        Target target = Target::host();
        // The generator reads these from the output buffer (processed.width(), height()).
        Expr out_width = size, out_height = out_height_of(size);
        Expr strip_size = 32;
        strip_size = (strip_size / 2) * 2;
        const int vec = target.natural_vector_size(UInt(16));
        // Halide: TailStrategy::RoundUp. weft's producers of a RoundUp Func compute all that its
        // rounded-up loop reads (Halide's get only the unrounded region), so these three roundings
        // compound and read raw x in [10, 525] at output width 256 (Halide: [10, 277]), past the
        // input's end: Auto (ShiftInwards) instead.
        const TailStrategy producer_tail = TailStrategy::Auto;

        processed.compute_root()
            .reorder(c, x, y)
            .split(y, yi, yii, 2, TailStrategy::RoundUp)
            .split(yi, yo, yi, strip_size / 2)
            .vectorize(x, 2 * vec, TailStrategy::RoundUp)
            .unroll(c)
            .parallel(yo);

        denoised.compute_at(processed, yi)
            .store_at(processed, yo)
            .prefetch(input, y, 2)  // Halide: prefetch(input, y, y, 2)
            // Halide: fold_storage(y, 4); refused by weft as for deinterleaved below (its first
            // iteration reads 10 rows), which folds it to 16 by itself.
            .tile(x, y, x, y, xi, yi, 2 * vec, 2)
            .vectorize(xi)
            .unroll(yi);

        deinterleaved.compute_at(processed, yi)
            .store_at(processed, yo)
            // Halide: fold_storage(y, 4). weft's first iteration of yi reads 5 rows of it (Halide
            // computes the first rows in earlier iterations), so weft refuses a fold of 4 and
            // folds it to 8 by itself.
            .reorder(c, x, y)
            .vectorize(x, 2 * vec, producer_tail)
            .unroll(c);

        curved.compute_at(processed, yi)
            .store_at(processed, yo)
            .reorder(c, x, y)
            .tile(x, y, x, y, xi, yi, 2 * vec, 2, producer_tail)
            .vectorize(xi)
            .unroll(yi)
            .unroll(c);

        corrected.compute_at(curved, x).reorder(c, x, y).vectorize(x).unroll(c);

        // The Demosaic generator's schedule, with intermed_compute_at = {processed, yi},
        // intermed_store_at = {processed, yo}, output_compute_at = {curved, x}.
        for (Func f : intermediates) {
            f.compute_at(processed, yi)
                .store_at(processed, yo)
                .vectorize(x, 2 * vec, producer_tail)
                .fold_storage(y, 4);
        }
        intermediates[1].compute_with(intermediates[0], x,
                                      {{x, LoopAlignStrategy::AlignStart}, {y, LoopAlignStrategy::AlignStart}});
        demosaiced.compute_at(curved, x).vectorize(x).unroll(y).reorder(c, x, y).unroll(c);

        // The splits divide the extent.
        processed.bound(c, 0, 3)
            .bound(x, 0, ((out_width) / (2 * vec)) * (2 * vec))
            .bound(y, 0, (out_height / strip_size) * strip_size);
        return processed;
    }

    static int out_height_of(int size) { return out_height(size); }
};

}  // namespace

WeftDef build(int size, bool scheduled) {
    Pipe p;
    Func out = p.build(size, scheduled);
    return {out, {p.input, p.matrix_3200, p.matrix_7000}};
}

}  // namespace camera_pipe
}  // namespace suite

WEFT_SUITE_APP(camera_pipe)
